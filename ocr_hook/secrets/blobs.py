"""Secret scan of blobs too large to load, as bounded streams (spec §14).

A file larger than ``select.max_file_bytes`` is never read whole. Its scan reads at most a
given number of bytes from the start of its blob (``git cat-file blob`` as a stream, stopped
there) and looks for secrets with ``redaction.find_secrets`` in blocks of lines; a line longer
than LINE_WINDOW_CHARS (a minified bundle, a one-line data file) is scanned in overlapping
windows cut at separators (whitespace, quotes, commas, brackets), so a long token is whole in
one window and no single regex search ever sees more than a block. For a modified file a value
also present in the old blob is not this change's secret: the old blob is searched for it as
a stream too. The outcome is one sentence for the file's coverage entry, e.g. ``secret scan:
first 512.0 KiB of 50.0 MiB scanned, no secret found``.

Findings are ``critical``/``security`` like ``diff_scan``'s, anchored ``file`` to the line
of the blob (there are no parsed hunks); ``existing_code`` is the redacted text around the
secret, never the secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import git, util
from ..diff import FileDiff
from ..errors import GitError
from ..findings import SECRET_SOURCE, Finding, finding_id
from ..vocabulary import AnchorMethod, Category, Severity

LINE_WINDOW_CHARS = 16 * 1024  # a longer line is scanned in windows of this many characters
WINDOW_OVERLAP_CHARS = 512  # context repeated from one window of a long line to the next
# Windows of a long line are cut at these characters, which no secret token contains, so a
# token (a JWT can be thousands of characters) is whole in one window
TOKEN_SEPARATORS = " \t\r\f\v\"'`,;()[]{}<>"
BLOCK_CHARS = 256 * 1024  # rows are handed to find_secrets in blocks of about this size
BLOCK_OVERLAP_CHARS = 8 * 1024  # blocks overlap by whole rows of up to this many characters,
# so a multi-line secret (a PEM block of a 4096-bit key is ~3,300 characters) is seen whole
BINARY_PROBE_BYTES = 8000  # spec §4 gate 1: a NUL byte in the first 8000 bytes means binary
QUOTE_CHARS = 160  # characters of redacted context kept around a secret in a long line
STREAM_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class BlobScan:
    """Outcome of one bounded scan: findings, bytes read from the blob, and the statement."""

    findings: list[Finding]
    scanned_bytes: int
    statement: str


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


def _last_sep(line: str, lo: int, hi: int) -> int:
    """Index of the last TOKEN_SEPARATORS character in ``line[lo:hi]``, or -1."""
    return max(line.rfind(c, lo, hi) for c in TOKEN_SEPARATORS)


def _first_sep(line: str, lo: int, hi: int) -> int:
    """Index of the first TOKEN_SEPARATORS character in ``line[lo:hi]``, or -1."""
    found = [i for i in (line.find(c, lo, hi) for c in TOKEN_SEPARATORS) if i >= 0]
    return min(found, default=-1)


def _windows(line: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the windows of one long line, each at most
    LINE_WINDOW_CHARS long. A window ends just before the last separator it holds (at least
    WINDOW_OVERLAP_CHARS past its start, so the scan moves on), and the next starts after the
    first separator within WINDOW_OVERLAP_CHARS before that cut: no token is split and about
    that much context is repeated. Only a window without such a separator is cut hard, the
    next starting WINDOW_OVERLAP_CHARS before the cut."""
    out: list[tuple[int, int]] = []
    at = 0
    while at + LINE_WINDOW_CHARS < len(line):
        limit = at + LINE_WINDOW_CHARS
        cut = _last_sep(line, at + WINDOW_OVERLAP_CHARS, limit)
        if cut < 0:
            out.append((at, limit))
            at = limit - WINDOW_OVERLAP_CHARS
            continue
        out.append((at, cut))
        at = _first_sep(line, cut - WINDOW_OVERLAP_CHARS, cut + 1) + 1  # cut itself at worst
    out.append((at, len(line)))
    return out


def _rows(text: str) -> list[tuple[int, str]]:
    """(1-based line number, text) per line, long lines cut into overlapping windows
    (``_windows``) that keep every token of at most about LINE_WINDOW_CHARS whole."""
    rows: list[tuple[int, str]] = []
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) <= LINE_WINDOW_CHARS:
            rows.append((n, line))
            continue
        rows.extend((n, line[a:b]) for a, b in _windows(line))
    return rows


def _quote(row: str) -> str:
    """The redacted row, cut to QUOTE_CHARS around the first placeholder when it is long."""
    from .redaction import redact

    red = redact(row)[0]  # allow-listed values are redacted too
    if len(red) <= QUOTE_CHARS * 2:
        return red
    at = max(red.find("[REDACTED:"), 0)
    start = max(at - QUOTE_CHARS // 2, 0)
    return red[start : start + QUOTE_CHARS]


def find_in_text(path: str, text: str, allow: Sequence[str]) -> list[tuple[Finding, str]]:
    """Secret findings in ``text`` (a blob's decoded prefix), line by line in bounded blocks,
    each with the secret value it is about (for the caller only: never output); one finding
    per (line, value)."""
    from .diff_scan import SECRET_CONTENT
    from .redaction import find_secrets  # the rules are compiled on import: only when scanning

    rows = _rows(text)
    out: list[tuple[Finding, str]] = []
    seen: set[tuple[int, str]] = set()
    start = 0
    while start < len(rows):
        end = start
        size = 0
        while end < len(rows) and (size < BLOCK_CHARS or end == start):
            size += len(rows[end][1]) + 1
            end += 1
        block = rows[start:end]
        for hit in find_secrets("\n".join(r for _, r in block), allow):
            first = block[hit.line - 1]
            last = block[min(hit.line - 1 + hit.value.count("\n"), len(block) - 1)]
            key = (first[0], hit.value)
            if key in seen:
                continue
            seen.add(key)
            quote = _quote(first[1])
            content = SECRET_CONTENT.format(type=hit.type)
            out.append((Finding(
                id=finding_id(path, "new", quote, content), path=path, side="new",
                start_line=first[0], end_line=last[0], severity=Severity.CRITICAL,
                category=Category.SECURITY, content=content, existing_code=quote,
                suggestion_code="", anchor=AnchorMethod.FILE, source=SECRET_SOURCE,
            ), hit.value))
        if end >= len(rows):
            break
        back = end
        size = 0
        while back > start + 1 and size + len(rows[back - 1][1]) < BLOCK_OVERLAP_CHARS:
            back -= 1
            size += len(rows[back][1]) + 1
        start = back
    return out


def scan_blob(repo: Path, fd: FileDiff, allow: Sequence[str], max_bytes: int) -> BlobScan:
    """Scan at most ``max_bytes`` from the start of ``fd``'s new blob for secrets it adds.

    ``fd.size_bytes`` is the size git reported. Returns the findings, the bytes read and the
    statement (``secret scan: …``): all of it or a prefix scanned and what was found, or why
    it was not scanned (no budget left, binary content, unreadable blob)."""
    total = fd.size_bytes or 0
    if max_bytes <= 0:
        return BlobScan([], 0, "secret scan: not scanned, security.max_scan_bytes used up")
    data = read_prefix(repo, fd.new_oid, max_bytes)
    if data is None:
        return BlobScan([], 0, "secret scan: not scanned, the blob could not be read")
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        return BlobScan([], len(data), "secret scan: not scanned, binary content")
    whole = len(data) < max_bytes or (total and len(data) >= total)
    if not whole:
        cut = data.rfind(b"\n")
        if cut > 0:
            data = data[: cut + 1]  # only whole lines, unless one line fills the prefix
    pairs = find_in_text(fd.path, git.decode_text(data), allow)
    if pairs and fd.status != "added" and fd.old_oid and set(fd.old_oid) != {"0"}:
        # a value the old blob already holds is not added by this change
        values = {v.encode("utf-8", "surrogateescape") for _, v in pairs}
        old = _contains_any(repo, fd.old_oid, sorted(values))
        pairs = [(f, v) for f, v in pairs if v.encode("utf-8", "surrogateescape") not in old]
    findings = [f for f, _ in pairs]
    if whole:
        what = f"all {util.human_bytes(len(data))} scanned"
    else:
        what = f"first {util.human_bytes(len(data))} of {util.human_bytes(total)} scanned"
    found = (f"{len(findings)} secret(s) found (critical finding)" if findings
             else "no secret found")
    return BlobScan(findings, len(data), f"secret scan: {what}, {found}")

