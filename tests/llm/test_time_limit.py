"""``llm.timeout_s`` bounds a whole request, connect to last byte, retries and their waits
included (spec §13.3), for both protocols. Real: loopback sockets and HTTP (a server that
trickles its reply one byte at a time, tests/support/trickle_server.py, and the scripted
server), our client, its watchdog and retry loop; fake: the model's replies."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from ocr_hook.errors import DeadlineExceeded, LlmError
from ocr_hook.llm import make_client
from ocr_hook.llm.http import post_json
from ocr_hook.llm.types import Endpoint, Message
from tests.support.scripted_llm import ScriptedLLM, anthropic_text, openai_text
from tests.support.trickle_server import TrickleServer

MSGS = [Message("system", "You review code."), Message("user", "hello")]


def answer(protocol: str) -> dict[str, Any]:
    return anthropic_text("late") if protocol == "anthropic" else openai_text("late")


@pytest.fixture(params=["openai", "anthropic"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[False, True], ids=["body", "headers"])
def trickler(request: pytest.FixtureRequest, protocol: str) -> Iterator[TrickleServer]:
    server = TrickleServer(answer(protocol), interval_s=1.0, headers_too=request.param)
    yield server
    server.close()


def test_a_reply_trickled_one_byte_a_second_ends_at_timeout_s(
    trickler: TrickleServer, protocol: str,
) -> None:
    ep = Endpoint(url=trickler.url(protocol), model="m", protocol=protocol, api_key="k",
                  timeout_s=2.0, max_retries=3)
    client = make_client(ep)
    t0 = time.monotonic()
    with pytest.raises(LlmError) as e:
        client.complete(MSGS)
    elapsed = time.monotonic() - t0
    assert 1.9 <= elapsed < 3.0  # llm.timeout_s, and at most 1 s past it
    assert (str(e.value), e.value.kind, e.value.attempts) == (
        "LLM request timed out after 2s (llm.timeout_s)", "timeout", 1)
    assert trickler.requests == 1  # no retry: the request's time is used up
    assert client.stats.snapshot()["failures"] == 1
    deadline = time.monotonic() + 3  # the connection was closed, not left trickling
    while not trickler.closed_after_s and time.monotonic() < deadline:
        time.sleep(0.05)
    assert trickler.closed_after_s and trickler.closed_after_s[0] < 4.5


def test_the_run_deadline_cuts_a_trickled_reply_as_a_deadline(protocol: str) -> None:
    server = TrickleServer(answer(protocol), interval_s=1.0)
    try:
        ep = Endpoint(url=server.url(protocol), model="m", protocol=protocol, api_key="k",
                      timeout_s=30.0, max_retries=3)
        client = make_client(ep, before_attempt=lambda _n: 1.0)  # the run has 1 s left
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.complete(MSGS)
        assert time.monotonic() - t0 < 2.0  # the run's 1 s, and at most 1 s past it
        assert server.requests == 1
    finally:
        server.close()


def test_a_timeout_is_not_retried_past_timeout_s(llm: ScriptedLLM) -> None:
    llm.reply(openai_text("late"), delay_s=0.6)
    llm.reply(openai_text("in time"))
    t0 = time.monotonic()
    with pytest.raises(LlmError) as e:
        make_client(Endpoint(url=llm.url, model="m", api_key="k", timeout_s=0.3,
                             max_retries=3)).complete(MSGS)
    assert time.monotonic() - t0 < 1.3  # llm.timeout_s, and at most 1 s past it
    assert (e.value.kind, e.value.attempts, len(llm.requests)) == ("timeout", 1, 1)


def test_retries_happen_while_time_is_left(llm: ScriptedLLM) -> None:
    for _ in range(2):
        llm.reply({"error": {"message": "busy"}}, status=503, headers={"retry-after-ms": "50"})
    llm.reply(openai_text("third time"))
    turn = make_client(Endpoint(url=llm.url, model="m", api_key="k", timeout_s=2.0,
                                max_retries=3)).complete(MSGS)
    assert (turn.message.content, turn.attempts, len(llm.requests)) == ("third time", 3, 3)


def test_a_retry_wait_past_timeout_s_ends_the_request_with_the_server_error(
    llm: ScriptedLLM,
) -> None:
    llm.reply({"error": {"message": "busy"}}, status=503, headers={"retry-after": "3"})
    llm.reply(openai_text("never asked for"))
    t0 = time.monotonic()
    with pytest.raises(LlmError) as e:
        make_client(Endpoint(url=llm.url, model="m", api_key="k", timeout_s=1.0,
                             max_retries=3)).complete(MSGS)
    assert time.monotonic() - t0 < 2.0  # not the 3 s wait: no attempt could follow it
    assert (str(e.value), e.value.attempts, len(llm.requests)) == (
        "LLM overloaded (HTTP 503): busy", 1, 1)


def test_a_reply_in_time_on_a_reused_connection_is_read_whole(llm: ScriptedLLM) -> None:
    client = make_client(Endpoint(url=llm.url, model="m", api_key="k", timeout_s=0.5))
    for i in range(3):  # the watchdog of one request never cuts the next one short
        llm.reply(openai_text(f"reply {i}"), delay_s=0.2)
        assert client.complete(MSGS).message.content == f"reply {i}"
    assert len(llm.requests) == 3


def test_a_post_whose_shared_deadline_has_passed_is_a_timeout_without_a_request(
    llm: ScriptedLLM,
) -> None:
    """A second post of one request (OpenAI's retry without an unsupported field) shares the
    first one's deadline; when none of it is left, no attempt is made."""
    with pytest.raises(LlmError) as e:
        post_json(requests.Session(), llm.url + "/chat/completions", {}, {"model": "m"},
                  connect_timeout_s=1.0, timeout_s=2.0, max_retries=3,
                  deadline=time.monotonic() - 0.01)
    assert (str(e.value), e.value.kind, e.value.attempts, len(llm.requests)) == (
        "LLM request timed out after 2s (llm.timeout_s)", "timeout", 0, 0)
