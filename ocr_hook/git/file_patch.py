"""The diff of one changed file read on demand (``file_read_diff`` on a file the change set did
not load: excluded from review, over a bound): one ``git diff`` of the reviewed range limited to
the file's paths, streamed, so memory stays bounded and git stops once the file is read.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from ..diff import FileDiff, PatchStream, fill_from_sections
from .stream import stream_git
from .target import CONTEXT_LINES, Target, diff_command

FILE_PATCH_TIMEOUT_S = 30.0
_READ_BYTES = 1 << 16  # stdout is read in pieces of this size
_QUOTED_NAME = re.compile(r'["\\\x00-\x1f\x7f]')  # git C-quotes such names (core.quotePath off)


def _section_header(fd: FileDiff) -> bytes | None:
    """The ``diff --git a/<old> b/<new>`` line of ``fd``'s section(s), or None for names git
    prints C-quoted (then any section of the limited diff is taken: it names only ``fd``'s
    paths)."""
    if _QUOTED_NAME.search(fd.old_path) or _QUOTED_NAME.search(fd.new_path):
        return None
    return os.fsencode(f"diff --git a/{fd.old_path} b/{fd.new_path}")


def read_file_patch(repo: Path, base: str, head: str, fd: FileDiff, max_bytes: int,
                    timeout_s: float = FILE_PATCH_TIMEOUT_S) -> tuple[FileDiff | None, int]:
    """The diff of changed file ``fd`` of ``base..head`` as the change set would have loaded it:
    (a loaded copy of ``fd``, hunks and ``patch`` filled, ``fd`` itself untouched; the size of
    its section(s) in bytes). (None, size) when the section(s) are larger than ``max_bytes``
    (read past, never held); (None, 0) when git lists no section for the file.

    One ``git diff`` with the pinned flags of :func:`git.target.diff_command` (``-p -U3``),
    limited to ``fd``'s old and new path as literal pathspecs (a rename is paired as in the
    whole diff), read as a stream (``diff.PatchStream``); git is stopped once the file's
    section(s) are read (two for a type change, with the same ``diff --git`` line). Raises
    GitError (a timeout after ``timeout_s``) / DiffParseError."""
    paths = list(dict.fromkeys(p for p in (fd.old_path, fd.new_path) if p))
    args = diff_command(Target("range", base, head, base, head), "-p", f"-U{CONTEXT_LINES}")
    want = _section_header(fd)
    parts: list[bytes] = []
    size = 0
    held = True  # every section of the file read so far is kept
    with stream_git(repo, "--literal-pathspecs", *args, *paths, timeout_s=timeout_s) as stream:
        sections = PatchStream(stream.chunks(_READ_BYTES))
        while (header := sections.peek_header()) is not None:
            if want is not None and header != want:
                if size:
                    break  # past the file's section(s)
                sections.next_section(0)  # another path of the pathspecs (a re-added old name)
                continue
            got = sections.next_section(max(max_bytes - size, 0) if held else 0)
            if got is None:
                break
            data, n = got
            size += n
            if data is None:
                held = False
            elif held:
                parts.append(data)
    if not size:
        return None, 0
    if not held:
        return None, size
    out = dataclasses.replace(fd, hunks=(), patch="", notes=[])
    fill_from_sections(out, parts)
    return out, size
