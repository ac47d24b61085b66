"""Session log (spec §12): one JSONL file per run in ``<git common dir>/ocr-hook/sessions/``.

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
- ``end``: status, verdict, findings, llm_calls, input_tokens (neither read from nor written to
  the provider's prompt cache), output_tokens, cache_read_tokens, cache_write_tokens, cache_hits,
  elapsed_ms.

Every string is stored as text can show it: a path byte that is not UTF-8 as ``\\xNN``
(``util.shown_text``), every character that is not printable as a JSON escape
(``display.json_escape``: ``\\u2028``, ``\\u009b``…), so a line holds no raw control or
separator character (``cat`` of a session file is safe) and splits only at its ``\\n``.

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
from pathlib import Path
from typing import Any

from ..util import shown_text
from .display import json_escape

KEEP_SESSIONS = 50  # spec §12
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
        return shown_text(value)  # path bytes as \xNN, before JSON escapes the backslash
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
        payload = (json_escape(line) + "\n").encode("utf-8", "replace")
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
    """``<git common dir>/ocr-hook/sessions`` (spec §12)."""
    return common_dir / "ocr-hook" / "sessions"


def prune_sessions(directory: Path, keep: int = KEEP_SESSIONS) -> int:
    """Delete all but the newest ``keep`` session files; returns how many were removed.
    Ids sort by start time, so the name order is the age order."""
    try:
        names = sorted(n for n in os.listdir(directory)
                       if n.endswith(".jsonl") and not n.startswith("."))  # as glob("*.jsonl")
    except OSError:
        return 0
    removed = 0
    for name in names[: max(0, len(names) - keep)]:
        try:
            (directory / name).unlink()
            removed += 1
        except OSError:
            pass
    return removed
