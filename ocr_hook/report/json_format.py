"""The JSON output (spec §11): one object, written to a stream it is given.

stdout carries only the result; progress and warnings go to stderr through logging.
``summary.cache_hits`` counts cache entries used by the run: 1 for a whole-run hit, else one
per group served from the cache (plus one for a cached grouping answer). ``summary.llm_calls``
counts answered LLM calls; ``summary.llm_attempts`` (the one field added to spec §11's summary)
counts HTTP attempts started, so failed requests and retries show up. Optional fields of a
``files[]`` entry: ``detail``, the reason in words with its numbers and the secret scan of a
file whose content was not loaded; ``size_bytes``, the size of a file git would not diff
because of it; ``not_reviewed`` (true), a file that was selected but not reviewed (too large,
over a bound, its group's review failed), which makes the verdict ``incomplete``; and
``secret_scan`` (``"incomplete"``), a file whose added text the secret scan did not read to
its end, which makes it ``incomplete`` too; ``whole``, a file reviewed whole, with the reason
its old side was left out (spec §4). ``incomplete_reasons`` holds the ``NOT REVIEWED``
line(s) of an incomplete review (``[]`` otherwise).

The same object is the session log's ``result`` record and the data of the review page
(``report.html``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, TextIO

from ..findings import Finding, advisory_reason
from ..vocabulary import Severity
from .display import json_escape, utf8_safe
from .result import ReviewResult

if TYPE_CHECKING:
    from ..comments import DismissedFinding

SCHEMA_VERSION = "1"


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
        if o.not_reviewed and not result.preview:
            entry["not_reviewed"] = True
        if o.scan_gap:
            entry["secret_scan"] = "incomplete"
        if o.whole:
            entry["whole"] = o.whole
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
            "cache_read_tokens": result.usage.cache_read_tokens,
            "cache_write_tokens": result.usage.cache_write_tokens,
            "llm_calls": result.llm_calls,
            "llm_attempts": result.llm_attempts,
            "cache_hits": result.cache_hits,
            "elapsed_ms": result.elapsed_ms,
        },
        "comments": [_comment_json(f, result.gate.block_preexisting) for f in result.findings],
        "files": files,
        "groups": [{"label": g.label, "files": [f.path for f in g.files]} for g in result.groups],
        "warnings": [
            {"type": w.type, "file": w.file, "message": w.message} for w in result.warnings
        ],
        "dismissed": [_dismissed_json(d) for d in result.dismissed],
        "incomplete_reasons": list(result.incomplete_reasons),
        "session_id": result.session_id,
        **_since_last(result),
    }


def _comment_json(f: Finding, block_preexisting: bool) -> dict[str, Any]:
    """One ``comments[]`` entry (spec §8.4). ``advisory_reason``: why the gate lets it pass
    (``preexisting`` | ``moved``), "" when it may block (``gate.block_preexisting`` set:
    always ""); ``moved_from``: where moved code came from (``path:a–b``, ``?``), else ""."""
    return {
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
        "advisory_reason": "" if block_preexisting else advisory_reason(f),
        "moved_from": f.moved_from,
    }


def _since_last(result: ReviewResult) -> dict[str, Any]:
    """``{"since_last": {session, resolved, persisting, new}}`` after a blocked review of the
    branch (spec §12.3), else {} (the key is absent)."""
    return {} if result.since_last is None else {"since_last": dict(result.since_last)}


def _dismissed_json(d: DismissedFinding) -> dict[str, Any]:
    """One entry of the JSON ``dismissed[]`` list: the finding's place and claim,
    ``by`` (inline | shared | personal) and the reason."""
    f = d.finding
    return {"id": f.id, "path": f.path, "side": f.side, "start_line": f.start_line,
            "end_line": f.end_line, "severity": f.severity.label, "category": f.category,
            "content": f.content, "by": d.by, "reason": d.reason}


def write_json(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """One JSON object, strict UTF-8 text (no lone surrogates, so every JSON parser accepts
    it). A path git gave as non-UTF-8 bytes is written with each such byte as ``\\xNN``
    (:func:`ocr_hook.util.text.shown_text`), and its exact bytes follow in ``path_bytes_b64`` /
    ``old_path_bytes_b64`` (base64); see :func:`report.display.utf8_safe`. ``environ`` is
    not read (the writers of ``report.formats`` share one signature)."""
    data = utf8_safe(to_json(result), b64_keys=True)
    files = data["files"]
    if files:  # the same text as json.dumps(indent=2), without its slow Python encoder
        data["files"] = _FILES_SENTINEL
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if files:
        text = text.replace(json.dumps(_FILES_SENTINEL), _files_block(files), 1)
    stream.write(json_escape(text))  # no raw C1 control, bidi override or U+2028 on a terminal
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
