"""Whole reviews against a hostile or broken model (spec §8.2, §11.3, §13.3): lone surrogates in
its replies, a reply trickled one byte a second, comments on paths outside the change, and a
flood of comments. Each review completes or is reported incomplete with its reason, and leaves
the index, work tree and refs as they were. Real: git repositories, HTTP to loopback servers
(tests/support/scripted_llm.py, tests/support/trickle_server.py), ``cli.main``; fake: the
model's replies."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, SQL_LINE
from tests.support.scripted_llm import ScriptedLLM, openai_tool_calls
from tests.support.trickle_server import TrickleServer

FLAGS = ["review", "--format", "json", "--effort", "low", "--no-cache"]


def comment(path: str, content: str, quote: str = "        " + SQL_LINE,
            severity: str = "critical") -> dict[str, Any]:
    return {"path": path, "content": content, "existing_code": quote,
            "severity": severity, "category": "security"}


def tool_results(llm: ScriptedLLM) -> list[str]:
    """The text of every tool result the model was sent, both protocols, each once (a later
    request repeats the earlier ones in its history)."""
    out: list[str] = []
    for req in llm.requests:
        for m in req.get("messages", []):
            if m.get("role") == "tool":
                out.append(m["content"])
            elif isinstance(m.get("content"), list):
                out += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return list(dict.fromkeys(out))


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_lone_surrogates_from_the_model_become_u_fffd_and_the_review_completes(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    protocol: str,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    before = repo.state()
    llm = ScriptedLLM(protocol)
    try:
        args = {"comments": [comment("app.py", "SQL injection \ud800 here.")]}
        if protocol == "anthropic":
            body: dict[str, Any] = {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5},
                "content": [{"type": "text", "text": "Filing \udfff now."},
                            {"type": "tool_use", "id": "toolu_1", "name": "code_comment",
                             "input": args}]}
        else:
            body = openai_tool_calls(("code_comment", json.dumps(args, ensure_ascii=False)),
                                     content="Filing \udfff now.")
        raw = json.dumps(body).encode()  # ASCII JSON carrying "\ud800" and "\udfff" escapes
        assert b"\\ud800" in raw and b"\\udfff" in raw
        llm.reply(raw)
        llm.tool_calls(("task_done", {"state": "DONE"}))
        monkeypatch.chdir(repo.path)
        rc, data, err = run_json(FLAGS, llm.env(), capsys, review_filter=False)
    finally:
        llm.close()
    assert (rc, data["status"], data["verdict"]) == (1, "complete", "findings"), err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["content"]) == ("app.py", 12, "SQL injection \ufffd here.")
    assert len(llm.requests) == 2  # the request after the reply was sent: the group went on
    assert "Filing \ufffd now." in json.dumps(llm.requests[1], ensure_ascii=False)
    assert "Filed: app.py:12 (new side)" in tool_results(llm)
    assert repo.state() == before


def test_a_model_trickling_one_byte_a_second_ends_at_llm_timeout_s(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    before = repo.state()
    server = TrickleServer(openai_tool_calls(("task_done", {"state": "DONE"})), interval_s=1.0)
    env = {"OCR_LLM_URL": server.url("openai"), "OCR_LLM_MODEL": "m", "OCR_LLM_TOKEN": "t",
           "OCR_HOOK_LLM_TIMEOUT_S": "2"}  # llm.max_retries keeps its default, 3
    monkeypatch.chdir(repo.path)
    try:
        t0 = time.monotonic()
        rc, data, err = run_json(FLAGS, env, capsys, review_filter=False)
        elapsed = time.monotonic() - t0
    finally:
        server.close()
    assert elapsed < 3.0  # llm.timeout_s + 1 s
    why = "LLM request timed out after 2s (llm.timeout_s)"
    assert (rc, data["status"], data["verdict"]) == (0, "failed", "incomplete")
    assert {f["path"]: (f["reviewed"], f["reason"]) for f in data["files"]}["app.py"] == (
        False, "llm_error")
    assert f"ocr-hook: NOT REVIEWED: {why}" in err.splitlines()
    assert server.requests == 1
    assert repo.state() == before


def test_comments_outside_the_change_are_dropped_with_a_warning_and_never_block(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n", "notes.txt": "a\n"}, "init")
    repo.stage({"app.py": APP_PY, "notes.txt": "a\nb\n"})  # notes.txt: changed, not reviewed
    before = repo.state()
    outside = ["../../etc/passwd", "README.md", "notes.txt"]
    filed = [comment("../../etc/passwd", "Root has no password.", "root::0:0:root:/root:"),
             comment("README.md", "Say more than hello.", "hello", "high"),
             comment("notes.txt", "b is wrong.", "b", "high"),
             comment("app.py", "Name the query.", severity="low")]
    for _format in ("json", "sarif"):  # one scripted review per output format
        llm.tool_calls(("code_comment", {"comments": filed}))
        llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(FLAGS, llm.env(), capsys, review_filter=False)
    assert (rc, data["status"], data["verdict"]) == (0, "complete", "pass"), err
    assert [(c["path"], c["start_line"], c["severity"]) for c in data["comments"]] == [
        ("app.py", 12, "low")]
    warned = [w for w in data["warnings"] if w["type"] == "comment_outside_change"]
    assert [w["file"] for w in warned] == outside
    assert warned[0]["message"] == ("comment on '../../etc/passwd' dropped: not a file under"
                                    " review (comments count only on the reviewed change)")
    assert [ln for ln in err.splitlines() if "dropped" in ln] == [
        f"ocr-hook: {w['message']}" for w in warned]
    [result] = [t for t in tool_results(llm) if t.startswith("Filed 4 comments:")]
    assert result.splitlines()[1:] == [
        *(f"{i}. {p}: not filed: not a file under review; comment on the reviewed change that"
          " causes the problem" for i, p in enumerate(outside, 1)),
        "4. app.py:12 (new side)"]
    rc, out, _ = run_cli([*FLAGS[:2], "sarif", *FLAGS[3:]], llm.env(), capsys,
                         review_filter=False)
    sarif = json.loads(out)
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in sarif["runs"][0]["results"] for loc in r["locations"]]
    assert (rc, uris) == (0, ["app.py"])
    assert re.findall(r'"uri": "([^"]*)"', out) == ["app.py"]  # anywhere in the log
    assert repo.state() == before


def test_a_flood_of_comments_is_capped_before_the_filter_and_reported(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    before = repo.state()
    flood = [comment("app.py", f"problem {i}", "cursor.execute(query)", "low") for i in range(250)]
    llm.tool_calls(("code_comment", {"comments": flood}))
    llm.tool_calls(("code_comment", {"comments": flood[:10]}))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    llm.reply(openai_tool_calls(("approve_all_comments", {})), match="<comments>")
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(FLAGS, llm.env(), capsys, review_filter=True)
    # not every comment was filed: the group is not fully reviewed (gate.on_error decides)
    assert (rc, data["status"]) == (0, "failed"), err
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("app.py", False, "comments_capped")]
    assert data["incomplete_reasons"] == [
        "NOT REVIEWED: the model filed more comments than one group may hold; the later ones"
        " were not filed"]
    assert len(data["comments"]) == 200
    assert [c["content"] for c in data["comments"]] == [f"problem {i}" for i in range(200)]
    [capped] = [w for w in data["warnings"] if w["type"] == "comments_capped"]
    assert re.fullmatch(r"the model filed more than 200 comments in group '.+'; the first 200"
                        r" were kept, 60 later ones were not filed", capped["message"])
    assert f"ocr-hook: {capped['message']}" in err.splitlines()
    [filter_request] = [r for r in llm.requests if "<comments>" in json.dumps(r)]
    user = filter_request["messages"][-1]["content"]
    assert len(re.findall(r'"id": "[0-9a-f]{12}"', user)) == 200
    results = [t for t in tool_results(llm) if t.startswith("Filed ")]
    cap_line = ("app.py: not filed: this group's limit of 200 comments is reached; finish the"
                " review with task_done")
    assert results[0].splitlines()[200:202] == ["200. app.py:13 (new side)", f"201. {cap_line}"]
    assert results[1].splitlines()[1:] == [f"{i}. {cap_line}" for i in range(1, 11)]
    assert repo.state() == before
