"""Reading the session logs (spec §12) for ``git ocr session list|show`` and ``git ocr
dismiss``: the records of one file, a summary line per session, a session found by id prefix,
and the records as text. The writer is ``session``; a review imports only that.

A session file is repository data (anyone with write access to ``.git`` can put lines in it)
and holds the model's text: everything shown from it passes ``display_text`` (control, format
and separator characters spelled out), and a line ends only at ``\\n`` (a raw U+2028 inside a
string, in a file written by hand or by another tool, does not split a record).
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import UsageError
from ..util import display_text


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of ``git ocr session list``."""

    id: str
    started: float | None
    stage: str
    mode: str
    model: str
    status: str  # from the end record; "running?" when there is none
    verdict: str
    findings: int
    llm_calls: int
    elapsed_ms: int | None

    @property
    def stage_label(self) -> str:
        """The STAGE shown: ``scan`` for ``git ocr scan`` (which runs as stage ``review``),
        else the hook stage or ``review`` (the mode for an older record without one)."""
        return "scan" if self.mode == "scan" else self.stage or self.mode


TAIL_BYTES = 64 * 1024  # the end of a session file read for its `end` record (session list)


def _open_session(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file (non-blocking open, so a FIFO or
    device put in the directory never hangs a reader). Raises UsageError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise UsageError(f"cannot read session {display_text(path.name)}: {e.strerror}") from e
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        raise UsageError(f"session {display_text(path.name)} is not a regular file")
    return fh


def read_session_bytes(path: Path) -> bytes:
    """The content of one session file, read only when it is a regular file. Raises
    UsageError when it cannot be read or is not a regular file."""
    with _open_session(path) as fh:
        try:
            return fh.read()
        except OSError as e:
            raise UsageError(f"cannot read session {display_text(path.name)}: {e.strerror}"
                             ) from e


def session_files(directory: Path) -> list[Path]:
    """The ``*.jsonl`` regular files of the sessions directory (no FIFO, device or folder),
    by name, newest first; [] when it cannot be read."""
    try:
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.name, reverse=True)
    except OSError:
        return []
    out = []
    for p in files:
        try:
            if stat.S_ISREG(p.stat().st_mode):
                out.append(p)
        except OSError:
            continue
    return out


def read_session_records(path: Path) -> list[dict[str, Any]]:
    """Records of one session file; unreadable lines (a torn last line) are skipped. Raises
    UsageError when the file cannot be read or is not a regular file."""
    out: list[dict[str, Any]] = []
    text = read_session_bytes(path).decode("utf-8", errors="replace")
    for line in text.split("\n"):  # not splitlines(): U+2028, NEL… may sit inside a string
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _number(value: Any, default: int) -> int:
    """``value`` when it is a plain number (a hand-edited file may hold anything), else
    ``default``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return default


def summarize(session_id: str, records: list[dict[str, Any]]) -> SessionSummary:
    """The ``session list`` line of one session's records; fields of a wrong type count as
    missing."""
    start = next((r for r in records if r.get("type") == "start"), {})
    end = next((r for r in reversed(records) if r.get("type") == "end"), None)
    llm_calls = sum(1 for r in records if r.get("type") == "llm_response")
    comments = sum(1 for r in records if r.get("type") == "comment")
    ts = start.get("ts")
    elapsed = end.get("elapsed_ms") if end else None
    return SessionSummary(
        id=session_id,
        started=ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
        stage=str(start.get("stage", "")),
        mode=str(start.get("mode", "")),
        model=str(start.get("model", "")),
        status=str(end.get("status", "")) if end else "running?",
        verdict=str(end.get("verdict", "")) if end else "",
        findings=_number(end.get("findings"), comments) if end else comments,
        llm_calls=_number(end.get("llm_calls"), llm_calls) if end else llm_calls,
        elapsed_ms=_number(elapsed, 0) if elapsed is not None else None,
    )


def list_sessions(directory: Path) -> list[SessionSummary]:
    """Summaries of every session in ``directory``, newest first: by the start record's time,
    then id (ids sort by the second only; the order of ``session compare last``/``previous``);
    a session without a start time last."""
    out = []
    for p in session_files(directory):
        try:
            out.append(_summarize_quickly(p) or summarize(p.stem, read_session_records(p)))
        except UsageError:
            continue
    return sorted(out, key=lambda s: (s.started or 0.0, s.id), reverse=True)


def _records_of(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.split(b"\n"):
        try:
            rec = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _summarize_quickly(path: Path) -> SessionSummary | None:
    """The summary of a finished session from its first line (the ``start`` record) and its
    last :data:`TAIL_BYTES` (the last ``end`` record with its counts), without decoding the
    records between (a session of megabytes of prompts); None when the file does not have
    that shape (then every record is read). The same summary as :func:`summarize`."""
    with _open_session(path) as fh:
        try:
            first = _records_of(fh.readline())
            after_first = fh.tell()
            size = os.fstat(fh.fileno()).st_size
            if size - after_first <= TAIL_BYTES:
                tail = fh.read()  # every line after the first
            else:  # from the byte before the tail: a line starts where a newline ends
                fh.seek(size - TAIL_BYTES - 1)
                data = fh.read()
                tail = data[1:] if data[:1] == b"\n" else data.partition(b"\n")[2]
        except OSError:
            return None
    ends = [r for r in _records_of(tail) if r.get("type") == "end"]
    if not first or first[0].get("type") != "start" or not ends:
        return None
    end = ends[-1]
    if any(isinstance(end.get(k), bool) or not isinstance(end.get(k), (int, float))
           for k in ("findings", "llm_calls")):
        return None  # the counts come from the records: read them all
    return summarize(path.stem, [first[0], end])


def find_session(directory: Path, id_prefix: str) -> Path:
    """The session file whose id is ``id_prefix`` or starts with it. Raises UsageError when
    none or several match."""
    if not id_prefix or "/" in id_prefix or id_prefix.startswith("."):
        raise UsageError(f"invalid session id {id_prefix!r}")
    files = session_files(directory)
    exact = directory / f"{id_prefix}.jsonl"
    if exact in files:
        return exact
    matches = sorted(p for p in files if p.stem.startswith(id_prefix))
    if not matches:
        raise UsageError(f"no session {id_prefix!r} (see `git ocr session list`)")
    if len(matches) > 1:
        raise UsageError(
            f"session id {id_prefix!r} is ambiguous: {', '.join(p.stem for p in matches[:5])}"
        )
    return matches[0]


def _local_time(fmt: str, ts: Any, default: str) -> str:
    """Epoch seconds ``ts`` in local time, or ``default`` when it is not a usable time."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not ts:
        return default
    try:
        return time.strftime(fmt, time.localtime(ts))
    except (OverflowError, OSError, ValueError):
        return default


def format_session_list(summaries: list[SessionSummary]) -> str:
    """Text table of ``git ocr session list`` (times in local time), each cell through
    ``display_text``; STAGE is the hook stage, ``review`` for a command-line review, ``scan``
    for ``git ocr scan``."""
    if not summaries:
        return "no sessions\n"
    rows = [("ID", "STARTED", "STAGE", "MODEL", "STATUS", "VERDICT", "FINDINGS", "LLM", "TIME")]
    for s in summaries:
        started = _local_time("%Y-%m-%d %H:%M:%S", s.started, "")
        elapsed = f"{s.elapsed_ms / 1000:.1f}s" if isinstance(s.elapsed_ms, (int, float)) else ""
        cells = (s.id, started, s.stage_label, s.model, s.status, s.verdict,
                 str(s.findings), str(s.llm_calls), elapsed)
        rows.append(tuple(display_text(c) for c in cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows
    )


def format_session_record(rec: Mapping[str, Any]) -> str:
    """One record as a readable line for ``git ocr session show``, through ``display_text``:
    one line whatever the record holds."""
    return display_text(_record_line(rec))


def _record_line(rec: Mapping[str, Any]) -> str:
    when = _local_time("%H:%M:%S", rec.get("ts"), "--:--:--")
    kind = str(rec.get("type", "?"))
    rest = {k: v for k, v in rec.items() if k not in ("type", "ts")}
    if kind in ("comment", "dismissed"):
        a, b = rest.get("start_line"), rest.get("end_line")
        loc = f"{rest.get('path')}:{a}" + (f"-{b}" if b not in (None, a) else "")  # as text
        by = f" ({rest.get('by')}: {rest.get('reason', '')})" if kind == "dismissed" else ""
        return (f"{when} {kind:<10} {loc} [{rest.get('severity')} · {rest.get('category')}] "
                f"{' '.join(str(rest.get('content', '')).split())}{by} id {rest.get('id', '')}")
    if kind == "result":  # the review page's data: shown by `git ocr session show ID --html`
        diffs = rest.get("diffs")
        return (f"{when} result     {rest.get('verdict_line', '')}; "
                f"{len(diffs) if isinstance(diffs, list) else 0} file diff(s) kept for --html")
    if kind == "tool_call":
        result = " ".join(str(rest.get("result", "")).split())
        if len(result) > 160:
            result = result[:157] + "..."
        args = json.dumps(rest.get("arguments"), ensure_ascii=False, default=str)
        if len(args) > 160:
            args = args[:157] + "..."
        ok = "ok" if rest.get("ok") else "error"
        return (f"{when} tool_call  [{rest.get('group', '')}] {rest.get('tool')} {args} "
                f"→ {ok}: {result}")
    body = json.dumps(rest, ensure_ascii=False, default=str)
    return f"{when} {kind:<10} {body}"


# ---- the result record, normalised for the review page (spec §12: a wrong type is missing) ---

_COMMENT_TEXT = ("id", "path", "side", "severity", "category", "content", "existing_code",
                 "suggestion_code", "anchor", "advisory_reason", "moved_from", "by", "reason")
_FILE_TEXT = ("path", "status", "reason", "old_path", "detail", "secret_scan", "whole")
_FILE_FLAGS = ("reviewed", "will_review", "not_reviewed")
_SUMMARY_NUMBERS = ("files_reviewed", "comments", "input_tokens", "output_tokens",
                    "cache_read_tokens", "cache_write_tokens", "llm_calls", "llm_attempts",
                    "cache_hits", "elapsed_ms")


def _text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _int(value: Any, default: int | None = 0) -> int | None:
    """A plain finite number as an int (NaN, infinities, bools and the rest: ``default``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    if isinstance(value, float) and not math.isfinite(value):
        return default
    return int(value)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _comment(c: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: _text(c.get(k)) for k in _COMMENT_TEXT}
    out["side"] = "old" if out["side"] == "old" else "new"
    out["start_line"] = _int(c.get("start_line"))
    out["end_line"] = _int(c.get("end_line"))
    out["ambiguous"] = c.get("ambiguous") is True
    return out


def _file(f: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: f[k] for k in _FILE_TEXT if isinstance(f.get(k), str)}
    out.update({k: f[k] for k in _FILE_FLAGS if isinstance(f.get(k), bool)})
    out.setdefault("path", "")
    out.setdefault("status", "")
    out.setdefault("reason", "")
    size = _int(f.get("size_bytes"), None)
    if size is not None:
        out["size_bytes"] = size
    return out


def _hunk(h: Any) -> list[Any] | None:
    """``[old_start, old_count, new_start, new_count, header, lines]`` with each line ``[kind,
    text, old, new]`` (kind ``+``, ``-`` or a space); None for a hunk of another shape."""
    if not isinstance(h, list) or len(h) != 6 or not isinstance(h[5], list):
        return None
    nums = [_int(v, None) for v in h[:4]]
    if any(n is None for n in nums) or not isinstance(h[4], str):
        return None
    lines = []
    for ln in h[5]:
        if (isinstance(ln, list) and len(ln) == 4 and ln[0] in ("+", "-", " ")
                and isinstance(ln[1], str)):
            lines.append([ln[0], ln[1], _int(ln[2], None) or None, _int(ln[3], None) or None])
    return [*nums, h[4], lines]


def _diff(d: Mapping[str, Any]) -> dict[str, Any]:
    hunks = [h for h in (_hunk(x) for x in (d.get("hunks") if isinstance(d.get("hunks"), list)
                                            else [])) if h is not None]
    return {"status": _text(d.get("status")), "old_path": _text(d.get("old_path")),
            "new_path": _text(d.get("new_path")), "hunks": hunks,
            "insertions": _int(d.get("insertions")), "deletions": _int(d.get("deletions"))}


def normalise_report(data: Mapping[str, Any]) -> dict[str, Any]:
    """The §11 JSON object of a session's ``result`` record in the shape the review page reads
    (``report.html.render_html``): every field it reads present with its type, a field of
    another type as missing (its default: "", 0, False, [] or {}), entries that are not
    objects left out."""
    summary = _dict(data.get("summary"))
    gate = _dict(data.get("gate"))
    return {
        "status": _text(data.get("status")),
        "verdict": _text(data.get("verdict")),
        "session_id": _text(data.get("session_id")),
        "gate": {"mode": _text(gate.get("mode")), "fail_on": _text(gate.get("fail_on")),
                 "blocking": gate.get("blocking") is True},
        "input": {k: _text(_dict(data.get("input")).get(k)) for k in ("mode", "base", "head")},
        "llm": {"model": _text(_dict(data.get("llm")).get("model"))},
        "summary": {k: _int(summary.get(k)) for k in _SUMMARY_NUMBERS},
        "comments": [_comment(c) for c in _dicts(data.get("comments"))],
        "dismissed": [_comment(c) for c in _dicts(data.get("dismissed"))],
        "files": [_file(f) for f in _dicts(data.get("files"))],
    }


def session_result(records: list[dict[str, Any]]
                   ) -> tuple[dict[str, Any], list[dict[str, Any]], str] | None:
    """The review page's input from a session's last ``result`` record: (the report,
    :func:`normalise_report`; its diffs as ``pipeline.services.diff_record`` data, each
    normalised the same way, hunks of another shape left out; the verdict line), or None when
    the session has no result record with a ``report`` object (an interrupted or older run)."""
    rec = next((r for r in reversed(records) if r.get("type") == "result"), None)
    if rec is None or not isinstance(rec.get("report"), dict):
        return None
    return (normalise_report(rec["report"]), [_diff(d) for d in _dicts(rec.get("diffs"))],
            _text(rec.get("verdict_line")))
