"""The private copy of an index that ``git write-tree`` may rewrite (SPEC §3.2: the user's
index is never written), in a memory-backed folder where there is one (issue 18, start-up).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


def scratch_dirs(environ: Mapping[str, str]) -> list[str | None]:
    """Where a private index copy goes, best first: a memory-backed folder
    (``$XDG_RUNTIME_DIR``, else ``/dev/shm``) when it is a writable folder, then the system's
    temporary folder (None). The copy is thrown away after one ``write-tree``; on a disk
    folder creating and deleting it waits on the file system's journal (measured on ext4 with
    other processes writing: ~1 ms median, spikes of 50+ ms per run; ~0.02 ms in memory)."""
    found: list[str | None] = [
        d for d in (environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm")
        if d and os.path.isabs(d) and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)]
    return [*dict.fromkeys(found), None]


def private_copy(index: Path, environ: Mapping[str, str]) -> Path:
    """A private copy of ``index`` (mode 0600, :func:`scratch_dirs`), or a fresh path where
    no file exists when there is no index (an absent index is an empty index: fresh
    repository). A folder that cannot take it (full, read-only) is passed over. Raises
    OSError when none can."""
    error = OSError("no folder for a private index copy")
    for folder in scratch_dirs(environ):
        tmp: Path | None = None
        try:
            fd, name = tempfile.mkstemp(prefix="ocr-hook-index-", dir=folder)
            os.close(fd)
            tmp = Path(name)
            if index.exists():
                shutil.copyfile(index, tmp)
            else:
                tmp.unlink()
            return tmp
        except OSError as e:
            error = e
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    raise error
