"""Whole reviews through ``cli.main`` with the Anthropic protocol and with quirky OpenAI-format
servers. Real: git repositories, HTTP, JSON, the review pipeline;
fake: the model's replies (tests/support/scripted_llm.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, SQL_LINE, sql_comment
from tests.support.scripted_llm import ScriptedLLM


def test_skeleton_review_passes_with_the_anthropic_protocol(
    repo: GitRepo, anthropic_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    anthropic_llm.tool_calls(("code_comment", sql_comment()))
    anthropic_llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    env = anthropic_llm.env()
    assert env["OCR_LLM_PROTOCOL"] == "anthropic"
    rc, out, err = run_cli(["review", "--format", "json"], env, capsys)
    data = json.loads(out)
    assert rc == 1, err
    assert data["verdict"] == "findings" and data["status"] == "complete"
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("app.py", "new", 12, 12)
    assert (c["severity"], c["category"]) == ("critical", "security")
    assert c["existing_code"].strip() == SQL_LINE
    files = {f["path"]: f for f in data["files"]}
    assert files["app.py"]["reviewed"] is True
    # the wire: Messages API path, headers, and tool_result blocks answering each tool_use id
    assert set(anthropic_llm.paths) == {"/v1/messages"}
    assert anthropic_llm.headers[0]["x-api-key"] == "test-token"
    assert anthropic_llm.headers[0]["anthropic-version"] == "2023-06-01"
    pairs = 0
    results: list[dict[str, Any]] = []
    for req in anthropic_llm.requests:
        msgs = req["messages"]
        assert msgs[0]["role"] == "user" and "system" in req
        for asst, user in zip(msgs, msgs[1:], strict=False):
            uses = [b["id"] for b in asst["content"] if asst["role"] == "assistant"
                    and b["type"] == "tool_use"]
            if uses:
                answered = [b for b in user["content"] if b["type"] == "tool_result"]
                assert [b["tool_use_id"] for b in answered] == uses  # one result per id
                results += answered
                pairs += 1
    assert pairs >= 1
    assert "Filed: app.py:12 (new side)" in [b["content"] for b in results]
    assert data["summary"]["input_tokens"] >= 200


def _openai_reply(*calls: dict[str, Any], content: Any = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": content, "tool_calls": list(calls),
                    **extra}}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}}


def test_malformed_tool_calls_get_error_results_and_the_review_completes(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    llm.reply(_openai_reply(
        {"id": "dup", "type": "function", "function": {"name": "file_read",
                                                       "arguments": '["app.py"]'}},
        {"id": "dup", "type": "function", "function": {"name": "file_read",
                                                       "arguments": "{not json"}},
        {"type": "function", "function": {"name": "", "arguments": "{}"}},
        {"id": "x4", "type": "function", "function": {"name": "file_read", "arguments": ""}},
        reasoning_content="Let me look around.",
    ))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], llm.env(), capsys)
    data = json.loads(out)
    assert rc == 0, err
    assert data["status"] == "complete"
    msgs = next(r["messages"] for r in llm.requests
                if any(m["role"] == "tool" for m in r["messages"]))
    asst = next(m for m in msgs if m["role"] == "assistant" and m.get("tool_calls"))
    ids = [c["id"] for c in asst["tool_calls"]]
    assert ids[:2] == ["dup", "dup_2"] and len(set(ids)) == 4
    assert asst["reasoning_content"] == "Let me look around."  # DeepSeek tool-call turn
    results = [m for m in msgs if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ids  # exactly one result per id
    assert all(m["content"].startswith("Error") for m in results)
    assert "file_read" in results[0]["content"] and '"file_path"' in results[0]["content"]
    assert "file_read" in results[1]["content"] and "invalid JSON" in results[1]["content"]


def test_review_counts_tokens_when_the_server_omits_usage_and_logs_request_stats(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    llm.reply({"error": {"message": "busy", "type": "server_error"}}, status=503,
              headers={"retry-after-ms": "1"})
    done = _openai_reply({"id": "c1", "type": "function",
                          "function": {"name": "task_done", "arguments": '{"state": "DONE"}'}})
    del done["usage"]
    llm.default = None
    llm.reply(done)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys)
    data = json.loads(out)
    assert rc == 0, err
    assert data["status"] == "complete"
    assert len(llm.requests) == 2  # the 503 and its retry
    assert data["summary"]["input_tokens"] > 500  # counted locally with tiktoken
    sessions = list((repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl"))
    records = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    [stats] = [r for r in records if r.get("type") == "llm_stats"]
    assert (stats["calls"], stats["requests"], stats["failures"]) == (1, 2, 0)
    assert stats["usage"]["estimated"] is True
    assert stats["usage"]["input"] == data["summary"]["input_tokens"]
