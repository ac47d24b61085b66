"""A real loopback HTTP server that speaks OpenAI Chat Completions and Anthropic Messages and
replays scripted replies (tool calls, text, HTTP errors, latency), recording every request.

Fake: the model. Real: sockets, HTTP, JSON wire formats, our client's retries and timeouts.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Hold:
    """Keeps a scripted reply back until the test lets it go: ``asked`` is set when the request
    that takes the reply has arrived, and the reply is sent once :meth:`release` is called (at
    the latest after ``limit_s``, so a failing test never leaves the server stuck)."""

    def __init__(self, limit_s: float = 30.0) -> None:
        self.asked = threading.Event()
        self.released = threading.Event()
        self.limit_s = limit_s

    def release(self) -> None:
        self.released.set()

    def keep(self) -> None:
        """The server's side: note the request, then wait for the release."""
        self.asked.set()
        self.released.wait(self.limit_s)


@dataclass
class Reply:
    """One scripted reply: a full HTTP answer (status, JSON body, headers) after ``delay_s``,
    and after ``hold`` is released when there is one.

    ``match`` (optional) is a substring that must occur in the request body for this reply to
    be chosen; replies without ``match`` are used in order.
    """

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    match: str = ""
    hold: Hold | None = None


def openai_tool_calls(*calls: tuple[str, Any], content: str | None = None,
                      reasoning: str | None = None) -> dict[str, Any]:
    """An OpenAI response with ``calls`` = (name, arguments-object-or-raw-string) pairs."""
    tcs = []
    for name, args in calls:
        tcs.append({
            "id": f"call_{uuid.uuid4().hex[:10]}",
            "type": "function",
            "function": {"name": name,
                         "arguments": args if isinstance(args, str) else json.dumps(args)},
        })
    msg: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": tcs}
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def openai_text(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def anthropic_tool_calls(*calls: tuple[str, Any], text: str = "",
                         thinking: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig-abc"})
    if text:
        content.append({"type": "text", "text": text})
    for name, args in calls:
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:10]}",
                        "name": name, "input": args})
    return {"id": "msg_x", "type": "message", "role": "assistant", "model": "scripted",
            "content": content, "stop_reason": "tool_use",
            "usage": {"input_tokens": 100, "output_tokens": 20}}


def anthropic_text(text: str) -> dict[str, Any]:
    return {"id": "msg_x", "type": "message", "role": "assistant", "model": "scripted",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 20}}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the client went away (a killed or interrupted review), not a server fault
        super().handle_error(request, client_address)


class ScriptedLLM:
    """Loopback server. ``reply(...)`` queues replies; ``requests`` holds decoded bodies,
    ``paths`` and ``headers`` what was requested. When the queue is empty the server answers
    with ``default`` (task_done, by default) so a loop always ends."""

    def __init__(self, protocol: str = "openai") -> None:
        self.protocol = protocol
        self.queue: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.default: Reply | None = None
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall on reused connections

            def log_message(self, *a: Any) -> None:  # silence
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with owner.lock:
                    owner.requests.append(body)
                    owner.paths.append(self.path)
                    owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = owner._next(raw.decode("utf-8", "replace"))
                if reply.hold is not None:
                    reply.hold.keep()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                # bytes are sent as they are (a body no JSON encoder would write, or a huge one)
                data = (reply.body if isinstance(reply.body, bytes)
                        else json.dumps(reply.body).encode())
                # "connection: close" in the reply's headers: no content-length, the body
                # ends when the server closes the connection (read until EOF)
                until_close = reply.headers.get("connection") == "close"
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                if not until_close:
                    self.send_header("content-length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                if until_close:
                    self.close_connection = True

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def _next(self, raw: str) -> Reply:
        for r in list(self.queue):
            if r.match and r.match in raw:
                self.queue.remove(r)
                return r
        for r in list(self.queue):
            if not r.match:
                self.queue.remove(r)
                return r
        if self.default is not None:
            return self.default
        if self.protocol == "anthropic":
            return Reply(anthropic_tool_calls(("task_done", {"state": "DONE"})))
        return Reply(openai_tool_calls(("task_done", {"state": "DONE"})))

    # scripting helpers
    def reply(self, body: Any, status: int = 200, headers: dict[str, str] | None = None,
              delay_s: float = 0.0, match: str = "", hold: Hold | None = None) -> ScriptedLLM:
        with self.lock:
            self.queue.append(Reply(body, status, headers or {}, delay_s, match, hold))
        return self

    def tool_calls(self, *calls: tuple[str, Any], **kw: Any) -> ScriptedLLM:
        if self.protocol == "anthropic":
            return self.reply(anthropic_tool_calls(*calls))
        return self.reply(openai_tool_calls(*calls), **kw)

    def text(self, text: str) -> ScriptedLLM:
        return self.reply(anthropic_text(text) if self.protocol == "anthropic" else openai_text(text))

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1" if self.protocol == "openai" else f"http://{host}:{port}"

    def env(self, **extra: str) -> dict[str, str]:
        """Environment pointing ocr-hook at this server."""
        e = {
            "OCR_LLM_URL": self.url,
            "OCR_LLM_TOKEN": "test-token",
            "OCR_LLM_MODEL": "scripted-model",
            "OCR_LLM_PROTOCOL": self.protocol,
        }
        e.update(extra)
        return e

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
