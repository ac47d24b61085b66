"""Import the HTTP stack (``requests``, urllib3 and ``llm.http``: a large part of start-up) on
a background thread, started once a review is certain to call the LLM, so that it overlaps what
the main thread still waits for before the first request. ``make_client`` waits for it
before importing the client. Nothing changes when the thread is slow or fails: the caller's
own import then finishes or raises as it would without it.
"""

from __future__ import annotations

import logging
import sys
import threading

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 30.0  # longest wait for the thread (ours; a cold import takes < 1 s)
TARGET = "ocr_hook.llm.http"  # the module imported (it imports requests)

_lock = threading.Lock()
_thread: threading.Thread | None = None


def start_prefetch() -> bool:
    """Start importing TARGET on a daemon thread, once per process. Returns False when it is
    already imported or a thread was started before."""
    global _thread
    with _lock:
        if _thread is not None or TARGET in sys.modules:
            return False
        _thread = threading.Thread(target=_run, name="ocr-http-import", daemon=True)
        _thread.start()
        return True


def _run() -> None:
    try:
        __import__(TARGET)
    except Exception:  # noqa: BLE001 - the caller's own import raises it again
        log.debug("background import of %s failed", TARGET, exc_info=True)


def wait(timeout: float = JOIN_TIMEOUT_S) -> None:
    """Wait (at most ``timeout`` seconds) for a started background import to end; returns at
    once when none was started."""
    thread = _thread
    if thread is not None:
        thread.join(timeout)
