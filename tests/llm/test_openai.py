"""OpenAI Chat Completions client against the loopback server: wire shapes, reasoning
round-trips, ``<think>`` splitting, the output-token field fallback, malformed tool calls and
usage. Real: HTTP and JSON; fake: the model's replies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocr_hook.errors import LlmError
from ocr_hook.llm import make_client
from ocr_hook.llm.openai import chat_url, decode_arguments, message_to_wire, parse_response
from ocr_hook.llm.types import Endpoint, Message, ToolSpec, split_think
from ocr_hook.util.tokens import count_tokens
from tests.support.scripted_llm import ScriptedLLM, openai_text, openai_tool_calls

TOOL = ToolSpec("file_read", "Read a file.", {"type": "object", "properties": {
    "file_path": {"type": "string"}}, "required": ["file_path"]})
MSGS = [Message("system", "You review code."), Message("user", "Review app.py")]


def endpoint(llm: ScriptedLLM, **kw: Any) -> Endpoint:
    return Endpoint(url=llm.url, model="scripted-model", api_key="test-key", **kw)


def raw_call(cid: Any, name: Any, arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name}}
    if arguments is not ...:
        call["function"]["arguments"] = arguments
    if cid is not ...:
        call["id"] = cid
    return call


def reply_with(*calls: dict[str, Any], content: Any = None, usage: Any = ...,
               **msg_extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "c", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": content, "tool_calls": list(calls),
                    **msg_extra}}]}
    if usage is not ...:
        body["usage"] = usage
    else:
        body["usage"] = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    return body


def test_request_shape_has_tools_output_field_and_no_sampling_parameters(
        llm: ScriptedLLM) -> None:
    llm.reply(openai_text("ok"))
    make_client(endpoint(llm)).complete(MSGS, [TOOL])
    [body] = llm.requests
    assert llm.paths == ["/v1/chat/completions"]
    assert llm.headers[0]["authorization"] == "Bearer test-key"
    assert set(body) == {"model", "messages", "max_completion_tokens", "tools"}
    assert body["max_completion_tokens"] == 16384
    assert body["tools"] == [{"type": "function", "function": {
        "name": "file_read", "description": "Read a file.", "parameters": TOOL.parameters}}]
    assert body["messages"] == [{"role": "system", "content": "You review code."},
                                {"role": "user", "content": "Review app.py"}]


@pytest.mark.parametrize(("base", "url"), [
    ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
    ("https://dashscope.aliyuncs.com/compatible-mode/v1/",
     "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"),
    ("https://generativelanguage.googleapis.com/v1beta/openai",
     "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"),
    ("http://h/v1/chat/completions", "http://h/v1/chat/completions"),
    ("https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
     "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"),
])
def test_chat_url_uses_the_base_as_given(base: str, url: str) -> None:
    assert chat_url(base) == url


def test_deepseek_reasoning_content_is_sent_back_on_tool_call_turns_only(
        llm: ScriptedLLM) -> None:
    llm.reply(openai_tool_calls(("file_read", {"file_path": "a.py"}),
                                reasoning="I should read a.py first."))
    llm.reply(openai_text("done"))
    llm.reply(openai_text("x"))
    client = make_client(endpoint(llm))
    first = client.complete(MSGS, [TOOL])
    assert first.message.reasoning == "I should read a.py first."
    assert first.message.reasoning_field == "reasoning_content"
    [call] = first.message.tool_calls
    tool_result = Message("tool", "1: x = 1", tool_call_id=call.id, name=call.name)
    second = client.complete([*MSGS, first.message, tool_result], [TOOL])
    sent = llm.requests[1]["messages"][2]
    assert sent["reasoning_content"] == "I should read a.py first."
    assert sent["tool_calls"][0]["id"] == call.id
    assert llm.requests[1]["messages"][3] == {"role": "tool", "tool_call_id": call.id,
                                              "content": "1: x = 1"}
    # a turn without tool calls goes back without its reasoning
    plain = Message("assistant", "done", reasoning="thinking", reasoning_field="reasoning")
    client.complete([*MSGS, plain, Message("user", "more?")], [TOOL])
    assert llm.requests[2]["messages"][2] == {"role": "assistant", "content": "done"}
    assert second.message.content == "done"


def test_vllm_reasoning_field_is_kept_under_its_own_name(llm: ScriptedLLM) -> None:
    body = openai_tool_calls(("file_read", {"file_path": "a.py"}))
    body["choices"][0]["message"]["reasoning"] = "vllm thoughts"
    llm.reply(body)
    turn = make_client(endpoint(llm)).complete(MSGS, [TOOL])
    assert (turn.message.reasoning, turn.message.reasoning_field) == ("vllm thoughts",
                                                                      "reasoning")
    assert message_to_wire(turn.message)["reasoning"] == "vllm thoughts"


@pytest.mark.parametrize(("text", "think", "rest"), [
    ("<think>plan it</think>\n\nThe answer", "plan it", "The answer"),
    ("  <think>\nmulti\nline\n</think>answer", "multi\nline", "answer"),
    ("template opened it</think>\nanswer", "template opened it", "answer"),
    ("<think>cut off while thinking", "cut off while thinking", ""),
    ("no reasoning here", None, "no reasoning here"),
    ("text then <think>late</think>", None, "text then <think>late</think>"),
])
def test_split_think(text: str, think: str | None, rest: str) -> None:
    assert split_think(text) == (think, rest)


def test_leading_think_block_becomes_reasoning_and_is_never_resent_as_a_field(
        llm: ScriptedLLM) -> None:
    llm.reply(openai_text("<think>The diff adds SQL.</think>\nNo issues."))
    turn = make_client(endpoint(llm)).complete(MSGS)
    assert turn.message.reasoning == "The diff adds SQL."
    assert turn.message.reasoning_field == ""
    assert turn.message.text == "No issues."
    assert turn.message.content == "<think>The diff adds SQL.</think>\nNo issues."


def test_output_field_rejected_by_name_is_retried_once_with_the_other_and_kept(
        llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with"
                         " this model. Use 'max_completion_tokens' instead.",
                         "type": "invalid_request_error", "param": "max_tokens",
                         "code": "unsupported_parameter"}}, status=400)
    llm.reply(openai_text("first"))
    llm.reply(openai_text("second"))
    client = make_client(endpoint(llm, output_tokens_field="max_tokens"))
    turn = client.complete(MSGS, max_output_tokens=500)
    assert turn.attempts == 2 and turn.message.content == "first"
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in llm.requests] == [
        (True, None), (False, 500)]
    client.complete(MSGS)
    assert len(llm.requests) == 3
    assert llm.requests[2]["max_completion_tokens"] == 16384
    assert "max_tokens" not in llm.requests[2]


def test_unknown_max_completion_tokens_falls_back_to_max_tokens(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "Unrecognized request argument supplied:"
                         " max_completion_tokens", "code": None}}, status=400)
    llm.reply(openai_text("ok"))
    turn = make_client(endpoint(llm)).complete(MSGS)
    assert (len(llm.requests), turn.attempts) == (2, 2)
    assert llm.requests[1]["max_tokens"] == 16384


def test_other_400_naming_the_field_is_not_retried(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "max_completion_tokens is too large: 99999. This model"
                         " supports at most 4096 completion tokens"}}, status=400)
    with pytest.raises(LlmError):
        make_client(endpoint(llm)).complete(MSGS)
    assert len(llm.requests) == 1


def test_field_fallback_happens_once_only(llm: ScriptedLLM) -> None:
    for f in ("max_completion_tokens", "max_tokens"):
        llm.reply({"error": {"message": f"Unknown parameter: '{f}'."}}, status=400)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm)).complete(MSGS)
    assert len(llm.requests) == 2 and e.value.attempts == 2


@pytest.mark.parametrize(("raw", "value", "error"), [
    ('{"file_path": "a.py"}', {"file_path": "a.py"}, None),
    ("", None, "arguments are an empty string; expected a JSON object"),
    ("null", None, "arguments are null; expected a JSON object"),
    ('["a.py"]', ["a.py"], "arguments are an array; expected a JSON object"),
    ('"a.py"', "a.py", "arguments are a string; expected a JSON object"),
    ("42", 42, "arguments are a number; expected a JSON object"),
    (None, None, "arguments missing; expected a JSON object"),
    ({"file_path": "b.py"}, {"file_path": "b.py"}, None),  # lenient servers send an object
])
def test_decode_arguments(raw: Any, value: Any, error: str | None) -> None:
    assert decode_arguments(raw) == (value, error)


def test_invalid_json_arguments_carry_the_parse_error() -> None:
    value, error = decode_arguments('{"file_path": "a.py"')
    assert value is None and error is not None and error.startswith("invalid JSON (")


def test_malformed_calls_missing_ids_empty_names_and_duplicate_ids(llm: ScriptedLLM) -> None:
    llm.reply(reply_with(
        raw_call("call_1", "file_read", '{"file_path": "a.py"}'),
        raw_call(..., "file_read", '{"file_path": "b.py"}'),  # no id
        raw_call("call_1", "file_read", "[1, 2]"),  # duplicate id, array arguments
        raw_call("", "", "{bad json"),  # empty id and name, invalid JSON
        raw_call("call_5", "task_done", ...),  # no arguments at all
    ))
    llm.reply(openai_text("ok"))
    client = make_client(endpoint(llm))
    turn = client.complete(MSGS, [TOOL])
    calls = turn.message.tool_calls
    ids = [c.id for c in calls]
    assert len(set(ids)) == 5
    assert ids[0] == "call_1" and ids[2] == "call_1_2" and ids[4] == "call_5"
    assert [c.synthetic_id for c in calls] == [False, True, True, True, False]
    assert [c.name for c in calls] == ["file_read", "file_read", "file_read", "", "task_done"]
    assert [c.parse_error is None for c in calls] == [True, True, False, False, False]
    assert calls[2].arguments == [1, 2] and calls[2].arguments_raw == "[1, 2]"
    # resending: every call keeps its unique id; unusable arguments go back as {}
    results = [Message("tool", f"Error {i}", tool_call_id=c.id, is_error=True)
               for i, c in enumerate(calls)]
    client.complete([*MSGS, turn.message, *results], [TOOL])
    sent = llm.requests[1]["messages"]
    wire_calls = sent[2]["tool_calls"]
    assert [c["id"] for c in wire_calls] == ids
    assert [c["function"]["arguments"] for c in wire_calls] == [
        '{"file_path": "a.py"}', '{"file_path": "b.py"}', "{}", "{}", "{}"]
    assert wire_calls[3]["function"]["name"] == "unnamed_tool"
    assert [m["tool_call_id"] for m in sent[3:]] == ids


def test_usage_splits_cached_tokens_and_sums(llm: ScriptedLLM) -> None:
    llm.reply(reply_with(raw_call("c1", "file_read", "{}"), usage={
        "prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
        "prompt_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 100}}))
    llm.reply(reply_with(raw_call("c2", "file_read", "{}"), usage={
        "prompt_tokens": 300, "completion_tokens": 7, "prompt_cache_hit_tokens": 200,
        "prompt_cache_miss_tokens": 100}))
    client = make_client(endpoint(llm))
    a = client.complete(MSGS)
    b = client.complete(MSGS)
    assert (a.usage.input_tokens, a.usage.output_tokens, a.usage.cache_read_tokens,
            a.usage.cache_write_tokens) == (100, 50, 800, 100)
    assert (b.usage.input_tokens, b.usage.cache_read_tokens) == (100, 200)
    total = a.usage + b.usage
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens,
            total.cache_write_tokens, total.total) == (200, 57, 1000, 100, 1357)
    snap = client.stats.snapshot()
    assert snap["usage"] == {"input": 200, "output": 57, "cache_read": 1000, "cache_write": 100,
                             "estimated": False}
    assert (snap["calls"], snap["requests"]) == (2, 2)


def test_missing_usage_is_counted_with_the_injected_tiktoken_counter(llm: ScriptedLLM) -> None:
    body = openai_text("hello world")
    del body["usage"]
    llm.reply(body)
    client = make_client(endpoint(llm), count_tokens=lambda s: count_tokens(s, "gpt-4o"))
    turn = client.complete([Message("user", "Review this change please")])
    assert turn.usage.estimated
    assert turn.usage.output_tokens == count_tokens("hello world", "gpt-4o") == 2
    assert turn.usage.input_tokens == count_tokens("Review this change please", "gpt-4o") == 4


def test_content_parts_and_null_content_are_text(llm: ScriptedLLM) -> None:
    msg, usage, finish = parse_response({"choices": [{"message": {
        "role": "assistant", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]},
        "finish_reason": "stop"}]})
    assert (msg.content, usage, finish) == ("ab", None, "stop")
    msg, _, _ = parse_response({"choices": [{"message": {"role": "assistant", "content": None,
                                                         "tool_calls": []}}]})
    assert msg.content == "" and msg.tool_calls == ()


def test_azure_api_key_header_and_extra_headers(llm: ScriptedLLM) -> None:
    llm.reply(openai_text("ok"))
    ep = endpoint(llm, auth_header="api-key", extra_headers=(("X-Team", "core"),),
                  extra_body=(("temperature", 0.2),))
    make_client(ep).complete(MSGS)
    h = llm.headers[0]
    assert h["api-key"] == "test-key" and "authorization" not in h
    assert h["x-team"] == "core"
    assert llm.requests[0]["temperature"] == 0.2


def test_request_body_is_utf8_json(llm: ScriptedLLM) -> None:
    llm.reply(openai_text("ok"))
    make_client(endpoint(llm)).complete([Message("user", "naïve – ünïcode")])
    assert llm.requests[0]["messages"][0]["content"] == "naïve – ünïcode"
    assert json.dumps(llm.requests[0])  # decoded as JSON by the server


def test_llama_cpp_preset_sends_tool_choice_auto_only_with_tools(llm: ScriptedLLM) -> None:
    from ocr_hook.config import layering

    cfg = layering.build_config([layering.Layer("test", {"llm": {"provider": "llama-cpp",
                                                      "base_url": llm.url, "model": "m"}})])
    endpoint, why = layering.resolve_endpoint(cfg.llm, {})
    assert endpoint is not None, why
    client = make_client(endpoint)
    tool = ToolSpec("task_done", "finish", {"type": "object", "properties": {}})
    llm.text("ok").text("ok")
    client.complete([Message("user", "hi")], [tool])
    client.complete([Message("user", "plan")], None)
    assert llm.requests[0]["tool_choice"] == "auto"
    assert "tool_choice" not in llm.requests[1]
    assert llm.requests[0]["max_tokens"] == 16384
