"""One group's tool loop (spec §6.2).

The loop calls the model with the main tools until ``task_done``, the round cap (then one grace
round offering only ``code_comment`` + ``task_done``), three consecutive empty rounds (no tool
call, or only error results), a compression that cannot get under 80 % of the context, budget
exhaustion, the group's token cap, a reply past the tool-call caps, the run deadline,
cancellation, or a reply cut twice at the output limit (none of a cut reply's tool calls is run;
see :mod:`.stops`). No HTTP or git here: the client, the registry,
the token counter, the summariser and the background runner are passed in.

Context compression (spec §6.3) lives in :mod:`.compress` and the parser of tool calls written
as text in :mod:`.textcalls`; their public names are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .. import util
from ..errors import BudgetExhausted, DeadlineExceeded, LlmError, OcrError, SpendCapExceeded
from ..llm import ChatClient, Message, ToolCall, ToolSpec, Turn, Usage
from ..tools import Handler, Registry, ToolResult, parse_task_done
from ..util import tracing
from ..vocabulary import StopReason
from .compress import (
    ACTIVE_FRACTION,
    HARD_FRACTION,
    MESSAGE_OVERHEAD_TOKENS,
    SOFT_FRACTION,
    SUMMARY_MAX_TOKENS,
    Compressor,
    ContextPolicy,
    message_text,
)
from .meter import Cancelled, Meter
from .stops import cut_by_output_limit, output_cap, output_limit_error, raised_output_limit
from .textcalls import strip_think, text_tool_calls

__all__ = [
    "ACTIVE_FRACTION", "GRACE_TOOLS", "HARD_FRACTION", "MAX_EMPTY_ROUNDS",
    "MESSAGE_OVERHEAD_TOKENS", "SOFT_FRACTION", "SUMMARY_MAX_TOKENS",
    "Compressor", "ContextPolicy", "LoopResult", "message_text", "run_loop", "stop_reason_for",
    "strip_think", "text_tool_calls",
]

log = logging.getLogger(__name__)

MAX_EMPTY_ROUNDS = 3  # spec §6.2 (OCR maxConsecutiveEmptyRounds)
GRACE_TOOLS = ("code_comment", "task_done")
# Caps on what one model reply may ask for: without them every call of a reply would run and
# all of its arguments would go into the next request, however many or large. A reply past a
# cap ends the group as incomplete before any of its calls runs. A real reply reads a handful
# of files and files a few comments: a code_comment with a 200-line suggestion is ~10 KB of JSON.
TOOL_CALLS_PER_TURN_MAX = 50
TOOL_ARGS_MAX_CHARS = 64 * 1024  # one call's arguments as sent (JSON text)
Record = Callable[[str, dict[str, Any]], None]


class LoopResult(NamedTuple):
    """Outcome of one loop, an immutable value like the agent's other results. ``stop_reason``:
    why it ended (one of the loop's ``StopReason`` members, ``TASK_DONE`` … ``GROUP_TOKENS``);
    ``rounds`` counts model requests of the main task (summary calls excluded);
    ``compressions`` counts applied summaries."""

    stop_reason: StopReason
    rounds: int
    messages: list[Message]
    usage: Usage = Usage()
    error: str = ""
    compressions: int = 0


@dataclass(slots=True, eq=False)
class _State:
    """What one loop run carries from round to round: a mutable record (its fields are fixed,
    it compares by identity)."""

    msgs: list[Message]
    compressor: Compressor | None
    rounds: int = 0
    empty: int = 0
    grace: bool = False
    usage: Usage = Usage()
    max_output_tokens: int | None = None  # None: the endpoint's llm.max_output_tokens
    output_retried: bool = False

    def done(self, reason: StopReason, error: str = "") -> LoopResult:
        if self.compressor is not None:
            self.compressor.close()
        applied = self.compressor.applied if self.compressor is not None else 0
        return LoopResult(reason, self.rounds, self.msgs, self.usage, error, applied)


def stop_reason_for(e: OcrError) -> StopReason:
    """The loop stop reason for an error that ends a loop or a single-shot call."""
    if isinstance(e, Cancelled):
        return StopReason.CANCELLED
    if isinstance(e, DeadlineExceeded):
        return StopReason.TIMEOUT
    if isinstance(e, SpendCapExceeded):
        return StopReason.SPEND_CAP
    if isinstance(e, BudgetExhausted):
        return StopReason.BUDGET
    return StopReason.LLM_ERROR


def run_loop(
    client: ChatClient,
    registry: Registry,
    messages: list[Message],
    *,
    local: Mapping[str, Handler],
    meter: Meter,
    max_rounds: int = 100,
    redact: Callable[[str], str] = lambda s: s,
    record: Record = lambda kind, data: None,
    label: str = "",
    context: ContextPolicy | None = None,
    max_tokens: int = 0,
) -> LoopResult:
    """Run the main tool loop on ``messages`` (system + user); returns the LoopResult.

    Tool errors are results for the model; every tool call id gets exactly one result before
    the next request. ``local`` supplies this group's ``code_comment``/``task_done`` handlers.
    ``context`` enables compression (spec §6.3). ``max_tokens``: input + output tokens this
    loop may use (0 = no cap); once used up the loop stops with ``group_tokens``. A reply with
    more than TOOL_CALLS_PER_TURN_MAX calls, or a call with more than TOOL_ARGS_MAX_CHARS of
    arguments, stops it before any call runs. Never raises for LLM, budget or deadline
    failures: they end the loop with their stop reason.
    """
    msgs = list(messages)
    st = _State(msgs, Compressor(context, msgs[1].content, record=record, label=label)
                if context is not None and len(msgs) >= 2 else None)
    while True:
        tools = registry.specs("main")  # per request: a stopped MCP server's tools are withdrawn
        known = {t.name for t in tools}
        if max_tokens and st.usage.total >= max_tokens:
            return st.done(StopReason.GROUP_TOKENS, f"the group used {st.usage.total} tokens,"
                           f" over its cap of {max_tokens} (review.max_group_tokens)")
        allowed: tuple[str, ...] = GRACE_TOOLS if st.grace else ()
        offered = [t for t in tools if not st.grace or t.name in GRACE_TOOLS]
        try:
            turn = _request(client, st, offered, meter, record, label)
        except (BudgetExhausted, DeadlineExceeded, LlmError) as e:
            return st.done(stop_reason_for(e), str(e))
        if turn is None:
            return st.done(StopReason.COMPRESSION_FAILED, "context compression could not get"
                           " the conversation under 80 % of llm.context_tokens")
        st.rounds += 1
        st.usage = st.usage + turn.usage
        meter.add(turn.usage)
        _record_response(record, label, st.rounds, turn)
        if cut_by_output_limit(turn):  # none of a cut turn's tool calls is run (agent.stops)
            error = _raise_output_limit(client, st, record, label)
            if error:
                return st.done(StopReason.OUTPUT_LIMIT, error)
            continue
        reply, calls = _reply_calls(turn.message, known)
        capped = _over_cap(calls)
        if capped is not None:
            return st.done(*capped)
        if not calls:
            stop = _no_calls(st, reply)
        else:
            st.msgs.append(reply)
            usable, done_state = _run_calls(calls, registry, local, allowed, redact, record,
                                            label, st.msgs)
            stop = _after_calls(st, usable, done_state)
        if stop == StopReason.TASK_DONE and st.grace:
            stop = StopReason.MAX_ROUNDS  # finished only in the grace round: the cap was hit
        if stop is not None:
            return st.done(stop)
        if calls and st.rounds >= max_rounds:
            st.grace = True
            st.msgs.append(Message("user", util.render_template("grace", {})))


def _over_cap(calls: Sequence[ToolCall]) -> tuple[StopReason, str] | None:
    """(stop reason, error) when a reply's tool calls pass a cap, else None."""
    if len(calls) > TOOL_CALLS_PER_TURN_MAX:
        return (StopReason.TOO_MANY_TOOL_CALLS, f"the model asked for {len(calls)} tool calls"
                f" in one reply (at most {TOOL_CALLS_PER_TURN_MAX}); none was run")
    big = next((c for c in calls if len(c.arguments_raw) > TOOL_ARGS_MAX_CHARS), None)
    if big is not None:
        return (StopReason.TOOL_ARGS_TOO_LARGE, f"the model sent {len(big.arguments_raw)}"
                f" characters of arguments to {big.name[:60]!r} (at most {TOOL_ARGS_MAX_CHARS});"
                " not run")
    return None


def _no_calls(st: _State, reply: Message) -> StopReason | None:
    """Answer a round without tool calls with the nudge; the stop reason when it ends the
    loop (the third empty round in a row, or the grace round)."""
    text = strip_think(reply.content)
    st.msgs.append(Message("assistant", text or "(no output)", reasoning=reply.reasoning,
                           reasoning_field=reply.reasoning_field, native=reply.native))
    st.msgs.append(Message("user", util.render_template("nudge", {})))
    st.empty += 1
    if st.empty >= MAX_EMPTY_ROUNDS:
        return StopReason.NO_TOOL_CALLS
    if st.grace:
        return StopReason.MAX_ROUNDS
    return None


def _raise_output_limit(client: ChatClient, st: _State, record: Record, label: str) -> str:
    """A turn was cut at the output limit: raise the limit for the one retry (the same
    request is sent again) and return ""; or return the error that ends the loop when the
    limit was raised already or the cap leaves no room (see :mod:`.stops`)."""
    ep = client.endpoint
    current = st.max_output_tokens or ep.max_output_tokens
    raised = None if st.output_retried else raised_output_limit(current, output_cap(ep))
    record("output_limit", {"group": label, "round": st.rounds, "limit": current,
                            "retry_limit": raised})
    if raised is None:
        return output_limit_error(current, st.output_retried)
    st.output_retried, st.max_output_tokens = True, raised
    return ""


def _after_calls(st: _State, usable: bool, done_state: str | None) -> StopReason | None:
    """The stop reason after a round with tool calls, or None to go on: ``task_done``'s
    state, the end of the grace round, or the third round in a row with only errors."""
    if done_state is not None:
        return StopReason.TASK_DONE if done_state == "DONE" else StopReason.TASK_FAILED
    if st.grace:
        return StopReason.MAX_ROUNDS
    if usable:
        st.empty = 0
        return None
    st.empty += 1
    return StopReason.EMPTY_ROUNDS if st.empty >= MAX_EMPTY_ROUNDS else None


def _request(
    client: ChatClient, st: _State, offered: list[ToolSpec], meter: Meter, record: Record,
    label: str,
) -> Turn | None:
    """Compress if needed (after the first round), check the meter, log and send the next
    request; the model's Turn, or None when compression could not make the conversation fit.
    Raises BudgetExhausted, DeadlineExceeded, LlmError."""
    if st.compressor is not None and st.rounds:
        st.msgs, fits = st.compressor.before_request(st.msgs)
        if not fits:
            return None
    meter.check()
    request: dict[str, Any] = {"group": label, "task": "main", "round": st.rounds + 1,
                               "messages": len(st.msgs)}
    if st.rounds == 0:  # the session log keeps the prompt once (spec §12)
        request["prompt"] = [{"role": m.role, "content": m.content} for m in st.msgs]
    if st.max_output_tokens is not None:
        request["max_output_tokens"] = st.max_output_tokens
    record("llm_request", request)
    # the conversation goes on after this round: the provider may cache all of it (spec §13.6)
    return client.complete(st.msgs, offered, max_output_tokens=st.max_output_tokens,
                           cache_key=f"main/{label}")


def _record_response(record: Record, label: str, rounds: int, turn: Turn) -> None:
    reply = turn.message
    record("llm_response", {"group": label, "task": "main", "round": rounds,
                            "tool_calls": [c.name for c in
                                           reply.tool_calls[:TOOL_CALLS_PER_TURN_MAX]],
                            "content": reply.content,
                            "calls": [{"id": c.id, "name": c.name,
                                       "arguments": c.arguments_raw[:TOOL_ARGS_MAX_CHARS]}
                                      for c in reply.tool_calls[:TOOL_CALLS_PER_TURN_MAX]],
                            "usage": _usage_dict(turn.usage),
                            "latency_s": round(turn.latency_s, 3),
                            "finish_reason": turn.finish_reason})


def _reply_calls(reply: Message, known: set[str]) -> tuple[Message, list[ToolCall]]:
    """The reply's tool calls: native ones, else calls written as text in its content (then
    the reply is rebuilt to carry them, without its leading ``<think>`` block)."""
    calls = list(reply.tool_calls)
    if not calls and reply.content:
        calls = text_tool_calls(reply.content, known)
        if calls:
            reply = Message("assistant", strip_think(reply.content), tuple(calls),
                            reasoning=reply.reasoning, reasoning_field=reply.reasoning_field)
    return reply, calls


def _run_calls(
    calls: Sequence[ToolCall],
    registry: Registry,
    local: Mapping[str, Handler],
    allowed: tuple[str, ...],
    redact: Callable[[str], str],
    record: Record,
    label: str,
    msgs: list[Message],
) -> tuple[bool, str | None]:
    """Answer every call in order, appending one tool message each to ``msgs``. Returns
    (any call succeeded, the ``task_done`` state when a valid ``task_done`` ended the task)."""
    usable = False
    done_state: str | None = None
    for call in calls:
        with tracing.span(f"execute_tool {call.name}", {  # spec §11.7 (GenAI conventions)
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id, "ocr.group": label}) as span:
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
            span.set("ocr.tool.ok", not result.is_error)
            span.set("ocr.tool.result_chars", len(text))
            if tracing.content:
                span.set("ocr.tool.arguments", tracing.text(redact(str(call.arguments_raw))))
                span.set("ocr.tool.result", tracing.text(text))
        record("tool_call", {"group": label, "tool": call.name, "ok": not result.is_error,
                             "arguments": call.arguments_raw, "result": text,
                             "result_chars": len(text)})
        msgs.append(Message("tool", text, tool_call_id=call.id, name=call.name,
                            is_error=result.is_error))
        usable = usable or not result.is_error
    return usable, done_state


def _usage_dict(u: Usage) -> dict[str, int]:
    return {"input": u.input_tokens, "output": u.output_tokens,
            "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens}
