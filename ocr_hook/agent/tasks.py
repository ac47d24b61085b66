"""Single-shot LLM calls of the review pipeline (spec §6.1, §6.3): grouping, plan and the
compression summary. Each is one request with no ``tools`` field; the answer is text.

Every call goes through :func:`ask`: the run's Meter is checked first (the client's
``before_attempt`` hook checks it again before each HTTP attempt), usage is added to the Meter,
and request/response are recorded in the session log. Errors propagate as LlmError,
BudgetExhausted or DeadlineExceeded; callers decide the fallback. No git, no HTTP here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import util
from ..diff import FileDiff
from ..errors import LlmError
from ..llm import ChatClient, Message, ToolSpec, Turn
from . import grouping
from .meter import Meter
from .stops import cut_by_output_limit

Record = Callable[[str, dict[str, Any]], None]

GROUPING_LABEL = "__grouping__"  # session pseudo-path of the grouping call (as OCR records it)
PLAN_CUT_NOTE = ("(The plan stopped at the output limit: hypotheses after this point are missing;"
                 " review every file yourself.)")
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)
_FENCED = r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?\s*```\s*$"  # re.S; compiled on first use


def clean_answer(text: str) -> str:
    """Drop a leading ``<think>…</think>`` block and one enclosing code fence; strip."""
    text = _THINK.sub("", text or "", count=1).strip()
    m = re.match(_FENCED, text, re.S)
    return (m.group(1) if m else text).strip()


def ask_turn(
    client: ChatClient,
    messages: list[Message],
    *,
    meter: Meter,
    record: Record,
    task: str,
    label: str,
    max_output_tokens: int | None = None,
) -> Turn:
    """One request without tools; returns the model's Turn.

    Raises BudgetExhausted / DeadlineExceeded before any request when the run may not start
    another call, LlmError when the call fails after the client's retries."""
    meter.check()
    record("llm_request", {"group": label, "task": task, "messages": len(messages)})
    turn = client.complete(messages, None, max_output_tokens=max_output_tokens)
    meter.add(turn.usage)
    u = turn.usage
    record("llm_response", {"group": label, "task": task, "latency_s": round(turn.latency_s, 3),
                            "usage": {"input": u.input_tokens, "output": u.output_tokens,
                                      "cache_read": u.cache_read_tokens,
                                      "cache_write": u.cache_write_tokens},
                            "finish_reason": turn.finish_reason})
    return turn


def ask(
    client: ChatClient,
    messages: list[Message],
    *,
    meter: Meter,
    record: Record,
    task: str,
    label: str,
    max_output_tokens: int | None = None,
) -> str:
    """:func:`ask_turn`, returning the cleaned answer text (may be empty). Raises as it."""
    turn = ask_turn(client, messages, meter=meter, record=record, task=task, label=label,
                    max_output_tokens=max_output_tokens)
    return clean_answer(turn.message.content)


def grouping_call(
    client: ChatClient, files: Sequence[FileDiff], *, meter: Meter, record: Record
) -> list[grouping.Group]:
    """Ask the model to group ``files`` from metadata only (status, path, +/-; spec §6.1) and
    return the validated groups (:func:`grouping.parse_grouping_answer`). Raises LlmError
    (also for an unusable answer), BudgetExhausted or DeadlineExceeded."""
    msgs = [
        Message("system", util.render_template("grouping_system", {})),
        Message("user", util.render_template("grouping_user",
                                             {"file_list": grouping.file_list(files)})),
    ]
    answer = ask(client, msgs, meter=meter, record=record, task="grouping", label=GROUPING_LABEL)
    try:
        return grouping.parse_grouping_answer(answer, files)
    except grouping.GroupingError as e:
        raise LlmError(str(e), kind="protocol") from e


def _signature(parameters: dict[str, object]) -> str:
    """``{a, b?}`` from a JSON Schema object: property names, optional ones marked ``?``."""
    props = parameters.get("properties")
    required = parameters.get("required")
    names = list(props) if isinstance(props, dict) else []
    need = set(required) if isinstance(required, list) else set()
    return "{" + ", ".join(n if n in need else f"{n}?" for n in names) + "}"


def plan_tools_text(specs: Sequence[ToolSpec]) -> str:
    """The reviewer's tools as one line each for the plan prompt (the plan request has no
    ``tools`` field): ``- name {arg, optional?}: description``."""
    out = [f"- {s.name} {_signature(s.parameters)}: {' '.join(s.description.split())}"
           for s in specs]
    return "\n".join(out) if out else "(none)"


def plan_call(
    client: ChatClient,
    *,
    plan_tools: Sequence[ToolSpec],
    user_fields: dict[str, str],
    language: str,
    redact: Callable[[str], str],
    meter: Meter,
    record: Record,
    label: str,
) -> str:
    """The plan of spec §6.1 step 4: a short prioritised checklist of hypotheses for round 1.
    ``plan_tools``: every tool the reviewer will have (listed as text, none callable now);
    ``user_fields`` are the main task's fields (date, other_files, diffs, rules, background).
    A plan cut at the output limit ends with PLAN_CUT_NOTE, so the reviewer knows the rest
    is missing. Raises LlmError (also for an empty answer), BudgetExhausted or
    DeadlineExceeded."""
    system = util.render_template("plan_system", {"plan_tools": plan_tools_text(plan_tools),
                                            "severity": util.render_template("severity", {}),
                                            "language": language or "English"})
    user = redact(util.render_template("plan_user", user_fields))
    turn = ask_turn(client, [Message("system", system), Message("user", user)], meter=meter,
                    record=record, task="plan", label=label)
    answer = clean_answer(turn.message.content)
    if not answer:
        raise LlmError("the plan answer was empty", kind="protocol")
    if cut_by_output_limit(turn):
        answer += "\n" + PLAN_CUT_NOTE
    return answer


def summary_call(
    client: ChatClient,
    transcript: str,
    *,
    language: str,
    max_output_tokens: int,
    meter: Meter,
    record: Record,
    label: str,
) -> str:
    """The compression summary of spec §6.3 for ``transcript`` (the rendered compress zone).
    Raises LlmError (also for an empty answer), BudgetExhausted or DeadlineExceeded."""
    msgs = [
        Message("system", util.render_template("compression_system", {"language": language})),
        Message("user", util.render_template("compression_user", {"context": transcript})),
    ]
    answer = ask(client, msgs, meter=meter, record=record, task="compression", label=label,
                 max_output_tokens=max_output_tokens)
    if not answer:
        raise LlmError("the compression summary was empty", kind="protocol")
    return answer
