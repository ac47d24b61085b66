"""LLM protocol clients. Knows nothing of git, diffs or tools; imports only ``errors``."""

from __future__ import annotations

from collections.abc import Callable

from .types import ChatClient, Endpoint


def make_client(
    endpoint: Endpoint, before_attempt: Callable[[int], None] | None = None
) -> ChatClient:
    """The client for ``endpoint.protocol`` (openai | anthropic)."""
    if endpoint.protocol == "anthropic":
        from .anthropic import AnthropicClient

        return AnthropicClient(endpoint, before_attempt)
    from .openai import OpenAIClient

    return OpenAIClient(endpoint, before_attempt)
