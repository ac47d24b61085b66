"""Atomic file replacement for cache entries and other files that concurrent runs share.

A write goes to a uniquely named temporary file in the destination's directory (so the final
``os.replace`` is a same-filesystem rename, atomic on POSIX and Windows), is flushed and
fsynced, then renamed over the destination. A reader therefore sees either the old file or the
new one, never a torn write, and two writers of the same path leave one complete file (the last
rename wins). Temporary names are ``.tmp-<pid>-<random>.part``: pruning recognises them by the
prefix and removes those whose writer process is gone (:func:`is_stale_temp`), so a ``kill -9``
in the middle of a write leaves nothing behind after the next run.

:func:`create_unique` makes those files itself (``os.open`` with ``O_EXCL``, as
``tempfile.mkstemp`` does): importing ``tempfile`` brings ``shutil``, ``random`` and the
compression modules, which every run would pay for at start-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

TEMP_PREFIX = ".tmp-"
STALE_TEMP_S = 3600.0  # a temporary file older than this is a leftover even if its pid lives


UNIQUE_ATTEMPTS = 100  # names tried before giving up (each has 48 random bits)


def create_unique(folder: str | os.PathLike[str], prefix: str, suffix: str = "",
                  mode: int = 0o600) -> tuple[int, str]:
    """Create a new file ``<folder>/<prefix><12 random hex><suffix>`` that did not exist
    (``O_EXCL``), readable and writable by its owner only (``mode``); returns (open descriptor,
    path). Raises OSError when the folder cannot take it (FileExistsError after
    UNIQUE_ATTEMPTS names that were all taken)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(UNIQUE_ATTEMPTS):
        name = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, flags, mode), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {folder}")


def write_atomic(
    path: Path, data: bytes, mode: int = 0o600,
    before_replace: Callable[[Path], None] | None = None,
) -> None:
    """Atomically replace ``path`` with ``data`` (file mode ``mode``, default 0600).

    Creates missing parent directories (mode 0700). Raises OSError when the directory cannot be
    created or written; the temporary file is removed on any failure (Ctrl-C included; only a
    kill -9 can leave it, and readers never look at it). ``before_replace(temp path)`` runs
    between the complete temporary file and the rename (tests use it to stop a writer there).
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = create_unique(path.parent, f"{TEMP_PREFIX}{os.getpid()}-", ".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_if_present(path: Path) -> bytes | None:
    """The content of ``path``, or None when it does not exist or cannot be read (a concurrent
    prune may delete it between listing and reading)."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def _pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (it may belong to another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def is_stale_temp(name: str, mtime: float, now: float) -> bool:
    """True when ``name`` (a file name, no directory) is a temporary file of :func:`write_atomic`
    that no writer will finish: its writer's pid (``.tmp-<pid>-…``) is not running, or it is
    older than STALE_TEMP_S (the pid was reused, or the name has no pid: older versions).
    ``mtime`` and ``now`` are ``time.time()`` seconds. Pure but for the pid check."""
    if not name.startswith(TEMP_PREFIX):
        return False
    if now - mtime > STALE_TEMP_S:
        return True
    pid_text = name[len(TEMP_PREFIX):].split("-", 1)[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    return pid != os.getpid() and not _pid_alive(pid)


def sweep_stale_temps(directory: Path) -> int:
    """Delete the stale temporary files (:func:`is_stale_temp`) in ``directory``; returns how
    many were removed. A missing directory, or a file that goes away meanwhile, is fine."""
    removed = 0
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(TEMP_PREFIX):
            continue
        p = directory / name
        try:
            if is_stale_temp(name, p.stat().st_mtime, now):
                p.unlink()
                removed += 1
        except OSError:
            pass
    return removed
