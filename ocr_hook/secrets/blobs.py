"""Secret scan of blobs that are not loaded as diffs (spec §14): files too large to load, and
text files git calls binary because they hold a NUL byte. Bounded streams.

Such a file is never read whole. Its scan streams its blob (``git cat-file blob``) to the end,
or up to a given number of bytes (then git is stopped and only whole lines are scanned), and
looks for secrets with ``redaction.find_secrets`` in blocks of rows (``chunks.stream_rows``,
``chunks.scan_rows``): a line longer than ``chunks.LINE_WINDOW_CHARS`` (a minified bundle, a
one-line data file) is scanned in overlapping windows cut at separators (whitespace, quotes,
commas, brackets), so a long token is whole in one window and no single regex search ever sees
more than a block. Memory: one read chunk, one block. For a modified file a value also present
in the old blob is not this change's secret: the old blob is searched for it as a stream too.
The outcome is one sentence for the file's coverage entry, e.g. ``secret scan: first 512.0 KiB
of 50.0 MiB scanned, no secret found``, and whether the whole blob was read.

:func:`blob_kind` tells text, text with NUL bytes (scanned, NULs read as spaces), UTF-16 text
(scanned decoded: git calls it binary, and Windows tools such as PowerShell 5 write it) and
binary content (not scanned) apart from a blob's first bytes.

Findings are ``critical``/``security`` like ``diff_scan``'s, anchored ``file`` to the line
of the blob (there are no parsed hunks); ``existing_code`` is the redacted text around the
secret, never the secret.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import git, util
from ..diff import FileDiff
from ..errors import GitError
from ..findings import SECRET_SOURCE, Finding, finding_id
from ..vocabulary import AnchorMethod, Category, Severity
from .chunks import LINE_WINDOW_CHARS, WINDOW_OVERLAP_CHARS, scan_rows, stream_rows

__all__ = ["LINE_WINDOW_CHARS", "WINDOW_OVERLAP_CHARS", "BlobScan", "blob_kind",
           "read_heads", "read_prefix", "scan_blob"]

BINARY_PROBE_BYTES = 8000  # spec §4 gate 1: a NUL byte in the first 8000 bytes means binary
# Bytes that no text holds: the C0 controls but NUL, tab, LF, VT, FF, CR and ESC, and DEL.
# Binary formats have them in their first bytes (PNG \x1a, ZIP \x03\x04, ELF \x7f, gzip
# \x1f, JPEG \x10, SQLite \x10\x00\x01); text with a stray NUL does not.
_NON_TEXT = frozenset(set(range(1, 32)) - {9, 10, 11, 12, 13, 27}) | {127}
NUL_TEXT_MAX_SHARE = 0.1  # more NULs than this share of the probe: binary, or UTF-16 text
UTF16_MIN_PROBE = 16  # bytes a blob needs before its NUL pattern says UTF-16 without a BOM
UTF16_ZERO_SHARE = 0.9  # of the high bytes of UTF-16 text without a BOM: zero (mostly ASCII)
UTF16_KINDS = {"utf16le": "utf-16-le", "utf16be": "utf-16-be"}  # blob_kind -> codec
SCANNED_KINDS = frozenset({"text_with_nul", *UTF16_KINDS})  # git says binary, scanned as text
QUOTE_CHARS = 160  # characters of redacted context kept around a secret in a long line
STREAM_CHUNK_BYTES = 1 << 20
OPEN_TAIL_BYTES = 64 * 1024  # bytes of a line not yet ended held back from the scan at most


def blob_kind(head: bytes) -> str:
    """``text``, ``text_with_nul``, ``utf16le``, ``utf16be`` or ``binary``, from a blob's first
    bytes (at least BINARY_PROBE_BYTES of them when the blob has that many). ``text``: no NUL
    in the first BINARY_PROBE_BYTES (git's own test). ``utf16le`` / ``utf16be``: a UTF-16
    byte-order mark (``FF FE`` / ``FE FF``), or, in a probe of at least UTF16_MIN_PROBE bytes
    without one, no NUL and none of the bytes no text holds (``_NON_TEXT``) in the low bytes
    and at least UTF16_ZERO_SHARE of the high bytes zero (mostly ASCII text, two bytes a
    character). ``text_with_nul``: NULs (at most
    NUL_TEXT_MAX_SHARE of the probe) but none of the other bytes no text holds (``_NON_TEXT``):
    a text file git calls binary for a stray NUL. ``binary``: anything else."""
    probe = head[:BINARY_PROBE_BYTES]
    nuls = probe.count(0)
    if not nuls:
        return "text"
    if probe[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf16le" if probe[:2] == codecs.BOM_UTF16_LE else "utf16be"
    if len(probe) >= UTF16_MIN_PROBE:
        even = probe[: len(probe) // 2 * 2]
        for kind, low, high in (("utf16le", even[0::2], even[1::2]),
                                ("utf16be", even[1::2], even[0::2])):
            if (0 not in low and high.count(0) >= len(high) * UTF16_ZERO_SHARE
                    and not _NON_TEXT.intersection(low)):  # binary words: control bytes
                return kind
    if nuls > len(probe) * NUL_TEXT_MAX_SHARE or any(b in _NON_TEXT for b in set(probe)):
        return "binary"
    return "text_with_nul"


@dataclass(frozen=True)
class BlobScan:
    """Outcome of one bounded scan: findings, the bytes of the blob scanned, the statement, and
    ``complete``: the blob was read to its end, or it holds nothing to scan (binary content);
    False when a part of its text was left unread (the byte bound, an unreadable blob)."""

    findings: list[Finding]
    scanned_bytes: int
    statement: str
    complete: bool = True


def read_prefix(repo: Path, oid: str, max_bytes: int) -> bytes | None:
    """At most ``max_bytes`` bytes from the start of blob ``oid``, read as a stream (git is
    stopped after them); None when the blob cannot be read."""
    try:
        with git.stream_git(repo, "cat-file", "blob", oid) as stream:
            parts = []
            left = max_bytes
            while left > 0:
                data = stream.read(min(left, STREAM_CHUNK_BYTES))
                if not data:
                    break
                parts.append(data)
                left -= len(data)
            return b"".join(parts)
    except GitError:
        return None


def read_heads(repo: Path, oids: Sequence[str], max_bytes: int) -> list[bytes | None]:
    """The first ``max_bytes`` bytes of each object in ``oids`` (None when missing), from one
    ``git cat-file --batch`` stream (``<oid> <type> <size>\\n<content>\\n`` per object, or
    ``<oid> missing\\n``); the rest of each object is read past, never held, except that a
    blob of at most ``git.BLOB_MEMO_MAX_BLOB`` bytes is kept whole for a later reader of the
    same command (``git.remember_blob``: anchoring reads the file again). Raises GitError."""
    if not oids:
        return []
    out: list[bytes | None] = []
    stdin = "".join(f"{o}\n" for o in oids).encode("ascii", "replace")
    with git.stream_git(repo, "cat-file", "--batch", stdin=stdin) as stream:
        for oid in oids:
            header = stream.readline().split()
            if len(header) != 3 or not header[2].isdigit():
                out.append(None)
                continue
            size = int(header[2])
            if size <= git.BLOB_MEMO_MAX_BLOB and header[1] == b"blob":
                whole = stream.read(size + 1)  # small: kept for a later reader
                if len(whole) != size + 1:
                    raise GitError("git cat-file --batch: truncated output")
                whole = whole[:size]
                git.remember_blob(oid, whole)
                out.append(whole[:max_bytes])
                continue
            head = stream.read(min(size, max_bytes))
            left = size - len(head) + 1  # the rest and the LF after the content
            while left > 0:
                got = stream.read(min(left, STREAM_CHUNK_BYTES))
                if not got:
                    raise GitError("git cat-file --batch: truncated output")
                left -= len(got)
            out.append(head)
    return out


def _contains_any(repo: Path, oid: str, values: Sequence[bytes]) -> set[bytes]:
    """Which of ``values`` occur in blob ``oid``, searched as a stream (chunks overlapping by
    the longest value), so the blob is never held whole."""
    found: set[bytes] = set()
    if not values:
        return found
    overlap = max(len(v) for v in values) - 1
    tail = b""
    try:
        with git.stream_git(repo, "cat-file", "blob", oid) as stream:
            for chunk in stream.chunks(STREAM_CHUNK_BYTES):
                window = tail + chunk
                found.update(v for v in values if v not in found and v in window)
                if len(found) == len(values):
                    break
                tail = window[-overlap:] if overlap > 0 else b""
    except GitError:
        return set()
    return found


def _quote(row: str) -> str:
    """The redacted row, cut to QUOTE_CHARS around the first placeholder when it is long."""
    from .redaction import redact

    red = redact(row)[0]  # allow-listed values are redacted too
    if len(red) <= QUOTE_CHARS * 2:
        return red
    at = max(red.find("[REDACTED:"), 0)
    start = max(at - QUOTE_CHARS // 2, 0)
    return red[start : start + QUOTE_CHARS]


def _findings(path: str, rows: Iterator[tuple[int, str]], allow: Sequence[str]
              ) -> list[tuple[Finding, str]]:
    """Secret findings in numbered rows, each with the secret value it is about (for the
    caller only: never output); one finding per (line, type)."""
    from .diff_scan import SECRET_CONTENT

    out: list[tuple[Finding, str]] = []
    for h in scan_rows(rows, allow):
        quote = _quote(h.first_row)
        content = SECRET_CONTENT.format(type=h.hit.type)
        out.append((Finding(
            id=finding_id(path, "new", quote, content), path=path, side="new",
            start_line=h.first_line, end_line=h.last_line, severity=Severity.CRITICAL,
            category=Category.SECURITY, content=content, existing_code=quote,
            suggestion_code="", anchor=AnchorMethod.FILE, source=SECRET_SOURCE,
        ), h.hit.value))
    return out


class _Reader(Protocol):
    def read(self, n: int) -> bytes: ...


class _BlobText:
    """The text of a blob read as a stream of at most ``max_bytes`` bytes, handed out as
    decoded pieces (UTF-8, undecodable bytes replaced, NUL read as a space; after
    :meth:`decode_as` UTF-16, recoded to UTF-8 as it is read). When the blob is longer than
    that, the line it stops in is not handed out (only whole lines are scanned), unless it is
    the first line: then what was read of it is. ``scanned``: the bytes handed out (UTF-8);
    ``read``: the blob's bytes read; ``complete``: the blob was read to its end; ``head``: its
    first bytes, for :func:`blob_kind`."""

    def __init__(self, stream: _Reader, max_bytes: int) -> None:
        self.stream, self.left = stream, max_bytes
        self.scanned = 0
        self.read = 0
        self.complete = False
        self._recode: codecs.IncrementalDecoder | None = None
        self.head = b""
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self._tail = b""  # bytes after the last newline read, held back
        self._seen_newline = False

    def first(self) -> bytes:
        """Read the first bytes (at least BINARY_PROBE_BYTES when the blob has them)."""
        while len(self._tail) < BINARY_PROBE_BYTES and self._read():
            pass
        self.head = self._tail[:BINARY_PROBE_BYTES]
        return self.head

    def decode_as(self, codec: str) -> None:
        """Read the blob as ``codec`` (``utf-16-le`` / ``utf-16-be``) from here on, the bytes
        already read included (a byte-order mark dropped)."""
        self._recode = codecs.getincrementaldecoder(codec)("replace")
        raw = self._tail
        if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
            raw = raw[2:]
        self._tail = self._recode.decode(raw, self.complete).encode("utf-8")

    def _read(self) -> bool:
        """Read one chunk into the held-back tail; False at the end or at the byte bound."""
        if self.left <= 0:
            return False
        data = self.stream.read(min(self.left, STREAM_CHUNK_BYTES))
        if not data:
            self.complete = True
            if self._recode is not None:  # an odd last byte: one replacement character
                self._tail += self._recode.decode(b"", True).encode("utf-8")
            return False
        self.left -= len(data)
        self.read += len(data)
        self._tail += data if self._recode is None else self._recode.decode(data).encode("utf-8")
        return True

    def _emit(self, data: bytes, final: bool = False) -> str:
        self.scanned += len(data)
        return self._decode(data.replace(b"\0", b" "), final)

    def pieces(self) -> Iterator[str]:
        """The text, piece by piece, as described in the class docstring."""
        while True:
            cut = self._tail.rfind(b"\n") + 1
            if cut:
                self._seen_newline = True
                yield self._emit(self._tail[:cut])
                self._tail = self._tail[cut:]
            elif len(self._tail) > OPEN_TAIL_BYTES:  # a long line: scanned in windows
                yield self._emit(self._tail)
                self._tail = b""
            if not self._read():
                break
        if not self.complete and self.left <= 0:
            self.complete = not self.stream.read(1)  # exactly max_bytes long: read to its end
        if self.complete or not self._seen_newline:
            yield self._emit(self._tail, final=True)
            self._tail = b""


def scan_blob(repo: Path, fd: FileDiff, allow: Sequence[str], max_bytes: int) -> BlobScan:
    """Scan ``fd``'s new blob for the secrets it adds, streamed to its end or to ``max_bytes``
    bytes, whichever comes first (see the module docstring).

    ``fd.size_bytes`` is the size git reported (None: not known). Returns the findings, the
    bytes scanned, the statement (``secret scan: …``: all of it or a prefix scanned and what
    was found, or why it was not scanned: no budget left, binary content, unreadable blob) and
    whether the blob was scanned to its end."""
    total = fd.size_bytes
    if max_bytes <= 0:
        return BlobScan([], 0, "secret scan: not scanned, security.max_scan_bytes used up",
                        complete=False)
    try:
        with git.stream_git(repo, "cat-file", "blob", fd.new_oid) as stream:
            text = _BlobText(stream, max_bytes)
            kind = blob_kind(text.first())
            if kind == "binary":
                return BlobScan([], 0, "secret scan: not scanned, binary content")
            if kind in UTF16_KINDS:
                text.decode_as(UTF16_KINDS[kind])
            pairs = _findings(fd.path, stream_rows(text.pieces()), allow)
    except GitError:
        return BlobScan([], 0, "secret scan: not scanned, the blob could not be read",
                        complete=False)
    if pairs and fd.status != "added" and fd.old_oid and set(fd.old_oid) != {"0"}:
        # a value the old blob already holds (as UTF-8 or as this blob's UTF-16) is not added
        encodings = ("utf-8", *((UTF16_KINDS[kind],) if kind in UTF16_KINDS else ()))
        forms = {v: [v.encode(e, "surrogateescape") for e in encodings] for _, v in pairs}
        old = _contains_any(repo, fd.old_oid, sorted({b for bs in forms.values() for b in bs}))
        pairs = [(f, v) for f, v in pairs if not any(b in old for b in forms[v])]
    findings = [f for f, _ in pairs]
    scanned = text.read if kind in UTF16_KINDS else text.scanned
    size = util.human_bytes(scanned)
    if text.complete:
        what = f"all {size} scanned"
    else:
        of = f" of {util.human_bytes(total)}" if total else ""
        what = f"first {size}{of} scanned"
    if kind == "text_with_nul":
        what += " (text with NUL bytes)"
    elif kind in UTF16_KINDS:
        what += " (UTF-16 text)"
    found = (f"{len(findings)} secret(s) found (critical finding)" if findings
             else "no secret found")
    return BlobScan(findings, scanned, f"secret scan: {what}, {found}", text.complete)
