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
# Where two literals meet: a closing quote, a join of one or more characters, an opening quote;
# or two quotes side by side that are not part of three (a docstring's """). Literals never span
# lines, so only the lines around these junctions are walked literal by literal.
_JUNCTION = re.compile(
    rf"[\"'`](?:(?=[ \t+.&|)\\\r\n]){_JOIN.pattern}[\"'`]|(?<![\"'`][\"'`])[\"'`](?![\"'`]))")
_HEAD_TRIM = " \t([{,"

_LIT = r"""[rbuRBU]?(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')"""
_SEP = r"[ \t]*,[ \t]*(?:\r?\n[+\- ]?[ \t]*)?"
_S = r"[ \t]*"
_ITEMS = rf"(?P<items>{_LIT}(?:{_SEP}{_LIT})+)"  # two or more literals, comma-separated
_EMPTY = r"""(?:""|'')"""
# Join calls with an empty separator, each found at its word: (the text just before the word,
# lower case; how far back the call starts; the list after the word's "(", or None for a list
# written before the call).
_JOIN_CALLS: dict[str, tuple[tuple[str, int, str | None], ...]] = {
    "join(": (
        ('"".', 3, rf"{_S}[\[(]?{_S}{_ITEMS}"),                # Python "".join([...])
        ("''.", 3, rf"{_S}[\[(]?{_S}{_ITEMS}"),
        ("strings.", 8, rf"{_S}\[\]string\{{{_S}{_ITEMS}"),      # Go strings.Join
        ("string.", 7, rf"{_S}{_EMPTY}{_S},{_S}{_ITEMS}"),       # Java String.join("", ...)
        ("].", 0, None),                                         # JS / Ruby [...].join("")
    ),
    "implode(": (("", 0, rf"{_S}(?:{_EMPTY}{_S},{_S})?(?:\[|array\(){_S}{_ITEMS}"),),  # PHP
    "concat(": (("", 0, rf"{_S}{_ITEMS}"),),                    # SQL, PHP, JS concat(...)
}
_LIST_BEFORE_JOIN = rf"\[{_S}{_ITEMS}{_S},?{_S}\]"
_EMPTY_JOIN_ARGS = ('("")', "('')")
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
    for word in _JOIN_CALLS:
        if word in lowered:
            chains.extend(_join_call_chains(text, lowered, word))
    if "${" in text and "`" in text:
        chains.extend(_template_chains(text))
    return chains


def _head(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:at].rstrip(_HEAD_TRIM)


def _adjacent_chains(text: str) -> list[Chain]:
    """Runs of literals joined by `_JOIN`, walked only over the lines around junctions."""
    chains: list[Chain] = []
    lo = hi = -1
    for junction in _JUNCTION.finditer(text):
        start = text.rfind("\n", 0, junction.start()) + 1
        if start > hi:
            if hi >= 0:
                _walk(text, lo, hi, chains)
            lo = start
        end = text.find("\n", junction.end() - 1)
        hi = len(text) if end == -1 else end
    if hi >= 0:
        _walk(text, lo, hi, chains)
    return chains


def _walk(text: str, lo: int, hi: int, chains: list[Chain]) -> None:
    """Add the chains of adjacent literals within text[lo:hi] (whole lines) to `chains`."""
    current: list[re.Match[str]] = []
    for m in LITERAL.finditer(text, lo, hi):
        if current and _JOIN.fullmatch(text, current[-1].end(), m.start()):
            current.append(m)
            continue
        _close(text, current, chains)
        current = [m]
    _close(text, current, chains)


def _close(text: str, run: list[re.Match[str]], chains: list[Chain]) -> None:
    """Add the chain of the literals `run` to `chains` unless fewer than two are non-empty
    (the "" of a docstring's quotes carries nothing)."""
    if len(run) > 1:
        pieces = tuple(m.span(2) for m in run if m.end(2) > m.start(2))
        if len(pieces) > 1:
            chains.append(Chain(_head(text, run[0].start()), pieces))


def _join_call_chains(text: str, lowered: str, word: str) -> list[Chain]:
    """The join calls (`_JOIN_CALLS`) at each occurrence of `word`."""
    chains: list[Chain] = []
    at = lowered.find(word)
    while at != -1:
        after = at + len(word)
        for before, back, items in _JOIN_CALLS[word]:
            if not lowered.startswith(before, at - len(before)):
                continue
            if items is not None:
                found = re.compile(items).match(text, after)
                call_start = at - back
            else:  # the list ends just before "].join(" and is on the same line
                if not text.startswith(_EMPTY_JOIN_ARGS, at + 4):
                    continue
                open_at = text.rfind("[", text.rfind("\n", 0, at) + 1, at)
                found = re.compile(_LIST_BEFORE_JOIN).fullmatch(text, open_at, at - 1) \
                    if open_at != -1 else None
                call_start = open_at
            if found is not None:
                start, stop = found.span("items")
                pieces = tuple(m.span(2) for m in LITERAL.finditer(text, start, stop)
                               if m.end(2) > m.start(2))
                if len(pieces) > 1:
                    chains.append(Chain(_head(text, call_start), pieces))
            break
        at = lowered.find(word, after)
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
