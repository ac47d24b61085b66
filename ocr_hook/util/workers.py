"""A fixed-size pool of named daemon threads, used by the LLM stage of a run
(``pipeline.llm_stage``) for groups, background compression and the comment pipeline (the
pipeline creates every pool; docs/architecture.md).

Why not ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so a worker blocked
in an HTTP read when the user presses Ctrl-C would keep the process alive until the model
answers. These threads are daemons; a normal or deadline-bound run still joins every one of
them (:meth:`WorkerPool.shutdown`), so no thread outlives the run. Only after Ctrl-C may the
process exit while a worker still waits on a socket (the process ends, and the thread with it).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class WorkerPool(Executor):
    """``size`` daemon threads named ``<name>-<n>``, started on demand (a pool that is never
    used starts none). Jobs run in submission order."""

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)``; returns its Future. Raises RuntimeError after
        shutdown."""
        fut: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"worker pool {self._name} is shut down")
            self._queue.put((fut, fn, args, kwargs))
            if len(self._threads) < self._size:
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
        return fut

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            fut, fn, args, kwargs = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                value = fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - delivered to whoever waits on the future
                fut.set_exception(e)
            else:
                fut.set_result(value)

    def shutdown(  # type: ignore[override]  # adds timeout_s and reports whether all ended
        self, wait: bool = True, *, cancel_futures: bool = False, timeout_s: float | None = None
    ) -> bool:
        """Stop accepting jobs; with ``cancel_futures`` cancel the queued ones. With ``wait``,
        join the threads (running jobs finish) for at most ``timeout_s`` seconds in total.
        Returns True when every thread has ended."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if cancel_futures:
                    while True:
                        try:
                            job = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if job is not None:
                            job[0].cancel()
                for _ in self._threads:
                    self._queue.put(None)
            threads = list(self._threads)
        if wait:
            end = None if timeout_s is None else time.monotonic() + timeout_s
            for t in threads:
                t.join(None if end is None else max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in threads)
