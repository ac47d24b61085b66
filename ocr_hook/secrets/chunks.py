"""Secret scanning of a text given in pieces (a blob too large to hold in memory),
with the hits of one `redaction.find_secrets` scan of the whole text. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .redaction import SecretHit, find_secrets

# Window sizes (ours).
CHUNK_WINDOW_CHARS = 256 * 1024  # characters scanned at a time (ours)
CHUNK_OVERLAP_LINES = 64  # lines of the previous window scanned again (ours; a 4096-bit RSA PEM
#                           block has 51 lines)


def find_secrets_in_chunks(
    chunks: Iterable[str], allow: Sequence[str] = (), *,
    window_chars: int = CHUNK_WINDOW_CHARS, overlap_lines: int = CHUNK_OVERLAP_LINES,
) -> Iterator[SecretHit]:
    """`find_secrets` of a text given as consecutive pieces (a large blob read in bounded
    chunks; a piece may end anywhere, also inside a line or a CRLF), in bounded memory: the text
    is scanned in windows of whole lines of about `window_chars` characters (a longer line is
    one window), each preceded by the last `overlap_lines` lines of the window before. A value
    that reaches the last line of a window is left to the next one, which sees it again in its
    overlap, so a value written over at most `overlap_lines` lines (a PEM block of a 4096-bit
    RSA key has 51) is found whole: the hits are those of `find_secrets` on the whole text,
    with `line` counted on the whole text, each yielded once. A longer value is reported cut
    (from its start, as in a truncated diff hunk)."""
    context: list[str] = []  # the overlap: the last lines of the previous window
    context_line = 1  # 1-based line number of context[0] (or of the next line)
    reported: set[tuple[int, int]] = set()  # (line, start_col) of hits already yielded
    pending = ""
    for chunk in chunks:
        pending += chunk
        if len(pending) < window_chars:
            continue
        cut = pending.rfind("\n")
        if cut == -1:
            continue  # one very long line: wait for its end
        new = pending[:cut].split("\n")
        next_context, next_line = _slide(context, context_line, new, overlap_lines)
        yield from _window_hits([*context, *new], context_line, allow, reported, next_line)
        context, context_line = next_context, next_line
        reported = {r for r in reported if r[0] >= context_line}
        pending = pending[cut + 1:]
    yield from _window_hits([*context, *pending.split("\n")], context_line, allow, reported,
                            None)


def _window_hits(lines: list[str], first_line: int, allow: Sequence[str],
                 reported: set[tuple[int, int]], defer_from: int | None
                 ) -> Iterator[SecretHit]:
    """Hits of the window `lines` (whose first line is line `first_line` of the whole text) not
    yielded before, with line numbers of the whole text; records them in `reported`. A hit
    that reaches the window's last line and starts at or after line `defer_from` (the next
    window's first line) is left for the next window; None: the last window."""
    for hit in find_secrets("\n".join(lines), allow):
        key = (hit.line + first_line - 1, hit.start_col)
        ends_window = hit.line + hit.value.count("\n") >= len(lines)
        if key in reported or (defer_from is not None and ends_window and key[0] >= defer_from):
            continue
        reported.add(key)
        yield SecretHit(hit.type, key[0], hit.start_col, hit.end_col, hit.value)


def _slide(context: list[str], context_line: int, new: list[str], overlap_lines: int
           ) -> tuple[list[str], int]:
    """The overlap after a window: its last `overlap_lines` lines and the number of the first."""
    lines = [*context, *new]
    keep = lines[-overlap_lines:] if overlap_lines > 0 else []
    return keep, context_line + len(lines) - len(keep)
