"""One group's tool loop (SPEC §6.2): call the model with the main tools until task_done, the
round cap (then one grace round with code_comment + task_done), three consecutive empty rounds,
budget exhaustion or the deadline. No HTTP or git here: the client and registry are passed in.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import prompts
from ..errors import BudgetExhausted, DeadlineExceeded, LlmError
from ..llm.types import ChatClient, Message, ToolCall, Turn, Usage
from ..tools.comment import parse_task_done
from ..tools.registry import Handler, Registry, ToolResult
from .meter import Meter

log = logging.getLogger(__name__)

MAX_EMPTY_ROUNDS = 3  # SPEC §6.2 (OCR maxConsecutiveEmptyRounds)
GRACE_TOOLS = ("code_comment", "task_done")
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)
_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


@dataclass
class LoopResult:
    """Outcome of one loop. ``stop_reason``: task_done | task_failed | max_rounds |
    no_tool_calls | empty_rounds | budget | timeout | llm_error."""

    stop_reason: str
    rounds: int
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    error: str = ""


def strip_think(text: str) -> str:
    """Drop a leading ``<think>…</think>`` block (reasoning models without a parser)."""
    return _THINK.sub("", text or "", count=1)


def _json_objects(text: str) -> list[Any]:
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


def text_tool_calls(content: str, known: set[str]) -> list[ToolCall]:
    """Tool calls written as text (SPEC §6.2 fallback): ``<tool_call>{json}</tool_call>``
    markup or bare JSON objects ``{"name": ..., "arguments": {...}}``, also inside ``<think>``.
    Only names in ``known`` are accepted."""
    candidates: list[Any] = []
    for m in _TOOL_TAG.finditer(content):
        candidates.extend(_json_objects(m.group(1)))
    if not candidates:
        candidates = _json_objects(content)
    calls: list[ToolCall] = []
    for obj in candidates:
        if not isinstance(obj, dict):
            continue
        fn = obj.get("function") if isinstance(obj.get("function"), dict) else obj
        name = fn.get("name") or fn.get("tool")
        if not isinstance(name, str) or name not in known:
            continue
        args = fn.get("arguments", fn.get("parameters", fn.get("input", {})))
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        value: Any = args
        err = None
        if isinstance(args, str):
            try:
                value = json.loads(args) if args.strip() else {}
            except ValueError as e:
                value, err = None, f"invalid JSON: {e}"
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, raw, value, err, True))
    return calls


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
) -> LoopResult:
    """Run the main tool loop on ``messages`` (system + user); returns the LoopResult.

    Tool errors are results for the model; every tool call id gets exactly one result before
    the next request. ``local`` supplies this group's ``code_comment``/``task_done`` handlers.
    """
    msgs = list(messages)
    tools = registry.specs("main")
    known = {t.name for t in tools}
    usage = Usage()
    empty = 0
    rounds = 0
    grace = False
    last_empty_reason = "empty_rounds"
    while True:
        allowed: tuple[str, ...] = GRACE_TOOLS if grace else ()
        offered = [t for t in tools if not grace or t.name in GRACE_TOOLS]
        try:
            meter.check()
            record("llm_request", {"group": label, "task": "main", "round": rounds + 1,
                                   "messages": len(msgs)})
            turn: Turn = client.complete(msgs, offered)
        except BudgetExhausted as e:
            return LoopResult("budget", rounds, msgs, usage, str(e))
        except DeadlineExceeded as e:
            return LoopResult("timeout", rounds, msgs, usage, str(e))
        except LlmError as e:
            return LoopResult("llm_error", rounds, msgs, usage, str(e))
        rounds += 1
        usage = usage + turn.usage
        meter.add(turn.usage)
        reply = turn.message
        record("llm_response", {"group": label, "task": "main", "round": rounds,
                                "tool_calls": [c.name for c in reply.tool_calls],
                                "usage": _usage_dict(turn.usage), "latency_s": round(turn.latency_s, 3),
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
            last_empty_reason = "no_tool_calls"
            if empty >= MAX_EMPTY_ROUNDS:
                return LoopResult("no_tool_calls", rounds, msgs, usage)
            if grace:
                return LoopResult("max_rounds", rounds, msgs, usage)
            continue
        msgs.append(reply)
        usable = False
        done_state: str | None = None
        for call in calls:
            if call.name == "task_done" and (not allowed or "task_done" in allowed):
                args = call.arguments if isinstance(call.arguments, dict) else {}
                state, text = parse_task_done(args)
                result = ToolResult(text, state is None)
                if state is not None:
                    done_state = state
            else:
                result = registry.dispatch(call, allowed, local)
            text = redact(result.text)
            record("tool_call", {"group": label, "tool": call.name, "ok": not result.is_error,
                                 "result_chars": len(text)})
            msgs.append(Message("tool", text, tool_call_id=call.id, name=call.name,
                                is_error=result.is_error))
            usable = usable or not result.is_error
        if done_state is not None:
            return LoopResult("task_done" if done_state == "DONE" else "task_failed", rounds, msgs,
                              usage)
        if grace:
            return LoopResult("max_rounds", rounds, msgs, usage)
        if usable:
            empty = 0
        else:
            empty += 1
            last_empty_reason = "empty_rounds"
            if empty >= MAX_EMPTY_ROUNDS:
                return LoopResult(last_empty_reason, rounds, msgs, usage)
        if rounds >= max_rounds:
            grace = True
            msgs.append(Message("user", prompts.render("grace", {})))


def _usage_dict(u: Usage) -> dict[str, int]:
    return {"input": u.input_tokens, "output": u.output_tokens,
            "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens}
