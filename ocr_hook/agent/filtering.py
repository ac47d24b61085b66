"""Single-shot LLM calls of the comment pipeline: the review filter (spec §8.4) and the
re-location call (spec §8.1). No HTTP or git here: the client, meter and redaction are passed in.

Review filter protocol: the model sees the group's diffs and the comments it is given (with
their finding ids) and must call exactly one of two tools, ``report_incorrect_comments
{comment_ids: [id, ...]}`` or ``approve_all_comments {}``. A JSON array of ids written as text
(optionally fenced, after an optional ``<think>`` block) is accepted as a fallback; ``null`` is
not an approval. A malformed answer gets one retry (the same prompt plus a correction
message); any failure (transport, budget, deadline, twice malformed) keeps every comment
(fail-open). ``tool_choice`` is never sent: a provider in thinking mode rejects a forced tool
choice, and the prompt plus the retry carry the "exactly one tool" rule instead.

Re-location: the model sees the claimed file's diff and the comment and answers with the exact
snippet in one fenced code block (or ``NONE``); the caller anchors that snippet again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .. import util
from ..diff import FileDiff, render_numbered
from ..errors import BudgetExhausted, DeadlineExceeded, LlmError
from ..findings import Finding, RawComment
from ..llm import ChatClient, Message, ToolSpec, Turn
from .meter import Meter
from .textcalls import strip_think, text_tool_calls

log = logging.getLogger(__name__)

REPORT_TOOL = "report_incorrect_comments"
APPROVE_TOOL = "approve_all_comments"
FILTER_RETRIES = 1  # spec §8.4: malformed output gets one retry
FILTER_MAX_OUTPUT_TOKENS = 4096  # a decision is short; reasoning models need some room
RELOCATION_MAX_OUTPUT_TOKENS = 2048

FILTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        REPORT_TOOL,
        "Remove the listed comments because the diff proves them wrong. Call this or "
        f"{APPROVE_TOOL}, exactly once.",
        {
            "type": "object",
            "properties": {
                "comment_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Ids (the \"id\" field) of the comments to remove.",
                }
            },
            "required": ["comment_ids"],
        },
    ),
    ToolSpec(
        APPROVE_TOOL,
        f"Keep every comment. Call this or {REPORT_TOOL}, exactly once.",
        {"type": "object", "properties": {}},
    ),
)

Record = Callable[[str, dict[str, Any]], None]
_FENCE = r"```[^\n`]*\n(.*?)```"  # re.S; compiled on first use (re's cache)


class FilterOutcome(NamedTuple):
    """Result of one review-filter call. ``removed_ids`` ⊆ the ids offered; ``ok`` False means
    the filter failed and every comment was kept (``error`` says why)."""

    removed_ids: frozenset[str]
    ok: bool
    attempts: int
    error: str = ""


def _no_record(kind: str, data: dict[str, Any]) -> None:
    return None


def diffs_block(files: Sequence[FileDiff], as_git: bool = False) -> str:
    """The group's diffs as the main prompt shows them (``<file path>`` with the path as
    ``util.prompt_path`` shows it, new-side numbers; ``as_git``: git's own hunks, as for a group
    shown without the scope context)."""
    return "\n".join(
        f'<file path="{util.prompt_path(f.path)}">\n{render_numbered(f, as_git=as_git)}\n</file>'
        for f in files
    )


def comments_json(findings: Sequence[Finding]) -> str:
    """The candidate comments for the filter prompt: a JSON array of objects with ``id``,
    ``path``, ``side``, ``lines`` ("12-14", or "unknown" when unanchored), ``severity``,
    ``category``, ``content``, ``existing_code``. JSON escapes every control character but
    NEL, U+2028 and U+2029; those are spelled ``\\u0085``… too (``util.prompt_text``), so no
    string of it breaks a line."""
    items = []
    for f in findings:
        items.append({
            "id": f.id,
            "path": f.path,
            "side": f.side,
            "lines": f"{f.start_line}-{f.end_line}" if f.start_line else "unknown",
            "severity": f.severity.label,
            "category": f.category,
            "content": f.content,
            "existing_code": f.existing_code,
        })
    return util.prompt_text(json.dumps(items, indent=2, ensure_ascii=False))


def _ids_value(value: Any) -> list[str] | None:
    """A list of ids from a JSON value (a list of strings/numbers, or a JSON string of one)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            return None
        out.append(str(v).strip())
    return out


def _text_id_array(text: str) -> list[str] | None:
    """The fallback answer: a JSON array of ids in the text (fences and <think> removed)."""
    body = strip_think(text).strip()
    m = re.search(_FENCE, body, re.S)
    if m:
        body = m.group(1).strip()
    start = body.find("[")
    if start < 0:
        return None
    try:
        value, _end = json.JSONDecoder().raw_decode(body, start)
    except ValueError:
        return None
    return _ids_value(value)


def parse_filter_reply(message: Message) -> tuple[list[str] | None, str]:
    """The ids the model reports (``[]`` = approve all), or (None, why it is malformed)."""
    calls = list(message.tool_calls)
    names = {t.name for t in FILTER_TOOLS}
    if not calls and message.content:
        calls = text_tool_calls(message.content, names)
    if calls:
        decisions = [c for c in calls if c.name in names]
        others = sorted({c.name for c in calls if c.name not in names})
        if others:
            return None, f"unknown tool(s) {', '.join(others)}"
        if len(decisions) != 1:
            return None, f"{len(decisions)} decisions instead of exactly one"
        call = decisions[0]
        if call.name == APPROVE_TOOL:
            return [], ""
        args = call.arguments
        if call.parse_error or not isinstance(args, dict):
            return None, f"{REPORT_TOOL} arguments are not a JSON object"
        ids = _ids_value(args.get("comment_ids"))
        if ids is None:
            return None, f"{REPORT_TOOL} needs comment_ids as an array of id strings"
        return ids, ""
    ids = _text_id_array(message.content or "")
    if ids is None:
        return None, "no tool call and no JSON array of ids"
    return ids, ""


def _call(client: ChatClient, msgs: list[Message], tools: Sequence[ToolSpec] | None,
          max_output_tokens: int, meter: Meter, record: Record, label: str, task: str) -> Turn:
    meter.check()
    record("llm_request", {"group": label, "task": task, "messages": len(msgs)})
    turn = client.complete(msgs, list(tools) if tools else None,
                           max_output_tokens=max_output_tokens)
    meter.add(turn.usage)
    record("llm_response", {"group": label, "task": task,
                            "tool_calls": [c.name for c in turn.message.tool_calls],
                            "usage": {"input": turn.usage.input_tokens,
                                      "output": turn.usage.output_tokens},
                            "latency_s": round(turn.latency_s, 3)})
    return turn


def review_filter(
    client: ChatClient,
    files: Sequence[FileDiff],
    findings: Sequence[Finding],
    *,
    meter: Meter,
    redact: Callable[[str], str] = lambda s: s,
    record: Record = _no_record,
    label: str = "",
    language: str = "English",
    as_git: bool = False,
) -> FilterOutcome:
    """Run the review filter of spec §8.4 on ``findings`` (the run passes every comment of
    the group, once its rounds are over) of a group whose diffs are ``files`` (``as_git``: as
    git printed them, when the group's prompt showed them so). Never raises for LLM
    failures: they keep every comment."""
    if not findings:
        return FilterOutcome(frozenset(), True, 0)
    offered = {f.id for f in findings}
    system = util.render_template("review_filter_system", {"language": language or "English"})
    user = util.render_template("review_filter_user", {"diffs": diffs_block(files, as_git),
                                                 "comments": comments_json(findings)})
    base = [Message("system", system), Message("user", redact(user))]
    msgs = list(base)
    why = ""
    attempts = 0
    for attempt in range(1 + FILTER_RETRIES):
        attempts = attempt + 1
        try:
            turn = _call(client, msgs, FILTER_TOOLS, FILTER_MAX_OUTPUT_TOKENS, meter, record,
                         label, "review_filter")
        except (LlmError, BudgetExhausted, DeadlineExceeded) as e:
            return _failed(record, label, attempts, f"{type(e).__name__}: {e}")
        ids, why = parse_filter_reply(turn.message)
        if ids is not None:
            removed = frozenset(i for i in ids if i in offered)
            unknown = sorted(set(ids) - offered)
            if unknown:
                log.debug("review filter of %s named unknown ids %s", label, unknown)
            record("review_filter", {"group": label, "comments": len(offered),
                                     "removed": sorted(removed), "attempts": attempts,
                                     "ok": True})
            return FilterOutcome(removed, True, attempts)
        retry = util.render_template("review_filter_retry", {"problem": why})
        msgs = [*base, Message("user", retry)]
    return _failed(record, label, attempts, f"malformed answer ({why})")


def _failed(record: Record, label: str, attempts: int, error: str) -> FilterOutcome:
    log.warning("review filter failed for %s: %s; keeping all comments", label or "group", error)
    record("review_filter", {"group": label, "removed": [], "attempts": attempts, "ok": False,
                             "error": error})
    return FilterOutcome(frozenset(), False, attempts, error)


def diff_text(fd: FileDiff) -> str:
    """One file's hunks as git prints them (header, then marker + text per line), each line
    break other than ``\\n`` inside a line spelled out as the main prompt does
    (``util.prompt_text``)."""
    out: list[str] = []
    for h in fd.hunks:
        out.append(h.header)
        out.extend(f"{ln.kind}{ln.text}" for ln in h.lines)
    return util.prompt_text("\n".join(out))


def first_code_block(text: str) -> str | None:
    """The snippet of a re-location answer: the first fenced code block, else the whole text;
    None for an empty answer or ``NONE``."""
    body = strip_think(text).strip()
    m = re.search(_FENCE, body + ("\n```" if body.count("```") == 1 else ""), re.S)
    snippet = m.group(1) if m else body
    if not snippet.strip() or snippet.strip().upper() == "NONE":
        return None
    return snippet.strip("\n")


def relocate_snippet(
    client: ChatClient,
    fd: FileDiff,
    comment: RawComment,
    *,
    meter: Meter,
    redact: Callable[[str], str] = lambda s: s,
    record: Record = _no_record,
    label: str = "",
) -> str | None:
    """Ask once for the exact lines of ``fd``'s diff that ``comment`` is about (spec §8.1).
    Returns the snippet or None (no answer, ``NONE``, or any LLM failure)."""
    system = util.render_template("relocation_system", {})
    user = util.render_template("relocation_user", {
        "path": util.prompt_path(fd.path),
        "diff": diff_text(fd),
        "existing_code": util.prompt_text(comment.existing_code),
        "content": util.prompt_text(comment.content),
        "suggestion": util.prompt_text(comment.suggestion_code),
    })
    msgs = [Message("system", system), Message("user", redact(user))]
    try:
        turn = _call(client, msgs, None, RELOCATION_MAX_OUTPUT_TOKENS, meter, record, label,
                     "relocation")
    except (LlmError, BudgetExhausted, DeadlineExceeded) as e:
        log.debug("re-location call for %s failed: %s", fd.path, e)
        record("relocation", {"group": label, "path": fd.path, "ok": False, "error": str(e)})
        return None
    snippet = first_code_block(turn.message.content or "")
    record("relocation", {"group": label, "path": fd.path, "ok": snippet is not None})
    return snippet
