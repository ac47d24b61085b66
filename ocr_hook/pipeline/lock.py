"""One review at a time per input: a second run on the same snapshot or range waits for the
first and then answers from the first's cached result (spec §10) instead of
paying for the same review again.

pre-commit runs a ``repo: local`` hook with its defaults in parallel slices, and two
terminals or an IDE can commit at once. The lock is an advisory ``fcntl.flock`` on a file
under ``$(git rev-parse --git-common-dir)/ocr-hook/locks/`` (shared by worktrees, released by
the kernel when a process dies, so a crashed run never leaves a stale lock). Files are
named by the first two hex digits of the key (SHA-256 of base and head), so there are at most
256 of them, and runs on different inputs only rarely wait for each other. The wait is
bounded; on platforms without ``fcntl`` there is no lock.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..errors import OcrError

POLL_S = 0.05  # how often a waiting run tries the lock again
GRACE_S = 30.0  # a waiting run gives the running one review.timeout_s plus this
NOTE_S = 0.5  # a wait at least this long is reported
R = TypeVar("R")


class LockTimeout(OcrError):
    """The lock was still held by another run when the bounded wait ended."""


def lock_key(base: str, head: str) -> str:
    """The lock key of the review of ``base``..``head`` (hex SHA-256)."""
    return hashlib.sha256(f"{base}\n{head}".encode()).hexdigest()


@contextmanager
def held(locks_dir: Path, key: str, wait_s: float) -> Iterator[float]:
    """Hold the lock of ``key`` for the ``with`` block; yields the seconds spent waiting for
    it. Raises LockTimeout after ``wait_s`` seconds of waiting, OcrError when the lock file
    cannot be created."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here (Windows): run unlocked
        yield 0.0
        return
    try:
        locks_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks_dir / f"{key[:2]}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise OcrError(f"cannot create the review lock in {locks_dir}: {e.strerror}") from e
    t0 = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - t0
                if waited >= wait_s:
                    raise LockTimeout(
                        f"another ocr-hook review of the same changes was still running after"
                        f" {waited:.0f}s of waiting") from None
                time.sleep(POLL_S)
        yield time.monotonic() - t0
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def exclusive(cache_root: Path | None, base: str, head: str, timeout_s: float,
              review: Callable[[], R], locked: Callable[[str], R],
              note: Callable[[str], None]) -> R:
    """``review()`` while holding the lock of ``base``..``head`` in ``<cache_root>/../locks``
    (no lock without a cache: a second run could not use the first's result). A wait of
    NOTE_S or more is reported through ``note``; after ``timeout_s`` + GRACE_S of waiting
    the result is ``locked(why)`` instead. Raises OcrError when the lock file cannot be
    created."""
    if cache_root is None:
        return review()
    try:
        with held(cache_root.parent / "locks", lock_key(base, head),
                  timeout_s + GRACE_S) as waited_s:
            if waited_s >= NOTE_S:
                note(f"waited {waited_s:.1f}s for another review of the same changes to finish"
                     " (its cached result is used when it completed)")
            return review()
    except LockTimeout as e:
        return locked(f"{e}; try again when it has finished")
