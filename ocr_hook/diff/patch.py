r"""The parser of git's diff bytes into the model of ``diff.model``. Pure: no subprocess, no LLM,
no comments.

Inputs (spec §3.1, §3.5), both from one git call with the same flags (read as a stream by
``change.changeset.load_change_set``, whole by ``git.target.load_diff``):

- ``git diff --raw --numstat -z --no-abbrev``: the authoritative list of changed paths. Raw
  records come first, ``:<old mode> <new mode> <old oid> <new oid> <status>\0<path>\0`` (renames
  and copies: ``...R086\0<old>\0<new>\0``), then one numstat record per file,
  ``<added>\t<deleted>\t<path>\0`` (renames/copies: ``<added>\t<deleted>\t\0<old>\0<new>\0``;
  binary files: ``-\t-\t...``). Paths are verbatim bytes (no C quoting under ``-z``).
- ``git diff -p``: one section per listed file, in the same order (a type change, e.g. file →
  symlink, prints two sections for one path: a deletion and an addition). Sections are only
  used to attach hunks; names in their headers (C-quoted, trailing TAB after names with spaces)
  are never parsed, so odd names cannot misalign anything.

Hunk bodies are consumed by their header counts (a missing count means 1, as in ``@@ -1 +1 @@``),
so a content line that looks like ``diff --git`` or ``--- a/x`` never starts a section.
``\ No newline at end of file`` is metadata: it never advances line numbers, also in the middle
of a hunk (old side ends without newline, new side continues). Line numbers are 1-based.
Content is decoded per file: UTF-8 when the whole section is valid UTF-8, else UTF-8 with
U+FFFD replacements (``FileDiff.decoding == "replaced"``; e.g. GBK files): never the locale.
Decoding never changes the number of lines, so line numbers stay exact. ``\r`` of CRLF files
stays in ``Line.text``. ``diff.stream.PatchStream`` walks the patch one file section at a
time, so only the sections somebody keeps are held and parsed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from .model import (
    NO_NEWLINE_MARKER,
    STATUS_NAMES,
    DiffParseError,
    FileDiff,
    Hunk,
    Line,
    RawEntry,
)

_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SECTION_STARTS = (b"diff --git ", b"diff --cc ", b"diff --combined ")


def parse_raw_numstat_z(raw: bytes) -> list[RawEntry]:
    r"""Parse ``git diff --raw --numstat -z --no-abbrev`` output into entries in git's order.

    Paths are decoded with ``os.fsdecode`` (UTF-8 + surrogateescape on POSIX), so any name
    round-trips to git. Raises DiffParseError on a malformed or truncated record or when raw
    and numstat record counts disagree.
    """
    tokens = raw.split(b"\0")
    if tokens and tokens[-1] == b"":
        tokens.pop()
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()

    def fsdecode(name: bytes) -> str:  # os.fsdecode without its per-call checks
        return name.decode(encoding, errors)

    records: list[tuple[str, str, str, str, str, str, str, int | None]] = []
    i = 0
    n = len(tokens)
    while i < n and tokens[i][:1] == b":":
        meta = tokens[i][1:].decode("ascii", "replace").split(" ")
        if len(meta) != 5:
            raise DiffParseError(f"git diff --raw: malformed record {tokens[i][:80]!r}")
        old_mode, new_mode, old_oid, new_oid, status = meta
        letter = status[:1]
        sim = int(status[1:]) if status[1:].isdigit() else None
        if letter in ("R", "C"):
            if i + 2 >= n:
                raise DiffParseError("git diff --raw: truncated rename record")
            old_path, new_path = fsdecode(tokens[i + 1]), fsdecode(tokens[i + 2])
            i += 3
        else:
            if i + 1 >= n:
                raise DiffParseError("git diff --raw: truncated record")
            old_path = new_path = fsdecode(tokens[i + 1])
            i += 2
        records.append((STATUS_NAMES.get(letter, "unknown"), old_path, new_path, old_mode,
                        new_mode, old_oid, new_oid, sim))
    counts: list[tuple[int | None, int | None]] = []
    while i < n:
        parts = tokens[i].split(b"\t", 2)  # a path may contain TABs
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise DiffParseError(f"git diff --numstat: malformed record {tokens[i][:80]!r}")
        try:
            ins = None if parts[0] == b"-" else int(parts[0])
            dels = None if parts[1] == b"-" else int(parts[1])
        except ValueError:
            raise DiffParseError(
                f"git diff --numstat: malformed record {tokens[i][:80]!r}"
            ) from None
        if parts[2] == b"":  # rename/copy: old and new path follow as their own fields
            if i + 2 >= n:
                raise DiffParseError("git diff --numstat: truncated rename record")
            i += 3
        else:
            i += 1
        counts.append((ins, dels))
    if counts and len(counts) != len(records):
        raise DiffParseError(
            f"git diff: {len(records)} raw records but {len(counts)} numstat records"
        )
    if not counts:
        return [RawEntry(*r) for r in records]
    return [RawEntry(*r, ins, dels) for r, (ins, dels) in zip(records, counts, strict=True)]


def split_raw_and_patch(out: bytes) -> tuple[bytes, bytes]:
    r"""Split the output of one ``git diff --raw --numstat -p -z`` call into the NUL-delimited
    records and the patch text. git ends the last numstat record with ``\0`` and then writes
    one more ``\0`` before the patch (measured on git 2.39; the patch bytes are identical to a
    separate ``-p`` call). No record contains ``\0\0`` (paths are never empty), so the first
    ``\0\0`` is the boundary. Without it there is no patch text."""
    cut = out.find(b"\0\0")
    if cut < 0:
        return out, b""
    return out[: cut + 1], out[cut + 2 :]


def _hunk_counts(m: re.Match[bytes]) -> tuple[int, int, int, int]:
    old_start = int(m.group(1))
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_start = int(m.group(3))
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    return old_start, old_count, new_start, new_count


def split_patch_sections(patch: bytes) -> list[list[bytes]]:
    """Split ``git diff -p`` output into per-file sections (lists of lines without ``\n``).

    Text before the first ``diff --git`` line (a commit message from ``git show``) is dropped.
    Hunks are consumed by their counts so a content line such as ``--- x`` or ``diff --git``
    inside a hunk never starts a new section; ``\\`` lines (no newline at end of file) are
    kept wherever they appear and never counted.
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
        if ln.startswith(_SECTION_STARTS):
            cur = [ln]
            sections.append(cur)
            i += 1
            continue
        if cur is None:
            i += 1
            continue
        m = _HUNK_RE.match(ln)
        if m is None:
            cur.append(ln)
            i += 1
            continue
        cur.append(ln)
        _, old_left, _, new_left = _hunk_counts(m)
        i += 1
        while i < n and (old_left > 0 or new_left > 0):
            body = lines[i]
            tag = body[:1]
            if tag == b"+":
                new_left -= 1
            elif tag == b"-":
                old_left -= 1
            elif tag == b" " or body == b"":
                old_left -= 1
                new_left -= 1
            elif tag != NO_NEWLINE_MARKER:
                break
            cur.append(body)
            i += 1
        # "\ No newline at end of file" after the last counted line
        while i < n and lines[i].startswith(NO_NEWLINE_MARKER):
            cur.append(lines[i])
            i += 1
    return sections


def _decoder(section: Sequence[bytes]) -> tuple[str, str]:
    """(errors mode, decoding label) for one file: strict when all of it is UTF-8."""
    try:
        b"\n".join(section).decode("utf-8")
    except UnicodeDecodeError:
        return "replace", "replaced"
    return "strict", "utf-8"


def parse_hunks(section: Sequence[bytes]) -> tuple[tuple[Hunk, ...], bool, str]:
    """Parse one file section: (hunks, binary, patch text without the ``index`` line).

    ``binary`` is True when git printed ``Binary files … differ`` / ``GIT binary patch`` or a
    content line holds a NUL byte (text forced by a ``diff`` attribute; spec §4 gate 1).
    Raises DiffParseError when a hunk has fewer lines than its header counts.
    """
    hunks, binary, text, _ = parse_section(section)
    return hunks, binary, text


def parse_section(section: Sequence[bytes]) -> tuple[tuple[Hunk, ...], bool, str, str]:
    """:func:`parse_hunks` plus the section's decoding label (``utf-8`` | ``replaced``)."""
    errors, decoding = _decoder(section)
    hunks: list[Hunk] = []
    binary = False
    kept: list[str] = []
    i = 0
    n = len(section)
    while i < n:
        ln = section[i]
        m = _HUNK_RE.match(ln) if ln.startswith(b"@@") else None
        if m is None:
            if ln.startswith(b"Binary files ") or ln == b"GIT binary patch":
                binary = True
            if not ln.startswith(b"index "):
                kept.append(ln.decode("utf-8", errors))
            i += 1
            continue
        old_start, old_count, new_start, new_count = _hunk_counts(m)
        header = ln.decode("utf-8", errors)
        kept.append(header)
        i += 1
        old_no, new_no = old_start, new_start
        old_left, new_left = old_count, new_count
        body: list[Line] = []
        while i < n and (old_left > 0 or new_left > 0 or section[i][:1] == NO_NEWLINE_MARKER):
            raw = section[i]
            tag = raw[:1]
            if tag == NO_NEWLINE_MARKER:
                kept.append(raw.decode("utf-8", errors))
                i += 1
                continue
            text = raw[1:].decode("utf-8", errors)
            if b"\0" in raw:
                binary = True
            if tag == b"+" and new_left > 0:
                body.append(Line("+", text, None, new_no))
                new_no += 1
                new_left -= 1
            elif tag == b"-" and old_left > 0:
                body.append(Line("-", text, old_no, None))
                old_no += 1
                old_left -= 1
            elif (tag == b" " or raw == b"") and old_left > 0 and new_left > 0:
                body.append(Line(" ", text, old_no, new_no))
                old_no += 1
                new_no += 1
                old_left -= 1
                new_left -= 1
            else:
                break
            kept.append(raw.decode("utf-8", errors))
            i += 1
        if old_left or new_left:
            raise DiffParseError(
                f"git diff: hunk {header[:60]!r} ends {old_left} old / {new_left} new lines early"
            )
        hunks.append(Hunk(old_start, old_count, new_start, new_count, header, tuple(body)))
    return tuple(hunks), binary, "\n".join(kept), decoding


def build_file_diffs(
    entries: Sequence[RawEntry], patch: bytes, *, as_text: bool = False
) -> list[FileDiff]:
    """Attach the patch sections to the raw entries, in order (same diff, same options).

    ``as_text``: the diff was made with ``--text``; numstat still prints ``-`` for files an
    attribute marks binary, so only a NUL byte in the content marks a file binary.

    A type change may be printed as two sections for one path (old content deleted, new
    content added, same ``diff --git`` header); both are attached to its entry. Insertions and
    deletions are counted from the hunks (numstat's counts for files without hunks). Raises
    DiffParseError when sections and entries cannot be aligned.
    """
    sections = split_patch_sections(patch)
    files: list[FileDiff] = []
    si = 0
    for e in entries:
        if si >= len(sections):
            raise DiffParseError(f"git diff: no patch section for {e.new_path!r}")
        take = 1
        if (
            e.status == "type_changed"
            and si + 1 < len(sections)
            and sections[si + 1][0] == sections[si][0]
        ):
            take = 2
        fd = FileDiff(
            status=e.status,
            old_path=e.old_path,
            new_path=e.new_path,
            old_mode=e.old_mode,
            new_mode=e.new_mode,
            old_oid=e.old_oid,
            new_oid=e.new_oid,
            similarity=e.similarity,
            binary=e.insertions is None and not as_text,
        )
        all_hunks: list[Hunk] = []
        texts: list[str] = []
        for sec in sections[si : si + take]:
            hunks, binary, text, decoding = parse_section(sec)
            all_hunks.extend(hunks)
            texts.append(text)
            fd.binary = fd.binary or binary
            if decoding == "replaced":
                fd.decoding = "replaced"
        si += take
        fd.hunks = tuple(all_hunks)
        fd.patch = "\n".join(texts)
        fd.extra_sections = take - 1
        fd.insertions = sum(1 for h in fd.hunks for ln in h.lines if ln.kind == "+")
        fd.deletions = sum(1 for h in fd.hunks for ln in h.lines if ln.kind == "-")
        if e.insertions is not None and not fd.hunks and not fd.binary:
            fd.insertions, fd.deletions = e.insertions, e.deletions or 0
        if fd.decoding == "replaced":
            fd.notes.append("content is not valid UTF-8; undecodable bytes shown as U+FFFD")
        files.append(fd)
    if si != len(sections):
        raise DiffParseError(
            f"git diff: {len(sections)} patch sections for {len(entries)} changed paths"
        )
    return files
