"""Anthropic Messages over plain HTTP (``POST {base}/v1/messages``).

Wire format: anthropic-sdk-python 2.x ``types`` — ``system`` as a top-level string,
``tool_use{id, name, input: object}`` blocks, results as ``tool_result{tool_use_id, content,
is_error}`` blocks in one user message, thinking / redacted_thinking blocks resent unchanged,
``usage{input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens}``.
Headers ``x-api-key`` and ``anthropic-version`` (configurable, default 2023-06-01).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests

from . import http
from .types import Endpoint, Message, ToolCall, ToolSpec, Turn, Usage

DEFAULT_MAX_TOKENS = 8192


def messages_url(base: str) -> str:
    """``{base}/v1/messages``, or ``{base}/messages`` when the base ends in ``/v1``; a full
    endpoint URL ending in ``/messages`` is used as is (SPEC §13)."""
    b = base.rstrip("/")
    if b.endswith("/messages"):
        return b
    if b.endswith("/v1"):
        return b + "/messages"
    return b + "/v1/messages"


def to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Neutral messages → (system text, Messages API message list). Consecutive tool results
    are merged into one user message; user text following them is appended as a text block."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            system_parts.append(m.content)
        elif m.role == "tool":
            push(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": m.tool_call_id,
                        "content": m.content,
                        **({"is_error": True} if m.is_error else {}),
                    }
                ],
            )
        elif m.role == "assistant":
            if m.native:
                blocks = [dict(b) for b in m.native]
            else:
                blocks = []
                if m.content:
                    blocks.append({"type": "text", "text": m.content})
                for c in m.tool_calls:
                    inp = c.arguments if isinstance(c.arguments, dict) else {}
                    blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": inp})
            if not blocks:
                blocks = [{"type": "text", "text": "(no output)"}]
            push("assistant", blocks)
        else:
            push("user", [{"type": "text", "text": m.content or "(empty)"}])
    return "\n\n".join(system_parts), out


def parse_response(body: dict[str, Any]) -> tuple[Message, Usage, str]:
    """Messages API response → (assistant message, usage, stop_reason)."""
    blocks = [b for b in body.get("content") or [] if isinstance(b, dict)]
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text") or ""))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking") or ""))
        elif kind == "tool_use":
            inp = b.get("input")
            cid = str(b.get("id") or "")
            calls.append(
                ToolCall(
                    id=cid or f"toolu_{uuid.uuid4().hex[:12]}",
                    name=str(b.get("name") or ""),
                    arguments_raw=json.dumps(inp, ensure_ascii=False),
                    arguments=inp,
                    synthetic_id=not cid,
                )
            )
    u = body.get("usage") or {}
    usage = Usage(
        input_tokens=int(u.get("input_tokens") or 0),
        output_tokens=int(u.get("output_tokens") or 0),
        cache_read_tokens=int(u.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(u.get("cache_creation_input_tokens") or 0),
        estimated=not u,
    )
    # Resend blocks unchanged (thinking signatures must survive); ids we synthesised replace
    # missing ones so that tool results can refer to them.
    native: list[dict[str, Any]] = []
    it = iter(calls)
    for b in blocks:
        if b.get("type") == "tool_use":
            c = next(it)
            native.append({**b, "id": c.id, "input": b.get("input") if isinstance(b.get("input"), dict) else {}})
        else:
            native.append(b)
    msg = Message(
        role="assistant",
        content="".join(texts),
        tool_calls=tuple(calls),
        reasoning="\n".join(thinking) or None,
        native=tuple(native),
    )
    return msg, usage, str(body.get("stop_reason") or "")


class AnthropicClient:
    """Messages API client; one requests.Session per thread. Raises LlmError."""

    def __init__(
        self, endpoint: Endpoint, before_attempt: Callable[[int], None] | None = None
    ) -> None:
        self.endpoint = endpoint
        self.before_attempt = before_attempt
        self._local = threading.local()

    def _session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = requests.Session()
            self._local.session = s
        return s

    def headers(self) -> dict[str, str]:
        ep = self.endpoint
        h = {
            "content-type": "application/json",
            "anthropic-version": ep.anthropic_version or "2023-06-01",
            "user-agent": "ocr-hook",
        }
        if ep.api_key:
            if ep.auth_header.lower() == "authorization":
                h["authorization"] = f"Bearer {ep.api_key}"
            else:
                h[ep.auth_header or "x-api-key"] = ep.api_key
        h.update(dict(ep.extra_headers))
        return h

    def build_body(
        self, messages: list[Message], tools: list[ToolSpec] | None, max_output_tokens: int | None
    ) -> dict[str, Any]:
        ep = self.endpoint
        system, wire = to_wire(messages)
        body: dict[str, Any] = {
            "model": ep.model,
            "max_tokens": max_output_tokens or ep.max_output_tokens or DEFAULT_MAX_TOKENS,
            "messages": wire,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        body.update(dict(ep.extra_body))
        return body

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
    ) -> Turn:
        ep = self.endpoint
        t0 = time.monotonic()
        payload, attempts = http.post_json(
            self._session(),
            messages_url(ep.url),
            self.headers(),
            self.build_body(messages, tools, max_output_tokens),
            connect_timeout_s=ep.connect_timeout_s,
            read_timeout_s=ep.timeout_s,
            max_retries=ep.max_retries,
            error_in_body=lambda b: b.get("type") == "error" or ("error" in b and "content" not in b),
            before_attempt=self.before_attempt,
        )
        message, usage, stop = parse_response(payload)
        return Turn(message, usage, stop, time.monotonic() - t0, attempts,
                    str(payload.get("model") or ep.model))
