"""LLM protocol clients (spec §13). Knows nothing of git, diffs or tools; imports only
``errors`` and ``util``'s lazy exports. Token counting is injected by the caller
(``ocr_hook.util.tokens.count_tokens`` for the endpoint's model), so a client never loads a BPE
table by itself; without a counter, usage a server omits is estimated at bytes / 3."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..util import lazy_exports
from .types import ChatClient, Endpoint, TokenCounter, estimate_tokens

if TYPE_CHECKING:
    from .anthropic import messages_url
    from .openai import chat_url
    from .prefetch import start_prefetch
    from .traced import TracedClient, with_tracing
    from .types import (
        Message,
        ToolCall,
        ToolSpec,
        Turn,
        Usage,
        WrappedClient,
        decode_arguments,
        mask_key,
        split_think,
        user_parts,
    )

PROTOCOLS = ("openai", "anthropic")


def make_client(
    endpoint: Endpoint,
    before_attempt: Callable[[int], float | None] | None = None,
    count_tokens: TokenCounter | None = None,
) -> ChatClient:
    """The client for ``endpoint.protocol`` (openai | anthropic). ``before_attempt(n)`` runs
    before every HTTP attempt (budget/deadline checks raise from it); ``count_tokens`` counts
    usage when a server reports none (default: the bytes/3 estimate)."""
    from . import prefetch  # (not at import: most paths use llm.types only)

    count = count_tokens or estimate_tokens
    prefetch.wait()  # a background import of the HTTP stack started by the review, if any
    if endpoint.protocol == "anthropic":
        from .anthropic import AnthropicClient

        return AnthropicClient(endpoint, before_attempt, count)
    from .openai import OpenAIClient

    return OpenAIClient(endpoint, before_attempt, count)


__getattr__, __dir__, _lazy = lazy_exports(__name__, {
    "anthropic": ("messages_url",),
    "openai": ("chat_url",),
    "prefetch": ("start_prefetch",),
    "traced": ("TracedClient", "with_tracing"),
    "types": ("Message", "ToolCall", "ToolSpec", "Turn", "Usage", "WrappedClient",
              "decode_arguments", "mask_key", "split_think", "user_parts"),
})
__all__ = ["PROTOCOLS", "ChatClient", "Endpoint", "TokenCounter", "estimate_tokens", "make_client",
           *_lazy]
