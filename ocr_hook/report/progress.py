"""Progress and heartbeat on stderr during a review (spec §11).

stdout carries only the result; this module writes through the ``ocr_hook`` logger, whose only
handler (installed by ``cli``) is on stderr. A background thread logs a heartbeat line every
``HEARTBEAT_S`` seconds while the review runs — comfortably inside the spec's "at least every
20 s" — with what has happened so far (LLM calls, tokens, groups done), so a hook that waits on a
slow model never looks hung. One start line (``reviewing 3 files in 2 groups with MODEL…``)
is logged as soon as the groups are known, before the first review call, so a slow first
reply never leaves the committer looking at a silent terminal.

Each group is reported the moment it finishes (``group a.py done (task_done): 1 of 3 groups
done``) when the run has more than one group; a one-group review reports its group only once
it has lasted long enough to get a heartbeat (before that, the result follows at once). The
heartbeat counts the same way: ``… 1 of 3 groups done``.

Counts come from session records (``Session(observer=progress.event)``), so the pipeline needs
no second reporting channel. The pipeline writes ``group_done`` as each group finishes (not
when the results are merged), on the group's own thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

HEARTBEAT_S = 15.0  # spec §11: a heartbeat line at least every 20 s


def start_line(data: Mapping[str, Any]) -> str:
    """The line printed when the model is first asked to review, from the session's
    ``grouping`` record: ``reviewing 3 files in 2 groups with MODEL…``."""
    groups = data.get("groups")
    n_groups = len(groups) if isinstance(groups, list) else 0
    n_files = data.get("files", 0)
    model = data.get("model") or "the model"
    return (f"reviewing {n_files} file{'s' if n_files != 1 else ''} in {n_groups}"
            f" group{'s' if n_groups != 1 else ''} with {model}…")


def groups_done_text(done: int, total: int) -> str:
    """``1 of 3 groups done`` (``0 of 1 group done``); ``2 group(s) done`` while the number of
    groups is not known yet (0: no ``grouping`` record so far)."""
    if total <= 0:
        return f"{done} group(s) done"
    return f"{done} of {total} group{'s' if total != 1 else ''} done"


class Progress:
    """Thread-safe progress counter with a heartbeat thread; use as a context manager."""

    def __init__(
        self,
        interval_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
    ) -> None:
        """``clock`` gives the seconds a heartbeat line reports. The heartbeat thread calls
        ``wait(interval_s)`` before each line: it returns True when the heartbeat is to end,
        False when the next line is due. The default is the stop event's ``wait``, which
        :meth:`stop` ends at once. A test passes its own ``clock`` and ``wait`` to get
        heartbeats without sleeping."""
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wait = self._stop.wait if wait is None else wait
        self._thread: threading.Thread | None = None
        self._t0 = clock()
        self.llm_calls = 0
        self.tokens = 0
        self.groups_done = 0
        self.groups_total = 0  # from the ``grouping`` record; 0 until it is seen
        self.cache_hits = 0
        self.beats = 0

    def event(self, kind: str, data: Mapping[str, Any]) -> None:
        """Session observer: count LLM responses, tokens, finished groups and cache hits; log
        the start line (``grouping``) and the line of each finished group (``group_done``, see
        the module doc). Called on any thread; a line is logged under the lock, so the
        ``k of N`` of the group lines appear in order."""
        with self._lock:
            line = ""
            if kind == "llm_response":
                self.llm_calls += 1
                usage = data.get("usage")
                if isinstance(usage, Mapping):
                    self.tokens += sum(v for v in usage.values() if isinstance(v, int))
            elif kind == "group_done":
                self.groups_done += 1
                if self.groups_total > 1 or self.beats:
                    line = (f"group {data.get('group', '?')} done ({data.get('stop_reason', '')}): "
                            f"{groups_done_text(self.groups_done, self.groups_total)}")
            elif kind == "cache_hit":
                self.cache_hits += 1
            elif kind == "grouping":
                groups = data.get("groups")
                self.groups_total = len(groups) if isinstance(groups, list) else 0
                line = start_line(data)
            if line:
                log.info("%s", line)

    def heartbeat_line(self) -> str:
        """``still reviewing: 15s elapsed, 3 LLM call(s), 1200 tokens, 2 of 3 groups done``:
        seconds on the ``clock`` since :meth:`start`, counts so far."""
        with self._lock:
            return self._heartbeat_text()

    def _heartbeat_text(self) -> str:  # under the lock
        elapsed = self._clock() - self._t0
        return (f"still reviewing: {elapsed:.0f}s elapsed, {self.llm_calls} LLM call(s), "
                f"{self.tokens} tokens, {groups_done_text(self.groups_done, self.groups_total)}")

    def _run(self) -> None:
        while not self._wait(self.interval_s):
            with self._lock:
                self.beats += 1
                log.info("%s", self._heartbeat_text())

    def start(self) -> Progress:
        self._t0 = self._clock()
        self._thread = threading.Thread(target=self._run, name="ocr-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
