"""The redaction choke point (spec §14): every text the review sends to an LLM passes here.

:class:`RedactingClient` wraps the run's ChatClient; the run (``pipeline.llm_stage``) hands
only the wrapper to the agent code (tool loop, grouping, review filter, re-location,
compression summary), so no request can leave without its messages redacted: system and user
prompts (the diffs), tool results (built-in and MCP), earlier assistant turns and their
tool-call arguments, and tool descriptions. Text is also made encodable: a path byte that is not
UTF-8 is sent as ``\\xNN`` (:mod:`ocr_hook.util.text`), and tools map that form back.
Anthropic ``native`` blocks (thinking signatures) are resent unchanged: they are the model's
own output, produced from redacted input.

:class:`Redactor` is the text function behind it (``secrets.redaction.redact``: every
detected value, allow-listed ones included, since an allow-list only removes findings), also
used where text is prepared before the request (the diffs are redacted in place before anything
is rendered, tool results before they are logged), so the session log holds the same redacted
text the model saw. Its results are memoised per text: a conversation resends its earlier
messages on every round, and an already redacted text maps to itself.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..llm import ChatClient, Message, ToolSpec, Turn, WrappedClient, user_parts
from ..secrets import redact
from ..util import shown_text

MEMO_MAX_ENTRIES = 4096  # memoised texts kept per run before the memo is cleared (ours)
MEMO_MAX_CHARS = 64 * 1024 * 1024  # and their total size: tools redact whole files (ours)


class Redactor:
    """Callable ``text → redacted text`` for one run; thread-safe. It takes no allow-list:
    ``security.allow_secrets`` and the inline marker make a value "not a finding", never "send
    it". ``literals``: values found outside the rules (the optional detect-secrets
    pass, ``change.scan``) → placeholder type; every occurrence is replaced too. ``replaced``
    counts the secret values replaced so far (each distinct text counted once)."""

    def __init__(self, literals: Mapping[str, str] | None = None) -> None:
        self.literals = dict(literals or {})
        self.replaced = 0
        self._memo: dict[str, str] = {}
        self._memo_chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        if not text:
            return text
        with self._lock:
            hit = self._memo.get(text)
        if hit is not None:
            return hit
        out, n = redact(shown_text(text), self.literals)  # non-UTF-8 path bytes as \xNN
        with self._lock:
            if len(self._memo) >= MEMO_MAX_ENTRIES or self._memo_chars >= MEMO_MAX_CHARS:
                self._memo.clear()
                self._memo_chars = 0
            self._memo[text] = out
            self._memo[out] = out
            self._memo_chars += len(text) + len(out)
            self.replaced += n
        return out

    def message(self, m: Message) -> Message:
        """``m`` with its content, reasoning and tool-call arguments redacted (``native``
        blocks kept as they are). A message in parts (``splits``) is redacted part by part,
        so its parts still start where the redacted text of each begins."""
        if m.splits:
            parts = [self(p) for p in m.parts()]
            redone = user_parts(parts)
            return m if redone.content == m.content else m._replace(
                content=redone.content, splits=redone.splits)
        content = self(m.content)
        reasoning = self(m.reasoning) if m.reasoning else m.reasoning
        calls = tuple(
            c if (raw := self(c.arguments_raw)) == c.arguments_raw
            else c._replace(arguments_raw=raw)
            for c in m.tool_calls
        )
        if content == m.content and reasoning == m.reasoning and calls == m.tool_calls:
            return m
        return m._replace(content=content, reasoning=reasoning, tool_calls=calls)

    def tool(self, spec: ToolSpec) -> ToolSpec:
        description = self(spec.description)
        if description == spec.description:
            return spec
        return spec._replace(description=description)


class RedactingClient(WrappedClient):
    """A ChatClient that redacts every outgoing request (see the module docstring) and then
    delegates to ``inner``. Replies are returned unchanged."""

    def __init__(self, inner: ChatClient, redactor: Redactor) -> None:
        super().__init__(inner)
        self.redactor = redactor

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        max_output_tokens: int | None = None,
        cache_key: str = "",
    ) -> Turn:
        safe = [self.redactor.message(m) for m in messages]
        safe_tools = None if tools is None else [self.redactor.tool(t) for t in tools]
        return self.inner.complete(safe, safe_tools, max_output_tokens=max_output_tokens,
                                   cache_key=cache_key)
