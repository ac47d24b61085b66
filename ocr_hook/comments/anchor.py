r"""Deterministic anchoring of a comment's quoted code to exact lines (spec §8.1). Pure.

The model's line numbers are never trusted: ``existing_code`` (the quote) is searched for.

Normalisation (both the quote and the code): ``\r`` dropped, and every other line break inside
a line (VT, FF, NEL, U+2028…) in either spelling, raw or as the prompt spells it out
(``util.prompt_text``: ``\u2028``, ``\r``), so a quote copied from the prompt, from a tool
result or raw matches the same line; each line trimmed; blank lines are ignored on both sides,
so a window may run over blank lines, but never across hunks. A quote line may carry one
leading diff marker (``+``/``-``); it is first matched literally and, only
when the literal quote finds nothing in a tier, with one marker stripped from each line (so a
YAML ``- item`` copied without its marker still matches itself first). Quote lines that are
git's ``\ No newline at end of file`` or a lone marker are ignored.

A quote copied with the prompt's line-number column (``  12 +code``) is checked first and
accepted only when each numbered new-side line really holds that text.

Tiers, first that matches wins:
1. ``hunk_new``: per hunk, context + added lines → new-file line numbers (``side = new``);
2. ``hunk_old``: per hunk, context + deleted lines → old-file line numbers (``side = old``);
3. ``file``: the whole new file (the snapshot blob), ``side = new``;
4. ``loose``: tiers 1–3 again with all whitespace removed.

A quote of a whole change (every line marked, ``-`` and ``+`` lines) that matches no side as a
whole falls back to its ``+`` lines on the hunks' new side, then its ``-`` lines on the old side.

Several matches in a tier: prefer those touching changed lines (added on the new side, deleted
on the old side), then the one nearest the model's line hint (new side only: the model only sees
new-side numbers); otherwise the first that lies inside the diff, marked ``ambiguous``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..diff import FileDiff
from ..findings import Finding, RawComment, finding_id
from ..util import unescape_prompt_path
from ..vocabulary import AnchorMethod

NO_NEWLINE_MARKER = "\\ No newline at end of file"  # git's metadata line (diff.c)
PLAUSIBLE_MIN_CHARS = 8  # spec §8.1 gate: non-whitespace characters of a telling quote line
PLAUSIBLE_SIMILARITY = 0.8  # difflib ratio of a quote line to a diff line that counts as a match


class Anchor(NamedTuple):
    """Where a quote was found: 1-based inclusive lines on ``side`` ("new" | "old"); ``method``
    is how (any :class:`AnchorMethod` but ``NONE``, spec §8.1)."""

    path: str
    side: str
    start_line: int
    end_line: int
    method: AnchorMethod
    ambiguous: bool = False


class Row(NamedTuple):
    """One non-blank code line: its 1-based number on the searched side, normalised text, and
    whether it is a changed line (added on the new side, deleted on the old side)."""

    line: int
    text: str
    changed: bool


class Match(NamedTuple):
    start_line: int
    end_line: int
    touches_changed: bool
    inside_diff: bool


# a line break other than "\n", raw or spelled out as util.prompt_text does
_INNER_BREAK = re.compile(
    r"[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\\(?:r|u000[bc]|u001[c-e]|u0085|u202[89])")


def no_breaks(text: str, sep: str = "") -> str:
    """``text`` with each CR and each other line break inside a line, raw or spelled out (see
    the module docstring), replaced by ``sep``."""
    s = text.replace("\r", sep)
    if "\\" in s or not s.isprintable():
        s = _INNER_BREAK.sub(sep, s)
    return s


def norm_line(text: str, loose: bool = False) -> str:
    """One line for comparison: line breaks dropped (:func:`no_breaks`) and trimmed; with
    ``loose`` all whitespace removed."""
    s = no_breaks(text).strip()
    return "".join(s.split()) if loose else s


def _unmark(text: str) -> str:
    """``text`` (already trimmed) without one leading ``+``/``-`` marker, trimmed again."""
    return text[1:].strip() if text[:1] in ("+", "-") else text


def quote_variants(existing_code: str, loose: bool = False) -> list[list[frozenset[str]]]:
    """The quote's non-blank lines as match alternatives, in the order they are tried.

    First the literal trimmed lines (one alternative each); then, when any line starts with a
    marker, each line may also match with that marker stripped. Returns [] for a blank quote.
    """
    literal: list[frozenset[str]] = []
    marked: list[frozenset[str]] = []
    any_marker = False
    for raw in existing_code.replace("\r", "").split("\n"):
        t = raw.strip()
        if not t or t == NO_NEWLINE_MARKER:
            continue
        u = _unmark(t)
        if not u:  # a lone "+"/"-": a blank line copied with its marker
            continue
        lt, lu = norm_line(t, loose), norm_line(u, loose)
        literal.append(frozenset((lt,)))
        if u != t:
            any_marker = True
            marked.append(frozenset((lt, lu)))
        else:
            marked.append(frozenset((lt,)))
    if not literal:
        return []
    return [literal, marked] if any_marker else [literal]


def quote_lines(existing_code: str, loose: bool = False) -> list[str]:
    """The quote's non-blank normalised lines, literal form (markers kept)."""
    variants = quote_variants(existing_code, loose)
    return [next(iter(alts)) for alts in variants[0]] if variants else []


def _find(rows: Sequence[Row], quote: Sequence[frozenset[str]],
          spans: Sequence[tuple[int, int]]) -> list[Match]:
    """Every window of consecutive ``rows`` whose texts are in the quote's alternatives."""
    n, k = len(rows), len(quote)
    out: list[Match] = []
    if k == 0 or k > n:
        return out
    first = quote[0]
    for i in range(n - k + 1):
        if rows[i].text not in first:
            continue
        if all(rows[i + j].text in quote[j] for j in range(1, k)):
            s, e = rows[i].line, rows[i + k - 1].line
            changed = any(r.changed for r in rows[i : i + k])
            inside = any(a <= e and s <= b for a, b in spans)
            out.append(Match(s, e, changed, inside))
    return out


def _hunk_rows(fd: FileDiff, side: str, loose: bool) -> list[list[Row]]:
    """Per hunk, the non-blank normalised lines of one side with their line numbers."""
    blocks: list[list[Row]] = []
    for h in fd.hunks:
        rows: list[Row] = []
        for ln in h.lines:
            num = ln.new_line if side == "new" else ln.old_line
            if num is None:
                continue
            t = norm_line(ln.text, loose)
            if t:
                rows.append(Row(num, t, ln.kind != " "))
        blocks.append(rows)
    return blocks


def _file_rows(fd: FileDiff, new_file: Sequence[str], loose: bool) -> list[Row]:
    added = {ln.new_line for h in fd.hunks for ln in h.lines if ln.kind == "+"}
    rows = [Row(i + 1, norm_line(t, loose), i + 1 in added) for i, t in enumerate(new_file)]
    return [r for r in rows if r.text]


def _spans(fd: FileDiff, side: str) -> list[tuple[int, int]]:
    """Line ranges each hunk covers on ``side`` (empty hunk sides are skipped)."""
    out = []
    for h in fd.hunks:
        start, count = (h.new_start, h.new_count) if side == "new" else (h.old_start, h.old_count)
        if count > 0:
            out.append((start, start + count - 1))
    return out


def pick(matches: Sequence[Match], hint: int | None) -> tuple[Match, bool]:
    """Choose among a tier's matches (see module docstring): (match, ambiguous)."""
    if len(matches) == 1:
        return matches[0], False
    pool = [m for m in matches if m.touches_changed] or list(matches)
    if len(pool) == 1:
        return pool[0], False
    if hint is not None:
        ranked = sorted(pool, key=lambda m: _distance(m, hint))
        if _distance(ranked[0], hint) < _distance(ranked[1], hint):
            return ranked[0], False
    inside = [m for m in pool if m.inside_diff] or pool
    return inside[0], True


def _distance(m: Match, hint: int) -> int:
    if m.start_line <= hint <= m.end_line:
        return 0
    return min(abs(m.start_line - hint), abs(m.end_line - hint))


_NUMBERED = re.compile(r"^\s*(\d+) [ +](.*)$")


def numbered_quote_anchor(fd: FileDiff, existing_code: str) -> Anchor | None:
    """A quote copied with the prompt's line-number column (``render_numbered``: ``  12 +code``)
    anchors only when verified: every non-blank quote line has a number, the numbers increase
    inside one hunk, and each numbered new-side line holds that text (trimmed, else with all
    whitespace removed). Otherwise None and the ordinary tiers run."""
    quoted: list[tuple[int, str]] = []
    for raw in existing_code.replace("\r", "").split("\n"):
        if not raw.strip():
            continue
        m = _NUMBERED.match(raw)
        if m is None:
            return None
        quoted.append((int(m.group(1)), m.group(2)))
    if not quoted or any(b[0] <= a[0] for a, b in zip(quoted, quoted[1:], strict=False)):
        return None
    for h in fd.hunks:
        texts = {ln.new_line: ln.text for ln in h.lines if ln.new_line is not None}
        if quoted[0][0] not in texts:
            continue
        method = AnchorMethod.HUNK_NEW
        for n, text in quoted:
            have = texts.get(n)
            if have is not None and norm_line(have) == norm_line(text):
                continue
            if have is not None and norm_line(have, True) == norm_line(text, True):
                method = AnchorMethod.LOOSE
                continue
            return None
        return Anchor(fd.path, "new", quoted[0][0], quoted[-1][0], method)
    return None


EXACT_TIERS = (AnchorMethod.HUNK_NEW, AnchorMethod.HUNK_OLD, AnchorMethod.FILE)  # tiers 1–3


def locate(
    fd: FileDiff,
    existing_code: str,
    new_file: Sequence[str] | None,
    hint: int | None = None,
) -> Anchor | None:
    """Anchor ``existing_code`` in one file through tiers 1–4; None when nothing matches.

    ``new_file`` is the new file's lines (tier 3); None skips the whole-file tier (a deleted
    file, another file during re-filing, or a re-located snippet that must come from the diff).
    A quote of a whole change (every line marked, both ``-`` and ``+`` lines) that matches no
    side as a whole anchors its ``+`` lines in the hunks' new side, else its ``-`` lines in
    their old side.
    """
    numbered = numbered_quote_anchor(fd, existing_code)
    if numbered is not None:
        return numbered
    spans = {"new": _spans(fd, "new"), "old": _spans(fd, "old")}
    found = _tiers(fd, existing_code, new_file, hint, spans, EXACT_TIERS)
    if found is not None:
        return found
    split = split_change_quote(existing_code)
    if split is None:
        return None
    added, deleted = split
    return (_tiers(fd, added, None, hint, spans, (AnchorMethod.HUNK_NEW,))
            or _tiers(fd, deleted, None, None, spans, (AnchorMethod.HUNK_OLD,)))


_TOKEN = re.compile(r"\w+|\S")
FRAGMENT_MIN_TOKENS = 2  # "a / b" has 3; a single word is too weak to pin a line
FRAGMENT_MIN_CHARS = 4  # non-whitespace characters


def fragment_pattern(fragment: str) -> re.Pattern[str] | None:
    """A regex for a one-line quote that may be part of a line: its tokens (words and single
    symbols) in order with any whitespace between them, not starting or ending inside a word
    (``x = 1`` never matches ``max = 10``). None when the fragment is too short to be telling."""
    tokens = _TOKEN.findall(fragment)
    if len(tokens) < FRAGMENT_MIN_TOKENS or sum(len(t) for t in tokens) < FRAGMENT_MIN_CHARS:
        return None
    body = r"\s*".join(re.escape(t) for t in tokens)
    head = r"(?<!\w)" if re.match(r"\w", tokens[0]) else ""
    tail = r"(?!\w)" if re.match(r"\w", tokens[-1][-1]) else ""
    return re.compile(head + body + tail)


def fragment_anchor(fd: FileDiff, existing_code: str, hint: int | None = None) -> Anchor | None:
    """Last tier for a quote of part of one line (models often quote ``a / b`` out of
    ``return a / b;``): the line of a hunk that contains it, new side first, then old side.
    Only hunk lines are searched, matches touching changed lines are preferred, then the one
    nearest ``hint``; anchor method ``loose``. None for multi-line or too-short quotes."""
    # a break is a space here: the words on either side of it stay apart
    lines = [t for t in (_unmark(no_breaks(x, " ").strip()) for x in existing_code.split("\n"))
             if t and t != NO_NEWLINE_MARKER]
    if len(lines) != 1:
        return None
    pattern = fragment_pattern(lines[0])
    if pattern is None:
        return None
    for side in ("new", "old"):
        spans = _spans(fd, side)
        matches = []
        for h in fd.hunks:
            for ln in h.lines:
                num = ln.new_line if side == "new" else ln.old_line
                if num is not None and pattern.search(no_breaks(ln.text, " ")):
                    matches.append(Match(num, num, ln.kind != " ",
                                         any(a <= num <= b for a, b in spans)))
        if matches:
            m, ambiguous = pick(matches, hint if side == "new" else None)
            return Anchor(fd.path, side, m.start_line, m.end_line, AnchorMethod.LOOSE,
                          ambiguous)
    return None


def split_change_quote(existing_code: str) -> tuple[str, str] | None:
    """(``+`` lines, ``-`` lines) of a quote in which every non-blank line carries a diff
    marker and both kinds occur; None otherwise."""
    added: list[str] = []
    deleted: list[str] = []
    for raw in existing_code.replace("\r", "").split("\n"):
        t = raw.lstrip()
        if not t or t == NO_NEWLINE_MARKER:
            continue
        if t[0] == "+":
            added.append(t)
        elif t[0] == "-":
            deleted.append(t)
        else:
            return None
    if not added or not deleted:
        return None
    return "\n".join(added), "\n".join(deleted)


def _tiers(fd: FileDiff, existing_code: str, new_file: Sequence[str] | None, hint: int | None,
           spans: Mapping[str, Sequence[tuple[int, int]]], tiers: Sequence[AnchorMethod]
           ) -> Anchor | None:
    """``tiers`` (of hunk_new, hunk_old, file) exactly, then the same with all whitespace
    removed (``loose``); first match wins."""
    for loose in (False, True):
        variants = quote_variants(existing_code, loose)
        if not variants:
            return None
        for tier in tiers:
            side = "old" if tier == AnchorMethod.HUNK_OLD else "new"
            if tier == AnchorMethod.FILE:
                if new_file is None:
                    continue
                blocks = [_file_rows(fd, new_file, loose)]
            else:
                blocks = _hunk_rows(fd, side, loose)
            for quote in variants:
                matches = [m for rows in blocks for m in _find(rows, quote, spans[side])]
                if matches:
                    m, ambiguous = pick(matches, hint if side == "new" else None)
                    method = AnchorMethod.LOOSE if loose else tier
                    return Anchor(fd.path, side, m.start_line, m.end_line, method, ambiguous)
    return None


def plausibly_in_diff(fd: FileDiff, existing_code: str) -> bool:
    """Whether a quote that did not anchor plausibly comes from this file's diff (the gate of
    the re-location call, spec §8.1). True when some quote line of at least
    PLAUSIBLE_MIN_CHARS non-whitespace characters equals a diff line (any side), contains one
    or is contained in one (a partial line), or is at least PLAUSIBLE_SIMILARITY alike
    (difflib ratio: a lightly paraphrased line); compared with all whitespace removed and
    one diff marker stripped."""
    diff_lines = {norm_line(ln.text, loose=True) for h in fd.hunks for ln in h.lines}
    diff_lines = {d for d in diff_lines if len(d) >= PLAUSIBLE_MIN_CHARS}
    quotes: set[str] = set()
    for raw in existing_code.replace("\r", "").split("\n"):
        t = raw.strip()
        quotes |= {norm_line(t, loose=True), norm_line(_unmark(t), loose=True)}
    quotes = {q for q in quotes if len(q) >= PLAUSIBLE_MIN_CHARS}
    for q in quotes:
        if q in diff_lines or any(q in d or d in q for d in diff_lines):
            return True
    import difflib  # only for a quote no diff line holds as it is

    matcher = difflib.SequenceMatcher(autojunk=False)
    for q in quotes:
        matcher.set_seq2(q)
        for d in diff_lines:
            matcher.set_seq1(d)
            if (matcher.real_quick_ratio() >= PLAUSIBLE_SIMILARITY
                    and matcher.quick_ratio() >= PLAUSIBLE_SIMILARITY
                    and matcher.ratio() >= PLAUSIBLE_SIMILARITY):
                return True
    return False


def anchored_text(fd: FileDiff, side: str, start_line: int, end_line: int,
                  new_file: Sequence[str] | None = None) -> str:
    """The text of lines ``start_line``..``end_line`` (1-based, inclusive) on ``side`` of
    ``fd``, ``\n``-joined, without ``\r``: from the hunks (context and changed lines of that
    side), new-side lines outside the hunks from ``new_file`` when given. Lines known from
    neither are left out; "" for an unanchored range (0)."""
    if start_line <= 0 or end_line < start_line:
        return ""
    known: dict[int, str] = {}
    for h in fd.hunks:
        for ln in h.lines:
            num = ln.new_line if side == "new" else ln.old_line
            if num is not None and start_line <= num <= end_line:
                known[num] = ln.text
    if side == "new" and new_file is not None and len(known) < end_line - start_line + 1:
        for num in range(start_line, min(end_line, len(new_file)) + 1):
            known.setdefault(num, new_file[num - 1])
    return "\n".join(known[n].replace("\r", "") for n in sorted(known))


def make_finding(c: RawComment, anchor: Anchor | None, fallback_path: str,
                 existing_code: str | None = None) -> Finding:
    """The finding of comment ``c`` at ``anchor`` (None → ``start_line = end_line = 0``,
    ``anchor = none``, side new). ``existing_code`` replaces the quote shown (a re-located
    snippet); the id is always computed from the model's own quote so it is stable."""
    path = anchor.path if anchor else fallback_path
    side = anchor.side if anchor else "new"
    return Finding(
        id=finding_id(path, side, c.existing_code, c.content),
        path=path,
        side=side,
        start_line=anchor.start_line if anchor else 0,
        end_line=anchor.end_line if anchor else 0,
        severity=c.severity,
        category=c.category,
        content=c.content,
        existing_code=c.existing_code if existing_code is None else existing_code,
        suggestion_code=c.suggestion_code,
        anchor=anchor.method if anchor else AnchorMethod.NONE,
        ambiguous=anchor.ambiguous if anchor else False,
        source=c.source,
        group=c.group,
        preexisting=c.preexisting,
        repeats=c.repeats,
    )


def anchor_comment(
    c: RawComment,
    files: Mapping[str, FileDiff],
    new_file_lines: Callable[[str], Sequence[str] | None],
    refile_candidates: Sequence[str] = (),
) -> tuple[Finding, str]:
    """Anchor a raw comment: its claimed file first (tiers 1–4), then a unique match in another
    changed file (``refiled``), then part of one line of the claimed file's hunks
    (:func:`fragment_anchor`), else ``start_line = end_line = 0`` (``none``).

    ``files`` maps paths (new and old) to diffs; a path the model copied as the prompt shows it
    (``a&amp;b.py``) is mapped back to the real one. ``refile_candidates`` are the paths
    eligible for re-filing (the reviewed files). Returns (finding, warning text or "").
    """
    warning = ""
    anchor: Anchor | None = None
    fd = files.get(c.path) or files.get(unescape_prompt_path(c.path))  # copied as shown
    has_quote = bool(quote_variants(c.existing_code))
    if fd is not None and has_quote:
        anchor = locate(fd, c.existing_code, new_file_lines(fd.path), c.line_hint)
    if anchor is None and has_quote:
        hits: list[Anchor] = []
        seen: set[int] = set()
        for p in refile_candidates:
            other = files.get(p)
            if other is None or other is fd or id(other) in seen:
                continue
            seen.add(id(other))
            a = locate(other, c.existing_code, None, None)
            if a is not None:
                hits.append(a)
        if len(hits) == 1:
            h = hits[0]
            anchor = Anchor(h.path, h.side, h.start_line, h.end_line, AnchorMethod.REFILED,
                            h.ambiguous)
            warning = f"comment filed against {c.path} quotes code of {h.path}; re-filed"
    if anchor is None and fd is not None and has_quote:
        anchor = fragment_anchor(fd, c.existing_code, c.line_hint)
    return make_finding(c, anchor, fd.path if fd else c.path), warning


def relocated_finding(c: RawComment, fd: FileDiff, snippet: str) -> Finding | None:
    """The finding of ``c`` when the re-location call's ``snippet`` anchors inside ``fd``'s
    diff (hunk tiers only, exact or loose); None otherwise. ``anchor = relocated``."""
    a = locate(fd, snippet, None, c.line_hint)
    if a is None:
        return None
    a = Anchor(a.path, a.side, a.start_line, a.end_line, AnchorMethod.RELOCATED, a.ambiguous)
    return make_finding(c, a, fd.path, existing_code=snippet.strip("\n"))
