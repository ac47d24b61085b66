"""The token budget checked before every request (spec §6.4): a ChatClient wrapper
that reserves the request's worst case, its estimated input plus the output it may produce,
against what is left of ``review.max_tokens_budget`` before the request is sent.

Several groups send requests at once, so a check of "used so far" alone would let their sum
run past the budget. Each request in flight holds a reservation in the
:class:`~ocr_hook.agent.meter.Meter` until its usage is added, and a request that does not fit
beside the others is not sent (BudgetExhausted, reason ``budget``). The same reservation
runs the Meter's ``spend_check`` (a money cap, spec §13.7: SpendCapExceeded). The input
estimate is deliberately conservative: UTF-8 bytes / 3 of every text the request carries (most
tokenizers need fewer tokens) plus a per-message and per-tool allowance for the chat format.
"""

from __future__ import annotations

import json

from ..llm import ChatClient, Message, ToolSpec, Turn, WrappedClient, estimate_tokens
from .meter import Meter

MESSAGE_OVERHEAD_TOKENS = 16  # role markers and separators of the chat format, per message
TOOL_OVERHEAD_TOKENS = 16  # per tool definition, beyond its JSON text
DEFAULT_OUTPUT_TOKENS = 16384  # spec §2 llm.max_output_tokens default, when the endpoint has 0


def request_tokens(messages: list[Message], tools: list[ToolSpec] | None) -> int:
    """Conservative input tokens of one request: every message's text, reasoning and tool-call
    arguments and every tool's JSON definition, at UTF-8 bytes / 3, plus the overheads."""
    parts: list[str] = []
    for m in messages:
        parts += [m.content, m.reasoning or ""]
        parts += [c.name + c.arguments_raw for c in m.tool_calls]
    for t in tools or ():
        parts.append(json.dumps({"name": t.name, "description": t.description,
                                 "parameters": t.parameters}, ensure_ascii=False))
    return (estimate_tokens("\n".join(p for p in parts if p))
            + MESSAGE_OVERHEAD_TOKENS * len(messages) + TOOL_OVERHEAD_TOKENS * len(tools or ()))


class BudgetedClient(WrappedClient):
    """A ChatClient that reserves each request's input estimate plus its maximum output in
    ``meter`` before delegating to ``inner`` (raises BudgetExhausted when it does not fit).
    The reservation ends when the caller adds the turn's usage to the meter, or when the call
    fails."""

    def __init__(self, inner: ChatClient, meter: Meter) -> None:
        super().__init__(inner)
        self.meter = meter

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn:
        output = (max_output_tokens or self.inner.endpoint.max_output_tokens
                  or DEFAULT_OUTPUT_TOKENS)
        self.meter.reserve(request_tokens(messages, tools) + output, output)
        try:
            return self.inner.complete(messages, tools, max_output_tokens=max_output_tokens,
                                       cache_key=cache_key)
        except BaseException:
            self.meter.release()
            raise
