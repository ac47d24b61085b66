"""Atomic file replacement for cache entries and other files that concurrent runs share.

A write goes to a uniquely named temporary file in the destination's directory (so the final
``os.replace`` is a same-filesystem rename, atomic on POSIX and Windows), is flushed and
fsynced, then renamed over the destination. A reader therefore sees either the old file or the
new one, never a torn write, and two writers of the same path leave one complete file (the last
rename wins). Temporary names start with ``.tmp-`` so pruning can recognise leftovers of a
crashed writer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

TEMP_PREFIX = ".tmp-"


def write_bytes(
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
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=path.parent)
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


def read_bytes(path: Path) -> bytes | None:
    """The content of ``path``, or None when it does not exist or cannot be read (a concurrent
    prune may delete it between listing and reading)."""
    try:
        return path.read_bytes()
    except OSError:
        return None
