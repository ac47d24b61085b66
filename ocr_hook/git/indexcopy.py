"""The private copy of an index that ``git write-tree`` may rewrite (spec §3.2: the user's
index is never written), in a memory-backed folder where there is one, so that making and
removing it does not wait on a disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from ..util import create_unique

COPY_CHUNK_BYTES = 1 << 20


def scratch_dirs(environ: Mapping[str, str]) -> list[str | None]:
    """Where a private index copy goes, best first: a memory-backed folder
    (``$XDG_RUNTIME_DIR``, else ``/dev/shm``) when it is a writable folder, then the system's
    temporary folder (None). The copy is thrown away after one ``write-tree``; on a disk
    folder creating and deleting it waits on the file system's journal, which stalls when other
    processes write, while in memory it does not."""
    found: list[str | None] = [
        d for d in (environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm")
        if d and os.path.isabs(d) and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)]
    return [*dict.fromkeys(found), None]


def _copy_into(index: Path, out: BinaryIO) -> bool:
    """Copy the bytes of ``index`` into ``out``; False when there is no such file."""
    try:
        src = open(index, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return False
    with src:
        while chunk := src.read(COPY_CHUNK_BYTES):
            out.write(chunk)
    return True


def private_copy(index: Path, environ: Mapping[str, str]) -> Path:
    """A private copy of ``index`` (mode 0600, :func:`scratch_dirs`), or a fresh path where
    no file exists when there is no index (an absent index is an empty index: fresh
    repository). A folder that cannot take it (full, read-only) is passed over. Raises
    OSError when none can."""
    error = OSError("no folder for a private index copy")
    for folder in scratch_dirs(environ):
        tmp: Path | None = None
        try:
            if folder is None:  # no memory folder: the system's (rare; tempfile is slow to import)
                import tempfile

                folder = tempfile.gettempdir()
            fd, name = create_unique(folder, "ocr-hook-index-")
            tmp = Path(name)
            with os.fdopen(fd, "wb") as out:
                if not _copy_into(index, out):
                    tmp.unlink()
            return tmp
        except OSError as e:
            error = e
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    raise error
