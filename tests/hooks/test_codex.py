"""``git ocr hook codex`` and ``git ocr install|uninstall --codex``: Codex CLI's ``PreToolUse``
hook on its Bash tool, which speaks Claude Code's event and exit codes from
``.codex/hooks.json`` (same layout as ``.claude/settings.json``).

Real: git, the ``git-ocr`` console script as its own process with the event on stdin, HTTP to
the loopback model. Fake: the model's replies.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.hooks.test_claude_code import BUGGY, DONE, SOURCE, TEXT, finding
from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM


def codex(repo: GitRepo, llm: ScriptedLLM, command: str) -> subprocess.CompletedProcess[str]:
    """``git ocr hook codex`` with the event Codex sends (no transcript, a ``turn_id``)."""
    event = {"session_id": "c1", "turn_id": "t-1", "cwd": str(repo.path),
             "hook_event_name": "PreToolUse", "model": "gpt-5-codex", "tool_name": "Bash",
             "tool_use_id": "call-1", "tool_input": {"command": command}}
    env = cli_environ({**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false")})
    return subprocess.run([str(GIT_OCR), "hook", "codex"], cwd=repo.path, input=json.dumps(event),
                          env=env, capture_output=True, text=True, timeout=120)


def test_a_blocked_commit_exits_2_with_the_finding_and_other_commands_exit_0(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.write({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), DONE)
    p = codex(repo, llm, "git add calc.py && git commit -m x")
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert "BLOCKING calc.py:2 [critical · bug] id " in p.stderr
    assert f"  {TEXT}\n" in p.stderr
    assert len(llm.requests) == 1
    p = codex(repo, llm, "ls -la")
    assert (p.returncode, p.stdout, p.stderr, len(llm.requests)) == (0, "", "", 1)


OTHER = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "python3 .codex/guard.py", "timeout": 30}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}
OURS = {"matcher": "Bash", "hooks": [{"type": "command", "command": "git ocr hook codex",
                                      "timeout": 360}]}


def test_install_codex_keeps_the_other_hooks_and_uninstall_removes_only_ours(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    path = repo.path / ".codex" / "hooks.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER), encoding="utf-8")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["install", "--codex"], {}, capsys)
    assert (rc, out, err) == (0, f"installed Codex CLI hook (PreToolUse, Bash): {path}\n", "")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == {"hooks": {**OTHER["hooks"], "PreToolUse": [
        *OTHER["hooks"]["PreToolUse"], OURS]}}
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()  # alone: no git hook
    assert not (repo.path / ".claude").exists()
    rc, out, _ = run_cli(["install", "--codex"], {}, capsys)
    assert (rc, out) == (0, f"Codex CLI hook already installed: {path}\n")
    rc, out, _ = run_cli(["uninstall", "--codex", "--claude-code"], {}, capsys)
    assert (rc, out) == (0, f"Claude Code hook not installed\nremoved Codex CLI hook: {path}\n")
    assert json.loads(path.read_text(encoding="utf-8")) == OTHER
    rc, out, _ = run_cli(["uninstall", "--codex"], {}, capsys)
    assert (rc, out) == (0, "Codex CLI hook not installed\n")
