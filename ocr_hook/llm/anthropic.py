"""Anthropic Messages over plain HTTP (``POST {base}/v1/messages``).

Wire format: Anthropic Messages as anthropic-sdk-python 2.x ``types`` define it — ``system``
as a top-level string, ``tool_use{id, name, input: object}`` blocks, results as
``tool_result{tool_use_id, content, is_error}`` blocks leading one user message, thinking /
redacted_thinking blocks resent unchanged (their signatures must survive),
``usage{input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens}``.
Headers ``x-api-key`` and ``anthropic-version`` (``llm.anthropic_version``, default
2023-06-01). No sampling parameters unless configured: API version 2026-10-21 rejects them.

Prompt caching (``llm.prompt_caching``, on by default): ``cache_control{type: ephemeral}``
breakpoints, at most :data:`MAX_BREAKPOINTS` (the API's limit), on the last tool, the last
system block, the stable head of a user message (``Message.splits``) and, for a conversation
that goes on (``cache_key``), the last block of the latest message. The API caches the prompt
in the order tools, system, messages; a breakpoint ends a cached prefix, and a later request
reads the longest one it starts with (docs.anthropic.com, "Prompt caching").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LlmError
from . import http
from .openai import UNNAMED_TOOL
from .types import (
    CallStats,
    Endpoint,
    Message,
    TokenCounter,
    ToolCall,
    ToolSpec,
    Turn,
    Usage,
    decode_arguments,
    estimate_tokens,
    split_think,
    unique_ids,
)

DEFAULT_MAX_TOKENS = 8192  # the reference tool's (OCR) Anthropic client default when unset
DEFAULT_VERSION = "2023-06-01"  # spec §13
MAX_BREAKPOINTS = 4  # cache_control blocks per request (Anthropic "Prompt caching" limits)
EPHEMERAL = {"type": "ephemeral"}  # the default 5-minute cache entry


def messages_url(base: str) -> str:
    """``{base}/v1/messages``, or ``{base}/messages`` when the base ends in ``/v1``; a full
    endpoint URL ending in ``/messages`` is used as is (spec §13). A query string is kept."""
    path, sep, query = base.partition("?")
    b = path.rstrip("/")
    if not b.endswith("/messages"):
        b += "/messages" if b.endswith("/v1") else "/v1/messages"
    return b + (sep + query if sep else "")


def _resend_block(b: dict[str, Any]) -> dict[str, Any] | None:
    """A stored content block as it goes back to the API: unchanged, except empty text blocks
    (rejected: "text content blocks must be non-empty") are dropped and a ``tool_use`` input
    that is not an object is sent as ``{}``."""
    if b.get("type") == "text" and not str(b.get("text") or "").strip():
        return None
    if b.get("type") == "tool_use" and not isinstance(b.get("input"), dict):
        return {**b, "input": {}}
    return dict(b)


def to_wire(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
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
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id,
                                     "content": m.content or "(empty)"}
            if m.is_error:
                block["is_error"] = True
            push("user", [block])
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.native:
                blocks = [b for b in map(_resend_block, m.native) if b is not None]
            else:
                if m.content.strip():
                    blocks.append({"type": "text", "text": m.content})
                for c in m.tool_calls:
                    inp = c.arguments if isinstance(c.arguments, dict) else {}
                    blocks.append({"type": "tool_use", "id": c.id,
                                   "name": c.name or UNNAMED_TOOL, "input": inp})
            if not blocks:
                blocks = [{"type": "text", "text": "(no output)"}]
            push("assistant", blocks)
        else:
            push("user", [{"type": "text", "text": p} for p in m.parts()]
                 if m.content else [{"type": "text", "text": "(empty)"}])
    return "\n\n".join(p for p in system_parts if p), out


def _stable_heads(messages: Sequence[Message]) -> list[int]:
    """Indexes, among the text blocks of the user messages :func:`to_wire` writes, of the head
    block of each message with ``splits``; counted as to_wire counts them."""
    heads, at = [], 0
    for m in messages:
        if m.role == "user":
            if m.splits:
                heads.append(at)
            at += len(m.parts()) if m.content else 1
    return heads


def mark_cache(body: dict[str, Any], messages: Sequence[Message], rolling: bool) -> None:
    """Add ``cache_control`` breakpoints to ``body`` in place (see the module docstring): the
    last tool, the system prompt (made a one-block list), each stable head and, when
    ``rolling``, the last block of the latest message; never more than MAX_BREAKPOINTS, later
    heads left out first. Thinking blocks are never marked (the API rejects it there)."""
    marked: list[dict[str, Any]] = []
    if body.get("tools"):
        body["tools"][-1] = {**body["tools"][-1], "cache_control": EPHEMERAL}
        marked.append(body["tools"][-1])
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": EPHEMERAL}]
        marked.append(body["system"][-1])
    texts = [b for m in body["messages"] if m["role"] == "user" for b in m["content"]
             if b.get("type") == "text"]
    last = body["messages"][-1]["content"][-1] if rolling and body["messages"] else None
    if last is not None and last.get("type") in ("thinking", "redacted_thinking"):
        last = None
    room = MAX_BREAKPOINTS - len(marked) - (last is not None)
    for i in _stable_heads(messages)[:max(room, 0)]:
        if i < len(texts) and texts[i] is not last:
            texts[i]["cache_control"] = EPHEMERAL
    if last is not None:
        last["cache_control"] = EPHEMERAL


def parse_usage(u: Any) -> Usage | None:
    """Messages ``usage`` → Usage (input excludes cache reads/writes, as the API reports it),
    or None when absent."""
    if not isinstance(u, dict) or not u:
        return None

    def n(key: str) -> int:
        try:
            return max(0, int(u.get(key) or 0))
        except (TypeError, ValueError):
            return 0

    return Usage(n("input_tokens"), n("output_tokens"), n("cache_read_input_tokens"),
                 n("cache_creation_input_tokens"))


def parse_response(body: dict[str, Any]) -> tuple[Message, Usage | None, str]:
    """Messages API response → (assistant message, usage or None, stop_reason). ``native``
    keeps every block for resending; tool_use blocks get the unique ids we assigned."""
    blocks = [b for b in body.get("content") or [] if isinstance(b, dict)]
    uses = [b for b in blocks if b.get("type") == "tool_use"]
    ids = iter(unique_ids([str(b.get("id") or "") for b in uses], "toolu"))
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    native: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text") or ""))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking") or ""))
        elif kind == "tool_use":
            cid, synthetic = next(ids)
            inp = b.get("input")
            value, err = decode_arguments(inp)
            calls.append(ToolCall(
                id=cid, name=str(b.get("name") or "").strip(),
                arguments_raw=inp if isinstance(inp, str) else json.dumps(inp,
                                                                          ensure_ascii=False),
                arguments=value, parse_error=err, synthetic_id=synthetic,
            ))
            b = {**b, "id": cid}
        native.append(b)
    content = "".join(texts)
    reasoning = "\n".join(thinking) or split_think(content)[0]
    msg = Message(role="assistant", content=content, tool_calls=tuple(calls),
                  reasoning=reasoning, native=tuple(native))
    return msg, parse_usage(body.get("usage")), str(body.get("stop_reason") or "")


def _body_error(b: dict[str, Any]) -> Any:
    """The error carried by a 200 body: ``{"type": "error", "error": {...}}`` or an ``error``
    without ``content``."""
    if b.get("type") == "error" or ("error" in b and "content" not in b):
        return b.get("error") or {"message": "error response without details"}
    if "content" not in b:
        return LlmError("LLM returned no content", kind="protocol", status=200,
                        retryable=True)
    return None


class AnthropicClient:
    """Messages API client; one requests.Session per thread. :meth:`complete` raises
    LlmError."""

    def __init__(
        self,
        endpoint: Endpoint,
        before_attempt: Callable[[int], float | None] | None = None,
        count_tokens: TokenCounter = estimate_tokens,
    ) -> None:
        self.endpoint = endpoint
        self.before_attempt = before_attempt
        self.count_tokens = count_tokens
        self.stats = CallStats()
        self._sessions = http.SessionPerThread()

    def headers(self) -> dict[str, str]:
        ep = self.endpoint
        h = {
            "content-type": "application/json",
            "anthropic-version": ep.anthropic_version or DEFAULT_VERSION,
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
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] | None,
        max_output_tokens: int | None, cache_key: str = "",
    ) -> dict[str, Any]:
        """The Messages request body; with ``llm.prompt_caching``, its cache breakpoints
        (:func:`mark_cache`; the latest message only for a conversation, ``cache_key``)."""
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
        if ep.prompt_caching:
            mark_cache(body, messages, rolling=bool(cache_key))
        # llm.extra_body adds fields; it never replaces the request's own
        return {**dict(ep.extra_body), **body}

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn:
        ep = self.endpoint
        t0 = time.monotonic()
        try:
            payload, attempts = http.post_json(
                self._sessions.get(), messages_url(ep.url), self.headers(),
                self.build_body(messages, tools, max_output_tokens, cache_key),
                connect_timeout_s=ep.connect_timeout_s, timeout_s=ep.timeout_s,
                max_retries=ep.max_retries, body_error=_body_error,
                before_attempt=self.before_attempt,
            )
        except LlmError as e:
            self.stats.add_failure(e.attempts, time.monotonic() - t0)
            raise
        message, usage, stop = parse_response(payload)
        if usage is None:
            usage = _estimate(messages, tools, message, self.count_tokens)
        turn = Turn(message, usage, stop, time.monotonic() - t0, attempts,
                    str(payload.get("model") or ep.model))
        self.stats.add(turn)
        return turn


def _estimate(messages: Sequence[Message], tools: Sequence[ToolSpec] | None, reply: Message,
              count: TokenCounter) -> Usage:
    """Local usage count for a server that sent none: message and tool text in; reply text,
    thinking and tool inputs out."""
    parts = [m.content for m in messages] + [c.arguments_raw for m in messages
                                             for c in m.tool_calls]
    parts += [json.dumps({"name": t.name, "description": t.description,
                          "input_schema": t.parameters}) for t in tools or ()]
    out = [reply.content, reply.reasoning or "",
           *(c.name + c.arguments_raw for c in reply.tool_calls)]
    return Usage(input_tokens=count("\n".join(p for p in parts if p)),
                 output_tokens=count("\n".join(p for p in out if p)),
                 estimated=True)
