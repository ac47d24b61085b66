"""String literals that a program joins into one value, found in source text so that the rules
can check the joined value (`redaction`). Pure: no I/O.

A secret split into pieces is still one secret: `"ghp_ab" + "cd…"`, `("AKIA…"\\n "…")`,
`"".join(["AKIA", "…"])`, `` `${"sk_live_"}…` ``. The joins understood, each a fact of the
language named:

- adjacent literals with nothing or a concatenation operator between them, on one line or
  over line breaks (each line may carry a diff marker): `+` (Java, JS, Python, Go, C#), `.`
  (PHP, Perl), `..` (Lua), `&` (VB), `||` (SQL), `.concat(` (JS, Java), a shell line
  continuation `\\`, nothing (Python and C adjacent literals, shell words `"a""b"`);
- join calls with an empty separator over a list of literals: `"".join([...])` (Python),
  `[...].join("")` (JS, Ruby), `strings.Join([]string{...}, "")` (Go),
  `String.join("", ...)` (Java), `implode([...])` / `implode("", [...])` (PHP), `concat(...)`
  (SQL, PHP, JS);
- a JS / TS template literal on one line whose substitutions are string literals
  (`` `${"sk_live_"}abc` ``, `` `ghp_${"abc"}` ``); a substitution of anything else ends the
  chain there (its value is not in the text).

A piece is the characters between the quotes of one literal (no quote, backslash or line
break inside), or a run of a template's own text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# A literal: quote, characters, the same quote.
LITERAL = re.compile(r"([\"'`])([^\"'`\\\r\n]*)\1")
# What may stand between two literals that are joined: an operator or nothing, on one line or
# around one line break (after which a diff marker and indentation may come).
_OP = r"(?:[+.&]|\|\||\.\.|\)?\.concat\()"
_JOIN = re.compile(
    rf"[ \t]*{_OP}?[ \t]*(?:\\?\r?\n[+\- ]?[ \t]*{_OP}?[ \t]*)?")
# Where two literals meet (a closing quote, a join, an opening quote): a text without one has
# no chain of adjacent literals, and is not walked literal by literal (a lock file has none).
_JUNCTION = re.compile(rf"[\"'`]{_JOIN.pattern}[\"'`]")
_JOIN_FIRST = frozenset(" \t+.&|)\\\r\n")
_HEAD_TRIM = " \t([{,"

_LIT = r"""[rbuRBU]?(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')"""
_SEP = r"[ \t]*,[ \t]*(?:\r?\n[+\- ]?[ \t]*)?"
_LIST = rf"{_LIT}(?:{_SEP}{_LIT})+"
_EMPTY = r"""(?:""|'')"""
_S = r"[ \t]*"
# Join calls with an empty separator; the group `items` holds the listed literals.
_JOIN_CALL = (
    rf"(?:{_EMPTY}{_S}\.{_S}join\({_S}[\[(]?{_S}(?P<py>{_LIST})"
    rf"|\[{_S}(?P<js>{_LIST}){_S},?{_S}\]{_S}\.join\({_S}{_EMPTY}{_S}\)"
    rf"|strings\.Join\({_S}\[\]string\{{{_S}(?P<go>{_LIST})"
    rf"|String\.join\({_S}{_EMPTY}{_S},{_S}(?P<java>{_LIST})"
    rf"|implode\({_S}(?:{_EMPTY}{_S},{_S})?(?:\[|array\(){_S}(?P<php>{_LIST})"
    rf"|(?i:concat)\({_S}(?P<sql>{_LIST}))"
)
_JOIN_CALL_WORDS = ("join(", "implode(", "concat(")
_JOIN_CALL_LINES = 8
_TEMPLATE_SUB = r"\$\{[ \t]*[\"']"  # a substitution that starts with a string literal
_TEMPLATE_PART = r"\$\{[ \t]*([\"'])([^\"'\\\r\n]*)\1[ \t]*\}|(\$\{[^}]*\})|([^$]+|\$)"


class Chain(NamedTuple):
    """Literal pieces joined into one value. `head` is the text before the value on the line
    of its first piece (a name and operator: `TOKEN =`), trimmed; `pieces` are the (start,
    end) offsets of each piece's characters in the text, in order (two or more)."""

    head: str
    pieces: tuple[tuple[int, int], ...]


def literal_chains(text: str, lowered: str) -> list[Chain]:
    """Every chain of two or more non-empty joined literal pieces in `text` (module docstring;
    `lowered` is `text.lower()`), in the order found: adjacent literals first, then join calls,
    then templates. A piece may be in more than one chain."""
    chains = _adjacent_chains(text)
    if any(word in lowered for word in _JOIN_CALL_WORDS):
        chains.extend(_join_call_chains(text, lowered))
    if "${" in text and "`" in text:
        chains.extend(_template_chains(text))
    return chains


def _head(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:at].rstrip(_HEAD_TRIM)


def _adjacent_chains(text: str) -> list[Chain]:
    if not _JUNCTION.search(text):
        return []
    chains: list[Chain] = []
    current: list[re.Match[str]] = []
    join = _JOIN.fullmatch
    for m in LITERAL.finditer(text):
        if current:
            end = current[-1].end()
            # a join starts with one of these, or is empty: the cheap test first
            if (m.start() == end or text[end] in _JOIN_FIRST) and join(text, end, m.start()):
                current.append(m)
                continue
            if len(current) > 1:
                _close(text, current, chains)
        current = [m]
    if len(current) > 1:
        _close(text, current, chains)
    return chains


def _close(text: str, run: list[re.Match[str]], chains: list[Chain]) -> None:
    """Add the chain of the literals `run` to `chains` unless fewer than two are non-empty
    (the "" of a docstring's quotes carries nothing)."""
    pieces = tuple(m.span(2) for m in run if m.end(2) > m.start(2))
    if len(pieces) > 1:
        chains.append(Chain(_head(text, run[0].start()), pieces))


def _join_call_chains(text: str, lowered: str) -> list[Chain]:
    """Join calls (`_JOIN_CALL`), looked for only from the start of each line holding a join
    word to the end of the eighth line after it (a list of literals written over lines)."""
    chains: list[Chain] = []
    pattern = re.compile(_JOIN_CALL)
    end = -1
    for word in _JOIN_CALL_WORDS:
        at = lowered.find(word)
        while at != -1:
            lo = text.rfind("\n", 0, at) + 1
            hi = at
            for _ in range(_JOIN_CALL_LINES):
                hi = text.find("\n", hi + 1)
                if hi == -1:
                    hi = len(text)
                    break
            for call in pattern.finditer(text, max(lo, end), hi):
                name = next(k for k, v in call.groupdict().items() if v is not None)
                start, stop = call.span(name)
                pieces = tuple(m.span(2) for m in LITERAL.finditer(text, start, stop))
                if len(pieces) > 1:
                    chains.append(Chain(_head(text, call.start()), pieces))
                end = max(end, call.end())
            at = lowered.find(word, at + len(word))
    return chains


def _template_chains(text: str) -> list[Chain]:
    """Templates whose substitutions are string literals: each run of the template's text and
    each substituted literal is a piece; a substitution of an expression splits the chain.
    Looked for around each `${` followed by a quote, between the backticks of its line."""
    chains: list[Chain] = []
    part_re = re.compile(_TEMPLATE_PART)
    done = -1  # end of the last template taken
    for sub in re.finditer(_TEMPLATE_SUB, text):
        line_start = text.rfind("\n", 0, sub.start()) + 1
        line_end = text.find("\n", sub.end())
        left = text.rfind("`", line_start, sub.start())
        right = text.find("`", sub.end(), len(text) if line_end == -1 else line_end)
        if left == -1 or right == -1 or left < done:
            continue
        done = right
        head = _head(text, left)
        run: list[tuple[int, int]] = []
        for part in part_re.finditer(text, left + 1, right):
            if part.group(3) is not None:  # ${expr}: the value goes on elsewhere
                if len(run) > 1:
                    chains.append(Chain(head, tuple(run)))
                run = []
                continue
            span = part.span(2) if part.group(2) is not None else part.span(4)
            if span[1] > span[0]:
                run.append(span)
        if len(run) > 1:
            chains.append(Chain(head, tuple(run)))
    return chains
