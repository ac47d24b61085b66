"""Deterministic anchoring of a comment's quoted code to exact lines (SPEC §8.1). Pure.

Matching compares normalised lines: trimmed, one leading ``+``/``-`` marker dropped, ``\r``
ignored; blank lines are skipped on both sides, so a window may run over blank lines but never
across hunks. Tiers, first that matches wins:
1. ``hunk_new``: context + added lines of a hunk → new-file lines;
2. ``hunk_old``: context + deleted lines of a hunk → old-file lines (``side = old``);
3. ``file``: the whole new file;
4. ``loose``: tiers 1–3 again with all whitespace removed.
Several matches in a tier: prefer those touching added lines, then the one nearest the model's
line hint; otherwise the first, marked ``ambiguous``. The model's line numbers alone are never
trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .diff import FileDiff
from .findings import Finding, RawComment, finding_id


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a quote was found: 1-based inclusive lines on ``side``; method as in SPEC §8.1."""

    path: str
    side: str
    start_line: int
    end_line: int
    method: str
    ambiguous: bool = False


# (line number, normalised text, is an added/deleted line)
Row = tuple[int, str, bool]


def norm_line(text: str) -> str:
    """Normalise one line for matching (see module docstring)."""
    s = text.replace("\r", "").strip()
    if s[:1] in ("+", "-"):
        s = s[1:].strip()
    return s


def loose_line(text: str) -> str:
    return "".join(norm_line(text).split())


def quote_lines(existing_code: str, loose: bool = False) -> list[str]:
    """The quote's non-blank normalised lines."""
    f = loose_line if loose else norm_line
    return [q for q in (f(ln) for ln in existing_code.split("\n")) if q]


def _find(rows: Sequence[Row], quote: Sequence[str]) -> list[tuple[int, int, bool]]:
    """All windows of ``rows`` equal to ``quote``: (start, end, touches a changed line)."""
    n, k = len(rows), len(quote)
    out = []
    if k == 0 or k > n:
        return out
    first = quote[0]
    for i in range(n - k + 1):
        if rows[i][1] != first:
            continue
        if all(rows[i + j][1] == quote[j] for j in range(1, k)):
            window = rows[i : i + k]
            out.append((window[0][0], window[-1][0], any(r[2] for r in window)))
    return out


def _hunk_rows(fd: FileDiff, side: str, loose: bool) -> list[list[Row]]:
    """Per hunk, the non-blank normalised lines of one side with their line numbers."""
    f = loose_line if loose else norm_line
    blocks: list[list[Row]] = []
    for h in fd.hunks:
        rows: list[Row] = []
        for ln in h.lines:
            num = ln.new_line if side == "new" else ln.old_line
            if num is None:
                continue
            t = f(ln.text)
            if t:
                rows.append((num, t, ln.kind != " "))
        blocks.append(rows)
    return blocks


def _pick(
    matches: list[tuple[int, int, bool]], hint: int | None
) -> tuple[tuple[int, int, bool], bool]:
    if len(matches) == 1:
        return matches[0], False
    touching = [m for m in matches if m[2]] or matches
    if len(touching) == 1:
        return touching[0], False
    if hint is not None:
        best = sorted(touching, key=lambda m: (abs(m[0] - hint), m[0]))
        if abs(best[0][0] - hint) != abs(best[1][0] - hint):
            return best[0], False
    return touching[0], True


def locate(
    fd: FileDiff,
    existing_code: str,
    new_file: Sequence[str] | None,
    hint: int | None = None,
) -> Anchor | None:
    """Anchor ``existing_code`` in one file through tiers 1–4; None when nothing matches.

    ``new_file`` is the new file's lines (for tier 3), or None when unavailable.
    """
    added = {ln.new_line for h in fd.hunks for ln in h.lines if ln.kind == "+"}
    for loose in (False, True):
        quote = quote_lines(existing_code, loose)
        if not quote:
            return None
        for side in ("new", "old"):
            matches: list[tuple[int, int, bool]] = []
            for rows in _hunk_rows(fd, side, loose):
                matches.extend(_find(rows, quote))
            if matches:
                (s, e, _), amb = _pick(matches, hint if side == "new" else None)
                method = "loose" if loose else ("hunk_new" if side == "new" else "hunk_old")
                return Anchor(fd.path, side, s, e, method, amb)
        if new_file is not None:
            f = loose_line if loose else norm_line
            rows = [(i + 1, f(t), i + 1 in added) for i, t in enumerate(new_file)]
            rows = [r for r in rows if r[1]]
            matches = _find(rows, quote)
            if matches:
                (s, e, _), amb = _pick(matches, hint)
                return Anchor(fd.path, "new", s, e, "loose" if loose else "file", amb)
    return None


def anchor_comment(
    c: RawComment,
    files: Mapping[str, FileDiff],
    new_file_lines: Callable[[str], Sequence[str] | None],
    refile_candidates: Sequence[str] = (),
) -> tuple[Finding, str]:
    """Anchor a raw comment: its claimed file first, then a unique match in another changed
    file (``refiled``), else ``start_line = end_line = 0`` (``none``).

    ``files`` maps paths (new and old) to diffs; ``refile_candidates`` are the paths eligible
    for re-filing (the reviewed files). Returns (finding, warning text or "").
    """
    warning = ""
    anchor: Anchor | None = None
    fd = files.get(c.path)
    if fd is not None and c.existing_code.strip():
        anchor = locate(fd, c.existing_code, new_file_lines(fd.path), c.line_hint)
    if anchor is None and c.existing_code.strip():
        hits = []
        for p in refile_candidates:
            other = files.get(p)
            if other is None or other is fd:
                continue
            a = locate(other, c.existing_code, None, c.line_hint)
            if a is not None:
                hits.append(a)
        if len(hits) == 1:
            h = hits[0]
            anchor = Anchor(h.path, h.side, h.start_line, h.end_line, "refiled", h.ambiguous)
            warning = f"comment filed against {c.path} quotes code of {h.path}; re-filed"
    path = anchor.path if anchor else (fd.path if fd else c.path)
    side = anchor.side if anchor else "new"
    finding = Finding(
        id=finding_id(path, side, c.existing_code, c.content),
        path=path,
        side=side,
        start_line=anchor.start_line if anchor else 0,
        end_line=anchor.end_line if anchor else 0,
        severity=c.severity,
        category=c.category,
        content=c.content,
        existing_code=c.existing_code,
        suggestion_code=c.suggestion_code,
        anchor=anchor.method if anchor else "none",
        ambiguous=anchor.ambiguous if anchor else False,
        source=c.source,
    )
    return finding, warning
