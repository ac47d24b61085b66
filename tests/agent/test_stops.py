"""Stop reasons the review honours (spec §6.5), end to end through ``cli.main`` on both wire
protocols: a reply cut at the output limit is never executed, a group without a final answer
is not reviewed, and neither is cached.

Real: git repositories, HTTP to the loopback model server (OpenAI and Anthropic formats), the
cache directory, JSON output, session logs. Fake: the model's replies (ScriptedLLM). The review
filter is off so request counts are the loop's own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

APP = "def price(item):\n    return item.cost * 2\n"
CUT_ARGS = '{"comments": [{"path": "app.py", "content": "cost can be No'
COMMENT = ("code_comment", {"comments": [{
    "path": "app.py", "content": "cost may be None here.", "existing_code": "return item.cost * 2",
    "severity": "high", "category": "bug"}]})
DONE = ("task_done", {"state": "DONE"})
FIND = ("file_find", {"query_name": "app"})


@pytest.fixture(params=["openai", "anthropic"])
def model(request: pytest.FixtureRequest) -> Iterator[ScriptedLLM]:
    server = ScriptedLLM(request.param)
    yield server
    server.close()


def cut_reply(llm: ScriptedLLM) -> dict[str, Any]:
    """A turn stopped on the output limit in the middle of a code_comment call."""
    if llm.protocol == "anthropic":
        return {"id": "msg_x", "type": "message", "role": "assistant", "model": "scripted",
                "content": [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:8]}",
                             "name": "code_comment", "input": {}}],
                "stop_reason": "max_tokens", "usage": {"input_tokens": 100, "output_tokens": 50}}
    call = {"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
            "function": {"name": "code_comment", "arguments": CUT_ARGS}}
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}


def output_limit_of(body: dict[str, Any]) -> int:
    return int(body["max_tokens"])  # loopback OpenAI servers get max_tokens, as Anthropic does


def review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], *args: str, **env: str,
           ) -> tuple[int, dict[str, Any], str]:
    monkeypatch.chdir(repo.path)
    return run_json(["review", "--format", "json", "--effort", "low", *args], llm.env(**env),
                    capsys, review_filter=False)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries, in order (both wire formats)."""
    out: list[str] = []
    for m in body["messages"]:
        if m["role"] == "tool":
            out.append(m["content"])
        elif isinstance(m.get("content"), list):
            out += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return out


def test_a_cut_turn_is_retried_once_with_twice_the_limit(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.reply(cut_reply(model))
    model.tool_calls(COMMENT, DONE)
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--no-cache")
    assert (rc, data["status"], data["verdict"]) == (1, "complete", "findings")
    assert [(c["path"], c["start_line"]) for c in data["comments"]] == [("app.py", 2)]
    first, second = model.requests
    assert (output_limit_of(first), output_limit_of(second)) == (16384, 32768)
    # the cut call got no answer: the retry is the same conversation, not an argument error
    assert second["messages"] == first["messages"] and tool_results(second) == []


def test_a_second_cut_leaves_the_group_unreviewed_and_uncached(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.reply(cut_reply(model))
    model.reply(cut_reply(model))
    rc, data, err = review(repo, model, monkeypatch, capsys, OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["status"], data["verdict"]) == (3, "failed", "incomplete")
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("app.py", False, "output_limit")]
    assert "NOT REVIEWED: the model's reply stopped at the output limit" in err
    assert [output_limit_of(b) for b in model.requests] == [16384, 32768]
    assert all(tool_results(b) == [] for b in model.requests)
    # an identical re-run asks the model again (default reply: task_done)
    rc, data, _ = review(repo, model, monkeypatch, capsys, OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["status"], len(model.requests)) == (0, "complete", 3)


def test_no_room_under_the_cap_means_no_retry(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.reply(cut_reply(model))
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--no-cache",
                         OCR_HOOK_LLM_MAX_OUTPUT_TOKENS="4000",
                         OCR_HOOK_LLM_MAX_OUTPUT_TOKENS_CAP="4000")
    assert (rc, data["status"], len(model.requests)) == (0, "failed", 1)
    assert data["files"][0]["reason"] == "output_limit"
    assert "4000 tokens" in json.dumps(data["warnings"])


def test_a_model_that_never_finishes_is_not_reviewed_and_not_cached(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.tool_calls(FIND)
    model.tool_calls(COMMENT)  # the grace turn files a comment but never calls task_done
    rc, data, err = review(repo, model, monkeypatch, capsys, "--max-tools", "1",
                           "--fail-on", "critical", OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["status"], data["verdict"]) == (3, "failed", "incomplete")
    assert data["files"][0]["reason"] == "max_rounds"
    assert [c["start_line"] for c in data["comments"]] == [2]  # its comment is kept
    assert "without finishing" in err
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--max-tools", "1",
                         "--fail-on", "critical", OCR_HOOK_GATE_ON_ERROR="block")
    assert (rc, data["status"], len(model.requests)) == (0, "complete", 3)


def test_a_grace_turn_with_a_disallowed_tool_is_no_final_answer(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.tool_calls(FIND)
    model.tool_calls(FIND)
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--no-cache", "--max-tools", "1")
    assert (rc, data["status"], data["files"][0]["reason"]) == (0, "failed", "max_rounds")
    assert len(model.requests) == 2


def test_last_comment_and_task_done_in_one_reply_finish_in_one_request(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.tool_calls(COMMENT, DONE)
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--no-cache")
    assert (rc, data["status"], len(model.requests)) == (1, "complete", 1)
    assert [(c["start_line"], c["end_line"]) for c in data["comments"]] == [(2, 2)]


def reasoning_cut(llm: ScriptedLLM) -> dict[str, Any]:
    """A reasoning model that spent the whole output limit thinking: no answer, no call."""
    if llm.protocol == "anthropic":
        return {"id": "msg_x", "type": "message", "role": "assistant", "model": "scripted",
                "content": [{"type": "thinking", "thinking": "Let me check every caller",
                             "signature": "sig"}],
                "stop_reason": "max_tokens", "usage": {"input_tokens": 100, "output_tokens": 50}}
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": None,
                                     "reasoning_content": "Let me check every caller"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}


def test_a_reasoning_model_cut_while_thinking_is_retried_not_nudged(
    repo: GitRepo, model: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app.py": APP})
    model.reply(reasoning_cut(model))
    model.tool_calls(DONE)
    rc, data, _ = review(repo, model, monkeypatch, capsys, "--no-cache")
    assert (rc, data["status"], len(model.requests)) == (0, "complete", 2)
    first, second = model.requests
    assert second["messages"] == first["messages"]  # no nudge, no empty assistant turn
    assert (output_limit_of(first), output_limit_of(second)) == (16384, 32768)
