"""OpenAI Chat Completions over plain HTTP (``POST {base}/chat/completions``).

Wire format: openai-python 3.x ``types/chat`` — assistant ``tool_calls[{id, type: function,
function{name, arguments: JSON string}}]``, results as ``{"role": "tool", "tool_call_id"}``
messages, ``usage{prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens}``.
The loop is driven by ``message.tool_calls``, never ``finish_reason``. No sampling parameters
are sent unless configured through ``extra_body``.
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


def chat_url(base: str) -> str:
    """``{base}/chat/completions`` unless ``base`` already is a full endpoint URL (SPEC §13).
    A query string (Azure ``api-version``) is kept after the path."""
    path, sep, query = base.partition("?")
    path = path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return path + (sep + query if sep else "")


def decode_arguments(raw: Any) -> tuple[Any, str | None]:
    """Decode a tool call's ``arguments`` (JSON string, or already an object from lenient
    servers). Returns (value, parse error or None)."""
    if raw is None:
        return None, None
    if not isinstance(raw, str):
        return raw, None
    if raw.strip() == "":
        return "", None
    try:
        return json.loads(raw), None
    except ValueError as e:
        return None, f"invalid JSON: {e}"


def message_to_wire(m: Message) -> dict[str, Any]:
    """One neutral message → Chat Completions message dict."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.role == "assistant":
        if m.tool_calls:
            out["content"] = m.content or None
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_raw or "{}"},
                }
                for c in m.tool_calls
            ]
        if m.reasoning is not None and m.reasoning_field:
            out[m.reasoning_field] = m.reasoning
    return out


def tool_to_wire(t: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
    }


def parse_response(body: dict[str, Any]) -> tuple[Message, Usage, str]:
    """Chat Completions response → (assistant message, usage, finish_reason).

    Missing tool-call ids are synthesised (``synthetic_id``); reasoning is read from
    ``reasoning_content`` or ``reasoning``.
    """
    choices = body.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    msg = choice.get("message") or {}
    content = msg.get("content")
    if isinstance(content, list):  # some gateways return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    calls: list[ToolCall] = []
    for raw in msg.get("tool_calls") or []:
        if not isinstance(raw, dict):
            continue
        fn = raw.get("function") or {}
        args_raw = fn.get("arguments")
        value, err = decode_arguments(args_raw)
        cid = raw.get("id") or ""
        calls.append(
            ToolCall(
                id=cid or f"call_{uuid.uuid4().hex[:12]}",
                name=str(fn.get("name") or ""),
                arguments_raw=args_raw if isinstance(args_raw, str) else json.dumps(args_raw),
                arguments=value,
                parse_error=err,
                synthetic_id=not cid,
            )
        )
    reasoning, field = None, ""
    for key in ("reasoning_content", "reasoning"):
        if isinstance(msg.get(key), str) and msg.get(key):
            reasoning, field = msg[key], key
            break
    u = body.get("usage") or {}
    details = u.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or u.get("prompt_cache_hit_tokens") or 0)
    usage = Usage(
        input_tokens=max(0, int(u.get("prompt_tokens") or 0) - cached),
        output_tokens=int(u.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
        estimated=not u,
    )
    message = Message(
        role="assistant",
        content=content or "",
        tool_calls=tuple(calls),
        reasoning=reasoning,
        reasoning_field=field,
    )
    return message, usage, str(choice.get("finish_reason") or "")


class OpenAIClient:
    """Chat Completions client; one requests.Session per thread (requests promises no thread
    safety for a shared Session). Raises LlmError from :meth:`complete`."""

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
            s.trust_env = True
            self._local.session = s
        return s

    def headers(self) -> dict[str, str]:
        ep = self.endpoint
        h = {"Content-Type": "application/json", "User-Agent": "ocr-hook"}
        if ep.api_key:
            if ep.auth_header and ep.auth_header.lower() != "authorization":
                h[ep.auth_header] = ep.api_key
            else:
                h["Authorization"] = f"Bearer {ep.api_key}"
        h.update(dict(ep.extra_headers))
        return h

    def build_body(
        self, messages: list[Message], tools: list[ToolSpec] | None, max_output_tokens: int | None
    ) -> dict[str, Any]:
        ep = self.endpoint
        body: dict[str, Any] = {
            "model": ep.model,
            "messages": [message_to_wire(m) for m in messages],
        }
        limit = max_output_tokens or ep.max_output_tokens
        if limit:
            body[ep.output_tokens_field or "max_completion_tokens"] = limit
        if tools:
            body["tools"] = [tool_to_wire(t) for t in tools]
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
        body = self.build_body(messages, tools, max_output_tokens)
        t0 = time.monotonic()
        payload, attempts = http.post_json(
            self._session(),
            chat_url(ep.url),
            self.headers(),
            body,
            connect_timeout_s=ep.connect_timeout_s,
            read_timeout_s=ep.timeout_s,
            max_retries=ep.max_retries,
            error_in_body=lambda b: "error" in b and not b.get("choices"),
            before_attempt=self.before_attempt,
        )
        message, usage, finish = parse_response(payload)
        return Turn(
            message=message,
            usage=usage,
            finish_reason=finish,
            latency_s=time.monotonic() - t0,
            attempts=attempts,
            model=str(payload.get("model") or ep.model),
        )
