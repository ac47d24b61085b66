"""``git ocr hook claude-code``: Claude Code's PreToolUse hook on its Bash tool, and
``git ocr install|uninstall --claude-code``.

Real: git, the ``git-ocr`` console script run as its own process with the event JSON on stdin
(as Claude Code runs a command hook), HTTP to the loopback model. Fake: the model's replies.
Exit 2 is the only code that stops the agent's command (stderr goes to the agent); every
review leaves index, HEAD, refs and work tree as they were (``GitRepo.state``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

SOURCE = "def div(a, b):\n    return a // b\n"
BUGGY = "def div(a, b):\n    return a / b\n"
TEXT = "Division by zero when b is 0."
DONE = ("task_done", {"state": "DONE"})


def finding(path: str = "calc.py", severity: str = "critical") -> dict[str, Any]:
    return {"comments": [{"path": path, "content": TEXT, "existing_code": "    return a / b",
                          "severity": severity, "category": "bug"}]}


def event(command: str, cwd: Path) -> dict[str, Any]:
    return {"session_id": "s1", "transcript_path": "/dev/null", "cwd": str(cwd),
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "commit"}}


def hook(repo: GitRepo, llm: ScriptedLLM, payload: Any, cwd: Path | None = None,
         **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``git ocr hook claude-code`` process, run in the repository (Claude Code runs
    hooks in the project directory), ``payload`` (an event dict, or raw text) on stdin."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    full = cli_environ({**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false"), **env})
    return subprocess.run([str(GIT_OCR), "hook", "claude-code"], cwd=cwd or repo.path,
                          input=data, env=full, capture_output=True, text=True, timeout=120)


AGENT_LINE = ("ocr-hook: the `git commit` did not run. Fix the findings above and commit"
              " again; a finding that is not a problem: `git ocr dismiss ID --reason '…'`,"
              " then commit again.")


def assert_blocked(p: subprocess.CompletedProcess[str], path: str, line: int) -> None:
    """Exit 2, nothing on stdout (Claude Code hands only stderr to the agent), and on stderr,
    in this order: the finding with its place, severity and text, the verdict, the command
    that dismisses it, and what to do next (the last line)."""
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    m = re.search(rf"^BLOCKING {re.escape(path)}:{line} \[critical · bug\] id ([0-9a-f]{{12}})$",
                  p.stderr, re.MULTILINE)
    assert m, p.stderr
    fid = m.group(1)
    wanted = [m.group(0), f"  {TEXT}", "BLOCKED: 1 finding at or above high (blocking mode)",
              "ocr-hook: blocking findings: 1 at or above high",
              f"ocr-hook:   git ocr dismiss {fid} --reason '…'    # {path}:{line} [critical · bug]",
              AGENT_LINE]
    at = [lines.index(w) for w in wanted]
    assert at == sorted(at) and at[-1] == len(lines) - 1, p.stderr


def state(repo: GitRepo) -> dict[str, str]:
    """``GitRepo.state`` with the index compared by its entries (``ls-files --stage``), not
    its bytes: git itself rewrites the stat data of racily-clean entries on a later read."""
    found = {k: v for k, v in repo.state().items() if k != "index"}
    return {**found, "entries": repo.git("ls-files", "--stage")}


def user_message(llm: ScriptedLLM) -> str:
    [body] = llm.requests
    [user] = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return user


def test_git_commit_with_a_staged_critical_finding_exits_2_with_the_finding_on_stderr(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event("git commit -m x", repo.path))
    assert_blocked(p, "calc.py", 2)
    assert len(llm.requests) == 1
    assert '<file path="calc.py"' in user_message(llm)
    assert state(repo) == before


@pytest.mark.parametrize("command", ["git commit -m x 2>&1 | tail -3",
                                     "git commit -F- <<'EOF'\nFix it\nEOF",
                                     "if true; then git commit -m x; fi"])
def test_redirections_and_shell_keywords_around_the_commit_do_not_hide_it(
    repo: GitRepo, llm: ScriptedLLM, command: str,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding()), DONE)
    assert_blocked(hook(repo, llm, event(command, repo.path)), "calc.py", 2)


def test_a_passing_review_exits_0(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding(severity="low")), DONE)
    p = hook(repo, llm, event("git commit -m x", repo.path))
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert len(llm.requests) == 1


@pytest.mark.parametrize("command", [
    "ls -la", "git status && git diff --cached", "echo 'git commit -m x'",
    "git log --grep commit", "git commit --dry-run -m x",
])
def test_other_commands_exit_0_at_once_without_a_model_request(
    repo: GitRepo, llm: ScriptedLLM, command: str,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    p = hook(repo, llm, event(command, repo.path))
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    assert llm.requests == []


def test_another_tool_or_event_exits_0_without_a_request(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    e = {**event("", repo.path), "tool_name": "Write",
         "tool_input": {"file_path": "calc.py", "content": "git commit -m x"}}
    p = hook(repo, llm, e)
    assert (p.returncode, p.stderr, llm.requests) == (0, "", [])
    e = {**event("git commit -m x", repo.path), "hook_event_name": "PostToolUse"}
    p = hook(repo, llm, e)  # after the command: nothing left to stop
    assert (p.returncode, p.stderr, llm.requests) == (0, "", [])


@pytest.mark.parametrize("command", ["git commit -a -m x", "git commit --all -m x",
                                     "git commit -am 'fix it'",
                                     "git add -N x; FOO=1 git commit -qam \"a; b\"",
                                     "bash -c 'git status\ngit commit --all -m x'"])
def test_commit_all_reviews_tracked_work_tree_changes_without_touching_the_index(
    repo: GitRepo, llm: ScriptedLLM, command: str,
) -> None:
    repo.commit({"calc.py": SOURCE, "other.py": "x = 1\n"}, "base")
    repo.write({"calc.py": BUGGY, "new.py": "untracked = 1\n"})  # not staged; new.py untracked
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event(command, repo.path))
    assert_blocked(p, "calc.py", 2)
    user = user_message(llm)
    assert '<file path="calc.py"' in user and "new.py" not in user
    assert state(repo) == before
    assert repo.git("diff", "--cached", "--name-only") == ""


def test_plain_commit_does_not_review_unstaged_changes(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.write({"calc.py": BUGGY})  # unstaged: a plain `git commit` would not take it
    p = hook(repo, llm, event("git commit -m x", repo.path))
    assert p.returncode == 0, p.stderr
    assert llm.requests == []  # nothing staged: nothing to review


@pytest.mark.parametrize("command", ["git add calc.py && git commit -m x",
                                     "git add -A; git commit -m x",
                                     "cd sub && git add ../calc.py && cd .. && git commit -m x"])
def test_git_add_before_the_commit_is_taken_into_the_review_not_the_index(
    repo: GitRepo, llm: ScriptedLLM, command: str,
) -> None:
    repo.commit({"calc.py": SOURCE, "sub/keep.py": "K = 1\n"}, "base")
    repo.write({"calc.py": BUGGY})  # not staged yet: the command line stages it
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event(command, repo.path))
    assert_blocked(p, "calc.py", 2)
    assert '<file path="calc.py"' in user_message(llm)
    assert state(repo) == before
    assert repo.git("diff", "--cached", "--name-only") == ""


def test_an_interactive_git_add_is_not_replayed(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.write({"calc.py": BUGGY})
    p = hook(repo, llm, event("git add -p calc.py && git commit -m x", repo.path))
    assert p.returncode == 2, p.stderr  # never a PASS for what no review could see
    assert p.stderr.splitlines() == [
        "ocr-hook: NOT REVIEWED: `git add -p calc.py` before the commit changes the index in a"
        " way a review cannot replay; run it as a command of its own, then run the `git commit`"
        " again."]
    assert llm.requests == []


def test_git_dash_c_dir_and_config_options_review_that_repository(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event(f"git -C {repo.path.name} -c user.name=x commit -m x", tmp_path),
             cwd=elsewhere)
    assert_blocked(p, "calc.py", 2)
    assert len(llm.requests) == 1


def test_cd_then_commit_reviews_the_repository_cd_went_to(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"pkg/calc.py": SOURCE}, "base")
    repo.stage({"pkg/calc.py": BUGGY})
    llm.tool_calls(("code_comment", finding("pkg/calc.py")), DONE)
    p = hook(repo, llm, event(f"cd {repo.path.name}/pkg && npm test; git commit -m x", tmp_path))
    assert_blocked(p, "pkg/calc.py", 2)
    assert len(llm.requests) == 1


def test_amend_reviews_what_the_amended_commit_holds(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.commit({"calc.py": BUGGY}, "buggy")  # already committed; the amend keeps it
    repo.write({"later.py": "LATER = 1\n"})
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event("git commit -a --amend --no-edit", repo.path))
    assert_blocked(p, "calc.py", 2)
    user = user_message(llm)
    assert '<file path="calc.py"' in user and "later.py" not in user  # untracked: not taken
    assert state(repo) == before  # objects may be written; index, refs, files never


def test_amend_all_takes_tracked_changes_on_top_of_head(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"calc.py": SOURCE, "util.py": "X = 1\n"}, "base")
    repo.commit({"calc.py": BUGGY}, "buggy")
    repo.write({"util.py": "X = 2\n"})
    before = state(repo)
    llm.tool_calls(("code_comment", finding()), DONE)
    p = hook(repo, llm, event("git commit --amend -a --no-edit", repo.path))
    assert_blocked(p, "calc.py", 2)
    user = "".join(m["content"] for b in llm.requests for m in b["messages"]
                   if m["role"] == "user")
    assert '<file path="calc.py"' in user and '<file path="util.py"' in user
    assert state(repo) == before


def test_amend_with_nothing_new_against_a_clean_parent_passes(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    repo.commit({"calc.py": SOURCE + "\n# ok\n"}, "comment")
    llm.tool_calls(DONE)
    p = hook(repo, llm, event("git commit --amend -m 'better message'", repo.path))
    assert p.returncode == 0, p.stderr
    assert '<file path="calc.py"' in user_message(llm)  # HEAD^..amended: HEAD's change


@pytest.mark.parametrize("on_error, rc", [("", 0), ("allow", 0), ("block", 2)])
def test_a_malformed_event_follows_gate_on_error(
    repo: GitRepo, llm: ScriptedLLM, on_error: str, rc: int,
) -> None:
    repo.commit({"calc.py": SOURCE}, "base")
    env = {"OCR_HOOK_GATE_ON_ERROR": on_error} if on_error else {}
    p = hook(repo, llm, "{not json", **env)
    assert p.returncode == rc
    assert p.stderr.startswith("ocr-hook: NOT REVIEWED: UsageError: the hook input is not a"
                               " JSON object: "), p.stderr
    assert llm.requests == []


def test_a_malformed_event_follows_the_repository_setting(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({".ocr-hook.toml": '[gate]\non_error = "block"\n'}, "base")
    p = hook(repo, llm, '{"hook_event_name": "PreToolUse", "tool_name": 7}')
    assert p.returncode == 2
    assert p.stderr == ("ocr-hook: NOT REVIEWED: UsageError: the hook input has no"
                        " tool_name/tool_input of the PreToolUse event\n")


@pytest.mark.parametrize("on_error, rc", [("allow", 0), ("block", 2)])
def test_a_failing_model_follows_gate_on_error(
    repo: GitRepo, llm: ScriptedLLM, on_error: str, rc: int,
) -> None:
    repo.commit({"calc.py": SOURCE, ".ocr-hook.toml": f'[gate]\non_error = "{on_error}"\n'},
                "base")
    repo.stage({"calc.py": BUGGY})
    for _ in range(10):
        llm.reply({"error": {"message": "bad request"}}, status=400)
    p = hook(repo, llm, event("git commit -m x", repo.path))
    assert p.returncode == rc, p.stderr
    lines = p.stderr.splitlines()
    assert "not reviewed: calc.py (LLM request failed)" in lines
    assert "NOT REVIEWED: LLM rejected the request (HTTP 400): bad request" in lines
    assert len(llm.requests) == 1


SETTINGS = {"permissions": {"allow": ["Bash(npm test)"]}, "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}],
    "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command",
                                                         "command": "prettier --write ."}]}]}}
OURS = {"matcher": "Bash", "hooks": [{"type": "command", "command": "git ocr hook claude-code",
                                      "timeout": 360}]}


def test_install_claude_code_keeps_the_other_hooks_and_uninstall_removes_only_ours(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    settings = repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(SETTINGS, indent=4), encoding="utf-8")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["install", "--claude-code"], {}, capsys)
    assert (rc, out, err) == (0, f"installed Claude Code hook (PreToolUse, Bash): {settings}\n", "")
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data == {**SETTINGS, "hooks": {**SETTINGS["hooks"], "PreToolUse": [
        *SETTINGS["hooks"]["PreToolUse"], OURS]}}
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()  # alone: no git hook
    rc, out, _ = run_cli(["install", "--claude-code"], {}, capsys)
    assert (rc, out) == (0, f"Claude Code hook already installed: {settings}\n")
    assert json.loads(settings.read_text(encoding="utf-8")) == data
    rc, out, _ = run_cli(["uninstall", "--claude-code"], {}, capsys)
    assert (rc, out) == (0, f"removed Claude Code hook: {settings}\n")
    assert json.loads(settings.read_text(encoding="utf-8")) == SETTINGS
    rc, out, _ = run_cli(["uninstall", "--claude-code"], {}, capsys)
    assert (rc, out) == (0, "Claude Code hook not installed\n")


def test_install_claude_code_creates_the_file_and_refuses_a_broken_one(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    settings = repo.path / ".claude" / "settings.json"
    monkeypatch.chdir(repo.path)
    assert run_cli(["install", "--claude-code", "--pre-commit"], {}, capsys)[0] == 0
    assert json.loads(settings.read_text(encoding="utf-8")) == {"hooks": {"PreToolUse": [OURS]}}
    assert (repo.path / ".git" / "hooks" / "pre-commit").is_file()
    settings.write_text("{broken", encoding="utf-8")
    rc, out, err = run_cli(["install", "--claude-code"], {}, capsys)
    assert (rc, out) == (2, "")
    assert f"{settings} is not valid JSON" in err
    assert settings.read_text(encoding="utf-8") == "{broken"


@pytest.mark.parametrize("command, found", [
    ("git commit -m -a", [("/w", False, False, ())]),  # "-a" is the message
    ("git commit --message=--all --amend", [("/w", False, True, ())]),
    ("git -C a -C b commit -qam x", [("/w/a/b", True, False, ())]),
    ("cd sub; git --no-pager -c x=y commit -- one.py 'two words.py'",
     [("/w/sub", False, False, ("one.py", "two words.py"))]),
    ("git commit -C HEAD -a", [("/w", True, False, ())]),
    ("git commit -uall -m x", [("/w", False, False, ())]),
    ("make && /usr/bin/git commit --all --amend --no-edit || echo failed",
     [("/w", True, True, ())]),
    ("git stash && git commit-tree x && git commitx", []),
    ("git commit -m x 2>&1 | tail -3", [("/w", False, False, ())]),
    ("git commit -qm x >/dev/null 2> err.txt -- a.py", [("/w", False, False, ("a.py",))]),
    ("git commit -F- <<'EOF'\nFix it\nEOF", [("/w", False, False, ())]),
    ("if git diff --cached --quiet; then :; else git commit -m x; fi", [("/w", False, False, ())]),
    ("for f in a; do git commit -am x; done", [("/w", True, False, ())]),
    ("echo git commit # git commit", []),
])
def test_the_commits_a_command_line_runs(command: str,
                                         found: list[tuple[str, bool, bool, tuple[str, ...]]],
                                         ) -> None:
    from ocr_hook.hooks import commit_invocations

    calls = commit_invocations(command, Path("/w"))
    assert [(str(c.cwd), c.all, c.amend, c.paths) for c in calls] == found


@pytest.mark.parametrize("command, adds", [
    ("git add a.py 'b c.py' && git commit -m x", [[("/w", ("a.py", "b c.py"))]]),
    ("git -C d add -A -- x; cd e; git add -Nv y; git commit -am x",
     [[("/w/d", ("-A", "--", "x")), ("/w/e", ("-Nv", "y"))]]),
    ("git add -p && git commit; git add -i; git add --chmod=+x f; git commit",
     [[], [("/w", ("--chmod=+x", "f"))]]),
    ("git commit -m x && git add z", [[]]),
    ("git add a; git commit -m 1; git add b; git commit -m 2",
     [[("/w", ("a",))], [("/w", ("b",))]]),  # each commit takes the adds since the last one
])
def test_the_git_add_runs_before_a_commit_go_with_it(
    command: str, adds: list[list[tuple[str, tuple[str, ...]]]],
) -> None:
    from ocr_hook.hooks import commit_invocations

    calls = commit_invocations(command, Path("/w"))
    assert [[(str(d), a) for d, a in c.adds] for c in calls] == adds


@pytest.mark.parametrize("command, unseen", [
    ("git add -p && git commit; git commit", ["git add -p", "git add -p"]),
    ("git rm -q old.py && git commit -m x", ["git rm -q old.py"]),
    ("git add f && git commit -m x", [""]),
    ("git checkout -b fix && git commit -m x", [""]),
])
def test_a_staging_command_the_review_cannot_replay_is_named(
    command: str, unseen: list[str],
) -> None:
    from ocr_hook.hooks import commit_invocations

    assert [c.unseen for c in commit_invocations(command, Path("/w"))] == unseen


def test_here_document_lines_are_data_not_commands() -> None:
    from ocr_hook.hooks import commit_invocations

    command = "git commit -F- <<EOF\nfix\ngit commit hooks now run\ncd x\nEOF\ngit commit -m y"
    calls = commit_invocations(command, Path("/w"))
    assert [(str(c.cwd), c.paths) for c in calls] == [("/w", ()), ("/w", ())]


def test_the_agent_gate_has_the_git_hooks_token_budget(repo: GitRepo, llm: ScriptedLLM) -> None:
    """Without review.max_tokens_budget the agent's commits get the 300,000 tokens git hooks get:
    a request whose output limit alone does not fit is never sent."""
    repo.commit({"calc.py": SOURCE}, "base")
    repo.stage({"calc.py": BUGGY})
    p = hook(repo, llm, event("git commit -m x", repo.path),
             OCR_HOOK_LLM_MAX_OUTPUT_TOKENS="299990")
    assert p.returncode == 0, p.stderr  # gate.on_error = allow
    assert llm.requests == []
    assert "token budget of 300000 used up" in p.stderr
    # a budget of the repository's own wins
    (repo.path / ".ocr-hook.toml").write_text("[review]\nmax_tokens_budget = 0\n")
    repo.git("add", ".ocr-hook.toml")
    repo.git("commit", "-qm", "settings", "--", ".ocr-hook.toml")
    llm.tool_calls(DONE)
    p = hook(repo, llm, event("git commit -m x", repo.path),
             OCR_HOOK_LLM_MAX_OUTPUT_TOKENS="299990")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1
