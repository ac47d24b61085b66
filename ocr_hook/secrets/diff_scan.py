"""Deterministic findings of the staged change (spec §14, §6.2): secrets and prompt-injection
phrases, found without any LLM; and the in-place redaction of diffs before they reach the LLM.
Pure: no processes, no environment; the caller passes the texts it read.

Secrets (``redaction.find_secrets``) are looked for on the added lines of every changed file's
hunks — excluded files too (``.env``, binaries have no hunks, ``too_large`` files) — so a secret
is flagged even when nothing is reviewable or no endpoint is configured. Each hunk is scanned as
one text of ``<marker><line>`` rows (the form the rules of ``config/secret_patterns.json`` are
written for, so a PEM block over several added lines is one secret); a hit counts when at least
one of the rows its value spans is an added line, and is anchored to the new-side lines of the
added rows it spans (anchor ``hunk_new``). Files whose whole content is new to a reviewable path
— a rename or copy away from a secret path (``git mv .env notes.txt``: no hunks at all) — are
scanned whole, with ``full_texts``; lines outside the hunks are anchored ``file``.

A finding never carries the secret: ``existing_code`` is the redacted line text, in which
allow-listed values are replaced too (allow-listing removes a finding, never the
redaction).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..diff import FileDiff, Hunk, Line
from ..findings import SECRET_SOURCE, Finding, finding_id
from ..vocabulary import AnchorMethod, Category, Severity
from .redaction import ALLOW_MARKER, SecretHit, find_secrets, redact

INJECTION_SOURCE = "injection-scan"  # Finding.source of prompt-injection findings

SECRET_CONTENT = (
    "Hard-coded secret ({type}) in the change: once committed it is readable by everyone with "
    "the repository and stays in its history. Remove it, rotate it, and load it at run time "
    "(environment variable or secret store). If the value is not a secret, add "
    f"`{ALLOW_MARKER}` to the line or list the value in security.allow_secrets (it is still "
    "redacted before anything is sent to the model)."
)

# Text that addresses the reviewer rather than the program: "ignore (all) previous instructions"
# and its common variants. One narrow pattern on purpose (spec §5: precision over recall); the
# main prompt asks the model to report subtler attempts (spec §6.2).
INJECTION_RE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system)\s+"
    r"(?:instructions?|prompts?|rules|directions|guidelines)\b",
    re.IGNORECASE,
)
INJECTION_CONTENT = (
    "Text in the change addresses an automated reviewer (\"{phrase}\"): a prompt-injection "
    "attempt. ocr-hook treats code as data, but other AI tools that read this repository may "
    "follow it. Remove it unless it is deliberate test data or documentation."
)


class _Row(NamedTuple):
    """One line of a scanned text: its hunk line (None outside the hunks) and new line number."""

    line: Line | None
    new_line: int | None


def hunk_text(h: Hunk) -> str:
    """The hunk as ``<marker><text>`` rows joined by ``\\n`` (no ``@@`` header): the form the
    secret rules are written for."""
    return "\n".join(ln.kind + ln.text for ln in h.lines)


def unmarked(row: str, kind: str) -> str:
    """Row text without its diff marker ``kind`` (a redacted row keeps the marker at column
    0)."""
    return row[1:] if row[:1] == kind else row


def secret_findings(
    files: Sequence[FileDiff],
    allow: Sequence[str] = (),
    full_texts: Mapping[str, str] | None = None,
    literals: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Critical security findings for the secrets added by ``files`` (see the module
    docstring). ``full_texts``: path → whole new-file text for files to scan whole instead of
    by hunks; ``literals``: other values to redact in the quoted lines (``redaction.redact``).
    Ordered by path, then line."""
    full = full_texts or {}
    out: list[Finding] = []
    for fd in files:
        text = full.get(fd.path)
        if text is not None:
            out.extend(_whole_file_findings(fd, text, allow, literals))
            continue
        for h in fd.hunks:
            if not any(ln.kind == "+" for ln in h.lines):
                continue  # a pure deletion adds no secret
            rows = [_Row(ln, ln.new_line) for ln in h.lines]
            out.extend(_hits_to_findings(fd.path, hunk_text(h), rows, allow, literals,
                                         whole=False))
    return out


def _whole_file_findings(fd: FileDiff, text: str, allow: Sequence[str],
                         literals: Mapping[str, str] | None) -> list[Finding]:
    added = {ln.new_line: ln for h in fd.hunks for ln in h.lines if ln.kind == "+"}
    rows = [_Row(added.get(n), n) for n in range(1, text.count("\n") + 2)]
    return _hits_to_findings(fd.path, text, rows, allow, literals, whole=True)


def _hits_to_findings(
    path: str, text: str, rows: Sequence[_Row], allow: Sequence[str],
    literals: Mapping[str, str] | None, *, whole: bool,
) -> list[Finding]:
    hits = find_secrets(text, allow)
    if not hits:
        return []
    redacted = redact(text, literals)[0].split("\n")
    out: list[Finding] = []
    for hit in hits:
        span = range(hit.line - 1, min(hit.line + hit.value.count("\n"), len(rows)))
        if whole:
            picked = [i for i in span if rows[i].new_line is not None]
        else:
            picked = [i for i in span if _is_added(rows[i].line)]
        if not picked:
            continue  # a secret already in the file (context or deleted lines): not this change
        start, end = rows[picked[0]].new_line or 0, rows[picked[-1]].new_line or 0
        if whole:
            quote = "\n".join(redacted[i] for i in picked)
            in_hunk = all(rows[i].line is not None for i in picked)
        else:
            quote = "\n".join(unmarked(redacted[i], "+") for i in picked)
            in_hunk = True
        anchor = AnchorMethod.HUNK_NEW if in_hunk else AnchorMethod.FILE
        out.append(_finding(path, hit, start, end, quote, anchor))
    return out


def _finding(path: str, hit: SecretHit, start: int, end: int, quote: str,
             anchor: AnchorMethod) -> Finding:
    content = SECRET_CONTENT.format(type=hit.type)
    return Finding(
        id=finding_id(path, "new", quote, content), path=path, side="new", start_line=start,
        end_line=end, severity=Severity.CRITICAL, category=Category.SECURITY, content=content,
        existing_code=quote, suggestion_code="", anchor=anchor, source=SECRET_SOURCE,
    )


def injection_findings(files: Sequence[FileDiff]) -> list[Finding]:
    """A ``medium``/``security`` finding for each added line of ``files`` that matches
    INJECTION_RE (text meant to steer an AI reviewer), anchored to that line."""
    out: list[Finding] = []
    for fd in files:
        for h in fd.hunks:
            for ln in h.lines:
                m = INJECTION_RE.search(ln.text) if ln.kind == "+" else None
                if m is None or ln.new_line is None:
                    continue
                content = INJECTION_CONTENT.format(phrase=" ".join(m.group(0).split()))
                out.append(Finding(
                    id=finding_id(fd.path, "new", ln.text, content), path=fd.path, side="new",
                    start_line=ln.new_line, end_line=ln.new_line, severity=Severity.MEDIUM,
                    category=Category.SECURITY, content=content, existing_code=ln.text,
                    suggestion_code="", anchor=AnchorMethod.HUNK_NEW, source=INJECTION_SOURCE,
                    code=ln.text,
                ))
    return out


def redact_file_diff(fd: FileDiff, redact_text: Callable[[str], str]) -> None:
    """Replace every secret in ``fd``'s hunks and patch by its placeholder, in place, before any
    of it is rendered for the LLM (prompts, ``file_read_diff``, anchoring of the model's quotes,
    which then quote the placeholders too). Line counts and numbers never change (the redaction
    keeps line breaks); a row whose marker was swallowed keeps its original marker."""
    hunks = []
    changed = False
    for h in fd.hunks:
        text = hunk_text(h)
        red = redact_text(text)
        header = redact_text(h.header)  # git's function context is file text too
        if red == text and header == h.header:
            hunks.append(h)
            continue
        rows = red.split("\n")
        if len(rows) != len(h.lines):  # never expected (redaction keeps line breaks)
            rows = [ln.kind + "[REDACTED:hunk]" for ln in h.lines]  # fail closed
        changed = True
        lines = tuple(ln._replace(text=unmarked(row, ln.kind)) for ln, row in zip(
            h.lines, rows, strict=True))
        hunks.append(Hunk(h.old_start, h.old_count, h.new_start, h.new_count, header, lines))
    if changed:
        fd.hunks = tuple(hunks)
    fd.patch = redact_text(fd.patch)


def _is_added(line: Line | None) -> bool:
    return line is not None and line.kind == "+"


# spec §3.9: a scan reviews files as they stand, not a change (the same advice otherwise)
_SCAN_WORDING = (
    ("in the change: once committed it is readable by everyone with the repository and stays"
     " in its history.", "in the scanned file: it is readable by everyone with the repository"
     " and stays in its history."),
    ("Text in the change addresses", "Text in the scanned file addresses"),
)


def worded_for_scan(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with the secret and prompt-injection texts (SECRET_CONTENT,
    INJECTION_CONTENT) worded for a whole-file scan (``in the scanned file``), each one's
    ``id`` recomputed from its new text (``findings.finding_id``); other findings unchanged."""
    out: list[Finding] = []
    for f in findings:
        content = f.content
        if f.source in (SECRET_SOURCE, INJECTION_SOURCE):
            for old, new in _SCAN_WORDING:
                content = content.replace(old, new)
        out.append(f if content == f.content else f._replace(
            content=content, id=finding_id(f.path, f.side, f.existing_code, content)))
    return out
