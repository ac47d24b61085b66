"""One group's tool loop (SPEC §6.2) and its context compression (SPEC §6.3).

The loop calls the model with the main tools until ``task_done``, the round cap (then one grace
round offering only ``code_comment`` + ``task_done``), three consecutive empty rounds (no tool
call, or only error results), a compression that cannot get under 80 % of the context, budget
exhaustion, the run deadline or cancellation. No HTTP or git here: the client, the registry,
the token counter, the summariser and the background runner are passed in.

Compression (:class:`Compressor`): a conversation is ``[system, user]`` (the frozen zone) plus
rounds (an assistant message and the tool results / user messages after it). Before each
request after the first: at ≥ 60 % of ``context_tokens`` a background summary of the older
rounds starts (on the runner ``review`` owns); at ≥ 80 % the loop first applies a finished or
running background summary, then compresses synchronously, and stops with
``compression_failed`` if it is still at ≥ 80 %. Compressing keeps the frozen zone and the
newest complete rounds that fit in 50 % of the context (minus the summary's reserve), and
replaces the rest by one summary appended to the user message.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .. import prompts
from ..errors import BudgetExhausted, DeadlineExceeded, LlmError, OcrError
from ..llm.types import (
    ChatClient,
    Message,
    ToolCall,
    Turn,
    Usage,
    decode_arguments,
    split_think,
)
from ..tools.comment import parse_task_done
from ..tools.registry import Handler, Registry, ToolResult
from .meter import Cancelled, Meter

log = logging.getLogger(__name__)

MAX_EMPTY_ROUNDS = 3  # SPEC §6.2 (OCR maxConsecutiveEmptyRounds)
GRACE_TOOLS = ("code_comment", "task_done")
SOFT_FRACTION = 0.60  # SPEC §6.3: background compression starts (OCR tokenSoftThreshold)
HARD_FRACTION = 0.80  # SPEC §6.3: compress before the next request (OCR tokenWarningThreshold)
ACTIVE_FRACTION = 0.50  # ours: the kept zone's target, below SOFT so compression does not re-fire
MESSAGE_OVERHEAD_TOKENS = 4  # role/framing tokens per message (OpenAI chat format estimate)
SUMMARY_MAX_TOKENS = 2000  # output cap of the summary call, reserved in the kept zone
STOP_REASONS = (
    "task_done", "task_failed", "max_rounds", "no_tool_calls", "empty_rounds",
    "compression_failed", "budget", "timeout", "cancelled", "llm_error",
)
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)


@dataclass
class LoopResult:
    """Outcome of one loop. ``stop_reason`` is one of :data:`STOP_REASONS`; ``rounds`` counts
    model requests of the main task (summary calls excluded); ``compressions`` counts applied
    summaries."""

    stop_reason: str
    rounds: int
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    error: str = ""
    compressions: int = 0


def strip_think(text: str) -> str:
    """Drop a leading ``<think>…</think>`` block (reasoning models without a parser)."""
    return _THINK.sub("", text or "", count=1)


def _json_objects(text: str) -> list[Any]:
    """Every top-level JSON object in ``text`` (prose, markdown fences and markup around them
    are skipped), in order."""
    dec = json.JSONDecoder()
    out: list[Any] = []
    i = 0
    while True:
        j = text.find("{", i)
        if j < 0:
            return out
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            i = j + 1
            continue
        out.append(obj)
        i = end


_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.S)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.S)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "input", "args")


def _xml_parameter(value: str) -> Any:
    """A ``<parameter=…>`` value: JSON when it parses (arrays, objects, numbers, booleans), else
    the text itself (Qwen3-Coder writes strings unquoted)."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def _calls_in(text: str, known: set[str]) -> list[tuple[str, Any]]:
    """(name, arguments as written) of the tool calls written in ``text``; ``...`` stands for
    absent arguments. Formats: ``<function=NAME><parameter=K>V</parameter></function>``
    (Qwen3-Coder XML, also inside ``<tool_call>``), ``<function=NAME>{json}</function>``
    (Llama 3.1), and JSON objects — bare, fenced or inside ``<tool_call>`` (Hermes/Qwen) — of
    the shapes ``{"name", "arguments"|"parameters"|"input"|"args"}``, ``{"function": {…}}`` and
    ``{"tool_calls": [...]}``. Names not in ``known`` are ignored."""
    found: list[tuple[str, Any]] = []
    for m in _FUNCTION_TAG.finditer(text):
        name, body = m.group(1), m.group(2)
        if name not in known:
            continue
        params = _PARAMETER_TAG.findall(body)
        if params:
            found.append((name, {k: _xml_parameter(v) for k, v in params}))
        elif body.strip():
            found.append((name, body.strip()))
        else:
            found.append((name, ...))
    if found:
        return found
    queue = _json_objects(text)
    while queue:
        obj = queue.pop(0)
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("tool_calls"), list):
            queue[:0] = obj["tool_calls"]
            continue
        fn = obj["function"] if isinstance(obj.get("function"), dict) else obj
        name = next((fn[k] for k in _NAME_KEYS if isinstance(fn.get(k), str)), None)
        if name not in known:
            continue
        key = next((k for k in _ARG_KEYS if k in fn), None)
        found.append((name, fn[key] if key else ...))
    return found


def text_tool_calls(content: str, known: set[str]) -> list[ToolCall]:
    """Tool calls written as text in ``content`` (SPEC §6.2 fallback, for servers without a
    tool-call parser): see :func:`_calls_in` for the formats. Calls in the answer win; calls
    only written inside a leading ``<think>`` block are taken when the answer has none. Only
    names in ``known`` are accepted. Arguments are decoded as native tool calls are
    (``llm.types.decode_arguments``): anything but a JSON object carries a ``parse_error``, so
    the registry answers with the expected schema instead of running on coerced arguments.
    Ids are synthetic."""
    think, answer = split_think(content or "")
    found = _calls_in(answer, known)
    if not found and think:
        found = _calls_in(think, known)
    calls: list[ToolCall] = []
    for name, args in found:
        raw = "" if args is ... else args if isinstance(args, str) else json.dumps(
            args, ensure_ascii=False)
        value, err = decode_arguments(None if args is ... else raw)
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, raw, value, err, True))
    return calls


@dataclass(frozen=True)
class ContextPolicy:
    """How one conversation is kept inside the model's context (SPEC §6.3).

    ``context_tokens``: the context budget (``llm.context_tokens``). ``count_tokens``: text →
    tokens (tiktoken offline). ``summarize``: rendered compress zone → summary text (one LLM
    call, ``agent.tasks.summary_call``); raises OcrError on failure. ``spawn``: runs a summary
    in the background and returns its Future (a pool ``review`` owns and waits for at the end
    of the run); None disables background compression.
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

    ``base_user`` is the conversation's first user message as built by ``review``; a summary is
    appended to it, replacing any earlier summary (which the new summary folds in). Token
    counts: :meth:`tokens` returns the exact count, except while the UTF-8 byte count (an upper
    bound: every token is at least one byte) is already below the 60 % mark, when it returns
    that bound: no decision depends on the exact value then, and tiktoken is never loaded for
    small conversations (SPEC §15).
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
            parts.append(f"<earlier_summary>\n{self.summary}\n</earlier_summary>")
        for n, m in enumerate(zone, 1):
            attrs = f'index="{n}" role="{m.role}"'
            if m.role == "tool":
                attrs += f' tool="{prompts.xml_attr(m.name)}"'
            body = [strip_think(m.content) if m.role == "assistant" else m.content]
            body.extend(f"[called {c.name}] {c.arguments_raw}" for c in m.tool_calls)
            text = "\n".join(b for b in body if b) or "(empty)"
            parts.append(f"<message {attrs}>\n{text}\n</message>")
        return "\n".join(parts)

    def _rebuild(self, msgs: Sequence[Message], keep_from: int, summary: str) -> list[Message]:
        user = Message(
            "user",
            f"{self.base_user}\n\n<previous_review_summary>\n{summary}\n</previous_review_summary>",
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


def stop_reason_for(e: OcrError) -> str:
    """The loop stop reason for an error that ends a loop or a single-shot call."""
    if isinstance(e, Cancelled):
        return "cancelled"
    if isinstance(e, DeadlineExceeded):
        return "timeout"
    if isinstance(e, BudgetExhausted):
        return "budget"
    return "llm_error"


def run_loop(
    client: ChatClient,
    registry: Registry,
    messages: list[Message],
    *,
    local: Mapping[str, Handler],
    meter: Meter,
    max_rounds: int = 100,
    redact: Callable[[str], str] = lambda s: s,
    record: Callable[[str, dict[str, Any]], None] = lambda kind, data: None,
    label: str = "",
    context: ContextPolicy | None = None,
) -> LoopResult:
    """Run the main tool loop on ``messages`` (system + user); returns the LoopResult.

    Tool errors are results for the model; every tool call id gets exactly one result before
    the next request. ``local`` supplies this group's ``code_comment``/``task_done`` handlers.
    ``context`` enables compression (SPEC §6.3). Never raises for LLM, budget or deadline
    failures: they end the loop with their stop reason.
    """
    msgs = list(messages)
    tools = registry.specs("main")
    known = {t.name for t in tools}
    usage = Usage()
    empty = 0
    rounds = 0
    grace = False
    compressor = (
        Compressor(context, msgs[1].content, record=record, label=label)
        if context is not None and len(msgs) >= 2
        else None
    )

    def done(reason: str, error: str = "") -> LoopResult:
        if compressor is not None:
            compressor.close()
        return LoopResult(reason, rounds, msgs, usage, error,
                          compressor.applied if compressor is not None else 0)

    while True:
        allowed: tuple[str, ...] = GRACE_TOOLS if grace else ()
        offered = [t for t in tools if not grace or t.name in GRACE_TOOLS]
        try:
            if compressor is not None and rounds:
                msgs, fits = compressor.before_request(msgs)
                if not fits:
                    return done("compression_failed", "context compression could not get the"
                                " conversation under 80 % of llm.context_tokens")
            meter.check()
            request: dict[str, Any] = {"group": label, "task": "main", "round": rounds + 1,
                                       "messages": len(msgs)}
            if rounds == 0:  # the session log keeps the prompt once (SPEC §12)
                request["prompt"] = [{"role": m.role, "content": m.content} for m in msgs]
            record("llm_request", request)
            turn: Turn = client.complete(msgs, offered)
        except (BudgetExhausted, DeadlineExceeded, LlmError) as e:
            return done(stop_reason_for(e), str(e))
        rounds += 1
        usage = usage + turn.usage
        meter.add(turn.usage)
        reply = turn.message
        record("llm_response", {"group": label, "task": "main", "round": rounds,
                                "tool_calls": [c.name for c in reply.tool_calls],
                                "content": reply.content,
                                "calls": [{"id": c.id, "name": c.name,
                                           "arguments": c.arguments_raw}
                                          for c in reply.tool_calls],
                                "usage": _usage_dict(turn.usage),
                                "latency_s": round(turn.latency_s, 3),
                                "finish_reason": turn.finish_reason})
        calls = list(reply.tool_calls)
        if not calls and reply.content:
            calls = text_tool_calls(reply.content, known)
            if calls:
                reply = Message("assistant", strip_think(reply.content), tuple(calls),
                                reasoning=reply.reasoning, reasoning_field=reply.reasoning_field)
        if not calls:
            text = strip_think(reply.content)
            msgs.append(Message("assistant", text or "(no output)", reasoning=reply.reasoning,
                                reasoning_field=reply.reasoning_field, native=reply.native))
            msgs.append(Message("user", prompts.render("nudge", {})))
            empty += 1
            if empty >= MAX_EMPTY_ROUNDS:
                return done("no_tool_calls")
            if grace:
                return done("max_rounds")
            continue
        msgs.append(reply)
        usable = False
        done_state: str | None = None
        for call in calls:
            if (
                call.name == "task_done"
                and (not allowed or "task_done" in allowed)
                and call.parse_error is None
                and isinstance(call.arguments, (dict, type(None)))
            ):
                state, text = parse_task_done(call.arguments or {})
                result = ToolResult(text, state is None)
                if state is not None:
                    done_state = state
            else:
                result = registry.dispatch(call, allowed, local)
            text = redact(result.text)
            record("tool_call", {"group": label, "tool": call.name, "ok": not result.is_error,
                                 "arguments": call.arguments_raw, "result": text,
                                 "result_chars": len(text)})
            msgs.append(Message("tool", text, tool_call_id=call.id, name=call.name,
                                is_error=result.is_error))
            usable = usable or not result.is_error
        if done_state is not None:
            return done("task_done" if done_state == "DONE" else "task_failed")
        if grace:
            return done("max_rounds")
        if usable:
            empty = 0
        else:
            empty += 1
            if empty >= MAX_EMPTY_ROUNDS:
                return done("empty_rounds")
        if rounds >= max_rounds:
            grace = True
            msgs.append(Message("user", prompts.render("grace", {})))


def _usage_dict(u: Usage) -> dict[str, int]:
    return {"input": u.input_tokens, "output": u.output_tokens,
            "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens}
