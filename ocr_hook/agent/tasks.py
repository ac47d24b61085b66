"""Single-shot LLM calls of the review pipeline (spec §6.1, §6.3): grouping and the compression
summary. Each is one request with no ``tools`` field; the answer is text.

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
from ..llm import ChatClient, Message, Turn
from . import grouping
from .meter import Meter

Record = Callable[[str, dict[str, Any]], None]

GROUPING_LABEL = "__grouping__"  # session pseudo-path of the grouping call (as OCR records it)
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
