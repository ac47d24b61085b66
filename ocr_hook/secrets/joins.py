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
# What may stand between two literals that are joined: over a line break ...
_JOIN_OVER_LINES = re.compile(
    r"[ \t]*(?:[+.&]|\|\||\.\.)?[ \t]*\\?\r?\n[+\- ]?[ \t]*(?:[+.&]|\|\||\.\.)?[ \t]*")
# ... or on one line.
_JOIN_ON_LINE = re.compile(r"[ \t]*(?:[+.&]|\|\||\.\.|\)?\.concat\()?[ \t]*")
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
_TEMPLATE = r"`([^`\\\r\n]*\$\{[ \t]*[\"'][^`\r\n]*)`"
_TEMPLATE_PART = r"\$\{[ \t]*([\"'])([^\"'\\\r\n]*)\1[ \t]*\}|(\$\{[^}]*\})|([^$]+|\$)"


class Chain(NamedTuple):
    """Literal pieces joined into one value. `head` is the text before the value on the line
    of its first piece (a name and operator: `TOKEN =`), trimmed; `pieces` are the (start,
    end) offsets of each piece's characters in the text, in order (two or more)."""

    head: str
    pieces: tuple[tuple[int, int], ...]


def literal_chains(text: str, lowered: str) -> list[Chain]:
    """Every chain of two or more joined literal pieces in `text` (module docstring; `lowered`
    is `text.lower()`), in the order found: adjacent literals first, then join calls, then
    templates. A piece may be in more than one chain."""
    chains = _adjacent_chains(text)
    if any(word in lowered for word in _JOIN_CALL_WORDS):
        chains.extend(_join_call_chains(text))
    if "${" in text and "`" in text:
        chains.extend(_template_chains(text))
    return chains


def _head(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:at].rstrip(_HEAD_TRIM)


def _adjacent_chains(text: str) -> list[Chain]:
    chains: list[Chain] = []
    current: list[re.Match[str]] = []

    def close() -> None:
        if len(current) > 1:
            chains.append(Chain(_head(text, current[0].start()),
                                tuple(m.span(2) for m in current)))

    for m in LITERAL.finditer(text):
        if current and (_JOIN_ON_LINE.fullmatch(text, current[-1].end(), m.start())
                        or _JOIN_OVER_LINES.fullmatch(text, current[-1].end(), m.start())):
            current.append(m)
            continue
        close()
        current = [m]
    close()
    return chains


def _join_call_chains(text: str) -> list[Chain]:
    chains: list[Chain] = []
    for call in re.finditer(_JOIN_CALL, text):
        name = next(k for k, v in call.groupdict().items() if v is not None)
        start, end = call.span(name)
        pieces = tuple(m.span(2) for m in LITERAL.finditer(text, start, end))
        if len(pieces) > 1:
            chains.append(Chain(_head(text, call.start()), pieces))
    return chains


def _template_chains(text: str) -> list[Chain]:
    """Templates whose substitutions are string literals: each run of the template's text and
    each substituted literal is a piece; a substitution of an expression splits the chain."""
    chains: list[Chain] = []
    for tpl in re.finditer(_TEMPLATE, text):
        head = _head(text, tpl.start())
        run: list[tuple[int, int]] = []
        for part in re.compile(_TEMPLATE_PART).finditer(text, tpl.start(1), tpl.end(1)):
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
