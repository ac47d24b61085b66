"""Dismissals: a person's record that a finding is not a problem. Pure.

A dismissal is keyed on what does not move when the code around it changes: the path, the
anchored code text (the lines the finding is pinned to, as they are in the file, normalised:
each line trimmed with inner whitespace collapsed, blank lines dropped) and the category. Line
numbers and the model's wording are left out, so a dismissal survives lines moving above it,
an amend or a rebase, and a re-review that words the same finding differently. A finding
without anchored text (unanchored, or a deterministic one) is keyed on its quote instead.

Three sources, checked in this order: the inline marker ``ocr-hook: ignore [reason]`` on one of
the finding's own lines (as linters' ``noqa``); the repository's shared file
``.ocr-hook-dismissed.json`` read from HEAD (so a commit cannot dismiss its own findings); the
user's personal file under the git directory (``dismissal_files``). Secret findings
(``source == "secret-scan"``) are never dismissed here: secrets keep their own allow rules
(``ocr-hook: allow-secret``, ``security.allow_secrets``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from hashlib import sha256
from typing import NamedTuple

from ..findings import SECRET_SOURCE, Finding, normalized_quote

IGNORE_MARKER = "ocr-hook: ignore"  # inline, on the finding's own line
SHARED_FILE = ".ocr-hook-dismissed.json"  # committed at the top of the repository, read at HEAD
# ``ocr-hook: ignore`` followed by an optional reason; not ``ocr-hook: ignore-...`` words.
_MARKER = re.compile(r"ocr-hook:\s*ignore(?![\w-])[ \t:=-]*(?P<reason>[^\n]*)", re.IGNORECASE)
_COMMENT_CLOSERS = ("*/", "-->", "%>", "#}", "}}", "*)")


class Dismissal(NamedTuple):
    """One recorded dismissal. ``key`` is :func:`dismiss_key` (64 hex); ``id`` its first 12
    characters, which ``git ocr dismiss --undo`` accepts. ``scope``: ``personal`` or
    ``shared``. ``finding_id`` and ``message`` describe the finding it was made from (for
    ``--list``); ``date`` is ISO 8601 UTC; ``author`` ``Name <email>`` or ""."""

    key: str
    path: str
    category: str
    code: str
    reason: str
    author: str
    date: str
    finding_id: str
    message: str
    scope: str = "personal"

    @property
    def id(self) -> str:
        return self.key[:12]


class DismissedFinding(NamedTuple):
    """A finding taken out of the gate: ``by`` is ``inline`` (the marker), ``shared`` or
    ``personal``; ``reason`` may be ""; ``author``/``date`` come from the dismissal record."""

    finding: Finding
    by: str
    reason: str
    author: str = ""
    date: str = ""


def dismiss_key(path: str, code: str, category: str) -> str:
    """SHA-256 hex of (path, normalised code text, category); see the module docstring."""
    raw = "\0".join((path, normalized_quote(code), category))
    return sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def finding_key(f: Finding) -> str:
    """The dismissal key of ``f``: its anchored text, else its quote."""
    return dismiss_key(f.path, f.code or f.existing_code, f.category)


def inline_reason(code: str) -> str | None:
    """The reason given by an ``ocr-hook: ignore`` marker in ``code`` (the finding's anchored
    lines): the text after the marker on its line without comment closers (``*/``, ``-->``…),
    "" when none is given; None when no line carries the marker."""
    m = _MARKER.search(code)
    if m is None:
        return None
    reason = m.group("reason").strip()
    changed = True
    while changed:
        changed = False
        for closer in _COMMENT_CLOSERS:
            if reason.endswith(closer):
                reason = reason[: -len(closer)].rstrip()
                changed = True
    return reason


def can_dismiss(f: Finding) -> bool:
    """Whether ``f`` may be dismissed at all (secret findings keep their own allow rules)."""
    return f.source != SECRET_SOURCE


def apply_dismissals(
    findings: Sequence[Finding], dismissals: Iterable[Dismissal]
) -> tuple[list[Finding], list[DismissedFinding]]:
    """Split ``findings`` into those that still count and those dismissed (both in input
    order). The inline marker is read from the finding's anchored text only (a marker on
    another line does not apply); then shared, then personal dismissals by key."""
    by_key: dict[str, Dismissal] = {}
    for d in sorted(dismissals, key=lambda d: d.scope != "shared"):  # shared wins
        by_key.setdefault(d.key, d)
    kept: list[Finding] = []
    gone: list[DismissedFinding] = []
    for f in findings:
        if not can_dismiss(f):
            kept.append(f)
            continue
        marker = inline_reason(f.code) if f.code else None
        if marker is not None:
            gone.append(DismissedFinding(f, "inline", marker))
            continue
        found = by_key.get(finding_key(f)) if by_key else None
        if found is not None:
            gone.append(DismissedFinding(f, found.scope, found.reason, found.author, found.date))
        else:
            kept.append(f)
    return kept, gone
