"""A span per LLM call (spec §11.7) with the OpenTelemetry GenAI semantic conventions
(``gen_ai.*`` attributes of the "GenAI client spans" of the OpenTelemetry semantic conventions).

:func:`with_tracing` wraps a client only while telemetry is on (``util.tracing``); off, it
returns the client itself, so an untraced run has no extra layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..util import tracing
from .types import ChatClient, Message, ToolSpec, Turn, WrappedClient

OPERATION = "chat"  # gen_ai.operation.name of Chat Completions and Messages calls


def with_tracing(client: ChatClient,
                 redact: Callable[[str], str] | None = None) -> ChatClient:
    """``client`` in a :class:`TracedClient` when telemetry is on, else ``client``;
    ``redact``: applied to an error's message before a span records it (content only)."""
    return TracedClient(client, redact) if tracing.on else client


class TracedClient(WrappedClient):
    """A ChatClient recording each ``complete`` as a span ``chat <model>``: ``gen_ai.system``
    (the protocol: ``openai`` | ``anthropic``), ``gen_ai.operation.name``,
    ``gen_ai.provider.name`` (the same: the conventions' newer name for it),
    ``gen_ai.request.model``, ``gen_ai.request.max_tokens``, and from the reply
    ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``
    and ``gen_ai.usage.output_tokens`` (as the server reported them, or counted when it sent
    none: ``ocr.usage.estimated``). With ``telemetry.content`` the last message and the reply
    text too (``ocr.prompt``, ``ocr.completion``): the caller hands it redacted messages
    (``agent.RedactingClient`` wraps this client). Errors propagate, recorded on the span
    with ``ocr.attempts`` (``util.tracing``: the exception's type and HTTP status; its message
    only with ``telemetry.content``, through ``redact``)."""

    def __init__(self, inner: ChatClient, redact: Callable[[str], str] | None = None) -> None:
        super().__init__(inner)
        self.redact = redact

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn:
        ep = self.inner.endpoint
        attrs: dict[str, Any] = {
            "gen_ai.system": ep.protocol, "gen_ai.provider.name": ep.protocol,  # newer name
            "gen_ai.operation.name": OPERATION,
            "gen_ai.request.model": ep.model,
            "gen_ai.request.max_tokens": _sent_max_tokens(ep, max_output_tokens),
            "ocr.request.messages": len(messages), "ocr.request.tools": len(tools or ()),
        }
        with tracing.span(f"{OPERATION} {ep.model}", attrs) as span:
            span.redact_errors(self.redact)
            if messages:
                span.set("ocr.prompt", tracing.text(messages[-1].content or ""))
            try:
                turn = self.inner.complete(messages, tools, max_output_tokens=max_output_tokens,
                                           cache_key=cache_key)
            except Exception as e:
                attempts = getattr(e, "attempts", None)
                span.set("ocr.attempts", attempts if isinstance(attempts, int) else None)
                raise
            u = turn.usage
            span.set("gen_ai.response.model", turn.model or None)
            span.set("gen_ai.response.finish_reasons",
                     [turn.finish_reason] if turn.finish_reason else None)
            span.set("gen_ai.usage.input_tokens", u.input_tokens)
            span.set("gen_ai.usage.output_tokens", u.output_tokens)
            span.set("ocr.usage.cache_read_tokens", u.cache_read_tokens)
            span.set("ocr.usage.estimated", u.estimated)
            span.set("ocr.attempts", turn.attempts)
            span.set("ocr.tool_calls", len(turn.message.tool_calls))
            span.set("ocr.completion", tracing.text(turn.message.content or ""))
            return turn


def _sent_max_tokens(ep: Any, asked: int | None) -> int | None:
    """The output-token limit the client puts on the wire: ``asked``, else the endpoint's
    ``max_output_tokens``, else (Anthropic, which requires one) ``anthropic.DEFAULT_MAX_TOKENS``;
    None when none is sent."""
    limit = asked or getattr(ep, "max_output_tokens", 0) or None
    if limit is None and ep.protocol == "anthropic":
        from .anthropic import DEFAULT_MAX_TOKENS

        limit = DEFAULT_MAX_TOKENS
    return limit
