"""Secret detection and redaction (spec §14). Pure: no processes, no environment, no network.

The rules are data (`patterns`: `config/secret_patterns.json`, its format, the keyword and
assignment tests that skip rules a text cannot match, and each regex compiled on first need).
A match counts when `values.is_secret_value` accepts its value (a heuristic rule's
`min_entropy`, code and plain data).

Every rule also skips placeholders (`changeme`, `xxxxxx`, `<your-token>`, `${VAR}`, `{{ x }}`,
`AKIA...EXAMPLE`; `values`).

A heuristic rule with keywords only matches from a line holding one of them to the end of the
next line (a name, an operator, a value: `"password":` with its value on the next line), so it is
run on those lines only.

A value written as string literals that the code joins (`"ghp_ab" + "cd…"`, adjacent literals
over several lines, `"".join(["AKIA", "…"])`, a JS template of literals; `joins`) is also checked
joined: when a rule matches the joined value across two or more pieces, each piece is part of
the secret.

`chunks.stream_rows` and `chunks.scan_rows` scan a text given in pieces (a blob too large to
hold) in bounded blocks.

Allow-listing makes a value "not a finding", never "send it": values in the caller's
allow-list (each entry a literal value or a regular expression matched against the whole value)
and matches on a line that carries the `ocr-hook: allow-secret` marker are left out of
`find_secrets`, but `redact` replaces them like every other secret.

Positions are counted on the text as given: lines are separated by "\\n" (so CRLF text works) and
are 1-based; columns are 0-based character offsets into that line. In a unified diff that means
diff lines, not file lines: mapping to the file is the caller's job (`comments.anchor`).

Redaction replaces each secret value by `[REDACTED:<type>]` and keeps every other character. A value
that spans lines (a PEM body) is replaced line by line: each body line becomes the placeholder after
its diff marker and indentation, and the line breaks, the BEGIN/END lines and diff metadata lines
(`@@`, `diff --git`, ...) stay, so the line count and the line numbers of a diff do not change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from .joins import literal_chains
from .patterns import Rule, rules

ALLOW_MARKER = "ocr-hook: allow-secret"  # inline opt-out for one line (still redacted)

# Patterns of rare paths, as text: `re` compiles them (and caches them) on first use only.
_PLACEHOLDER = r"\[REDACTED:[a-z0-9:\-]+\]"  # what redaction writes

# Redaction of a multi-line value.
_ALNUM = r"[A-Za-z0-9]"
_LINE_PREFIX = r"[+\- ]?[ \t]*"  # diff marker, then indentation
_DIFF_META = (
    r"@@ |diff --git |index [0-9a-f]|--- |\+\+\+ |(?:new|deleted) file mode |(?:old|new) mode "
    r"|similarity index |rename (?:from|to) |Binary files |\\ No newline"
)


class SecretHit(NamedTuple):
    """One secret in a text. `line` is 1-based; `start_col`/`end_col` are 0-based, end exclusive,
    on that line (`text.split("\\n")[line - 1][start_col:end_col]`). A value that continues onto
    later lines (a PEM body, which starts at the end of its BEGIN line) reports its first line,
    with `end_col` at the end of that line, and its full text in `value`. `value` is the secret
    itself: keep it in memory, never log it."""

    type: str
    line: int
    start_col: int
    end_col: int
    value: str


class _Span(NamedTuple):
    start: int  # offsets into the text, end exclusive
    end: int
    rank: int  # index of the rule in the data file; lower wins the type of merged spans
    type: str
    # the (start, end) pieces to replace when they are not the whole span (a value written as
    # string literals joined over several lines); empty: replace text[start:end]
    parts: tuple[tuple[int, int], ...] = ()


def find_secrets(text: str, allow: Sequence[str] = ()) -> list[SecretHit]:
    """Return the secrets in `text` that are findings, ordered by position. `allow` holds literal
    values or regular expressions (matched against the whole value) that are not findings; a
    match on a line carrying ALLOW_MARKER is not one either (both are still redacted by
    `redact`). Overlapping matches of several rules give one hit covering them all, typed by the
    most specific rule. A PEM private key block gives one hit on its BEGIN line; a value written
    as string literals over several lines gives one hit on the line of its first piece, whose
    `value` runs to the end of its last piece."""
    hits: list[SecretHit] = []
    line = 1
    scanned = 0  # offset up to which newlines have been counted into `line`
    for span in _find_spans(text, tuple(allow)):
        line += text.count("\n", scanned, span.start)
        scanned = span.start
        line_start = text.rfind("\n", 0, span.start) + 1
        line_end = text.find("\n", span.start)
        if line_end == -1:
            line_end = len(text)
        hits.append(SecretHit(
            type=span.type,
            line=line,
            start_col=span.start - line_start,
            end_col=min(span.end, line_end) - line_start,
            value=text[span.start:span.end],
        ))
    return hits


def redact(text: str, literals: Mapping[str, str] | None = None) -> tuple[str, int]:
    """Return (`text` with every secret value replaced by `[REDACTED:<type>]`, number of secrets
    replaced). Allow-listed and marked values are replaced too: there is no allow-list here on
    purpose (the count is `len(find_secrets(text))` when no line carries ALLOW_MARKER and no
    `literals` are given). `literals` maps values found by other means (the optional
    detect-secrets pass) to their placeholder type: every occurrence of each is replaced too
    (where it overlaps a rule's match, the merged value keeps the rule's type).
    Everything outside the values is kept character for character, including diff markers and
    `@@` lines; line breaks are never added or removed (a PEM body keeps one placeholder per
    line, a value split over string literals one placeholder per piece)."""
    spans = _find_spans(text, None)
    if literals:
        spans = _merge([*spans, *_literal_spans(text, literals)])
    parts: list[str] = []
    pos = 0
    for span in spans:
        for start, end in span.parts or ((span.start, span.end),):
            parts.append(text[pos:start])
            parts.append(_placeholder_for(text[start:end], span.type))
            pos = end
    parts.append(text[pos:])
    return "".join(parts), len(spans)


def _literal_spans(text: str, literals: Mapping[str, str]) -> list[_Span]:
    """A span for every occurrence of each non-empty value of `literals` (value → type), ranked
    after every rule; occurrences inside a placeholder already in `text` are skipped, so that
    redacting a redacted text changes nothing."""
    rank = len(rules())
    taken = [m.span() for m in re.finditer(_PLACEHOLDER, text)] if "[REDACTED:" in text else []
    spans: list[_Span] = []
    for value, type_ in literals.items():
        if not value:
            continue
        at = text.find(value)
        while at != -1:
            end = at + len(value)
            if not any(a < end and at < b for a, b in taken):
                spans.append(_Span(at, end, rank, type_))
            at = text.find(value, end)
    return spans


def _placeholder_for(value: str, type_: str) -> str:
    """The replacement of one secret value: the placeholder, or for a multi-line value one
    placeholder per line that carries secret characters, keeping line breaks ("\\r" included), the
    diff marker and indentation of each line, and lines without letters or digits."""
    placeholder = f"[REDACTED:{type_}]"
    if "\n" not in value:
        return placeholder
    pieces = value.split("\n")
    for i, piece in enumerate(pieces):
        body, cr = (piece[:-1], "\r") if piece.endswith("\r") else (piece, "")
        if not re.search(_ALNUM, body) or (i > 0 and re.match(_DIFF_META, body)):
            continue
        marker = re.match(_LINE_PREFIX, body) if i > 0 else None
        pieces[i] = (marker.group() if marker else "") + placeholder + cr
    return "\n".join(pieces)


def _find_spans(text: str, allow: tuple[str, ...] | None) -> list[_Span]:
    """All accepted rule matches as value spans, sorted, overlapping spans merged. `allow` None:
    every secret (redaction); a tuple: only findings (allow-list and marker applied)."""
    allowed = _allow_matchers(allow or ())
    lowered = text.lower()
    present: dict[str, bool] = {}  # keyword -> whether it occurs in lowered
    windows: dict[tuple[str, ...], list[tuple[int, int]]] = {}  # keywords -> line ranges
    spans: list[_Span] = []
    for rank, rule in enumerate(rules()):
        if not rule.may_match(lowered, present):
            continue
        for match in _matches(rule, text, lowered, windows):
            start, end = _value_span(match, rule.group)
            if start >= end:
                continue
            value = text[start:end]
            if not _accepted(value, rule.min_entropy):
                continue
            if allow is not None and (_is_allowed(value, allowed)
                                      or _has_allow_marker(text, match.start(), match.end())):
                continue
            spans.append(_Span(start, end, rank, rule.type))
    spans.extend(_joined_literal_spans(text, lowered, allow, allowed))
    if "[REDACTED:" in text:  # a value that takes part of a placeholder is none: a redacted
        # text redacted again stays as it is (`-a [REDACTED:x]` is no user:password pair)
        taken = [m.span() for m in re.finditer(_PLACEHOLDER, text)]
        spans = [s for s in spans if not any(a < s.end and s.start < b for a, b in taken)]
    return _merge(spans)


def _accepted(value: str, min_entropy: float | None) -> bool:
    """`values.is_secret_value`, imported with the first match (its checks compile a
    dozen regexes that a text without any match never needs)."""
    from .values import is_secret_value

    return is_secret_value(value, min_entropy)


def _matches(rule: Rule, text: str, lowered: str,
             windows: dict[tuple[str, ...], list[tuple[int, int]]] | None = None,
             ) -> Iterator[re.Match[str]]:
    """The matches of `rule` in `text` (`lowered` = `text.lower()`). A heuristic rule (one with
    `min_entropy` and `keywords`: a name, an operator and a value) only matches from a line that
    holds one of its keywords to the end of the next line, so it is run on those lines only:
    most of a large text (a lock file, minified code) is never searched with it. `windows`
    keeps those line ranges per keyword set during one scan (rules that share keywords)."""
    if rule.min_entropy is None or not rule.keywords or len(lowered) != len(text):
        yield from rule.pattern.finditer(text)
        return
    spans = None if windows is None else windows.get(rule.keywords)
    if spans is None:
        spans = _keyword_windows(text, lowered, rule.keywords)
        if windows is not None:
            windows[rule.keywords] = spans
    for lo, hi in spans:
        yield from rule.pattern.finditer(text, lo, hi)


def _keyword_windows(text: str, lowered: str, keywords: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) offsets of the merged line ranges that run from each line holding one of
    `keywords` to the end of the line after it."""
    starts = sorted({text.rfind("\n", 0, at) + 1
                     for k in keywords for at in _occurrences(lowered, k)})
    out: list[tuple[int, int]] = []
    lo = hi = -1
    for start in starts:
        if start > hi:
            if hi >= 0:
                out.append((lo, hi))
            lo = start
        end = text.find("\n", text.find("\n", start) + 1)  # the end of the next line
        hi = len(text) if end == -1 or text.find("\n", start) == -1 else end
    if hi >= 0:
        out.append((lo, hi))
    return out


def _occurrences(text: str, word: str) -> Iterator[int]:
    """Offsets of every occurrence of `word` in `text` (str.find: no regex)."""
    at = text.find(word)
    while at != -1:
        yield at
        at = text.find(word, at + 1)


def _joined_literal_spans(
    text: str, lowered: str, allow: tuple[str, ...] | None,
    allowed: Sequence[tuple[str, re.Pattern[str] | None]],
) -> list[_Span]:
    """Secrets whose value is written as two or more string literals joined (`joins`: `+`,
    adjacency over lines, `"".join([...])`, templates): each chain is joined after the text
    before its first piece on that line (so `aws_secret_access_key = ("..."` keeps its name)
    and the rules are run on the joined text; a match that takes characters from at least two
    pieces (its value from one or more: `"Basic " + "dXNl…"`) becomes one span over the
    pieces its value touches, with those pieces as `parts`."""
    out: list[_Span] = []
    for chain in literal_chains(text, lowered):
        pieces: list[tuple[int, int, int]] = []  # (offset in joined, start in text, length)
        joined_parts = [chain.head, ' "']
        offset = len(chain.head) + 2
        for start, end in chain.pieces:
            pieces.append((offset, start, end - start))
            joined_parts.append(text[start:end])
            offset += end - start
        joined = "".join(joined_parts) + '"'
        joined_lowered = joined.lower()
        for rank, rule in enumerate(rules()):
            if not rule.may_match(joined_lowered):
                continue
            for match in rule.pattern.finditer(joined):
                start, end = _value_span(match, rule.group)
                touched = [(max(start, o) - o + t, min(end, o + n) - o + t)
                           for o, t, n in pieces if start < o + n and o < end]
                spanned = sum(match.start() < o + n and o < match.end() for o, _, n in pieces)
                if not touched or spanned < 2 or not _accepted(joined[start:end],
                                                               rule.min_entropy):
                    continue
                if allow is not None and (
                        _is_allowed(joined[start:end], allowed)
                        or _has_allow_marker(text, touched[0][0], touched[-1][1])):
                    continue
                out.append(_Span(touched[0][0], touched[-1][1], rank, rule.type,
                                 tuple(touched)))
    return out


def _value_span(match: re.Match[str], group: int) -> tuple[int, int]:
    """(start, end) of the value: the whole match for group 0, else the first capturing group
    that took part in the match."""
    if group == 0:
        return match.span()
    for index in range(group, match.re.groups + 1):
        if match.start(index) != -1:
            return match.span(index)
    return (0, 0)


def _merge(spans: list[_Span]) -> list[_Span]:
    """Sort spans and merge overlapping ones; a merged span takes the type of its lowest rank."""
    spans.sort(key=lambda s: (s.start, -s.end, s.rank))
    merged: list[_Span] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            best = last if last.rank <= span.rank else span
            parts: tuple[tuple[int, int], ...] = ()
            if last.parts or span.parts:
                parts = _union(last.parts or ((last.start, last.end),),
                               span.parts or ((span.start, span.end),))
            merged[-1] = _Span(last.start, max(last.end, span.end), best.rank, best.type, parts)
        else:
            merged.append(span)
    return merged


def _union(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]
           ) -> tuple[tuple[int, int], ...]:
    """Sorted, disjoint union of two lists of (start, end) ranges."""
    out: list[tuple[int, int]] = []
    for start, end in sorted([*a, *b]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


def _has_allow_marker(text: str, start: int, end: int) -> bool:
    """Whether any line touched by text[start:end] carries ALLOW_MARKER."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return ALLOW_MARKER in text[line_start:(len(text) if line_end == -1 else line_end)]


def _allow_matchers(allow: Sequence[str]) -> list[tuple[str, re.Pattern[str] | None]]:
    """Each allow-list entry as (literal, compiled regex or None when it is not a valid regex)."""
    matchers: list[tuple[str, re.Pattern[str] | None]] = []
    for entry in allow:
        try:
            compiled: re.Pattern[str] | None = re.compile(entry)
        except re.error:
            compiled = None
        matchers.append((entry, compiled))
    return matchers


def is_allowed(value: str, allow: Sequence[str]) -> bool:
    """Whether `value` is in the allow-list `allow` (literal values, or regular expressions
    matched against the whole value; an entry that does not compile is a literal only)."""
    return _is_allowed(value, _allow_matchers(allow))


def _is_allowed(value: str, matchers: Sequence[tuple[str, re.Pattern[str] | None]]) -> bool:
    return any(value == literal or (rx is not None and rx.fullmatch(value) is not None)
               for literal, rx in matchers)
