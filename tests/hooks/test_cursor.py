"""``git ocr hook cursor`` (Cursor's ``beforeShellExecution`` hook) and ``install --cursor``.
Real: git repositories, the real ``git-ocr`` processes (the Cursor hook runs the Claude Code
gate in a child), HTTP to the loopback model; fake: the model's replies."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.test_claude_code import BUGGY, DONE, SOURCE, TEXT, finding, state
from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM


def cursor_event(command: str, cwd: Path) -> dict[str, Any]:
    return {"conversation_id": "c1", "generation_id": "g1", "hook_event_name":
            "beforeShellExecution", "command": command, "cwd": str(cwd),
            "workspace_roots": [str(cwd)]}


def cursor_hook(repo: GitRepo, llm: ScriptedLLM, payload: Any,
                **env: str) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    full = cli_environ({**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false"), **env})
    return subprocess.run([str(GIT_OCR), "hook", "cursor"], cwd=repo.path, input=data,
                          env=full, capture_output=True, text=True, timeout=120)


def test_a_blocked_commit_is_denied_with_the_findings_for_the_agent(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = cursor_hook(repo, llm, cursor_event("git commit -m x", repo.path))
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    assert answer["permission"] == "deny"
    assert answer["user_message"] == ("ocr-hook blocked this git commit: see the findings the"
                                      " agent got")
    lines = answer["agent_message"].splitlines()
    assert any(line.startswith("BLOCKING calc.py:2 [critical · bug] id ") for line in lines)
    assert f"  {TEXT}" in lines
    assert lines[-1].startswith("ocr-hook: the `git commit` did not run.")
    assert len(llm.requests) == 1 and state(repo) == before


def test_other_commands_and_passing_commits_are_allowed(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    p = cursor_hook(repo, llm, cursor_event("ls -la", repo.path))
    assert (p.returncode, json.loads(p.stdout)) == (0, {"permission": "allow"})
    p = cursor_hook(repo, llm, {"hook_event_name": "beforeReadFile", "file_path": "calc.py"})
    assert (p.returncode, json.loads(p.stdout)) == (0, {"permission": "allow"})
    assert llm.requests == []
    llm.tool_calls(("code_comment", finding(severity="low")), DONE)
    p = cursor_hook(repo, llm, cursor_event("git add -A && git commit -m x", repo.path))
    assert (p.returncode, json.loads(p.stdout)) == (0, {"permission": "allow"})
    assert len(llm.requests) == 1


@pytest.mark.parametrize(("on_error", "permission"), [("allow", "allow"), ("block", "deny")])
def test_a_malformed_event_follows_gate_on_error(repo: GitRepo, llm: ScriptedLLM,
                                                 on_error: str, permission: str) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    p = cursor_hook(repo, llm, "{not json", OCR_HOOK_GATE_ON_ERROR=on_error)
    assert p.returncode == 0
    assert json.loads(p.stdout)["permission"] == permission
    assert "NOT REVIEWED: the hook input is not a JSON object" in p.stderr
    assert llm.requests == []


def test_install_cursor_keeps_the_other_hooks_and_uninstall_removes_only_ours(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    path = repo.path / ".cursor" / "hooks.json"
    path.parent.mkdir()
    theirs = {"version": 1, "hooks": {"beforeShellExecution": [{"command": "./guard.sh"}],
                                      "afterFileEdit": [{"command": "prettier --write ."}]}}
    path.write_text(json.dumps(theirs), encoding="utf-8")
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["install", "--cursor"], {}, capsys)
    assert (rc, out) == (0, f"installed Cursor hook (beforeShellExecution): {path}\n")
    data = json.loads(path.read_text())
    assert data["hooks"]["beforeShellExecution"] == [{"command": "./guard.sh"},
                                                     {"command": "git ocr hook cursor"}]
    assert data["hooks"]["afterFileEdit"] == theirs["hooks"]["afterFileEdit"]
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()  # --cursor alone
    rc, out, _ = run_cli(["install", "--cursor"], {}, capsys)
    assert out == f"Cursor hook already installed: {path}\n"
    rc, out, _ = run_cli(["uninstall", "--cursor"], {}, capsys)
    assert (rc, out) == (0, f"removed Cursor hook: {path}\n")
    assert json.loads(path.read_text()) == theirs
