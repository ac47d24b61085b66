"""The response body cap (spec §13.3): a reply is streamed and read up to
``http.RESPONSE_MAX_BYTES``; past it the request fails for good (``kind`` ``too_large``, never
retried) without reading the rest. Real: loopback sockets and HTTP (the scripted server, and a
raw socket server for a body without Content-Length), our client; fake: the model's replies."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest

from ocr_hook.errors import LlmError
from ocr_hook.llm import make_client
from ocr_hook.llm.http import RESPONSE_MAX_BYTES
from ocr_hook.llm.types import Endpoint, Message
from tests.support.scripted_llm import ScriptedLLM, openai_text

MSGS = [Message("system", "You review code."), Message("user", "hello")]


def client_for(url: str) -> Any:
    return make_client(Endpoint(url=url, model="m", protocol="openai", api_key="k",
                                max_retries=3))


class EndlessBody:
    """A raw HTTP server that answers one request with 200, no Content-Length and
    ``total_bytes`` of body, counting what it could send before the client hung up."""

    def __init__(self, total_bytes: int) -> None:
        self.total_bytes = total_bytes
        self.sent = 0
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        self.requests += 1
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: close\r\n\r\n")
            chunk = b'{"choices":[{"message":{"content":"' + b"A" * (1 << 20)
            try:
                while self.sent < self.total_bytes:
                    conn.sendall(chunk)
                    self.sent += len(chunk)
                    chunk = b"A" * (1 << 20)
            except OSError:  # the client closed the connection: it stopped reading
                pass


def test_a_body_without_length_stops_being_read_past_the_cap() -> None:
    server = EndlessBody(64 << 20)
    with pytest.raises(LlmError) as e:
        client_for(server.url).complete(MSGS)
    server.thread.join(10)
    mib = RESPONSE_MAX_BYTES >> 20
    assert (e.value.kind, e.value.attempts, server.requests) == ("too_large", 1, 1)
    assert str(e.value).startswith(f"LLM response larger than {mib} MiB; not read")
    assert server.sent < 32 << 20  # the other 32+ MiB were never read (socket buffers aside)


def test_a_declared_length_over_the_cap_is_refused_before_reading(llm: ScriptedLLM) -> None:
    llm.reply(b"x" * (RESPONSE_MAX_BYTES + 1))
    llm.text("never asked for")
    with pytest.raises(LlmError) as e:
        client_for(llm.url).complete(MSGS)
    assert (e.value.kind, len(llm.requests)) == ("too_large", 1)


def test_a_large_reply_under_the_cap_is_read(llm: ScriptedLLM) -> None:
    text = "B" * (RESPONSE_MAX_BYTES - 4096)
    llm.reply(json.dumps(openai_text(text)).encode())
    turn = client_for(llm.url).complete(MSGS)
    assert turn.message.content == text
