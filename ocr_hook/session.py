"""Session log (SPEC §12): one JSONL file per run in ``<git common dir>/ocr-hook/sessions``,
mode 0600, appended by one writer under a lock. API keys and auth headers are never given to
it; ``record`` drops any key that looks like a credential as a second line of defence."""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

KEEP_SESSIONS = 50  # SPEC §12
_SENSITIVE = ("api_key", "authorization", "x-api-key", "api-key", "token", "password")


def new_session_id() -> str:
    """``YYYYmmdd-HHMMSS-<6 hex>`` (sortable by start time)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class Session:
    """Thread-safe JSONL appender. ``path`` None disables writing (e.g. no git dir)."""

    def __init__(self, session_id: str, path: Path | None) -> None:
        self.id = session_id
        self.path = path
        self._lock = threading.Lock()
        self._fh = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._fh = os.fdopen(fd, "a", encoding="utf-8")
            except OSError:
                self._fh = None

    def record(self, kind: str, data: dict[str, Any]) -> None:
        if self._fh is None:
            return
        clean = {k: v for k, v in data.items() if k.lower() not in _SENSITIVE}
        line = json.dumps({"type": kind, "ts": round(time.time(), 3), **clean},
                          ensure_ascii=False, default=str)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def sessions_dir(common_dir: Path) -> Path:
    return common_dir / "ocr-hook" / "sessions"


def prune(directory: Path, keep: int = KEEP_SESSIONS) -> int:
    """Delete all but the newest ``keep`` session files; returns how many were removed."""
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
