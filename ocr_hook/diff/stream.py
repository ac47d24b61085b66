r"""The patch of a ``git diff -p`` read as a stream, one file section at a time.

:class:`PatchStream` holds at most one read chunk plus the section being kept, so a change set
whose patch is far larger than memory allows is walked without holding it;
:func:`fill_from_sections` parses the kept sections of one file into its ``FileDiff`` as
``diff.patch.build_file_diffs`` does. Pure: the bytes come from the caller
(``change.changeset``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .model import FileDiff, Hunk
from .patch import parse_section, split_patch_sections

SECTION_MARK = b"\ndiff --git "  # start of every file section after the first


class PatchStream:
    r"""Walks the file sections of a ``git diff -p`` byte stream one at a time, holding at most
    one read chunk plus the section being kept: sections nobody keeps are passed over without
    being stored or parsed.

    A section starts at a line beginning with ``diff --git ``. Such a line can never be file
    content: every hunk line starts with its marker (`` ``, ``+``, ``-``, ``\``; git prints
    context lines with their space as ``diff.suppressBlankEmpty`` is pinned off) and names in
    header lines are C-quoted when they hold a newline. Text before the first section is
    dropped. ``chunks`` yields the stream's bytes in pieces of any size; ``head`` is what was
    already read of it.
    """

    def __init__(self, chunks: Iterable[bytes], head: bytes = b"") -> None:
        self._chunks = iter(chunks)
        self._buf = bytearray(head)
        self._pos = 0
        self._eof = False
        self._started = False

    def _fill(self) -> bool:
        """Append the next chunk (dropping consumed bytes first); False at the end."""
        if self._eof:
            return False
        chunk = next(self._chunks, b"")
        if not chunk:
            self._eof = True
            return False
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += chunk
        return True

    def _start(self) -> bool:
        """Move to the first section start; False when the stream holds no section."""
        if self._started:
            return self._pos < len(self._buf) or self._fill()
        while True:
            if self._buf.startswith(SECTION_MARK[1:]):
                self._started = True
                return True
            at = self._buf.find(SECTION_MARK)
            if at >= 0:
                self._pos = at + 1
                self._started = True
                return True
            keep = self._buf[-len(SECTION_MARK):]
            self._buf = bytearray(keep)
            self._pos = 0
            if not self._fill():
                return False

    def peek_header(self) -> bytes | None:
        """The first line of the next section (``diff --git a/… b/…``), or None at the end."""
        if not self._start():
            return None
        while True:
            nl = self._buf.find(b"\n", self._pos)
            if nl >= 0:
                return bytes(self._buf[self._pos : nl])
            if not self._fill():
                return bytes(self._buf[self._pos :]) if self._pos < len(self._buf) else None

    def next_section(self, keep_max: int) -> tuple[bytes | None, int] | None:
        """Consume the next section: (its bytes, or None when it is larger than ``keep_max``
        bytes — then it was read past without being stored; its size in bytes). None when no
        section is left."""
        if not self._start():
            return None
        mark = len(SECTION_MARK)
        dropped = 0  # bytes of this section already thrown away (not kept)
        search_from = self._pos + 1
        while True:
            end = self._buf.find(SECTION_MARK, search_from)
            if end >= 0:
                stop = end + 1
                break
            search_from = max(self._pos + 1, len(self._buf) - mark + 1)
            held = len(self._buf) - self._pos
            if dropped + held - (mark - 1) > keep_max and held >= mark:  # not kept: a tail stays
                cut = len(self._buf) - (mark - 1)  # where a split section start may begin
                dropped += cut - self._pos
                self._pos = search_from = cut
            shift = self._pos
            if not self._fill():
                stop = len(self._buf)
                break
            search_from -= shift
        size = dropped + stop - self._pos
        data = bytes(self._buf[self._pos : stop]) if size <= keep_max and not dropped else None
        self._pos = stop
        return data, size


def fill_from_sections(f: FileDiff, parts: Sequence[bytes]) -> None:
    """Parse the patch section(s) of one file (bytes from ``diff --git`` on, as
    :class:`PatchStream` yields them) into ``f``: hunks, patch text, binary, decoding and
    counts, as :func:`build_file_diffs` does; sets ``f.loaded``. Raises DiffParseError."""
    hunks: list[Hunk] = []
    texts: list[str] = []
    for raw in parts:
        for sec in split_patch_sections(raw):
            h, binary, text, decoding = parse_section(sec)
            hunks.extend(h)
            texts.append(text)
            f.binary = f.binary or binary
            if decoding == "replaced":
                f.decoding = "replaced"
    f.hunks = tuple(hunks)
    f.patch = "\n".join(texts)
    f.extra_sections = len(texts) - 1
    f.insertions = sum(1 for h in f.hunks for ln in h.lines if ln.kind == "+")
    f.deletions = sum(1 for h in f.hunks for ln in h.lines if ln.kind == "-")
    if f.decoding == "replaced":
        f.notes.append("content is not valid UTF-8; undecodable bytes shown as U+FFFD")
    f.loaded = True
