r"""Diff model and parser for git's bytes. Pure: no subprocess, no LLM, no comments.

Inputs (SPEC §3.1, §3.5):
- ``git diff --raw --numstat -z --no-abbrev -M``: the authoritative list of changed paths
  (``:<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0[<new path>\0]`` per file, then
  ``<added>\t<deleted>\t<path>\0`` or ``<added>\t<deleted>\t\0<old>\0<new>\0`` per file).
- ``git diff -p`` with the flags of SPEC §3.1: hunks, attached to the listed files in order.

Line numbers are 1-based; ``\ No newline at end of file`` is metadata and never advances them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from .errors import GitError

ZERO_OID_CHARS = frozenset("0")

STATUS_NAMES = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
    "U": "unmerged",
    "X": "unknown",
}

_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffParseError(GitError):
    """git printed something the parser cannot read (truncated record, misaligned patch)."""


class Line(NamedTuple):
    """One line of a hunk. ``text`` has no marker and no ``\n`` (a ``\r`` stays)."""

    kind: Literal[" ", "+", "-"]
    text: str
    old_line: int | None  # None for "+" lines
    new_line: int | None  # None for "-" lines


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@ -old_start,old_count +new_start,new_count @@`` block (missing count = 1)."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str
    lines: tuple[Line, ...]


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One record of ``git diff --raw -z --no-abbrev`` plus its ``--numstat`` counts.

    ``insertions``/``deletions`` are None for binary files (numstat ``-``).
    """

    status: str  # one of STATUS_NAMES values
    old_path: str
    new_path: str
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str
    similarity: int | None
    insertions: int | None = None
    deletions: int | None = None


@dataclass(slots=True)
class FileDiff:
    """Everything known about one changed path.

    ``path`` is the new path (the old path for deletions). ``patch`` is the file's section of
    the unified diff without its ``index`` line (used for prompts and cache keys).
    """

    status: str
    old_path: str
    new_path: str
    old_mode: str = ""
    new_mode: str = ""
    old_oid: str = ""
    new_oid: str = ""
    similarity: int | None = None
    binary: bool = False
    insertions: int = 0
    deletions: int = 0
    hunks: tuple[Hunk, ...] = ()
    patch: str = ""
    extra_sections: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.old_path if self.status == "deleted" else self.new_path

    @property
    def submodule(self) -> bool:
        return "160000" in (self.old_mode, self.new_mode)

    @property
    def symlink(self) -> bool:
        return self.new_mode == "120000" or (self.status == "deleted" and self.old_mode == "120000")

    @property
    def mode_only(self) -> bool:
        return (
            self.status == "modified"
            and not self.hunks
            and not self.binary
            and self.old_mode != self.new_mode
        )

    @property
    def changed_lines(self) -> int:
        return self.insertions + self.deletions


def parse_raw_numstat_z(raw: bytes) -> list[RawEntry]:
    r"""Parse ``git diff --raw --numstat -z --no-abbrev`` output into entries in git's order.

    Raises DiffParseError on a truncated record or when raw and numstat counts disagree.
    """
    tokens = raw.split(b"\0")
    if tokens and tokens[-1] == b"":
        tokens.pop()
    entries: list[dict[str, object]] = []
    i = 0
    n = len(tokens)
    while i < n and tokens[i].startswith(b":"):
        meta = tokens[i][1:].split(b" ")
        if len(meta) != 5:
            raise DiffParseError(f"git diff --raw: malformed record {tokens[i][:80]!r}")
        old_mode, new_mode, old_oid, new_oid, status = (m.decode("ascii", "replace") for m in meta)
        letter = status[:1]
        sim = int(status[1:]) if status[1:].isdigit() else None
        if letter in ("R", "C"):
            if i + 2 >= n:
                raise DiffParseError("git diff --raw: truncated rename record")
            old_path, new_path = os.fsdecode(tokens[i + 1]), os.fsdecode(tokens[i + 2])
            i += 3
        else:
            if i + 1 >= n:
                raise DiffParseError("git diff --raw: truncated record")
            old_path = new_path = os.fsdecode(tokens[i + 1])
            i += 2
        entries.append(
            {
                "status": STATUS_NAMES.get(letter, "unknown"),
                "old_path": old_path,
                "new_path": new_path,
                "old_mode": old_mode,
                "new_mode": new_mode,
                "old_oid": old_oid,
                "new_oid": new_oid,
                "similarity": sim,
            }
        )
    counts: list[tuple[int | None, int | None]] = []
    while i < n:
        parts = tokens[i].split(b"\t")
        if len(parts) != 3:
            raise DiffParseError(f"git diff --numstat: malformed record {tokens[i][:80]!r}")
        ins = None if parts[0] == b"-" else int(parts[0])
        dels = None if parts[1] == b"-" else int(parts[1])
        i += 3 if parts[2] == b"" else 1
        counts.append((ins, dels))
    if counts and len(counts) != len(entries):
        raise DiffParseError(
            f"git diff: {len(entries)} raw records but {len(counts)} numstat records"
        )
    out = []
    for k, e in enumerate(entries):
        ins, dels = counts[k] if counts else (0, 0)
        out.append(RawEntry(**e, insertions=ins, deletions=dels))  # type: ignore[arg-type]
    return out


def split_patch_sections(patch: bytes) -> list[list[bytes]]:
    """Split ``git diff -p`` output into per-file sections (lists of lines without ``\n``).

    Text before the first ``diff --git`` line (a commit message from ``git show``) is dropped.
    Hunks are consumed by their counts so a content line such as ``--- x`` or ``diff --git``
    inside a hunk never starts a new section.
    """
    lines = patch.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    sections: list[list[bytes]] = []
    cur: list[bytes] | None = None
    i = 0
    n = len(lines)
    while i < n:
        ln = lines[i]
        if ln.startswith(b"diff --git ") or ln.startswith(b"diff --cc ") or ln.startswith(
            b"diff --combined "
        ):
            cur = [ln]
            sections.append(cur)
            i += 1
            continue
        if cur is None:
            i += 1
            continue
        m = _HUNK_RE.match(ln)
        if m:
            cur.append(ln)
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            while i < n and (old_left > 0 or new_left > 0):
                body = lines[i]
                tag = body[:1]
                if tag == b"\\":
                    cur.append(body)
                elif tag == b"+":
                    new_left -= 1
                    cur.append(body)
                elif tag == b"-":
                    old_left -= 1
                    cur.append(body)
                elif tag == b" " or body == b"":
                    old_left -= 1
                    new_left -= 1
                    cur.append(body)
                else:
                    break
                i += 1
            # a trailing "\ No newline at end of file" after the last counted line
            while i < n and lines[i].startswith(b"\\"):
                cur.append(lines[i])
                i += 1
            continue
        cur.append(ln)
        i += 1
    return sections


def parse_hunks(section: list[bytes]) -> tuple[tuple[Hunk, ...], bool, str]:
    """Parse one file section: (hunks, binary, patch text without the ``index`` line)."""
    hunks: list[Hunk] = []
    binary = False
    kept: list[str] = []
    i = 0
    n = len(section)
    while i < n:
        ln = section[i]
        m = _HUNK_RE.match(ln)
        if not m:
            if ln.startswith(b"Binary files ") or ln == b"GIT binary patch":
                binary = True
            if not ln.startswith(b"index "):
                kept.append(ln.decode("utf-8", "replace"))
            i += 1
            continue
        old_start = int(m.group(1))
        old_count = int(m.group(2)) if m.group(2) is not None else 1
        new_start = int(m.group(3))
        new_count = int(m.group(4)) if m.group(4) is not None else 1
        header = ln.decode("utf-8", "replace")
        kept.append(header)
        i += 1
        old_no, new_no = old_start, new_start
        body: list[Line] = []
        while i < n and not _HUNK_RE.match(section[i]):
            raw = section[i]
            text = raw[1:].decode("utf-8", "replace")
            tag = raw[:1]
            if tag == b"+":
                body.append(Line("+", text, None, new_no))
                new_no += 1
            elif tag == b"-":
                body.append(Line("-", text, old_no, None))
                old_no += 1
            elif tag == b" " or raw == b"":
                body.append(Line(" ", text, old_no, new_no))
                old_no += 1
                new_no += 1
            elif tag != b"\\":
                break
            kept.append(raw.decode("utf-8", "replace"))
            i += 1
        hunks.append(Hunk(old_start, old_count, new_start, new_count, header, tuple(body)))
    return tuple(hunks), binary, "\n".join(kept)


def build_file_diffs(entries: list[RawEntry], patch: bytes) -> list[FileDiff]:
    """Attach the patch sections to the raw entries, in order (same diff, same options).

    A type change (file ↔ symlink) may be printed as two sections for one path; both are
    attached to its entry. Raises DiffParseError when sections and entries cannot be aligned.
    """
    sections = split_patch_sections(patch)
    files: list[FileDiff] = []
    si = 0
    for e in entries:
        fd = FileDiff(
            status=e.status,
            old_path=e.old_path,
            new_path=e.new_path,
            old_mode=e.old_mode,
            new_mode=e.new_mode,
            old_oid=e.old_oid,
            new_oid=e.new_oid,
            similarity=e.similarity,
            binary=e.insertions is None,
        )
        take = 1
        if si >= len(sections):
            raise DiffParseError(f"git diff: no patch section for {e.new_path!r}")
        if (
            e.status == "type_changed"
            and si + 1 < len(sections)
            and sections[si + 1][0] == sections[si][0]
        ):
            take = 2
        all_hunks: list[Hunk] = []
        texts: list[str] = []
        for sec in sections[si : si + take]:
            hunks, binary, text = parse_hunks(sec)
            all_hunks.extend(hunks)
            texts.append(text)
            fd.binary = fd.binary or binary
        si += take
        fd.hunks = tuple(all_hunks)
        fd.patch = "\n".join(texts)
        fd.extra_sections = take - 1
        fd.insertions = sum(1 for h in fd.hunks for ln in h.lines if ln.kind == "+")
        fd.deletions = sum(1 for h in fd.hunks for ln in h.lines if ln.kind == "-")
        if e.insertions is not None and not fd.hunks and not fd.binary:
            fd.insertions, fd.deletions = e.insertions, e.deletions or 0
        files.append(fd)
    if si != len(sections):
        raise DiffParseError(
            f"git diff: {len(sections)} patch sections for {len(entries)} changed paths"
        )
    return files


def new_side_lines(fd: FileDiff) -> list[tuple[int, str]]:
    """(new line number, text) of every context and added line, across hunks, in order."""
    return [(ln.new_line, ln.text) for h in fd.hunks for ln in h.lines if ln.new_line is not None]


def render_numbered(fd: FileDiff) -> str:
    """The file's hunks for the model: each line prefixed with its new-side line number
    (blank for deleted lines) and its marker, e.g. ``  12 +    return x``."""
    out: list[str] = []
    width = max((len(str(h.new_start + h.new_count)) for h in fd.hunks), default=1)
    for h in fd.hunks:
        out.append(h.header)
        for ln in h.lines:
            num = str(ln.new_line) if ln.new_line is not None else ""
            out.append(f"{num:>{width}} {ln.kind}{ln.text}")
    return "\n".join(out)
