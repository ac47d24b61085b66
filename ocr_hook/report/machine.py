"""Renderers: JSON (spec §11) and SARIF 2.1.0, written to a stream they are given, and the
display helpers the text output (``report.text``) and the HTML page (``report.html``) share.

stdout carries only the result; progress and warnings go to stderr through logging.
``summary.cache_hits`` counts cache entries used by the run: 1 for a whole-run hit, else one
per group served from the cache (plus one for a cached grouping answer). ``summary.llm_calls``
counts answered LLM calls; ``summary.llm_attempts`` (the one field added to spec §11's summary)
counts HTTP attempts started, so failed requests and retries show up. Two more optional
fields of a ``files[]`` entry: ``detail``, the reason in words with its numbers and
the secret scan of a file whose content was not loaded, and ``size_bytes``, the size of a file
git would not diff because of it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, TextIO

from .. import __version__
from ..findings import Category, Finding, Severity
from ..util import has_raw_bytes, path_bytes_b64, shown_text
from .result import ReviewResult

if TYPE_CHECKING:
    from ..comments import DismissedFinding

SCHEMA_VERSION = "1"
_COLORS = {
    Severity.CRITICAL: "\033[1;31m",
    Severity.HIGH: "\033[31m",
    Severity.MEDIUM: "\033[33m",
    Severity.LOW: "\033[34m",
}
_RESET = "\033[0m"
_DIM = "\033[2m"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def use_color(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Colour only on a TTY, never with NO_COLOR set or TERM=dumb."""
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def to_json(result: ReviewResult) -> dict[str, Any]:
    """The JSON object of spec §11 (preview: the files list with counts)."""
    by_sev = {s.label: 0 for s in sorted(Severity, reverse=True)}
    for f in result.findings:
        by_sev[f.severity.label] += 1
    files = []
    for o in result.files:
        entry: dict[str, Any] = {
            "path": o.path,
            "status": o.status,
            "reviewed": o.reviewed,
            "reason": o.reason,
        }
        if o.old_path != o.path:
            entry["old_path"] = o.old_path
        if o.detail:
            entry["detail"] = o.detail
        if o.size_bytes is not None:
            entry["size_bytes"] = o.size_bytes
        if result.preview:
            entry["will_review"] = o.will_review and not o.reason
            entry["insertions"] = o.insertions
            entry["deletions"] = o.deletions
        files.append(entry)
    return {
        "schema_version": SCHEMA_VERSION,
        "status": result.status,
        "verdict": result.decision.verdict,
        "gate": {
            "mode": result.gate.mode,
            "fail_on": result.gate.fail_on,
            "blocking": result.decision.blocked,
        },
        "llm": dict(result.llm),
        "input": dict(result.input),
        "summary": {
            "files_reviewed": sum(1 for o in result.files if o.reviewed),
            "comments": len(result.findings),
            "by_severity": by_sev,
            "input_tokens": result.usage.input_tokens + result.usage.cache_read_tokens
            + result.usage.cache_write_tokens,
            "output_tokens": result.usage.output_tokens,
            "llm_calls": result.llm_calls,
            "llm_attempts": result.llm_attempts,
            "cache_hits": result.cache_hits,
            "elapsed_ms": result.elapsed_ms,
        },
        "comments": [
            {
                "id": f.id,
                "path": f.path,
                "side": f.side,
                "start_line": f.start_line,
                "end_line": f.end_line,
                "severity": f.severity.label,
                "category": f.category,
                "content": f.content,
                "existing_code": f.existing_code,
                "suggestion_code": f.suggestion_code,
                "anchor": f.anchor,
                "ambiguous": f.ambiguous,
            }
            for f in result.findings
        ],
        "files": files,
        "groups": [{"label": g.label, "files": [f.path for f in g.files]} for g in result.groups],
        "warnings": [
            {"type": w.type, "file": w.file, "message": w.message} for w in result.warnings
        ],
        "dismissed": [_dismissed_json(d) for d in result.dismissed],
        "session_id": result.session_id,
    }


def _dismissed_json(d: DismissedFinding) -> dict[str, Any]:
    """One entry of the JSON ``dismissed[]`` list: the finding's place and claim,
    ``by`` (inline | shared | personal) and the reason."""
    f = d.finding
    return {"id": f.id, "path": f.path, "side": f.side, "start_line": f.start_line,
            "end_line": f.end_line, "severity": f.severity.label, "category": f.category,
            "content": f.content, "by": d.by, "reason": d.reason}


def write_json(result: ReviewResult, stream: TextIO) -> None:
    """One JSON object, strict UTF-8 text (no lone surrogates, so every JSON parser accepts
    it). A path git gave as non-UTF-8 bytes is written with each such byte as ``\\xNN``
    (:func:`ocr_hook.util.pathtext.shown_text`), and its exact bytes follow in ``path_bytes_b64`` /
    ``old_path_bytes_b64`` (base64); see :func:`utf8_safe`."""
    data = utf8_safe(to_json(result), b64_keys=True)
    files = data["files"]
    if files:  # the same text as json.dumps(indent=2), without its slow Python encoder
        data["files"] = _FILES_SENTINEL
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if files:
        text = text.replace(json.dumps(_FILES_SENTINEL), _files_block(files), 1)
    stream.write(text)
    stream.write("\n")


_FILES_SENTINEL = "\0files\0"  # stands for files[] while the rest is encoded


def _scalar(value: object) -> str:
    """JSON text of a str, bool, int or None, as ``json.dumps(ensure_ascii=False)``."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


def _files_block(files: Sequence[Mapping[str, object]]) -> str:
    """``files[]`` (flat objects of scalars) as ``json.dumps(indent=2)`` prints it at the top
    level of an object: one line per field, without the pure-Python encoder that ``indent``
    needs, which is slow for a change of many thousands of paths."""
    entries = [
        "    {\n" + ",\n".join(f"      {encode_basestring(k)}: {_scalar(v)}"
                             for k, v in entry.items()) + "\n    }"
        for entry in files
    ]
    return "[\n" + ",\n".join(entries) + "\n  ]"


def utf8_safe(value: Any, *, b64_keys: bool = False) -> Any:
    """A JSON-able ``value`` (dicts, lists, scalars) whose every string encodes as UTF-8:
    non-UTF-8 path bytes (surrogateescape) as ``\\xNN``, any other lone surrogate (e.g. from
    a model's ``\\ud800`` escape) as U+FFFD. With ``b64_keys``, a ``path``/``old_path``
    string that had such bytes gains a ``<key>_bytes_b64`` sibling holding its exact bytes."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", shown_text(value))
    if isinstance(value, list):
        return [utf8_safe(v, b64_keys=b64_keys) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k] = utf8_safe(v, b64_keys=b64_keys)
            if b64_keys and k in ("path", "old_path") and isinstance(v, str) and has_raw_bytes(v):
                out[f"{k}_bytes_b64"] = path_bytes_b64(v)
        return out
    return value


def _escape_char(ch: str) -> str:
    """One non-printable character as text: ``\\t``, ``\\n``, ``\\r``, ``\\x..`` for an
    undecodable byte (os.fsdecode's surrogate escape), else ``\\uXXXX`` (ESC is ``\\u001b``)."""
    if ch in "\t\n\r":
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch]
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return f"\\u{ord(ch):04x}"


def display_path(path: str) -> str:
    """A path for text output (the ``--preview`` table, findings, the coverage lines): control
    characters (TAB, newline, ESC…) and backslashes escaped as git's C quoting does,
    undecodable bytes as ``\\x..``; everything else as is."""
    if path.isprintable() and "\\" not in path:
        return path
    return "".join("\\\\" if ch == "\\" else ch if ch.isprintable() else _escape_char(ch)
                   for ch in path)


def display_text(text: str, keep: str = "") -> str:
    """Model or server text (comment content, suggestions, error messages) for a terminal: every
    non-printable character except those in ``keep`` (``"\\n\\t"`` for a multi-line body) is
    escaped as :func:`display_path` escapes it, so ``\\x1b[2J`` cannot clear the screen or
    colour the output, and a line break cannot forge a line. Backslashes stay as they are (code
    is full of them); CRLF counts as one newline."""
    if "\r\n" in text and "\n" in keep:
        text = text.replace("\r\n", "\n")
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape_char(ch) for ch in text)


# ---- SARIF 2.1.0 ------------------------------------------------------------------------------

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


def _sarif_location(f: Finding) -> dict[str, Any]:
    """Physical location: region lines only for anchored new-side findings (the lines exist in
    the reviewed version); old-side and unanchored findings are file-level (spec §11)."""
    from urllib.parse import quote  # SARIF only

    uri = quote(os.fsencode(f.path))  # RFC 3986 percent-encoding of the path's exact bytes
    loc: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}
    if f.side == "new" and f.start_line > 0:
        loc["region"] = {"startLine": f.start_line, "endLine": max(f.end_line, f.start_line)}
    return {"physicalLocation": loc}


def _sarif_result(f: Finding, rule_index: int) -> dict[str, Any]:
    """One SARIF result for ``f`` (message with the side note and the suggestion)."""
    text = f.content
    if f.side == "old" and f.start_line > 0:
        text += f"\n\n(On the previous version of the file, lines {f.start_line}-{f.end_line}.)"
    elif f.start_line == 0:
        text += "\n\n(Location in the file unknown.)"
    if f.suggestion_code.strip():
        text += "\n\nSuggestion:\n" + f.suggestion_code
    return {
        "ruleId": f.category,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[f.severity],
        "message": {"text": text},
        "locations": [_sarif_location(f)],
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


def write_sarif(result: ReviewResult, stream: TextIO) -> None:
    """The SARIF log as strict UTF-8 JSON: artifact URIs percent-encode a path's exact bytes,
    other text shows non-UTF-8 bytes as ``\\xNN`` (:func:`utf8_safe`)."""
    json.dump(utf8_safe(to_sarif(result)), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
