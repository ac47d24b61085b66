"""OpenAI Chat Completions over plain HTTP (``POST {base}/chat/completions``).

Wire format: OpenAI Chat Completions as openai-python 3.x ``types/chat`` define it — assistant
``tool_calls[{id, type: function, function{name, arguments: JSON string}}]``, results as
``{"role": "tool", "tool_call_id", "content"}`` messages, ``usage{prompt_tokens,
completion_tokens, prompt_tokens_details{cached_tokens, cache_write_tokens}}`` (DeepSeek:
``prompt_cache_hit_tokens``). The loop is driven by ``message.tool_calls``, never
``finish_reason``. No sampling parameters are sent unless configured through ``extra_body``.

Quirks of OpenAI-compatible servers handled:
- reasoning arrives in ``reasoning_content`` (DeepSeek, llama.cpp, DashScope) or ``reasoning``
  (vLLM ≥ 0.11, Ollama) and is sent back, under the same name, on assistant turns that made
  tool calls (DeepSeek thinking mode answers 400 otherwise); turns without tool calls are sent
  without it (the legacy ``deepseek-reasoner`` rejects it there).
- a leading ``<think>…</think>`` in ``content`` (no reasoning parser on the server) is copied to
  ``reasoning``; ``Message.text`` gives the text without it.
- the output-token limit goes in ``max_completion_tokens`` or ``max_tokens``
  (``llm.output_tokens_field``); a 400/422 that names the field we sent as unsupported is
  retried once with the other name, which the client then keeps using.
- prompt caching is automatic where a provider offers it (an identical prompt prefix is read
  from the cache): nothing is sent for it, except ``prompt_cache_key`` (OpenAI: requests with
  the same key and prefix go to the same cache) for a conversation, where the provider preset
  documents the field (``Endpoint.prompt_cache_key``) and ``llm.prompt_caching`` is on.
- tool calls with missing or repeated ids get unique synthetic ids; arguments that are not a
  JSON object are marked with ``parse_error`` and resent as ``{}`` (servers that render
  history through a chat template fail on invalid JSON there).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LlmError
from . import http
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

OUTPUT_TOKEN_FIELDS = ("max_completion_tokens", "max_tokens")
REASONING_FIELDS = ("reasoning_content", "reasoning")
UNNAMED_TOOL = "unnamed_tool"  # wire name for a call the model sent without a name
_UNSUPPORTED_WORDS = ("unsupported", "not supported", "unknown", "unrecognized",
                      "unrecognised", "extra", "not permitted", "unexpected", "not allowed",
                      "invalid parameter", "use '")


def chat_url(base: str) -> str:
    """``{base}/chat/completions`` unless ``base`` already is a full endpoint URL (spec §13).
    A query string (Azure ``api-version``) is kept after the path."""
    path, sep, query = base.partition("?")
    path = path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return path + (sep + query if sep else "")


def message_to_wire(m: Message) -> dict[str, Any]:
    """One neutral message → Chat Completions message dict."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.role == "assistant" and m.tool_calls:
        out["content"] = m.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name or UNNAMED_TOOL,
                    "arguments": c.arguments_raw if c.parse_error is None else "{}",
                },
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


def _int(v: Any) -> int:
    try:
        return max(0, int(v or 0))
    except (TypeError, ValueError):
        return 0


def parse_usage(u: Any) -> Usage | None:
    """``usage`` → Usage, or None when the server sent none. Cached prompt tokens (OpenAI
    ``prompt_tokens_details.cached_tokens``, DeepSeek ``prompt_cache_hit_tokens``) move from
    input to ``cache_read_tokens``; ``cache_write_tokens`` likewise."""
    if not isinstance(u, dict) or not u:
        return None
    raw_details = u.get("prompt_tokens_details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    cached = _int(details.get("cached_tokens") or u.get("prompt_cache_hit_tokens"))
    written = _int(details.get("cache_write_tokens") or details.get("cache_creation_tokens"))
    prompt = _int(u.get("prompt_tokens") or u.get("input_tokens"))
    return Usage(
        input_tokens=max(0, prompt - cached - written),
        output_tokens=_int(u.get("completion_tokens") or u.get("output_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def parse_response(body: dict[str, Any]) -> tuple[Message, Usage | None, str]:
    """Chat Completions response → (assistant message, usage or None, finish_reason)."""
    choices = body.get("choices") or []
    choice: dict[str, Any] = choices[0] if choices and isinstance(choices[0], dict) else {}
    raw_msg = choice.get("message")
    msg: dict[str, Any] = raw_msg if isinstance(raw_msg, dict) else {}
    content = msg.get("content")
    if isinstance(content, list):  # some gateways return content parts
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    content = content if isinstance(content, str) else ""
    raws = [r for r in (msg.get("tool_calls") or []) if isinstance(r, dict)]
    ids = unique_ids([str(r.get("id") or "") for r in raws], "call")
    calls: list[ToolCall] = []
    for raw, (cid, synthetic) in zip(raws, ids, strict=True):
        raw_fn = raw.get("function")
        fn: dict[str, Any] = raw_fn if isinstance(raw_fn, dict) else {}
        args_raw = fn.get("arguments")
        value, err = decode_arguments(args_raw)
        calls.append(ToolCall(
            id=cid,
            name=str(fn.get("name") or "").strip(),
            arguments_raw=args_raw if isinstance(args_raw, str) else json.dumps(args_raw),
            arguments=value,
            parse_error=err,
            synthetic_id=synthetic,
        ))
    reasoning, field = None, ""
    for key in REASONING_FIELDS:
        if isinstance(msg.get(key), str) and msg[key]:
            reasoning, field = msg[key], key
            break
    if reasoning is None:
        reasoning = split_think(content)[0]
    message = Message(role="assistant", content=content, tool_calls=tuple(calls),
                      reasoning=reasoning, reasoning_field=field)
    return message, parse_usage(body.get("usage")), str(choice.get("finish_reason") or "")


def _choices_error(b: dict[str, Any]) -> Any:
    """The error carried by a 200 body: a top-level ``error`` without choices, an ``error`` in
    the first choice (OpenRouter), or no usable choice at all."""
    choices = b.get("choices")
    if not choices:
        return b.get("error") or LlmError("LLM returned no choices", kind="protocol",
                                          status=200, retryable=True)
    first = choices[0] if isinstance(choices[0], dict) else {}
    if first.get("error"):
        return first["error"]
    if first.get("finish_reason") == "error":
        return LlmError("LLM generation failed (finish_reason error)", kind="server",
                        status=200, retryable=True)
    return None


def names_output_field(err: LlmError, field: str) -> bool:
    """True when ``err`` is a 400/422 saying the output-token ``field`` we sent is not accepted
    (e.g. OpenAI "Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens'", Azure
    "Unrecognized request argument supplied: max_completion_tokens")."""
    text = str(err).lower()
    return (err.status in (400, 422) and field in text
            and any(w in text for w in _UNSUPPORTED_WORDS))


def estimate_usage(messages: Sequence[Message], tools: Sequence[ToolSpec] | None,
                   reply: Message, count: TokenCounter) -> Usage:
    """Usage counted locally for a server that sent none (spec §13): the text of every message
    and tool definition in, the reply's text, reasoning and tool-call arguments out."""
    parts = [m.content for m in messages]
    parts += [c.arguments_raw for m in messages for c in m.tool_calls]
    parts += [json.dumps(tool_to_wire(t)) for t in tools or ()]
    out = [reply.content, *(c.name + c.arguments_raw for c in reply.tool_calls)]
    if reply.reasoning and reply.reasoning_field:
        out.append(reply.reasoning)
    return Usage(input_tokens=count("\n".join(p for p in parts if p)),
                 output_tokens=count("\n".join(p for p in out if p)),
                 estimated=True)


def prompt_cache_key(conversation: str) -> str:
    """The ``prompt_cache_key`` of a conversation: ``ocr-hook-`` and 16 hex digits of its
    SHA-256, so the field is short and names no path of the repository."""
    import hashlib

    digest = hashlib.sha256(conversation.encode("utf-8", "surrogatepass")).hexdigest()
    return "ocr-hook-" + digest[:16]


class OpenAIClient:
    """Chat Completions client; one requests.Session per thread (requests promises no thread
    safety for a shared Session). :meth:`complete` raises LlmError."""

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
        self.output_tokens_field = (endpoint.output_tokens_field
                                    if endpoint.output_tokens_field in OUTPUT_TOKEN_FIELDS
                                    else "max_completion_tokens")
        self._sessions = http.SessionPerThread()

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
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] | None,
        max_output_tokens: int | None, output_field: str | None = None, cache_key: str = "",
    ) -> dict[str, Any]:
        """The Chat Completions request body (``cache_key``: see :func:`prompt_cache_key`)."""
        ep = self.endpoint
        body: dict[str, Any] = {
            "model": ep.model,
            "messages": [message_to_wire(m) for m in messages],
        }
        limit = max_output_tokens or ep.max_output_tokens
        if limit:
            body[output_field or self.output_tokens_field] = limit
        if tools:
            body["tools"] = [tool_to_wire(t) for t in tools]
            if ep.tool_choice:  # only with tools: OpenAI rejects tool_choice without them
                body["tool_choice"] = ep.tool_choice
        if cache_key and ep.prompt_cache_key and ep.prompt_caching:
            body["prompt_cache_key"] = prompt_cache_key(cache_key)
        # llm.extra_body adds fields; it never replaces the request's own
        return {**dict(ep.extra_body), **body}

    def _post(self, body: dict[str, Any], deadline: float) -> tuple[dict[str, Any], int]:
        """POST ``body``; ``deadline`` (monotonic) ends the request (``llm.timeout_s`` from
        the start of :meth:`complete`, shared by the retry with the other output field)."""
        ep = self.endpoint
        return http.post_json(
            self._sessions.get(), chat_url(ep.url), self.headers(), body,
            connect_timeout_s=ep.connect_timeout_s, timeout_s=ep.timeout_s,
            max_retries=ep.max_retries, body_error=_choices_error,
            before_attempt=self.before_attempt, deadline=deadline,
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn:
        t0 = time.monotonic()
        deadline = t0 + self.endpoint.timeout_s
        field = self.output_tokens_field
        attempts = 0
        try:
            try:
                payload, attempts = self._post(
                    self.build_body(messages, tools, max_output_tokens, field, cache_key),
                    deadline)
            except LlmError as e:
                other = OUTPUT_TOKEN_FIELDS[1 - OUTPUT_TOKEN_FIELDS.index(field)]
                if not names_output_field(e, field):
                    raise
                attempts = e.attempts
                self.output_tokens_field = other  # this server wants the other name: keep it
                payload, more = self._post(
                    self.build_body(messages, tools, max_output_tokens, other, cache_key),
                    deadline)
                attempts += more
        except LlmError as e:
            e.attempts += attempts
            self.stats.add_failure(e.attempts, time.monotonic() - t0)
            raise
        message, usage, finish = parse_response(payload)
        if usage is None:
            usage = estimate_usage(messages, tools, message, self.count_tokens)
        turn = Turn(message=message, usage=usage, finish_reason=finish,
                    latency_s=time.monotonic() - t0, attempts=attempts,
                    model=str(payload.get("model") or self.endpoint.model))
        self.stats.add(turn)
        return turn
