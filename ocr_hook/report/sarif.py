"""The SARIF 2.1.0 output (spec §11): one log with one run, for code-scanning tools, written to
a stream it is given.

One rule per category used (id = category; security findings one rule per severity,
``security/<severity>``, each with GitHub code scanning's ``security-severity``), one result
per finding (level from severity; a suggestion on anchored new-side lines as a SARIF fix),
dismissed findings as results with suppressions, and files left unreviewed, files the secret
scan did not read to the end and run warnings as tool notifications. The log validates with no
warning under the SARIF multitool (``@microsoft/sarif-multitool validate``, 5.7.0).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from .. import __version__
from ..findings import Finding, advisory_reason, advisory_text, normalized_quote
from ..vocabulary import Category, Severity
from .display import json_escape, utf8_safe
from .result import ReviewResult

if TYPE_CHECKING:
    from ..diff import FileDiff

SARIF_VERSION = "2.1.0"
# `$schema` of SARIF 2.1.0 logs: the OASIS schema (errata 01) as published by the OASIS TC.
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
# The tool's ``informationUri`` (SARIF §3.19.11, an absolute URI): the project declares no home
# page in its metadata, so this is its package name's index page.
INFORMATION_URI = "https://pypi.org/project/ocr-hook/"
# GitHub code scanning's ``properties.security-severity`` of a security rule: a string score in
# (0.0, 10.0] it reads as over 9.0 critical, 7.0-8.9 high, 4.0-6.9 medium, 0.1-3.9 low
# ("SARIF support for code scanning", reportingDescriptor object): one score inside each band.
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "2.0",
}
SARIF_LEVELS = {  # SARIF §3.27.10 level from our severity
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
}


_DRIVE = re.compile(r"[A-Za-z]:")  # a Windows drive ("C:"), absolute wherever it is resolved


def repo_uri(path: str) -> str | None:
    """``path`` as a URI reference relative to ``%SRCROOT%``: RFC 3986 percent-encoding of the
    path's exact bytes, ``/`` kept. None when the reference could leave the repository: an
    empty or absolute path, or one with an empty, ``.`` or ``..`` segment, or a drive letter
    (segments split at slashes and at backslashes, which Windows tools read as separators). Git
    never records such a path (it refuses ``..`` and absolute names), so only a model's or a
    stale entry's path can be one."""
    segments = re.split(r"[/\\]", path)
    if not path or _DRIVE.match(segments[0]) or any(s in ("", ".", "..") for s in segments):
        return None
    return quote(os.fsencode(path))


def _has_region(f: Finding) -> bool:
    """Whether ``f``'s lines exist in the reviewed version (anchored on the new side)."""
    return f.side == "new" and f.start_line > 0


def removed_at(fd: FileDiff | None, old_line: int) -> int | None:
    """The new-side line of ``fd``'s old line ``old_line``: a context line's own new number;
    for a deleted line, where it was removed: the first line after it in its hunk that the new
    version has (else the last one before it). None when ``fd`` (the reviewed diff) is not
    known or does not show that old line."""
    for h in fd.hunks if fd is not None else ():
        before = None
        for i, ln in enumerate(h.lines):
            if ln.kind == " " and ln.old_line == old_line:
                return ln.new_line
            if ln.kind == "-" and ln.old_line == old_line:
                after = next((x.new_line for x in h.lines[i + 1:] if x.new_line), None)
                return after or before or max(h.new_start, 1)
            if ln.new_line:
                before = ln.new_line
    return None


def _region(f: Finding, at: int | None = None) -> dict[str, int]:
    """The lines of an anchored new-side finding; for an old-side one the line ``at`` where its
    lines were removed (:func:`removed_at`); line 1 for any other (file-level: location
    unknown, or an old-side one whose diff is not known; the message says which), as code
    scanning needs a line to show a result."""
    if not _has_region(f):
        return {"startLine": at or 1}
    return {"startLine": f.start_line, "endLine": max(f.end_line, f.start_line)}


def _sarif_locations(f: Finding, at: int | None = None) -> list[dict[str, Any]]:
    """Physical location: the finding's lines when anchored on the new side (they exist in the
    reviewed version), else line ``at`` or 1 of the file (see :func:`_region`). None (``[]``)
    for a path :func:`repo_uri` refuses: a SARIF URI never leaves the repository."""
    uri = repo_uri(f.path)
    if uri is None:
        return []
    return [{"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                                  "region": _region(f, at)}}]


def _fixable(f: Finding) -> bool:
    """Whether ``f``'s suggestion can be a SARIF fix: it has one, its lines exist in the reviewed
    version, and the model quoted those whole lines (same text up to whitespace), so the
    suggestion replaces exactly them."""
    return (bool(f.suggestion_code.strip()) and _has_region(f) and repo_uri(f.path) is not None
            and bool(f.code) and normalized_quote(f.code) == normalized_quote(f.existing_code))


def _sarif_fix(f: Finding) -> dict[str, Any]:
    """SARIF §3.55 fix: replace the anchored lines (a line region ends before the last line's
    newline, §3.30.7) by the suggestion, given without its final newline."""
    text = f.suggestion_code[:-1] if f.suggestion_code.endswith("\n") else f.suggestion_code
    return {
        "description": {"text": "Apply the suggested code."},
        "artifactChanges": [{
            "artifactLocation": {"uri": repo_uri(f.path), "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": _region(f), "insertedContent": {"text": text}}],
        }],
    }


def _sarif_result(f: Finding, rule_index: int, advisory: bool = False,
                  at: int | None = None) -> dict[str, Any]:
    """One SARIF result for ``f``: the message with the side note, the suggestion as a fix
    (:func:`_fixable`) or, when it cannot be one, at the end of the message. ``advisory``
    (the gate lets pre-existing and moved findings pass): such a finding is level ``note``
    with the reason in its message and ``properties.advisory_reason`` (else "");
    ``properties.moved_from`` as in JSON."""
    text = f.content
    advisory = advisory and bool(advisory_reason(f))
    if advisory:
        text += f"\n\n({advisory_text(f)}.)"
    if f.side == "old" and f.start_line > 0:
        shown = f"; shown at line {at}, where they were removed" if at else ""
        text += (f"\n\n(On the previous version of the file, lines {f.start_line}-{f.end_line}"
                 f"{shown}.)")
    elif f.start_line == 0:
        text += "\n\n(Location in the file unknown.)"
    if repo_uri(f.path) is None:
        text += "\n\n(The path is outside the repository: no location given.)"
    fixable = _fixable(f)
    if f.suggestion_code.strip() and not fixable:
        text += "\n\nSuggestion:\n" + f.suggestion_code
    out: dict[str, Any] = {
        "ruleId": rule_id(f),
        "ruleIndex": rule_index,
        "level": "note" if advisory else SARIF_LEVELS[f.severity],
        "message": {"text": text},
        "locations": _sarif_locations(f, at),
        "partialFingerprints": {"ocrHookFindingId/v1": f.id},
        "properties": {
            "severity": f.severity.label,
            "side": f.side,
            "anchor": f.anchor,
            "ambiguous": f.ambiguous,
            "advisory_reason": advisory_reason(f) if advisory else "",
            "moved_from": f.moved_from,
        },
    }
    if fixable:
        out["fixes"] = [_sarif_fix(f)]
    return out


def rule_id(f: Finding) -> str:
    """The SARIF rule of ``f``: its category, ``security/<severity>`` for a security finding
    (GitHub's ``security-severity`` is a rule's, so each security severity is a rule)."""
    if f.category == Category.SECURITY:
        return f"security/{f.severity.label}"
    return str(f.category)


def _pascal(words: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[^0-9A-Za-z]+", words) if w)


def _rule(rid: str) -> dict[str, Any]:
    """The reporting descriptor of rule ``rid``: a readable ``name`` that differs from the id
    (SARIF §3.49.7), the category's words, tags; security rules get ``security-severity``."""
    if rid.startswith("security/"):
        level = rid.partition("/")[2]
        words = Category.SECURITY.words
        return {"id": rid, "name": _pascal(f"{level} {words}"),
                "shortDescription": {"text": f"{words} ({level})"},
                "properties": {"tags": ["security"],
                               "security-severity": SECURITY_SEVERITY[Severity[level.upper()]]}}
    words = Category(rid).words if Category.lookup(rid) else f"{rid} finding"  # unknown: cache
    return {"id": rid, "name": _pascal(words), "shortDescription": {"text": words},
            "properties": {"tags": [rid]}}


def _rule_ids(findings: list[Finding]) -> list[str]:
    """The rules used, in category order (security by severity, most severe first), then the
    unknown categories of cache entries by name."""
    used = {rule_id(f) for f in findings}
    order = []
    for c in Category:
        if c == Category.SECURITY:
            order += [r for s in sorted(Severity, reverse=True)
                      if (r := f"security/{s.label}") in used]
        elif c.value in used:
            order.append(c.value)
    return order + sorted(used - set(order))


def to_sarif(result: ReviewResult) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: the rules used (:func:`rule_id`), one result per finding
    (level from severity), incomplete files and warnings as tool notifications."""
    used = _rule_ids([*result.findings, *(d.finding for d in result.dismissed)])
    index = {r: i for i, r in enumerate(used)}
    rules = [_rule(r) for r in used]
    lenient = not result.gate.block_preexisting
    diffs = {fd.path: fd for g in result.groups for fd in g.files}

    def at(f: Finding) -> int | None:  # where an old-side finding's lines were removed
        return removed_at(diffs.get(f.path), f.start_line) if f.side == "old" else None

    results = [_sarif_result(f, index[rule_id(f)], lenient, at(f)) for f in result.findings]
    for d in result.dismissed:  # SARIF §3.35 suppressions: shown as dismissed by viewers
        entry = _sarif_result(d.finding, index[rule_id(d.finding)], at=at(d.finding))
        entry["suppressions"] = [{
            "kind": "inSource" if d.by == "inline" else "external",
            "status": "accepted",
            **({"justification": d.reason} if d.reason else {}),
        }]
        results.append(entry)
    notes = [
        {"level": "warning", "message": {"text": f"not reviewed: {o.path} ({o.reason})"},
         "descriptor": {"id": "not_reviewed"}}
        for o in result.files
        if o.will_review and not o.reviewed
    ]
    notes += [
        {"level": "warning", "message": {"text": f"secret scan incomplete: {o.path} ({o.detail})"},
         "descriptor": {"id": "secret_scan_incomplete"}}
        for o in result.files
        if o.scan_gap
    ]
    notes += [
        {"level": "warning",
         "message": {"text": f"{w.file}: {w.message}" if w.file else w.message},
         "descriptor": {"id": w.type or "warning"}}
        for w in result.warnings
    ]
    invocation: dict[str, Any] = {
        "executionSuccessful": result.status in ("complete", "skipped"),
    }
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "ocr-hook",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "repository root"}}},
            "invocations": [invocation],
            "results": results,
            "properties": {
                "status": result.status,
                "verdict": result.decision.verdict,
                "session_id": result.session_id,
                "cache_hits": result.cache_hits,
                "input": dict(result.input),  # what was reviewed: base, head, pushed ranges
            },
        }],
    }


def write_sarif(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """The SARIF log as strict UTF-8 JSON: artifact URIs percent-encode a path's exact bytes,
    other text shows non-UTF-8 bytes as ``\\xNN`` (:func:`report.display.utf8_safe`).
    ``environ`` is not read (the writers of ``report.formats`` share one signature)."""
    stream.write(json_escape(json.dumps(utf8_safe(to_sarif(result)), indent=2,
                                        ensure_ascii=False)))  # no raw C1, bidi or U+2028
    stream.write("\n")
