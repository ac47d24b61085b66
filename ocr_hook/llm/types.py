"""Provider-neutral LLM data: messages, tool specs, tool calls, usage, turns.

Both wire formats (OpenAI Chat Completions, Anthropic Messages) convert to and from these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model; ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call from the model.

    ``arguments`` is the decoded JSON value (any type) or None when ``arguments_raw`` was not
    valid JSON; then ``parse_error`` says why. ``id`` may be synthesised when the provider
    omitted it (``synthetic_id``).
    """

    id: str
    name: str
    arguments_raw: str
    arguments: Any = None
    parse_error: str | None = None
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """A conversation message.

    role: system | user | assistant | tool. Assistant messages may carry ``tool_calls``,
    ``reasoning`` (DeepSeek ``reasoning_content`` / vLLM/Ollama ``reasoning``; sent back where
    the provider requires it) and ``native`` (provider blocks to resend unchanged, e.g.
    Anthropic thinking blocks). Tool messages carry ``tool_call_id`` and ``is_error``.
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


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by the provider (or counted locally when ``estimated``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.estimated or other.estimated,
        )


@dataclass(frozen=True, slots=True)
class Turn:
    """One model reply: the assistant message, usage, finish reason, latency and attempts."""

    message: Message
    usage: Usage
    finish_reason: str = ""
    latency_s: float = 0.0
    attempts: int = 1
    model: str = ""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A resolved LLM endpoint (SPEC §2, §13). ``api_key`` is never logged or written."""

    url: str
    model: str
    protocol: str = "openai"  # openai | anthropic
    api_key: str = field(default="", repr=False)
    provider: str = "custom"
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    max_retries: int = 3
    max_output_tokens: int = 16384
    output_tokens_field: str = "max_completion_tokens"
    anthropic_version: str = "2023-06-01"
    extra_headers: tuple[tuple[str, str], ...] = ()
    extra_body: tuple[tuple[str, Any], ...] = ()
    auth_header: str = ""  # "" = protocol default; "api-key" for Azure


class ChatClient(Protocol):
    """One conversation step against a provider. Raises LlmError after retries."""

    endpoint: Endpoint

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
    ) -> Turn: ...
