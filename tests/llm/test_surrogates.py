"""A lone surrogate in a reply (``"\\ud800"``: valid JSON, RFC 8259 §8.2, but no UTF-8 can
carry it) is replaced by U+FFFD where the reply is decoded, for both protocols, so the reply
can be sent back in the next request. Real: loopback HTTP with raw JSON bytes (the scripted
server), our clients and their JSON decoding; fake: the model's replies."""

from __future__ import annotations

import json

import pytest

from ocr_hook.llm import make_client
from ocr_hook.llm.types import Endpoint, Message, decode_arguments, replace_surrogates
from tests.support.scripted_llm import ScriptedLLM, anthropic_text, openai_text

MSGS = [Message("system", "You review code."), Message("user", "hello")]
LONE = "\\ud800"  # as it is on the wire: six ASCII characters


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> ScriptedLLM:
    s = ScriptedLLM(request.param)
    yield s
    s.close()


def raw_reply(server: ScriptedLLM) -> bytes:
    """A reply with a lone surrogate in the text and in a tool call's arguments (in the
    arguments' own JSON text on OpenAI, in ``input`` on Anthropic)."""
    if server.protocol == "anthropic":
        return (b'{"id":"msg_1","type":"message","role":"assistant","model":"m",'
                b'"content":[{"type":"text","text":"look \\ud800 here"},'
                b'{"type":"tool_use","id":"toolu_1","name":"code_comment",'
                b'"input":{"comments":[{"path":"a.py","content":"bad \\udfff byte"}]}}],'
                b'"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}')
    args = json.dumps({"comments": [{"path": "a.py", "content": "bad \udfff byte"}]})
    assert "\\udfff" in args  # escaped inside the arguments string
    body = {"id": "c", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "look \ud800 here", "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "code_comment", "arguments": args}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    return json.dumps(body).encode()


def test_lone_surrogates_in_a_reply_become_u_fffd_and_the_next_request_is_sent(
    server: ScriptedLLM,
) -> None:
    data = raw_reply(server)
    assert data.isascii() and LONE.encode() in data
    server.reply(data)
    server.reply(anthropic_text("ok") if server.protocol == "anthropic" else openai_text("ok"))
    client = make_client(Endpoint(url=server.url, model="m", protocol=server.protocol,
                                  api_key="k", max_retries=0))
    turn = client.complete(MSGS)
    msg = turn.message
    assert msg.content == "look \ufffd here"
    [call] = msg.tool_calls
    assert (call.parse_error, call.arguments) == (
        None, {"comments": [{"path": "a.py", "content": "bad \ufffd byte"}]})
    # the reply goes back as history: it must encode
    history = [*MSGS, msg, Message("tool", "Filed.", tool_call_id=call.id)]
    assert client.complete(history).message.content == "ok"
    sent = json.dumps(server.requests[1], ensure_ascii=False)
    assert "look \ufffd here" in sent and "\ud800" not in sent


@pytest.mark.parametrize(("value", "expected"), [
    ("plain", "plain"),
    ("a\ud800b\udc00", "a\ufffdb\ufffd"),
    ({"k\udbff": ["x", "\udfff", 3, None]}, {"k\ufffd": ["x", "\ufffd", 3, None]}),
    ("pair \U0001f600 kept", "pair \U0001f600 kept"),
])
def test_replace_surrogates_walks_strings_keys_and_lists(value: object, expected: object) -> None:
    assert replace_surrogates(value) == expected


def test_replace_surrogates_returns_an_unchanged_value_itself() -> None:
    value = {"a": ["b", {"c": "d"}]}
    assert replace_surrogates(value) is value


def test_an_escaped_pair_decodes_to_one_code_point_and_a_lone_half_to_u_fffd() -> None:
    assert decode_arguments('{"s": "\\ud83d\\ude00 \\ud83d"}') == ({"s": "\U0001f600 \ufffd"},
                                                                   None)


def test_a_lone_surrogate_in_a_request_from_any_source_is_sent_as_u_fffd(
    server: ScriptedLLM,
) -> None:
    server.reply(anthropic_text("ok") if server.protocol == "anthropic" else openai_text("ok"))
    client = make_client(Endpoint(url=server.url, model="m", protocol=server.protocol,
                                  api_key="k", max_retries=0))
    msgs = [*MSGS, Message("user", "a tool printed \udc80 here")]
    assert client.complete(msgs).message.content == "ok"
    assert "a tool printed \ufffd here" in json.dumps(server.requests[0], ensure_ascii=False)
