"""``code_comment`` (spec §7.1): validate and normalise arguments into RawComment values. No
anchoring here: comments are handed to a sink, which may answer with where each landed (its
Finding), or why it was not filed, so the result can tell the model (:func:`landing_text`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ...findings import Finding, RawComment
from ...util import real_path
from ...vocabulary import AnchorMethod, Category, Severity
from ..registry import Handler, ToolResult
from .common import Sink, ToolEnv

COMMENTED = "Successfully commented."

# Where a group's comments go (``pipeline.group``): it answers per comment with its Finding, the
# reason it was not filed (text: a path outside the change, the group's comment cap), or None
# when it is not placed yet; or None for all (``Successfully commented.``). A ``ToolEnv.sink``
# (Finding or None only) is one of these.
CommentSink = Callable[[list[RawComment]], "Sequence[Finding | str | None] | None"]


def parse_comments(args: dict[str, Any], group: str = "") -> tuple[list[RawComment], list[str]]:
    """``code_comment`` arguments → (comments, notes for the model).

    ``comments`` may be a list or a JSON string of a list (or a single object); items without
    ``path`` or ``content`` are dropped with a note; unknown severity → low, unknown category →
    other, each with a note; ``preexisting`` is True or False only as the JSON ``true`` /
    ``false`` (spec §7.1.1), anything else is None (not said); ``repeats`` only as a label
    ``E<n>`` (spec §12.3, else ""). Raises ValueError when nothing usable is given.
    """
    raw = args.get("comments")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise ValueError(f"failed to parse 'comments' JSON string: {e}") from e
    if isinstance(raw, dict):
        raw = [raw]
    if raw is None and "path" in args and "content" in args:
        raw = [args]
    if not isinstance(raw, list) or not raw:
        raise ValueError(
            "'comments' array is required, e.g. {\"comments\": [{\"path\": ..., \"content\": ...,"
            " \"existing_code\": ..., \"severity\": ..., \"category\": ...}]}"
        )
    out: list[RawComment] = []
    notes: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            notes.append(f"comment {i + 1} ignored: not an object")
            continue
        path = item.get("path")
        content = item.get("content")
        if not (isinstance(path, str) and path.strip()) or not (
            isinstance(content, str) and content.strip()
        ):
            notes.append(f"comment {i + 1} ignored: 'path' and 'content' are required")
            continue
        sev = Severity.parse(item.get("severity"))
        if sev is None:
            notes.append(
                f"comment {i + 1}: unknown severity {item.get('severity')!r} recorded as low"
                f" (allowed: {Severity.labels()})"
            )
            sev = Severity.LOW
        given = item.get("category")
        cat = Category.lookup(given.strip().lower() if isinstance(given, str) else None)
        if cat is None:
            notes.append(
                f"comment {i + 1}: unknown category {item.get('category')!r} recorded as other"
            )
            cat = Category.OTHER
        hint = item.get("line")
        existing = item.get("existing_code")
        suggestion = item.get("suggestion_code")
        path = real_path(path.strip())  # a non-UTF-8 name the model saw as \xNN
        while path.startswith("./"):
            path = path[2:]
        out.append(
            RawComment(
                path=path,
                content=content.strip(),
                existing_code=existing if isinstance(existing, str) else "",
                suggestion_code=suggestion if isinstance(suggestion, str) else "",
                severity=sev,
                category=cat,
                line_hint=(
                    hint if isinstance(hint, int) and not isinstance(hint, bool) and hint > 0
                    else None
                ),
                group=group,
                preexisting=_flag(item.get("preexisting")),
                repeats=_label(item.get("repeats")),
            )
        )
    return out, notes


def _flag(value: Any) -> bool | None:
    """The ``preexisting`` argument: the JSON booleans as they are, anything else None."""
    return value if isinstance(value, bool) else None


def _label(value: Any) -> str:
    """``repeats`` as an earlier finding's label (``E2``, spec §12.3), "" for anything else."""
    if not isinstance(value, str):
        return ""
    v = value.strip().upper()
    return v if len(v) > 1 and v[0] == "E" and v[1:].isdigit() else ""


NOT_PLACED = "not found in the diff; quote the exact lines from the diff (file it again)"


def _where(c: RawComment, f: Finding | str | None) -> str:
    """Where one comment landed, for the model: ``path:start-end (side)`` plus what to know
    about it, why it was not filed (``f`` a text), or why it was not placed and what to
    quote instead."""
    if isinstance(f, str):
        return f"{c.path}: {f}"
    if f is None or f.anchor == AnchorMethod.NONE:
        return f"{c.path}: {NOT_PLACED}"
    lines = str(f.start_line) if f.start_line == f.end_line else f"{f.start_line}-{f.end_line}"
    text = f"{f.path}:{lines} ({f.side} side"
    if f.anchor == AnchorMethod.FILE:
        text += f", {AnchorMethod.FILE.words}"
    elif f.anchor == AnchorMethod.REFILED:
        text += f", moved from {c.path}: the quote is in this file"
    text += ")"
    if f.ambiguous:
        text += "; the quote fits several places, the first was used: quote more lines"
    return text


def landing_text(comments: Sequence[RawComment],
                 placed: Sequence[Finding | str | None]) -> str:
    """The ``code_comment`` result: ``Filed: <where>`` for one comment, else ``Filed N
    comments:`` and one numbered ``<where>`` line each (see :func:`_where`)."""
    where = [_where(c, f) for c, f in zip(comments, placed, strict=True)]
    if len(where) == 1:
        return f"Filed: {where[0]}"
    return f"Filed {len(where)} comments:\n" + "\n".join(
        f"{i}. {w}" for i, w in enumerate(where, 1))


def code_comment_handler(sink: CommentSink | Sink, group: str = "") -> Handler:
    """A ``code_comment`` handler that sends parsed comments to ``sink``. When the sink
    answers with where each landed (or why not), the result says so (:func:`landing_text`);
    a sink that answers None gets the plain ``Successfully commented.``."""

    def handle(args: dict[str, Any]) -> ToolResult:
        try:
            comments, notes = parse_comments(args, group)
        except ValueError as e:
            return ToolResult.error(f"Error: {e}")
        if not comments:
            return ToolResult.error("Error: no valid comments. " + "; ".join(notes))
        placed = sink(comments)
        text = COMMENTED if placed is None else landing_text(comments, placed)
        return ToolResult(text + ("\nNote: " + "; ".join(notes) if notes else ""))

    return handle


def make_handler(env: ToolEnv) -> Handler | None:
    """``code_comment`` into ``env.sink`` for group ``env.group``; None without a sink (the
    run's registry then answers "not available here": each group binds its own handler, see
    :func:`code_comment_handler`)."""
    return None if env.sink is None else code_comment_handler(env.sink, env.group)
