"""The one-request hook path: a 1-file staged change reviewed by the pre-commit hook at the
default settings, the model filing its comment and calling ``task_done`` in one reply, sends
exactly one request (the group's main request) and nothing else: no plan, no grouping, no
review filter, no second round.

Real: git, the hook command (``git ocr hook pre-commit`` through ``cli.main``, and a real
``git commit`` firing the native hook that ``git ocr install`` wrote, which runs the
installed ``git-ocr``), HTTP, the session log. Fake: the model's replies. No setting is
overridden (effort, review filter and gate are the defaults), so a default that adds a request
to this path fails here. When the scripted queue is empty the server answers ``task_done``,
so an extra request would be counted, not hang.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from ocr_hook.tools.builtin import TOOLS
from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

SOURCE = "".join(f"def f_{j}(x):\n    return x + {j}\n\n\n" for j in range(10))
EDITED = SOURCE.replace("return x + 5\n", "return x - 5\n")
LINE = 22  # "    return x - 5" in EDITED
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # git and sh, not the venv: the hook finds git-ocr


def comment(severity: str) -> dict[str, Any]:
    return {"comments": [{"path": "app.py", "existing_code": "return x - 5",
                          "severity": severity, "category": "bug",
                          "content": "Subtracts instead of adding."}]}


def staged_edit(repo: GitRepo) -> None:
    repo.commit({"app.py": SOURCE}, "base")
    repo.stage({"app.py": EDITED})
    assert EDITED.splitlines()[LINE - 1] == "    return x - 5"


def session_requests(repo: GitRepo, session_id: str) -> list[dict[str, Any]]:
    path = repo.path / ".git" / "ocr-hook" / "sessions" / f"{session_id}.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in records if r.get("type") == "llm_request"]


def assert_one_main_request(llm: ScriptedLLM, added: str = "    return x - 5") -> None:
    """Exactly one request reached the server, and it is the group's main review request: it
    offers the review tools and holds the staged diff of app.py with its changed line
    (``added``, at line 22)."""
    assert len(llm.requests) == 1
    [body] = llm.requests
    assert llm.paths == ["/v1/chat/completions"]
    assert {t["function"]["name"] for t in body["tools"]} == set(TOOLS)
    [user] = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert user.count('<file path="') == 1 and '<file path="app.py"' in user
    assert f"{LINE} +{added}" in user


@pytest.mark.parametrize("severity, rc, verdict", [
    ("critical", 1, "findings"),
    ("high", 1, "findings"),  # gate.fail_on defaults to high: blocks
    ("medium", 0, "pass"),
    ("low", 0, "pass"),
])
def test_hook_files_a_comment_and_finishes_in_one_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], severity: str, rc: int, verdict: str,
) -> None:
    staged_edit(repo)
    llm.tool_calls(("code_comment", comment(severity)), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    code, data, err = run_json(["hook", "pre-commit", "--format", "json"], llm.env(), capsys)
    assert code == rc, err
    assert (data["status"], data["verdict"]) == ("complete", verdict)
    assert_one_main_request(llm)
    assert data["summary"]["llm_calls"] == 1
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("app.py", "new", LINE, LINE)
    assert (c["severity"], c["category"]) == (severity, "bug")
    assert c["existing_code"].strip() == "return x - 5"
    assert [(r["task"], r["round"]) for r in session_requests(repo, data["session_id"])] == [
        ("main", 1)]


def test_hook_with_no_finding_passes_in_one_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    staged_edit(repo)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    code, data, err = run_json(["hook", "pre-commit", "--format", "json"], llm.env(), capsys)
    assert code == 0, err
    assert (data["status"], data["verdict"], data["comments"]) == ("complete", "pass", [])
    assert_one_main_request(llm)
    assert [r["task"] for r in session_requests(repo, data["session_id"])] == ["main"]


def commit(repo: GitRepo, llm: ScriptedLLM, message: str) -> subprocess.CompletedProcess[str]:
    env = {**repo.env, **llm.env(), "PATH": SYSTEM_PATH}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=60)


def test_git_commit_through_the_native_hook_sends_one_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    staged_edit(repo)
    base = repo.git("rev-parse", "HEAD").strip()
    monkeypatch.chdir(repo.path)
    assert run_cli(["install"], {}, capsys)[0] == 0

    llm.tool_calls(("code_comment", comment("high")), ("task_done", {"state": "DONE"}))
    p = commit(repo, llm, "blocked")
    assert p.returncode == 1, p.stderr
    assert repo.git("rev-parse", "HEAD").strip() == base
    assert f"BLOCKING app.py:{LINE} [high · bug]" in p.stderr
    assert "commit blocked: 1 finding(s) at or above high" in p.stderr
    assert_one_main_request(llm)

    llm.requests.clear()
    llm.paths.clear()
    repo.stage({"app.py": SOURCE.replace("return x + 5\n", "return x + 55\n")})  # a new snapshot
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = commit(repo, llm, "passes")
    assert p.returncode == 0, p.stderr
    assert repo.git("log", "-1", "--format=%s").strip() == "passes"
    assert_one_main_request(llm, "    return x + 55")
