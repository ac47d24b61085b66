"""Session logs (spec §12): one JSONL file per run in the git common dir, mode 0600, no keys or
auth headers, retention 50, and ``git ocr session list|show``. Real git and loopback HTTP;
fake: the model's replies."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.report.session import KEEP_SESSIONS, Session, sessions_dir
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

BUGGY = "def div(a, b):\n    return a / b\n"
API_KEY = "sk-test-0123456789abcdef"


def div_comment() -> dict[str, Any]:
    return {"comments": [{
        "path": "calc.py", "content": "Division by zero when b is 0.",
        "existing_code": "    return a / b", "suggestion_code": "", "severity": "high",
        "category": "bug"}]}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_review_writes_one_private_jsonl_session_without_secrets(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    llm.tool_calls(("file_read", {"file_path": "calc.py"}))
    llm.tool_calls(("code_comment", div_comment()), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    env = llm.env(OCR_LLM_TOKEN=API_KEY)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"], env, capsys,
                         review_filter=False)
    assert rc == 1
    sid = json.loads(out)["session_id"]
    directory = sessions_dir(repo.path / ".git")
    path = directory / f"{sid}.jsonl"
    assert [p.name for p in directory.iterdir()] == [path.name]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert llm.headers[0]["authorization"] == f"Bearer {API_KEY}"  # it was sent...
    raw = path.read_text(encoding="utf-8")
    assert API_KEY not in raw  # ...but never written
    assert "authorization" not in raw.lower() and "x-api-key" not in raw.lower()
    recs = records(path)
    kinds = [r["type"] for r in recs]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert kinds.count("llm_request") == 2 and kinds.count("llm_response") == 2
    start = recs[0]
    assert (start["mode"], start["stage"], start["model"], start["effort"]) == (
        "staged", "review", "scripted-model", "low")
    response = next(r for r in recs if r["type"] == "llm_response")
    assert response["usage"]["input"] == 100 and response["usage"]["output"] == 20
    assert isinstance(response["latency_s"], float)
    tools = [r["tool"] for r in recs if r["type"] == "tool_call"]
    assert tools == ["file_read", "code_comment", "task_done"]
    read = next(r for r in recs if r["type"] == "tool_call")
    assert read["ok"] is True
    assert json.loads(read["arguments"]) == {"file_path": "calc.py"}
    assert read["result"].startswith("File: calc.py (Total lines: 2)\n")
    first = next(r for r in recs if r["type"] == "llm_request")
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert '<file path="calc.py"' in first["prompt"][1]["content"]
    second = [r for r in recs if r["type"] == "llm_request"][1]
    assert "prompt" not in second  # the prompt is kept once; later turns are in the records
    calls = [r for r in recs if r["type"] == "llm_response"][1]["calls"]
    assert [c["name"] for c in calls] == ["code_comment", "task_done"]
    assert json.loads(calls[0]["arguments"]) == div_comment()
    [c] = [r for r in recs if r["type"] == "comment"]
    assert (c["path"], c["start_line"], c["severity"], c["category"]) == (
        "calc.py", 2, "high", "bug")
    end = recs[-1]
    assert (end["status"], end["verdict"], end["findings"], end["llm_calls"]) == (
        "complete", "findings", 1, 2)

    # git ocr session list / show
    rc, out, _ = run_cli(["session", "list"], {}, capsys)
    assert rc == 0
    header, row = out.splitlines()
    assert header.split() == ["ID", "STARTED", "STAGE", "MODEL", "STATUS", "VERDICT",
                              "FINDINGS", "LLM", "TIME"]
    assert row.startswith(sid) and " review " in row and " complete " in row
    assert row.split()[-3:-1] == ["1", "2"]
    rc, out, _ = run_cli(["session", "list", "--json"], {}, capsys)
    summary = json.loads(out)
    assert (summary["id"], summary["findings"], summary["llm_calls"]) == (sid, 1, 2)
    rc, out, _ = run_cli(["session", "show", sid[:-2]], {}, capsys)  # a unique prefix is enough
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == len(recs)
    assert any(" comment    calc.py:2 [high · bug] Division by zero when b is 0. id " in ln
               for ln in lines)
    assert any(" result     BLOCKED: 1 finding at or above high (blocking mode); 1 file diff(s)"
               " kept for --html" in ln for ln in lines)
    assert any(" tool_call  " in ln and " file_read " in ln for ln in lines)
    rc, out, _ = run_cli(["session", "show", "--json", sid], {}, capsys)
    assert out == raw
    rc, out, err = run_cli(["session", "show", "19990101-000000-abcdef"], {}, capsys)
    assert rc == 2 and out == ""
    assert err == ("ocr-hook: no session '19990101-000000-abcdef' (see `git ocr session list`)\n")


def test_only_the_newest_fifty_sessions_are_kept(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"calc.py": BUGGY})
    directory = sessions_dir(repo.path / ".git")
    directory.mkdir(parents=True)
    old = [f"20200101-0000{i:02d}-000000" for i in range(KEEP_SESSIONS + 2)]
    for sid in old:
        (directory / f"{sid}.jsonl").write_text('{"type": "start", "ts": 1}\n')
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                         review_filter=False)
    sid = json.loads(out)["session_id"]
    left = sorted(p.stem for p in directory.iterdir())
    assert len(left) == KEEP_SESSIONS
    assert left == sorted([*old[3:], sid])


def test_a_linked_worktree_writes_to_the_common_dir(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    wt = tmp_path / "wt"
    repo.linked_worktree(wt)
    (wt / "calc.py").write_text(BUGGY)
    repo.git("-C", str(wt), "add", "calc.py")
    monkeypatch.chdir(wt)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                         review_filter=False)
    sid = json.loads(out)["session_id"]
    assert (sessions_dir(repo.path / ".git") / f"{sid}.jsonl").is_file()


def test_record_drops_credential_keys_at_any_depth_and_blanks_the_key(tmp_path: Path) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    s = Session("x", tmp_path / "s" / "x.jsonl", secret_values=["sk-secret-value"],
                observer=lambda kind, data: seen.append((kind, dict(data))))
    s.record("llm_request", {
        "headers": {"Authorization": "Bearer sk-secret-value", "Accept": "json"},
        "body": ["echo sk-secret-value", {"api_key": "sk-secret-value", "n": 1}],
    })
    s.close()
    [rec] = records(tmp_path / "s" / "x.jsonl")
    assert rec["type"] == "llm_request"
    assert rec["headers"] == {"Accept": "json"}
    assert rec["body"] == ["echo [REDACTED]", {"n": 1}]
    assert seen[0][0] == "llm_request"
    s.record("late", {})  # after close: ignored, no error


def test_a_record_is_one_line_of_valid_json_with_no_raw_control_character(
    tmp_path: Path,
) -> None:
    """A path that is not UTF-8 is stored shown (``\\xNN``, inside valid JSON), and the model's
    control, format and separator characters as JSON escapes: the line splits only at its
    newline and ``cat`` of the file shows no raw control character."""
    path = tmp_path / "s" / "x.jsonl"
    s = Session("x", path)
    content = "A\x1b[2J\x9b1m\u202eB\u2028C\x85D\rE"
    s.record("comment", {"path": "caf\udce9.py", "content": content})
    s.close()
    raw = path.read_bytes().decode("utf-8")
    assert raw.count("\n") == 1 and raw.endswith("\n")
    assert all(ch not in raw for ch in ("\x1b", "\x9b", "\u202e", "\u2028", "\x85", "\r"))
    assert '"path": "caf\\\\xe9.py"' in raw
    assert '"content": "A\\u001b[2J\\u009b1m\\u202eB\\u2028C\\u0085D\\rE"' in raw
    [rec] = records(path)
    assert (rec["path"], rec["content"]) == ("caf\\xe9.py", content)
