"""Where a report goes: ``--output FILE`` (``git ocr review``, ``session show --html``) and stdout.

A regular file is replaced atomically (``util.atomicfile``: a reader such as a CI step never sees
half a report); a symbolic link is followed and its target replaced, never the link itself; a
path that is not a regular file (``/dev/stdout``, a FIFO, a terminal) is written into, as a
shell redirection would. Stdout failures never change the gate's answer: a reader that went
away (``| head``) is not an error, and a failed write is one line on stderr.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import UsageError
from ..util import one_line, write_atomic

OUTPUT_FILE_MODE = 0o644  # --output: a report for other tools (CI uploads), not a secret


def _existing_kind(path: Path) -> str:
    """``missing``, ``regular``, ``directory`` or ``other`` (device, FIFO, socket) for what
    ``path`` names after following symbolic links."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISDIR(mode):
        return "directory"
    return "regular" if stat.S_ISREG(mode) else "other"


def _is_stdout(path: Path) -> bool:
    """Whether ``path`` is this process's own stdout (``/dev/stdout``, ``/proc/self/fd/1``),
    whatever stdout is: a terminal, a pipe, or a file opened for appending."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # missing path; stdout closed or replaced
        return False


def check_output_path(name: str) -> Path | None:
    """``--output FILE`` checked before the review starts, so a long review never ends in a
    result that cannot be written. Returns the path to write: a symbolic link's target
    (resolved), else ``name``; None when ``name`` is this process's stdout (written as stdout,
    so ``>> log`` is appended to, not replaced). Raises UsageError (exit 2) for a directory,
    a missing parent directory, or no permission to write."""
    path = Path(name)
    shown = one_line(name)
    if _is_stdout(path):
        return None
    kind = _existing_kind(path)
    if kind == "directory":
        raise UsageError(f"--output {shown}: is a directory; give a file name")
    if kind == "other":  # /dev/stdout, a FIFO: written into, never replaced
        if not os.access(path, os.W_OK):
            raise UsageError(f"--output {shown}: permission denied")
        return path
    if path.is_symlink():  # replace the file the link names, keep the link
        path = Path(os.path.realpath(path))
    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(f"--output {shown}: directory {one_line(str(parent))} {what}")
    if not os.access(parent, os.W_OK | os.X_OK) or (kind == "regular"
                                                    and not os.access(path, os.W_OK)):
        raise UsageError(f"--output {shown}: permission denied")
    return path


def write_output(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` from :func:`check_output_path`: into it when it is
    not a regular file, else by an atomic replace (mode 0644). Raises UsageError when the
    write fails."""
    data = text.encode("utf-8", "replace")
    try:
        if _existing_kind(path) == "other":
            with open(path, "wb") as fh:
                fh.write(data)
        else:
            write_atomic(path, data, mode=OUTPUT_FILE_MODE)
    except OSError as e:
        raise UsageError(f"--output {one_line(str(path))}: cannot write:"
                         f" {e.strerror or e}") from e


def to_stdout(write: Callable[[], None]) -> str:
    """Run ``write`` (which writes the report to stdout) and flush stdout. Returns "" on
    success, ``"closed"`` when the reader went away (BrokenPipeError: ``| head``), else the
    error text (e.g. ENOSPC on ``> /dev/full``). After a failure stdout is pointed at
    /dev/null, so the interpreter's own flush at exit neither fails again nor changes the
    exit code."""
    try:
        write()
        sys.stdout.flush()
        return ""
    except OSError as e:
        why = "closed" if isinstance(e, BrokenPipeError) else str(e.strerror or e)
    stdout_to_devnull()
    return why


def stdout_to_devnull() -> None:
    """Point stdout's file descriptor at /dev/null (after its reader went away or a write
    failed), so later writes and the flush at exit succeed without output."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
