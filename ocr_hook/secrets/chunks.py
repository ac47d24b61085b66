"""Secret scanning of a text given in pieces (a blob too large to hold in memory), in bounded
memory. Pure: no I/O.

`stream_rows` and `scan_rows` are the form `blobs` scans a blob in, where a line may be of any
length (a minified bundle, a one-line data file): long lines are cut into windows at token
separators, and rows are scanned in overlapping blocks, so no regex search ever sees more than
one block.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .redaction import SecretHit, find_secrets

# --- rows and blocks of a text read as a stream (``blobs``: blobs too large to load) ---------

LINE_WINDOW_CHARS = 16 * 1024  # a longer line is scanned in windows of this many characters
WINDOW_OVERLAP_CHARS = 512  # context repeated from one window of a long line to the next
# Windows of a long line are cut at these characters, which no secret token contains, so a
# token (a JWT can be thousands of characters) is whole in one window
TOKEN_SEPARATORS = " \t\r\f\v\"'`,;()[]{}<>"
OPEN_LINE_CHARS = 4 * LINE_WINDOW_CHARS  # an unfinished line held before its windows are cut
BLOCK_CHARS = 256 * 1024  # rows are handed to find_secrets in blocks of about this size
BLOCK_OVERLAP_CHARS = 8 * 1024  # blocks overlap by whole rows of up to this many characters,
# so a multi-line secret (a PEM block of a 4096-bit key is ~3,300 characters) is seen whole


class RowHit(NamedTuple):
    """A secret found in numbered rows (:func:`scan_rows`): the 1-based line numbers of its
    first and last row, the text of its first row, and the hit (``hit.line`` counts rows of
    the block it was found in, not lines: use ``first_line``)."""

    first_line: int
    last_line: int
    first_row: str
    hit: SecretHit


def _last_sep(line: str, lo: int, hi: int) -> int:
    """Index of the last TOKEN_SEPARATORS character in ``line[lo:hi]``, or -1."""
    return max(line.rfind(c, lo, hi) for c in TOKEN_SEPARATORS)


def _first_sep(line: str, lo: int, hi: int) -> int:
    """Index of the first TOKEN_SEPARATORS character in ``line[lo:hi]``, or -1."""
    found = [i for i in (line.find(c, lo, hi) for c in TOKEN_SEPARATORS) if i >= 0]
    return min(found, default=-1)


def line_windows(line: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the windows of one long line, each at most
    LINE_WINDOW_CHARS long. A window ends just before the last separator it holds (at least
    WINDOW_OVERLAP_CHARS past its start, so the scan moves on), and the next starts after the
    first separator within WINDOW_OVERLAP_CHARS before that cut: no token is split and about
    that much context is repeated. Only a window without such a separator is cut hard, the
    next starting WINDOW_OVERLAP_CHARS before the cut. Every window but the last depends only
    on the LINE_WINDOW_CHARS characters from its start, so the windows of a line that is
    still being read are those of the whole line (:func:`stream_rows` relies on it)."""
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


def _line_rows(n: int, line: str) -> Iterator[tuple[int, str]]:
    if len(line) <= LINE_WINDOW_CHARS:
        yield n, line
        return
    for a, b in line_windows(line):
        yield n, line[a:b]


def stream_rows(pieces: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of each row of a text given as consecutive pieces (cut
    anywhere): a line of at most LINE_WINDOW_CHARS is one row, a longer one is cut into the
    windows of :func:`line_windows`, which keep every token of up to about LINE_WINDOW_CHARS
    whole. Lines are separated by ``\\n``. Memory: one piece plus at most OPEN_LINE_CHARS of a
    line not yet ended (its finished windows are handed out as they are known)."""
    n = 1
    open_line = ""
    for piece in pieces:
        if "\n" in piece:
            lines = (open_line + piece).split("\n")
            open_line = lines.pop()
            for line in lines:
                yield from _line_rows(n, line)
                n += 1
        else:
            open_line += piece
        if len(open_line) > OPEN_LINE_CHARS:
            windows = line_windows(open_line)
            for a, b in windows[:-1]:
                yield n, open_line[a:b]
            open_line = open_line[windows[-1][0]:]
    yield from _line_rows(n, open_line)


def _block_hits(block: Sequence[tuple[int, str]], allow: Sequence[str], defer_from: int | None
                ) -> Iterator[RowHit]:
    """The hits of one block of rows. A hit that reaches the block's last row and starts at or
    after row index ``defer_from`` (the first row of the next block) is left to the next block,
    which sees it whole; None: the last block."""
    for hit in find_secrets("\n".join(r for _, r in block), allow):
        first = hit.line - 1
        last = min(first + hit.value.count("\n"), len(block) - 1)
        if defer_from is not None and last == len(block) - 1 and first >= defer_from:
            continue
        yield RowHit(block[first][0], block[last][0], block[first][1], hit)


def scan_rows(rows: Iterable[tuple[int, str]], allow: Sequence[str] = ()) -> Iterator[RowHit]:
    """`find_secrets` over numbered rows (:func:`stream_rows`) in blocks of about BLOCK_CHARS,
    each starting with the last rows (up to BLOCK_OVERLAP_CHARS) of the one before, so that a
    value written over several rows is seen whole in one block. One hit per (first line,
    type); memory: one block."""
    seen: set[tuple[int, str]] = set()
    block: list[tuple[int, str]] = []
    size = 0
    for row in rows:
        block.append(row)
        size += len(row[1]) + 1
        if size < BLOCK_CHARS:
            continue
        back, kept = len(block), 0
        while back > 1 and kept + len(block[back - 1][1]) < BLOCK_OVERLAP_CHARS:
            back -= 1
            kept += len(block[back][1]) + 1
        yield from _new_hits(_block_hits(block, allow, back), seen)
        block, size = block[back:], kept
    if block:
        yield from _new_hits(_block_hits(block, allow, None), seen)


def _new_hits(hits: Iterable[RowHit], seen: set[tuple[int, str]]) -> Iterator[RowHit]:
    for h in hits:
        key = (h.first_line, h.hit.type)
        if key not in seen:
            seen.add(key)
            yield h
