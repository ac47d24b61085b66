"""Context compression of one conversation (spec §6.3).

A conversation is ``[system, user]`` (the frozen zone) plus rounds (an assistant message and
the tool results / user messages after it). Before each request after the first: at ≥ 60 % of
``context_tokens`` a background summary of the older rounds starts (on the background runner
the run passes in); at ≥ 80 % the loop first applies a finished or running background summary,
then compresses synchronously, and stops with ``compression_failed`` if it is still at ≥ 80 %.
Compressing keeps the frozen zone and the newest complete rounds that fit in 50 % of the
context (minus the summary's reserve), and replaces the rest by one summary appended to the
user message. No HTTP here: the token counter, the summariser and the runner are passed in.

Text of the conversation put into the summary request, and the summary put back, is framed as
the main prompt frames content (:func:`framed_text`): a line break other than ``\\n`` inside
a line is spelled out, and a tag of the framing itself (``<message>``, ``<earlier_summary>``,
``<previous_review_summary>``) inside a message has its ``<`` as ``&lt;``, so a tool result or
a reply can neither close its element nor open a fake one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

from .. import util
from ..errors import BudgetExhausted, DeadlineExceeded, OcrError
from ..llm import Message
from .textcalls import strip_think

SOFT_FRACTION = 0.60  # spec §6.3: background compression starts (OCR tokenSoftThreshold)
HARD_FRACTION = 0.80  # spec §6.3: compress before the next request (OCR tokenWarningThreshold)
ACTIVE_FRACTION = 0.50  # ours: the kept zone's target, below SOFT so compression does not re-fire
MESSAGE_OVERHEAD_TOKENS = 4  # role/framing tokens per message (OpenAI chat format estimate)
SUMMARY_MAX_TOKENS = 2000  # output cap of the summary call, reserved in the kept zone
_FRAME_TAG = re.compile(r"<(\s*/?\s*(?:message|earlier_summary|previous_review_summary))\b", re.I)


def framed_text(text: str) -> str:
    """``text`` (a message, a summary) for the transcript or the summary block: line breaks
    other than ``\\n`` inside a line spelled out (``util.prompt_text``), and each framing tag
    (``<message``, ``</message``, ``<earlier_summary``, ``<previous_review_summary``…, any
    case) written ``&lt;message``…; everything else as it is."""
    return _FRAME_TAG.sub(r"&lt;\1", util.prompt_text(text))


class ContextPolicy(NamedTuple):
    """How one conversation is kept inside the model's context (spec §6.3).

    ``context_tokens``: the context budget (``llm.context_tokens``). ``count_tokens``: text →
    tokens (tiktoken offline). ``summarize``: rendered compress zone → summary text (one LLM
    call, ``agent.tasks.summary_call``); raises OcrError on failure. ``spawn``: runs a summary
    in the background and returns its Future (the run's background pool, which it waits for
    at its end); None disables background compression.
    """

    context_tokens: int
    count_tokens: Callable[[str], int]
    summarize: Callable[[str], str]
    spawn: Callable[[Callable[[], str]], Future[str]] | None = None
    summary_max_tokens: int = SUMMARY_MAX_TOKENS


def message_text(m: Message) -> str:
    """Everything of ``m`` that occupies context: content, reasoning and tool calls."""
    parts = [m.content]
    if m.reasoning:
        parts.append(m.reasoning)
    parts.extend(f"{c.name} {c.arguments_raw}" for c in m.tool_calls)
    return "\n".join(p for p in parts if p)


class Compressor:
    """Context accounting and compression of one conversation (see the module docstring).

    ``base_user`` is the conversation's first user message (``prompts.group_messages``); a
    summary is appended to it, replacing any earlier summary (which the new summary folds in). Token
    counts: :meth:`tokens` returns the exact count, except while the UTF-8 byte count (an upper
    bound: every token is at least one byte) is already below the 60 % mark, when it returns
    that bound: no decision depends on the exact value then, and tiktoken is never loaded for
    small conversations (spec §15).
    """

    def __init__(
        self,
        policy: ContextPolicy,
        base_user: str,
        *,
        record: Callable[[str, dict[str, Any]], None] = lambda kind, data: None,
        label: str = "",
    ) -> None:
        self.policy = policy
        self.base_user = base_user
        self.record = record
        self.label = label
        ctx = policy.context_tokens
        self.soft_tokens = int(ctx * SOFT_FRACTION)
        self.hard_tokens = int(ctx * HARD_FRACTION)
        self.keep_tokens = int(ctx * ACTIVE_FRACTION)
        self.reserve_tokens = min(policy.summary_max_tokens, ctx // 10)
        self.summary = ""
        self.generation = 0  # bumped whenever the conversation's prefix is rewritten
        self.applied = 0
        self._job: tuple[Future[str], int, int] | None = None  # (future, split index, generation)
        self._counts: dict[int, tuple[Message, int]] = {}

    # -- token accounting ---------------------------------------------------------------
    def _exact(self, m: Message) -> int:
        hit = self._counts.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        n = self.policy.count_tokens(message_text(m)) + MESSAGE_OVERHEAD_TOKENS
        self._counts[id(m)] = (m, n)
        return n

    def tokens(self, msgs: Sequence[Message]) -> int:
        """Tokens of ``msgs`` (exact, or the byte bound below the 60 % mark)."""
        bound = sum(len(message_text(m).encode("utf-8", "surrogatepass")) + MESSAGE_OVERHEAD_TOKENS
                    for m in msgs)
        if bound < self.soft_tokens:
            return bound
        live = {id(m) for m in msgs}
        self._counts = {k: v for k, v in self._counts.items() if k in live}
        return sum(self._exact(m) for m in msgs)

    # -- zones ----------------------------------------------------------------------------
    def split_index(self, msgs: Sequence[Message]) -> int | None:
        """Index where the kept zone starts: the newest complete rounds whose tokens fit in
        50 % of the context minus the frozen zone and the summary reserve. None when there is
        nothing to compress (no round, or every round fits)."""
        starts = [i for i in range(2, len(msgs)) if msgs[i].role == "assistant"]
        if not starts:
            return None
        frozen = self._exact(msgs[0]) + self.policy.count_tokens(self.base_user)
        room = self.keep_tokens - frozen - self.reserve_tokens
        keep_from = len(msgs)
        ends = [*starts[1:], len(msgs)]
        for start, end in zip(reversed(starts), reversed(ends), strict=True):
            size = sum(self._exact(m) for m in msgs[start:end])
            if size > room:
                break
            room -= size
            keep_from = start
        return None if keep_from <= 2 else keep_from

    def transcript(self, zone: Sequence[Message]) -> str:
        """The compress zone as text for the summary call (earlier summary first)."""
        parts = []
        if self.summary:
            parts.append(f"<earlier_summary>\n{framed_text(self.summary)}\n</earlier_summary>")
        for n, m in enumerate(zone, 1):
            attrs = f'index="{n}" role="{m.role}"'
            if m.role == "tool":
                attrs += f' tool="{util.xml_attr(m.name)}"'
            body = [strip_think(m.content) if m.role == "assistant" else m.content]
            body.extend(f"[called {c.name}] {c.arguments_raw}" for c in m.tool_calls)
            text = framed_text("\n".join(b for b in body if b)) or "(empty)"
            parts.append(f"<message {attrs}>\n{text}\n</message>")
        return "\n".join(parts)

    def _rebuild(self, msgs: Sequence[Message], keep_from: int, summary: str) -> list[Message]:
        user = Message(
            "user",
            f"{self.base_user}\n\n<previous_review_summary>\n{framed_text(summary)}\n"
            "</previous_review_summary>",
        )
        self.summary = summary
        self.generation += 1
        self.applied += 1
        return [msgs[0], user, *msgs[keep_from:]]

    # -- background and blocking compression ---------------------------------------------
    def _start_background(self, msgs: Sequence[Message]) -> None:
        spawn = self.policy.spawn
        keep_from = self.split_index(msgs)
        if spawn is None or keep_from is None:
            return
        text = self.transcript(msgs[2:keep_from])
        self._job = (spawn(lambda: self.policy.summarize(text)), keep_from, self.generation)
        self.record("compression", {"group": self.label, "mode": "background", "event": "start",
                                    "messages": keep_from - 2})

    def _apply_job(self, msgs: list[Message], wait: bool) -> list[Message]:
        if self._job is None:
            return msgs
        fut, keep_from, gen = self._job
        if not wait and not fut.done():
            return msgs
        self._job = None
        try:
            summary = fut.result()
        except Exception as e:  # noqa: BLE001 - a failed background summary only costs a retry
            self.record("compression", {"group": self.label, "mode": "background",
                                        "event": "failed", "error": str(e) or type(e).__name__})
            return msgs
        if gen != self.generation or not summary:
            return msgs
        before = self.tokens(msgs)
        out = self._rebuild(msgs, keep_from, summary)
        self.record("compression", {"group": self.label, "mode": "background", "event": "applied",
                                    "tokens_before": before, "tokens_after": self.tokens(out)})
        return out

    def _compress_now(self, msgs: list[Message]) -> list[Message]:
        keep_from = self.split_index(msgs)
        if keep_from is None:
            return msgs
        try:
            summary = self.policy.summarize(self.transcript(msgs[2:keep_from]))
        except (BudgetExhausted, DeadlineExceeded):
            raise
        except OcrError as e:
            self.record("compression", {"group": self.label, "mode": "blocking",
                                        "event": "failed", "error": str(e)})
            return msgs
        before = self.tokens(msgs)
        out = self._rebuild(msgs, keep_from, summary)
        self.record("compression", {"group": self.label, "mode": "blocking", "event": "applied",
                                    "tokens_before": before, "tokens_after": self.tokens(out)})
        return out

    def before_request(self, msgs: list[Message]) -> tuple[list[Message], bool]:
        """Bring ``msgs`` into shape for the next request. Returns (messages, ok); ok False
        means the conversation is still at ≥ 80 % after compressing (stop the loop). Raises
        BudgetExhausted / DeadlineExceeded from the summary call."""
        msgs = self._apply_job(msgs, wait=False)
        n = self.tokens(msgs)
        if n >= self.hard_tokens:
            msgs = self._apply_job(msgs, wait=True)
            if self.tokens(msgs) >= self.hard_tokens:
                msgs = self._compress_now(msgs)
            n = self.tokens(msgs)
            if n >= self.hard_tokens:
                self.record("compression", {"group": self.label, "event": "over_limit",
                                            "tokens": n, "limit": self.hard_tokens})
                return msgs, False
        elif n >= self.soft_tokens and self._job is None:
            self._start_background(msgs)
        return msgs, True

    def close(self) -> None:
        """Drop a background summary that has not started yet (one that runs is awaited by the
        run's pool shutdown)."""
        if self._job is not None:
            self._job[0].cancel()
            self._job = None
