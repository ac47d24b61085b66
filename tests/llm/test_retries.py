"""Retries and typed errors of both protocols against the real loopback server
(tests/support/scripted_llm.py). Real: sockets, HTTP, JSON, our retry loop and its waits
(kept short with ``retry-after-ms``); fake: the model's replies. Every test asserts the exact
number of HTTP requests made and the final outcome (spec §13.3)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from ocr_hook.errors import LlmError
from ocr_hook.llm import make_client
from ocr_hook.llm.http import shorten
from ocr_hook.llm.types import Endpoint, Message
from tests.support.scripted_llm import ScriptedLLM, anthropic_text, openai_text

FAST = {"retry-after-ms": "1"}
MSGS = [Message("system", "You review code."), Message("user", "hello")]


def endpoint(server: ScriptedLLM, **kw: Any) -> Endpoint:
    return Endpoint(url=server.url, model="scripted-model", protocol=server.protocol,
                    api_key="test-key", **kw)


def ok(server: ScriptedLLM, text: str = "fine") -> dict[str, Any]:
    return anthropic_text(text) if server.protocol == "anthropic" else openai_text(text)


def err_body(server: ScriptedLLM, kind: str, message: str, code: str | None = None) -> dict:
    if server.protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message},
                "request_id": "req_1"}
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Any:
    s = ScriptedLLM(request.param)
    yield s
    s.close()


def test_429_with_retry_after_is_retried_then_succeeds(server: ScriptedLLM) -> None:
    server.reply(err_body(server, "rate_limit_error", "Rate limit reached", "rate_limit_exceeded"),
                 status=429, headers={"retry-after": "0.01"})
    server.reply(ok(server, "after the wait"))
    turn = make_client(endpoint(server)).complete(MSGS)
    assert len(server.requests) == 2
    assert turn.message.content == "after the wait"
    assert turn.attempts == 2


def test_529_overloaded_then_success(server: ScriptedLLM) -> None:
    server.reply(err_body(server, "overloaded_error", "Overloaded"), status=529, headers=FAST)
    server.reply(err_body(server, "overloaded_error", "Overloaded"), status=529, headers=FAST)
    server.reply(ok(server))
    client = make_client(endpoint(server))
    turn = client.complete(MSGS)
    assert (len(server.requests), turn.attempts, turn.message.content) == (3, 3, "fine")
    assert client.stats.snapshot()["requests"] == 3
    assert client.stats.snapshot()["calls"] == 1


def test_500_then_success_uses_backoff_without_retry_after(server: ScriptedLLM) -> None:
    server.reply(err_body(server, "api_error", "Internal server error"), status=500)
    server.reply(ok(server))
    turn = make_client(endpoint(server)).complete(MSGS)
    assert len(server.requests) == 2
    # backoff before retry 1 is 0.5 s minus up to 25 % jitter
    assert 0.37 <= turn.latency_s < 2.0


def test_401_fails_fast_with_a_clear_message(server: ScriptedLLM) -> None:
    server.reply(err_body(server, "authentication_error", "invalid x-api-key", "invalid_api_key"),
                 status=401)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(server)).complete(MSGS)
    assert len(server.requests) == 1
    assert e.value.kind == "auth" and e.value.status == 401 and e.value.attempts == 1
    assert str(e.value) == ("LLM authentication failed (HTTP 401): invalid x-api-key; check the"
                            " API key (llm.api_key, llm.api_key_cmd or the provider's key"
                            " variable)")


def test_context_length_400_is_not_retried(server: ScriptedLLM) -> None:
    msg = ("prompt is too long: 210266 tokens > 200000 maximum" if server.protocol == "anthropic"
           else "This model's maximum context length is 8192 tokens. However, your messages"
           " resulted in 9000 tokens.")
    server.reply(err_body(server, "invalid_request_error", msg, "context_length_exceeded"),
                 status=400)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(server)).complete(MSGS)
    assert len(server.requests) == 1
    assert e.value.kind == "context_length"


def test_llama_cpp_context_overflow_body_is_context_length(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"code": 400, "type": "exceed_context_size_error", "n_ctx": 8192,
                         "message": "request (13392 tokens) exceeds the available context size"
                                    " (8192 tokens), try increasing it"}}, status=400)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm)).complete(MSGS)
    assert (len(llm.requests), e.value.kind) == (1, "context_length")


def test_insufficient_quota_429_is_not_retried(server: ScriptedLLM) -> None:
    server.reply(err_body(server, "insufficient_quota", "You exceeded your current quota, please"
                          " check your plan and billing details.", "insufficient_quota"),
                 status=429, headers=FAST)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(server)).complete(MSGS)
    assert len(server.requests) == 1
    assert e.value.kind == "quota"


def test_402_insufficient_balance_is_quota(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "Insufficient Balance", "type": "unknown_error"}},
              status=402)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm)).complete(MSGS)
    assert (len(llm.requests), e.value.kind) == (1, "quota")


def test_error_object_in_200_body_is_an_error_and_retried(server: ScriptedLLM) -> None:
    if server.protocol == "anthropic":
        server.reply({"type": "error", "error": {"type": "overloaded_error",
                                                 "message": "Overloaded"}}, headers=FAST)
    else:  # OpenRouter-style upstream failure inside a 200
        server.reply({"error": {"message": "Upstream provider error", "code": 502}},
                     headers=FAST)
    server.reply(ok(server, "second time"))
    client = make_client(endpoint(server, max_retries=1))
    turn = client.complete(MSGS)
    assert len(server.requests) == 2
    assert turn.message.content == "second time"


def test_non_retryable_error_in_200_body_fails_at_once(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "Invalid model name", "code": 400}})
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm)).complete(MSGS)
    assert (len(llm.requests), e.value.kind) == (1, "bad_request")


def test_error_inside_first_choice_is_an_error(llm: ScriptedLLM) -> None:
    llm.reply({"id": "x", "choices": [{"index": 0, "finish_reason": "error",
                                       "error": {"message": "provider timed out", "code": 504},
                                       "message": {"role": "assistant", "content": ""}}]},
              headers=FAST)
    llm.reply(openai_text("ok now"))
    turn = make_client(endpoint(llm, max_retries=2)).complete(MSGS)
    assert (len(llm.requests), turn.message.content) == (2, "ok now")


def test_retries_stop_after_max_retries(server: ScriptedLLM) -> None:
    for _ in range(5):
        server.reply(err_body(server, "rate_limit_error", "slow down"), status=429, headers=FAST)
    client = make_client(endpoint(server, max_retries=2))
    with pytest.raises(LlmError) as e:
        client.complete(MSGS)
    assert len(server.requests) == 3
    assert e.value.kind == "rate_limit" and e.value.attempts == 3
    assert str(e.value).endswith("(after 3 attempts)")
    assert client.stats.snapshot()["failures"] == 1
    assert client.stats.snapshot()["requests"] == 3


def test_retry_after_above_120_s_is_not_waited_for(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "come back tomorrow", "code": "rate_limit_exceeded"}},
              status=429, headers={"retry-after": "3600"})
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm)).complete(MSGS)
    assert (len(llm.requests), e.value.kind) == (1, "rate_limit")


def test_x_should_retry_false_overrides_status(llm: ScriptedLLM) -> None:
    llm.reply({"error": {"message": "do not retry"}}, status=503,
              headers={"x-should-retry": "false"})
    with pytest.raises(LlmError):
        make_client(endpoint(llm)).complete(MSGS)
    assert len(llm.requests) == 1


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_client_errors_are_never_retried(llm: ScriptedLLM, status: int) -> None:
    llm.reply({"error": {"message": "no"}}, status=status, headers=FAST)
    with pytest.raises(LlmError):
        make_client(endpoint(llm)).complete(MSGS)
    assert len(llm.requests) == 1


def test_read_timeout_after_last_retry_raises_timeout(llm: ScriptedLLM) -> None:
    llm.reply(openai_text("late"), delay_s=0.5)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm, timeout_s=0.1, max_retries=0)).complete(MSGS)
    assert e.value.kind == "timeout" and str(e.value).startswith("LLM request timed out after 0.1s")


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as s:  # a free loopback port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = Endpoint(url=f"http://127.0.0.1:{port}/v1", model="m", api_key="k", max_retries=0)
    with pytest.raises(LlmError) as e:
        make_client(ep).complete(MSGS)
    assert e.value.kind == "connection" and e.value.retryable
    assert str(e.value) == (f"cannot connect to LLM endpoint http://127.0.0.1:{port}/v1/chat/"
                            "completions: connection refused")


def test_200_without_an_answer_says_so_without_inventing_a_status(server: ScriptedLLM) -> None:
    empty = {"id": "msg_1", "type": "message"} if server.protocol == "anthropic" else {
        "id": "x", "object": "chat.completion", "choices": []}
    server.reply(empty, headers=FAST)
    server.reply(empty, headers=FAST)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(server, max_retries=1)).complete(MSGS)
    what = "content" if server.protocol == "anthropic" else "choices"
    assert str(e.value) == f"LLM returned no {what} (after 2 attempts)"
    assert (e.value.kind, e.value.status, len(server.requests)) == ("protocol", 200, 2)


@pytest.mark.parametrize(("text", "limit", "short"), [
    ("Failed to establish a new connection", 200, "Failed to establish a new connection"),
    ("Failed to establish a new connection", 30, "Failed to establish a new…"),
    ("x" * 50, 10, "xxxxxxxxx…"),
    ("multi\nline   text", 200, "multi line text"),
])
def test_quoted_error_text_is_cut_at_a_word_boundary(text: str, limit: int, short: str) -> None:
    assert shorten(text, limit) == short
    assert len(short) <= limit


def test_non_json_200_body_is_a_protocol_error(llm: ScriptedLLM) -> None:
    llm.reply("<html>gateway</html>")  # JSON string, not an object
    llm.reply("<html>gateway</html>")
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm, max_retries=0)).complete(MSGS)
    assert len(llm.requests) == 1
    assert e.value.kind == "protocol"


NGINX_501 = (b"<!DOCTYPE html>\r\n<html>\r\n<head><title>501 Not Implemented</title>"
             b"<style>body{font-family:sans-serif}</style></head>\r\n<body>\r\n<center><h1>501 Not"
             b" Implemented</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
             + b"<!-- padding -->" * 200 + b"</body>\r\n</html>\r\n")
UNTITLED_404 = (b"<html><head><script>var x = '<p>not this</p>';</script></head><body>\n"
                b"<h1>Not&nbsp;Found</h1><p>The requested URL was not found on this server."
                b" " + b"Lorem ipsum dolor sit amet. " * 40 + b"</p></body></html>")


@pytest.mark.parametrize(("status", "body", "expected"), [
    (501, NGINX_501, "LLM endpoint refused the call (HTTP 501 from {url}/chat/completions): 501"
                     " Not Implemented; the server at this URL does not take the openai API:"
                     " check the base URL (llm.base_url) and llm.protocol (openai)"),
    (404, UNTITLED_404, "LLM endpoint or model not found (HTTP 404 from {url}/chat/completions):"
                        " Not Found The requested URL was not found on this server. Lorem ipsum"
                        " dolor sit amet. Lorem ipsum dolor sit amet.…; check llm.model"
                        " (scripted-model), llm.protocol (openai) and the base URL"
                        " (llm.base_url)"),
])
def test_html_error_page_becomes_one_short_line(
    llm: ScriptedLLM, status: int, body: bytes, expected: str,
) -> None:
    llm.reply(body, status=status, headers=FAST)
    with pytest.raises(LlmError) as e:
        make_client(endpoint(llm, max_retries=0)).complete(MSGS)
    assert str(e.value) == expected.format(url=llm.url)
    assert len(llm.requests) == 1


def test_a_connection_error_does_not_show_the_urls_query_or_user_info() -> None:
    # a key in the URL (`?key=…`, `user:pass@`) must not reach the message: it is printed,
    # stored in the session and in the JSON result
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = Endpoint(url=f"http://user:hunter2@127.0.0.1:{port}/v1?key=sk-query-secret",
                  model="m", api_key="k", max_retries=0)
    with pytest.raises(LlmError) as e:
        make_client(ep).complete(MSGS)
    assert "hunter2" not in str(e.value) and "sk-query-secret" not in str(e.value)
    assert str(e.value).startswith(f"cannot connect to LLM endpoint http://127.0.0.1:{port}/v1")
