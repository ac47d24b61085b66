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
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def read_session_records(path: Path) -> list[dict[str, Any]]:
    """Records of one session file; unreadable lines (a torn last line) are skipped. Raises
    UsageError when the file cannot be read."""
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read session {path.name}: {e.strerror}") from e
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
    try:
        files = list(directory.glob("*.jsonl"))
    except OSError:
        return []
    out = []
    for p in files:
        try:
            out.append(summarize(p.stem, read_session_records(p)))
        except UsageError:
            continue
    return sorted(out, key=lambda s: (s.started or 0.0, s.id), reverse=True)


def find_session(directory: Path, id_prefix: str) -> Path:
    """The session file whose id is ``id_prefix`` or starts with it. Raises UsageError when
    none or several match."""
    if not id_prefix or "/" in id_prefix or id_prefix.startswith("."):
        raise UsageError(f"invalid session id {id_prefix!r}")
    exact = directory / f"{id_prefix}.jsonl"
    if exact.is_file():
        return exact
    try:
        matches = sorted(p for p in directory.glob("*.jsonl") if p.stem.startswith(id_prefix))
    except OSError:
        matches = []
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
    ``display_text``."""
    if not summaries:
        return "no sessions\n"
    rows = [("ID", "STARTED", "STAGE", "MODEL", "STATUS", "VERDICT", "FINDINGS", "LLM", "TIME")]
    for s in summaries:
        started = _local_time("%Y-%m-%d %H:%M:%S", s.started, "")
        elapsed = f"{s.elapsed_ms / 1000:.1f}s" if isinstance(s.elapsed_ms, (int, float)) else ""
        cells = (s.id, started, s.stage or s.mode, s.model, s.status, s.verdict,
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
        loc = f"{rest.get('path')}:{rest.get('start_line')}-{rest.get('end_line')}"
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
