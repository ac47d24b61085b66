"""Anthropic Messages client against the loopback server: headers and version, tool_use /
tool_result blocks, thinking blocks resent unchanged, malformed tool_use blocks, cache usage.
Real: HTTP and JSON; fake: the model's replies."""

from __future__ import annotations

from typing import Any

import pytest

from ocr_hook.llm import make_client
from ocr_hook.llm.anthropic import messages_url
from ocr_hook.llm.types import Endpoint, Message, ToolSpec
from ocr_hook.util.tokens import count_tokens
from tests.support.scripted_llm import ScriptedLLM, anthropic_text, anthropic_tool_calls

TOOL = ToolSpec("file_read", "Read a file.", {"type": "object", "properties": {
    "file_path": {"type": "string"}}, "required": ["file_path"]})
MSGS = [Message("system", "You review code."), Message("user", "Review app.py")]


def endpoint(server: ScriptedLLM, **kw: Any) -> Endpoint:
    return Endpoint(url=server.url, model="claude-test", protocol="anthropic",
                    api_key="ant-key", **kw)


@pytest.mark.parametrize(("base", "url"), [
    ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages"),
    ("https://api.deepseek.com/anthropic", "https://api.deepseek.com/anthropic/v1/messages"),
    ("http://proxy/v1/", "http://proxy/v1/messages"),
    ("http://proxy/v1/messages", "http://proxy/v1/messages"),
])
def test_messages_url(base: str, url: str) -> None:
    assert messages_url(base) == url


def test_headers_version_and_body_shape(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply(anthropic_text("ok"))
    make_client(endpoint(anthropic_llm, anthropic_version="2026-10-21")).complete(MSGS, [TOOL])
    h = anthropic_llm.headers[0]
    assert anthropic_llm.paths == ["/v1/messages"]
    assert (h["x-api-key"], h["anthropic-version"]) == ("ant-key", "2026-10-21")
    assert "authorization" not in h
    body = anthropic_llm.requests[0]
    assert set(body) == {"model", "max_tokens", "messages", "system", "tools"}
    # prompt caching (on by default): breakpoints on the last tool and the system prompt; a
    # single request (no cache_key) leaves its message unmarked
    assert body["system"] == [{"type": "text", "text": "You review code.",
                               "cache_control": {"type": "ephemeral"}}]
    assert body["max_tokens"] == 16384
    assert body["messages"] == [{"role": "user", "content": [{"type": "text",
                                                              "text": "Review app.py"}]}]
    assert body["tools"] == [{"name": "file_read", "description": "Read a file.",
                              "input_schema": TOOL.parameters,
                              "cache_control": {"type": "ephemeral"}}]


def test_prompt_caching_off_sends_the_plain_body(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply(anthropic_text("ok"))
    make_client(endpoint(anthropic_llm, prompt_caching=False)).complete(
        MSGS, [TOOL], cache_key="main/app.py")
    body = anthropic_llm.requests[0]
    assert body["system"] == "You review code."
    assert body["tools"] == [{"name": "file_read", "description": "Read a file.",
                              "input_schema": TOOL.parameters}]
    assert "cache_control" not in str(body)


def test_default_anthropic_version_is_2023_06_01(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply(anthropic_text("ok"))
    make_client(Endpoint(url=anthropic_llm.url, model="m", protocol="anthropic",
                         api_key="k")).complete(MSGS)
    assert anthropic_llm.headers[0]["anthropic-version"] == "2023-06-01"


def test_thinking_blocks_are_resent_unchanged_with_tool_results(
        anthropic_llm: ScriptedLLM) -> None:
    body = anthropic_tool_calls(("file_read", {"file_path": "a.py"}), text="Reading.",
                                thinking="Check a.py for SQL.")
    body["content"].insert(1, {"type": "redacted_thinking", "data": "opaque=="})
    anthropic_llm.reply(body)
    anthropic_llm.reply(anthropic_text("done"))
    client = make_client(endpoint(anthropic_llm))
    first = client.complete(MSGS, [TOOL])
    assert first.message.reasoning == "Check a.py for SQL."
    [call] = first.message.tool_calls
    assert call.arguments == {"file_path": "a.py"} and call.parse_error is None
    results = [Message("tool", "1: x = 1", tool_call_id=call.id),
               Message("user", "Continue.")]
    client.complete([*MSGS, first.message, *results], [TOOL])
    sent = anthropic_llm.requests[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": body["content"]}
    assert sent[1]["content"][0] == {"type": "thinking", "thinking": "Check a.py for SQL.",
                                     "signature": "sig-abc"}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": "1: x = 1"},
        {"type": "text", "text": "Continue."}]}


def test_error_results_carry_is_error(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply(anthropic_text("ok"))
    msgs = [*MSGS, Message("assistant", "calling"), Message("tool", "Error: no such file",
                                                             tool_call_id="toolu_1",
                                                             is_error=True)]
    make_client(endpoint(anthropic_llm)).complete(msgs)
    assert anthropic_llm.requests[0]["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Error: no such file",
         "is_error": True}]


def test_malformed_tool_use_blocks(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply({"id": "m", "type": "message", "role": "assistant", "model": "m",
                         "stop_reason": "tool_use", "usage": {"input_tokens": 5,
                                                              "output_tokens": 1},
                         "content": [
                             {"type": "text", "text": ""},
                             {"type": "tool_use", "id": "toolu_a", "name": "file_read",
                              "input": {"file_path": "a.py"}},
                             {"type": "tool_use", "id": "toolu_a", "name": "file_read",
                              "input": ["a.py"]},
                             {"type": "tool_use", "name": "", "input": None},
                             {"type": "tool_use", "id": "toolu_d", "name": "file_read",
                              "input": '{"file_path": "d.py"}'},
                         ]})
    anthropic_llm.reply(anthropic_text("ok"))
    client = make_client(endpoint(anthropic_llm))
    turn = client.complete(MSGS, [TOOL])
    calls = turn.message.tool_calls
    assert [c.id for c in calls][:2] == ["toolu_a", "toolu_a_2"]
    assert calls[2].id.startswith("toolu_") and calls[2].synthetic_id
    assert [c.parse_error is None for c in calls] == [True, False, False, True]
    assert calls[3].arguments == {"file_path": "d.py"}  # a proxy that sent input as JSON text
    results = [Message("tool", "r", tool_call_id=c.id) for c in calls]
    client.complete([*MSGS, turn.message, *results], [TOOL])
    resent = anthropic_llm.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in resent] == ["tool_use"] * 4  # the empty text block is dropped
    assert [b["id"] for b in resent] == [c.id for c in calls]
    assert [b["input"] for b in resent][1:3] == [{}, {}]
    tool_ids = [b["tool_use_id"] for b in anthropic_llm.requests[1]["messages"][2]["content"]]
    assert tool_ids == [c.id for c in calls]


def test_usage_with_cache_read_and_write(anthropic_llm: ScriptedLLM) -> None:
    body = anthropic_text("ok")
    body["usage"] = {"input_tokens": 12, "output_tokens": 30,
                     "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 8000}
    anthropic_llm.reply(body)
    anthropic_llm.reply(body)
    client = make_client(endpoint(anthropic_llm))
    u = client.complete(MSGS).usage + client.complete(MSGS).usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        24, 60, 16000, 4000)
    assert client.stats.snapshot()["requests"] == 2


def test_missing_usage_is_counted_locally(anthropic_llm: ScriptedLLM) -> None:
    body = anthropic_text("hello world")
    del body["usage"]
    anthropic_llm.reply(body)
    turn = make_client(endpoint(anthropic_llm),
                       count_tokens=lambda s: count_tokens(s, "")).complete(
        [Message("user", "Review this change please")])
    assert turn.usage.estimated
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (4, 2)


def test_bearer_auth_when_configured(anthropic_llm: ScriptedLLM) -> None:
    anthropic_llm.reply(anthropic_text("ok"))
    make_client(endpoint(anthropic_llm, auth_header="authorization")).complete(MSGS)
    assert anthropic_llm.headers[0]["authorization"] == "Bearer ant-key"
    assert "x-api-key" not in anthropic_llm.headers[0]


def test_breakpoints_stop_at_four_and_skip_thinking_blocks(anthropic_llm: ScriptedLLM) -> None:
    from ocr_hook.llm import user_parts

    first = user_parts(["<review_checklist>rules</review_checklist>\n", "the diff\n"])
    again = user_parts(["head two\n", "tail two\n"])  # a second head: no room is left for it
    msgs = [Message("system", "You review code."), first,
            Message("assistant", "", (), native=({"type": "text", "text": "Looking."},)),
            again]
    anthropic_llm.reply(anthropic_text("ok"))
    make_client(endpoint(anthropic_llm)).complete(msgs, [TOOL, TOOL._replace(name="x")],
                                                  cache_key="main/app.py")
    body = anthropic_llm.requests[0]
    marked = [(i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"])
              if "cache_control" in b]
    assert "cache_control" not in body["tools"][0] and "cache_control" in body["tools"][1]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "<review_checklist>rules</review_checklist>\n",
         "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "the diff\n"}]
    assert marked == [(0, 0), (2, 1)]  # first head and the latest block: 4 with tools, system
    # a conversation whose latest block is thinking: that block stays unmarked
    anthropic_llm.reply(anthropic_text("ok"))
    thinking = Message("assistant", "", (), native=(
        {"type": "thinking", "thinking": "hm", "signature": "s"},))
    make_client(endpoint(anthropic_llm)).complete([*MSGS, thinking], [TOOL], cache_key="k")
    last = anthropic_llm.requests[1]["messages"][-1]["content"][-1]
    assert last["type"] == "thinking" and "cache_control" not in last
