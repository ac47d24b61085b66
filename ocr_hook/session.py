"""Session log (SPEC §12): one JSONL file per run in ``<git common dir>/ocr-hook/sessions/``.

File ``<id>.jsonl``, mode 0600 in a 0700 directory; the newest ``KEEP_SESSIONS`` files are
kept. Each line is one JSON object ``{"type": <kind>, "ts": <epoch seconds>, ...}``. Kinds
written during a review:

- ``start``: mode, stage, provider, model, base and head of the input;
- ``llm_request`` / ``llm_response``: group, task, round; the response carries ``usage``
  (input/output/cache tokens) and ``latency_s``;
- ``tool_call``: group, tool, arguments, ok, result (tool results are already redacted);
- ``cache_hit``: level (``run`` | ``group``);
- ``group_done``: group, stop_reason;
- ``comment``: one per final finding (path, side, lines, severity, category, content);
- ``end``: status, verdict, findings, llm_calls, tokens, cache_hits, elapsed_ms.

Lines are appended by one writer under a lock, each with a single ``write`` on an ``O_APPEND``
descriptor, so a crash leaves every finished line intact (an atomic whole-file rewrite would
lose the log of exactly the runs worth reading). API keys and auth headers are never given to
``record``; as a second line of defence it drops credential-named keys at any depth and blanks
any occurrence of the run's secret values (the API key).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError
from .pathtext import shown

KEEP_SESSIONS = 50  # SPEC §12
_SENSITIVE = frozenset({
    "api_key", "apikey", "authorization", "proxy-authorization", "x-api-key", "api-key",
    "token", "access_token", "password", "secret", "cookie",
})
REDACTED = "[REDACTED]"

Observer = Callable[[str, Mapping[str, Any]], None]


def new_session_id() -> str:
    """``YYYYmmdd-HHMMSS-<6 hex>`` in UTC (sortable by start time)."""
    # os.urandom as secrets.token_hex does, without importing secrets (hmac, OpenSSL)
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def _scrub(value: Any, secret_values: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        return {
            str(k): _scrub(v, secret_values)
            for k, v in value.items()
            if str(k).lower() not in _SENSITIVE
        }
    if isinstance(value, (list, tuple)):
        return [_scrub(v, secret_values) for v in value]
    if isinstance(value, str):
        for s in secret_values:
            if s in value:
                value = value.replace(s, REDACTED)
        return value
    return value


class Session:
    """Thread-safe JSONL appender.

    ``path`` None disables writing (e.g. no git dir); ``observer`` (progress reporting) still
    sees every record. ``secret_values`` (API keys) are blanked wherever they would appear.
    """

    def __init__(
        self,
        session_id: str,
        path: Path | None,
        *,
        secret_values: Iterable[str] = (),
        observer: Observer | None = None,
    ) -> None:
        self.id = session_id
        self.path = path
        self._secrets = tuple(s for s in secret_values if s and len(s) >= 4)
        self._observer = observer
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                os.fchmod(self._fd, 0o600)
            except OSError:
                self._fd = None

    def add_secret(self, value: str) -> None:
        """Blank ``value`` too from now on (an API key known only mid-run: llm.api_key_cmd)."""
        if value and len(value) >= 4 and value not in self._secrets:
            with self._lock:
                self._secrets = (*self._secrets, value)

    def record(self, kind: str, data: Mapping[str, Any]) -> None:
        """Append one ``{"type": kind, "ts": …, **data}`` line (scrubbed, see module doc)."""
        if self._observer is not None:
            self._observer(kind, data)
        if self._fd is None:
            return
        clean = _scrub(data, self._secrets)
        line = json.dumps({"type": kind, "ts": round(time.time(), 3), **clean},
                          ensure_ascii=False, default=str)
        payload = (shown(line) + "\n").encode("utf-8", "replace")  # path bytes as \xNN
        with self._lock:
            if self._fd is not None:
                try:
                    os.write(self._fd, payload)
                except OSError:
                    pass

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def sessions_dir(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/sessions`` (SPEC §12)."""
    return common_dir / "ocr-hook" / "sessions"


def prune(directory: Path, keep: int = KEEP_SESSIONS) -> int:
    """Delete all but the newest ``keep`` session files; returns how many were removed.
    Ids sort by start time, so the name order is the age order."""
    try:
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.name)
    except OSError:
        return 0
    removed = 0
    for p in files[: max(0, len(files) - keep)]:
        try:
            p.unlink()
            removed += 1
        except OSError:
            pass
    return removed


# ---- reading (``git ocr session list|show``) ------------------------------------------------


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


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of one session file; unreadable lines (a torn last line) are skipped."""
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read session {path.name}: {e.strerror}") from e
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def summarize(session_id: str, records: list[dict[str, Any]]) -> SessionSummary:
    start = next((r for r in records if r.get("type") == "start"), {})
    end = next((r for r in reversed(records) if r.get("type") == "end"), None)
    llm_calls = sum(1 for r in records if r.get("type") == "llm_response")
    comments = sum(1 for r in records if r.get("type") == "comment")
    return SessionSummary(
        id=session_id,
        started=start.get("ts"),
        stage=str(start.get("stage", "")),
        mode=str(start.get("mode", "")),
        model=str(start.get("model", "")),
        status=str(end.get("status", "")) if end else "running?",
        verdict=str(end.get("verdict", "")) if end else "",
        findings=int(end.get("findings", comments)) if end else comments,
        llm_calls=int(end.get("llm_calls", llm_calls)) if end else llm_calls,
        elapsed_ms=end.get("elapsed_ms") if end else None,
    )


def list_sessions(directory: Path) -> list[SessionSummary]:
    """Summaries of every session in ``directory``, newest first."""
    try:
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.name, reverse=True)
    except OSError:
        return []
    out = []
    for p in files:
        try:
            out.append(summarize(p.stem, read_records(p)))
        except UsageError:
            continue
    return out


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


def format_list(summaries: list[SessionSummary]) -> str:
    """Text table of ``git ocr session list`` (times in local time)."""
    if not summaries:
        return "no sessions\n"
    rows = [("ID", "STARTED", "STAGE", "MODEL", "STATUS", "VERDICT", "FINDINGS", "LLM", "TIME")]
    for s in summaries:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.started)) if s.started else ""
        elapsed = f"{s.elapsed_ms / 1000:.1f}s" if isinstance(s.elapsed_ms, (int, float)) else ""
        rows.append((s.id, started, s.stage or s.mode, s.model, s.status, s.verdict,
                     str(s.findings), str(s.llm_calls), elapsed))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows
    )


def format_record(rec: Mapping[str, Any]) -> str:
    """One record as a readable line for ``git ocr session show``."""
    ts = rec.get("ts")
    when = "--:--:--"
    if isinstance(ts, (int, float)):
        when = time.strftime("%H:%M:%S", time.localtime(ts))
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
