"""The SARIF 2.1.0 output (spec §11): one log with one run, for code-scanning tools, written to
a stream it is given.

One rule per category used (id = category), one result per finding (level from severity),
dismissed findings as results with suppressions, and files left unreviewed, files the secret
scan did not read to the end and run warnings as tool notifications.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, TextIO
from urllib.parse import quote

from .. import __version__
from ..findings import Finding
from ..vocabulary import Category, Severity
from .display import json_escape, utf8_safe
from .result import ReviewResult

SARIF_VERSION = "2.1.0"
# `$schema` of SARIF 2.1.0 logs: the OASIS schema (errata 01) as published by the OASIS TC.
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
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


def _sarif_locations(f: Finding) -> list[dict[str, Any]]:
    """Physical location: region lines only for anchored new-side findings (the lines exist in
    the reviewed version); old-side and unanchored findings are file-level (spec §11). None
    (``[]``) for a path :func:`repo_uri` refuses: a SARIF URI never leaves the repository."""
    uri = repo_uri(f.path)
    if uri is None:
        return []
    loc: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}
    if f.side == "new" and f.start_line > 0:
        loc["region"] = {"startLine": f.start_line, "endLine": max(f.end_line, f.start_line)}
    return [{"physicalLocation": loc}]


def _sarif_result(f: Finding, rule_index: int) -> dict[str, Any]:
    """One SARIF result for ``f`` (message with the side note and the suggestion)."""
    text = f.content
    if f.side == "old" and f.start_line > 0:
        text += f"\n\n(On the previous version of the file, lines {f.start_line}-{f.end_line}.)"
    elif f.start_line == 0:
        text += "\n\n(Location in the file unknown.)"
    if repo_uri(f.path) is None:
        text += "\n\n(The path is outside the repository: no location given.)"
    if f.suggestion_code.strip():
        text += "\n\nSuggestion:\n" + f.suggestion_code
    return {
        "ruleId": f.category,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[f.severity],
        "message": {"text": text},
        "locations": _sarif_locations(f),
        "partialFingerprints": {"ocrHookFindingId/v1": f.id},
        "properties": {
            "severity": f.severity.label,
            "side": f.side,
            "anchor": f.anchor,
            "ambiguous": f.ambiguous,
        },
    }


def to_sarif(result: ReviewResult) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: one rule per category used (id = category), one result
    per finding (level from severity), incomplete files and warnings as tool notifications."""
    every = [*result.findings, *(d.finding for d in result.dismissed)]
    used: list[str] = [c for c in Category if any(f.category == c for f in every)]
    used += sorted({f.category for f in every} - set(used))
    index = {c: i for i, c in enumerate(used)}
    rules = [
        {
            "id": c,
            "name": c.capitalize(),
            "shortDescription": {"text": Category(c).words if Category.lookup(c) else
                                 f"{c} finding"},  # unknown: from a cache entry
            "properties": {"tags": [c]},
        }
        for c in used
    ]
    results = [_sarif_result(f, index[f.category]) for f in result.findings]
    for d in result.dismissed:  # SARIF §3.35 suppressions: shown as dismissed by viewers
        entry = _sarif_result(d.finding, index[d.finding.category])
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
