"""Provider-neutral LLM data: messages, tool specs, tool calls, usage, turns, call statistics.

Both wire formats (OpenAI Chat Completions, Anthropic Messages) convert to and from these.
Nothing here does I/O; ``split_think`` and ``estimate_tokens`` are pure helpers shared by the
two protocol modules.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

TokenCounter = Callable[[str], int]
"""text → token count; the caller injects tiktoken (``ocr_hook.util.count_tokens``)."""

_THINK_OPEN = re.compile(r"^\s*<think>", re.S)
_THINK_CLOSE = "</think>"


def split_think(text: str) -> tuple[str | None, str]:
    """Split a leading reasoning block off model text (spec §13: reasoning models served without
    a reasoning parser put it in ``content``). Returns (reasoning or None, remaining text).

    Handles ``<think>…</think>rest``; ``…</think>rest`` with no opening tag (chat templates that
    put ``<think>`` into the prompt, e.g. Qwen3 / DeepSeek-R1 distills); and an unclosed
    ``<think>…`` (output cut off while thinking: everything is reasoning, the text is empty).
    Text without a leading block is returned unchanged with reasoning None.
    """
    if not text:
        return None, text or ""
    m = _THINK_OPEN.match(text)
    if m:
        end = text.find(_THINK_CLOSE, m.end())
        if end < 0:
            return text[m.end():].strip(), ""
        return text[m.end():end].strip(), text[end + len(_THINK_CLOSE):].lstrip()
    end = text.find(_THINK_CLOSE)
    if end >= 0 and "<think>" not in text[:end]:
        return text[:end].strip(), text[end + len(_THINK_CLOSE):].lstrip()
    return None, text


def estimate_tokens(text: str) -> int:
    """Conservative token estimate without a BPE table: UTF-8 bytes / 3, rounded up."""
    return (len(text.encode("utf-8", "surrogatepass")) + 2) // 3


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON escape of a UTF-16 surrogate (RFC 8259 §7): the only way JSON text decoded from
# UTF-8 (errors "replace") can give a string a surrogate; a text without one needs no walk.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def may_hold_surrogates(json_text: str) -> bool:
    """Whether decoding ``json_text`` may give strings with lone surrogates: it has a
    ``\\uD800``-``\\uDFFF`` escape (a valid pair decodes to one code point; only a lone one
    stays a surrogate)."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


def replace_surrogates(value: Any) -> Any:
    """``value`` (decoded JSON: dicts, lists, strings, scalars) with every lone surrogate in
    its strings, keys included, replaced by U+FFFD. JSON allows ``"\\ud800"`` (RFC 8259 §8.2),
    but such a string cannot be encoded as UTF-8, so it would make the next request, or the
    output, fail. Returns ``value`` itself when nothing changed."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        items = [(replace_surrogates(k), replace_surrogates(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(),
                                                                strict=True)):
            return value
        return dict(items)
    if isinstance(value, list):
        out = [replace_surrogates(v) for v in value]
        return value if all(a is b for a, b in zip(out, value, strict=True)) else out
    return value


def decode_arguments(raw: Any) -> tuple[Any, str | None]:
    """Decode a tool call's ``arguments``: a JSON string, or an already-decoded value from
    lenient servers. Returns (value, parse error or None); only a JSON object is usable, so
    absent, empty, ``null``, arrays, scalars and invalid JSON all come with an error text.
    Lone surrogates escaped in the JSON text come back as U+FFFD (:func:`replace_surrogates`)."""
    if raw is None:
        return None, "arguments missing; expected a JSON object"
    value = raw
    if isinstance(raw, str):
        if not raw.strip():
            return None, "arguments are an empty string; expected a JSON object"
        try:
            value = json.loads(raw)
        except ValueError as e:
            return None, f"invalid JSON ({e})"
        if may_hold_surrogates(raw):  # "\\ud800" inside the arguments' own JSON text
            value = replace_surrogates(value)
    if isinstance(value, dict):
        return value, None
    kind = {type(None): "null", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number")
    return value, f"arguments are {kind}; expected a JSON object"


def unique_ids(ids: Sequence[str], prefix: str) -> list[tuple[str, bool]]:
    """Give every tool call a usable, unique id: (id, synthetic). Missing ids become
    ``<prefix>_<random>``; a repeated id becomes ``<id>_<n>`` so that each call gets exactly one
    tool result (spec §6.2)."""
    seen: set[str] = set()
    out: list[tuple[str, bool]] = []
    for cid in ids:
        synthetic = False
        if not cid:
            import uuid  # lazily: uuid imports platform (start-up cost)

            cid, synthetic = f"{prefix}_{uuid.uuid4().hex[:12]}", True
        elif cid in seen:
            n = 2
            while f"{cid}_{n}" in seen or f"{cid}_{n}" in ids:
                n += 1
            cid, synthetic = f"{cid}_{n}", True
        seen.add(cid)
        out.append((cid, synthetic))
    return out


# The records below are NamedTuples, not frozen dataclasses: this module loads on every run
# that has an endpoint, and a NamedTuple class takes a small fraction of a dataclass's time to
# build. Immutable, compared by value, ``_replace`` for copies; nothing walks them as
# tuples (the session log and the wire formats are built field by field).


class ToolSpec(NamedTuple):
    """A tool offered to the model; ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(NamedTuple):
    """One tool call from the model, as received, never coerced.

    ``arguments_raw`` is the wire text (a JSON string on OpenAI; the JSON of ``input`` on
    Anthropic). ``arguments`` is the decoded value (a dict when usable). ``parse_error`` is set
    when the arguments are unusable: invalid JSON, an empty string, absent, or JSON that is not
    an object (``null``, an array, a scalar) — the registry answers such calls with an error
    result naming the expected schema (spec §6.2). ``synthetic_id`` marks an id we made up
    because the provider sent none or repeated one.
    """

    id: str
    name: str
    arguments_raw: str
    arguments: Any = None
    parse_error: str | None = None
    synthetic_id: bool = False


class Message(NamedTuple):
    """A conversation message.

    role: system | user | assistant | tool. Assistant messages may carry ``tool_calls``,
    ``reasoning`` and ``reasoning_field`` (the OpenAI-format field it arrived in:
    ``reasoning_content`` (DeepSeek, llama.cpp, DashScope) or ``reasoning`` (vLLM, Ollama); ""
    when it came from a ``<think>`` block in the text and so is never resent as a field), and
    ``native`` (Anthropic content blocks resent unchanged, thinking signatures included).
    ``content`` is the text as the model wrote it; :attr:`text` is that text without a leading
    think block. Tool messages carry ``tool_call_id`` and ``is_error``.

    ``splits`` (user messages): offsets into ``content`` where a new part starts, ascending,
    each inside the text; the first part is the stable head of the prompt (the same in every
    request of a run that has it) and ends in a prompt-cache breakpoint. Protocols with content
    blocks (Anthropic) send one text block per part; the others send ``content`` as it is.
    Build one with :func:`user_parts`.
    """

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""
    is_error: bool = False
    reasoning: str | None = None
    reasoning_field: str = ""
    native: tuple[dict[str, Any], ...] = ()
    splits: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        """``content`` with a leading ``<think>`` block removed (see :func:`split_think`)."""
        return split_think(self.content)[1]

    def parts(self) -> list[str]:
        """``content`` cut at ``splits``: one string without splits; never an empty part."""
        if not self.splits:
            return [self.content]
        bounds = [0, *self.splits, len(self.content)]
        return [self.content[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def user_parts(parts: Sequence[str]) -> Message:
    """A user message made of ``parts`` (empty ones dropped): the first is the stable head
    (see ``Message.splits``), its content is their concatenation."""
    kept = [p for p in parts if p]
    splits, at = [], 0
    for p in kept[:-1]:
        at += len(p)
        splits.append(at)
    return Message("user", "".join(kept), splits=tuple(splits))


class Usage(NamedTuple):
    """Token usage of one or more calls. ``input_tokens`` excludes cached prompt tokens, which
    are counted in ``cache_read_tokens`` / ``cache_write_tokens`` (Anthropic's split; OpenAI's
    ``prompt_tokens`` is divided the same way). ``estimated``: counted locally because a server
    sent no usage."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False

    @property
    def total(self) -> int:
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)

    def __add__(self, other: Usage) -> Usage:  # type: ignore[override]  # not concatenation
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.estimated or other.estimated,
        )


class Turn(NamedTuple):
    """One model reply: the assistant message, usage, finish reason, wall latency in seconds
    (all attempts and retry waits included), HTTP requests made (``attempts``) and the model
    name the server reported."""

    message: Message
    usage: Usage
    finish_reason: str = ""
    latency_s: float = 0.0
    attempts: int = 1
    model: str = ""


class CallStats:
    """Per-client counters for the session log, safe to share between worker threads: completed
    calls, failed calls, HTTP requests (retries included), summed latency and usage."""

    def __init__(self) -> None:
        self.calls = 0
        self.failures = 0
        self.requests = 0
        self.latency_s = 0.0
        self.usage = Usage()
        self._lock = threading.Lock()

    def add(self, turn: Turn) -> None:
        with self._lock:
            self.calls += 1
            self.requests += turn.attempts
            self.latency_s += turn.latency_s
            self.usage = self.usage + turn.usage

    def add_failure(self, attempts: int, latency_s: float) -> None:
        with self._lock:
            self.failures += 1
            self.requests += attempts
            self.latency_s += latency_s

    def snapshot(self) -> dict[str, Any]:
        """``{calls, failures, requests, latency_s, usage{input, output, cache_read,
        cache_write, estimated}}`` — the shape written to the session log."""
        with self._lock:
            u = self.usage
            return {
                "calls": self.calls,
                "failures": self.failures,
                "requests": self.requests,
                "latency_s": round(self.latency_s, 3),
                "usage": {"input": u.input_tokens, "output": u.output_tokens,
                          "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
                          "estimated": u.estimated},
            }


class Endpoint(NamedTuple):
    """A resolved LLM endpoint (spec §2, §13). ``api_key`` is never logged or written.

    ``url`` is a base or a full endpoint URL (query string kept, e.g. Azure ``api-version``).
    ``auth_header``: "" = the protocol's default (``Authorization: Bearer`` / ``x-api-key``);
    ``api-key`` for Azure; ``authorization`` forces Bearer on Anthropic.
    """

    url: str
    model: str
    protocol: str = "openai"  # openai | anthropic
    api_key: str = ""  # never in repr()
    provider: str = "custom"
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    max_retries: int = 3
    max_output_tokens: int = 16384
    max_output_tokens_cap: int = 0  # 0 = twice max_output_tokens (agent.stops.output_cap)
    output_tokens_field: str = "max_completion_tokens"
    anthropic_version: str = "2023-06-01"
    extra_headers: tuple[tuple[str, str], ...] = ()
    extra_body: tuple[tuple[str, Any], ...] = ()
    auth_header: str = ""
    tool_choice: str = ""  # "" = not sent; "auto" for servers that ignore tools without it
    prompt_caching: bool = True  # llm.prompt_caching: Anthropic cache_control breakpoints
    prompt_cache_key: bool = False  # the provider documents prompt_cache_key (OpenAI)

    def __repr__(self) -> str:
        """Every field but ``api_key`` (which is never logged)."""
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=True)
                          if k != "api_key")
        return f"Endpoint({shown})"


def mask_key(key: str) -> str:
    """An API key for display: ``sk-p…cdef`` (first 4 and last 4 characters), ``***`` when
    short, "" when empty."""
    if not key:
        return ""
    if len(key) < 12:
        return "***"
    return f"{key[:4]}…{key[-4:]}"


class ChatClient(Protocol):
    """One conversation step against a provider. Raises LlmError after retries.

    ``cache_key``: a stable name of the conversation this request belongs to when it will go
    on (the tool loop of one group), "" for a single request. With it, the Anthropic client
    also puts a prompt-cache breakpoint on the latest message, so the next round reads this
    one's prompt from the cache, and the OpenAI client sends it as ``prompt_cache_key`` where
    the provider documents that field (``Endpoint.prompt_cache_key``)."""

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def stats(self) -> CallStats: ...

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn: ...


class WrappedClient:
    """Base of a ChatClient that wraps another (``agent.budget.BudgetedClient``,
    ``agent.redactor.RedactingClient``): ``endpoint`` and ``stats`` are ``inner``'s; a
    subclass defines ``complete`` and delegates to ``self.inner``."""

    def __init__(self, inner: ChatClient) -> None:
        self.inner = inner

    @property
    def endpoint(self) -> Endpoint:
        return self.inner.endpoint

    @property
    def stats(self) -> CallStats:
        return self.inner.stats
