"""Secret detection and redaction (SPEC §14). Pure: no processes, no environment, no network.

The rules are data: `config/secret_patterns.json` (read via `resources`) is a JSON list of
`{"type", "regex", "group", "keywords", "min_entropy", "description"}` objects, tried in file
order (specific rules first, so when two rules cover the same characters the earlier rule names
the hit):

- `type`: the placeholder name, `[REDACTED:<type>]`.
- `regex`: a Python `re` pattern applied to the whole text (a match may span lines: PEM blocks).
- `group`: 0 for the whole match; 1 for "the value": the first capturing group that took part in
  the match (a rule whose value can be written in several forms gives each form its own group).
- `keywords` (optional): lower-case strings of which every match holds at least one (ignoring
  case); a text that holds none of them is not searched with the rule at all (the cost of a
  scan is mostly rules run over text they cannot match: a lock file holds no `ghp_`).
- `min_entropy`: None for rules whose format is distinctive (`AKIA...`, `ghp_...`). A number
  marks a heuristic rule (secret-like name = literal): the value's Shannon entropy in bits per
  character must reach it (0.5 less for hex-only values, whose alphabet has 16 characters), and
  values that read as code or plain data rather than a secret are skipped: calls and subscripts
  (`get_password()`, `os.environ[`), dotted names (`process.env.API_KEY`), `$VAR`, numbers, URLs
  and ARNs without credentials, names and paths made of words (`MY_APP_SECRET_V2`).

Every rule also skips placeholders (`changeme`, `xxxxxx`, `<your-token>`, `${VAR}`, `{{ x }}`,
`AKIA...EXAMPLE`).

A heuristic rule with keywords only matches from a line holding one of them to the end of the
next line (a name, an operator, a value: `"password":` with its value on the next line), so it is
run on those lines only.

A value written as adjacent string literals over several lines (`("AKIA0123"\\n "4567...")`,
`"abc" +\\n "def"`) is also checked joined: when a rule matches the joined value across two or
more pieces, each piece is part of the secret.

`find_secrets_in_chunks` scans a text given in pieces (a blob too large to hold) in windows of
whole lines with an overlap, with the hits of one scan of the whole text.

Allow-listing makes a value "not a finding", never "send it" (issue 17): values in the caller's
allow-list (each entry a literal value or a regular expression matched against the whole value)
and matches on a line that carries the `ocr-hook: allow-secret` marker are left out of
`find_secrets`, but `redact` replaces them like every other secret.

Positions are counted on the text as given: lines are separated by "\\n" (so CRLF text works) and
are 1-based; columns are 0-based character offsets into that line. In a unified diff that means
diff lines, not file lines: mapping to the file is the caller's job (`anchor`).

Redaction replaces each secret value by `[REDACTED:<type>]` and keeps every other character. A value
that spans lines (a PEM body) is replaced line by line: each body line becomes the placeholder after
its diff marker and indentation, and the line breaks, the BEGIN/END lines and diff metadata lines
(`@@`, `diff --git`, ...) stay, so the line count and the line numbers of a diff do not change.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from . import resources

RULES_RESOURCE = "secret_patterns.json"  # built-in data, read through ocr_hook.resources
ALLOW_MARKER = "ocr-hook: allow-secret"  # SPEC §14 / issue 10: inline opt-out for one line

# Placeholder checks. Words are looked for only in values up to this length, so that a long random
# body (a PEM key, ~1,700 base64 characters) is not skipped because "dummy" occurs in it by chance.
_PLACEHOLDER_WORDS = ("example", "changeme", "change_me", "placeholder", "dummy", "redacted",
                      "your_", "your-", "<your", "xxxxxx", "******")
_PLACEHOLDER_WORDS_MAX_LEN = 256
_PLACEHOLDER_VALUES = frozenset({
    "password", "passwd", "pass", "secret", "changeme", "change_me", "admin", "root", "test",
    "guest", "user", "username", "postgres", "mysql", "redis", "example", "dummy", "placeholder",
    "none", "null", "nil", "undefined", "todo", "tbd", "xxx", "***", "...",
})
_ANGLE_PLACEHOLDER = re.compile(r"<[A-Za-z][\w .\-]*>")  # arn:aws:kms:<region>:..., <user>:<pw>
_PLACEHOLDER_RE = re.compile(
    r"<[^<>]*>"                       # <your-token>
    r"|\$\{[^{}]*\}"                  # ${VAR}
    r"|\$\(?[A-Za-z_][A-Za-z0-9_]*\)?"  # $VAR, $(VAR)
    r"|%[A-Za-z_][A-Za-z0-9_]*%"      # %VAR%
    r"|\{[^{}]*\}"                    # {password} (str.format)
    r"|(.)\1*"                        # one repeated character: xxxxxxxx, ********
)
_TEMPLATE_MARKS = ("${", "{{", "}}", "%(", "$(")

# Code-reference checks for heuristic rules: a value that names something rather than being it.
_WORDY_PART = re.compile(r"[a-z]+[0-9]*|[A-Z]+[0-9]*|[A-Z][a-z]+[0-9]*|[0-9]+")
_CAMEL_CASE = re.compile(  # getTokenFromVault, PKCS7PrivateKeyTypes, apiKey
    r"(?:[A-Z]{2,}[0-9]*(?=[A-Z][a-z]{2})|[A-Z]?[a-z]{2,}[0-9]*)"
    r"(?:[A-Z]{2,}[0-9]*(?=[A-Z][a-z]{2})|[A-Z][a-z]{2,}[0-9]*)+")
_PART_SEPARATORS = re.compile(r"[_\-/.:]")
_SIGIL_NAME = re.compile(r"[$%@!&*][A-Za-z_][\w.\-]*%?")  # $TOKEN, %APPDATA%, *yaml_alias
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|[au]rn:")  # plain URLs, ARNs and URNs
_DOTTED_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")  # rust_openssl.hpke.X25519
_CALL_OR_INDEX = re.compile(r"[A-Za-z_$][\w.$]*[(\[]")  # get_password(), os.environ[
_CODE_CHARS = frozenset("{}")
# Hex has at most 4 bits per character, and a random 16-digit hex value averages about 3.2, so
# hex-only values get this much off a rule's min_entropy.
_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_ENTROPY_ALLOWANCE = 0.5

# Scanning a text given in chunks (find_secrets_in_chunks; issue 20: a blob too large to hold).
CHUNK_WINDOW_CHARS = 256 * 1024  # characters scanned at a time (ours)
CHUNK_OVERLAP_LINES = 64  # lines of the previous window scanned again (ours; a 4096-bit RSA PEM
#                           block has 51 lines)

# Redaction of a multi-line value.
_ALNUM = re.compile(r"[A-Za-z0-9]")
_LINE_PREFIX = re.compile(r"[+\- ]?[ \t]*")  # diff marker, then indentation
_DIFF_META = re.compile(
    r"@@ |diff --git |index [0-9a-f]|--- |\+\+\+ |(?:new|deleted) file mode |(?:old|new) mode "
    r"|similarity index |rename (?:from|to) |Binary files |\\ No newline"
)


@dataclass(frozen=True)
class SecretHit:
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


@dataclass(frozen=True)
class _Rule:
    type: str
    pattern: re.Pattern[str]
    group: int
    min_entropy: float | None
    keywords: tuple[str, ...]  # lower case; the rule runs only on a text holding one of them


@dataclass(frozen=True)
class _Span:
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


def redact(text: str) -> tuple[str, int]:
    """Return (`text` with every secret value replaced by `[REDACTED:<type>]`, number of secrets
    replaced). Allow-listed and marked values are replaced too: there is no allow-list here on
    purpose (the count is `len(find_secrets(text))`, with no allow-list). Everything outside
    the values is kept character for character, including diff markers and `@@` lines; line
    breaks are never added or removed (a PEM body keeps one placeholder per line, a value split
    over string literals one placeholder per piece)."""
    spans = _find_spans(text, None)
    parts: list[str] = []
    pos = 0
    for span in spans:
        for start, end in span.parts or ((span.start, span.end),):
            parts.append(text[pos:start])
            parts.append(_placeholder_for(text[start:end], span.type))
            pos = end
    parts.append(text[pos:])
    return "".join(parts), len(spans)


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
        if not _ALNUM.search(body) or (i > 0 and _DIFF_META.match(body)):
            continue
        marker = _LINE_PREFIX.match(body) if i > 0 else None
        pieces[i] = (marker.group() if marker else "") + placeholder + cr
    return "\n".join(pieces)


def _find_spans(text: str, allow: tuple[str, ...] | None) -> list[_Span]:
    """All accepted rule matches as value spans, sorted, overlapping spans merged. `allow` None:
    every secret (redaction); a tuple: only findings (allow-list and marker applied)."""
    allowed = _allow_matchers(allow or ())
    lowered = text.lower()
    spans: list[_Span] = []
    for rank, rule in enumerate(_rules()):
        if rule.keywords and not any(k in lowered for k in rule.keywords):
            continue
        for match in _matches(rule, text, lowered):
            start, end = _value_span(match, rule.group)
            if start >= end:
                continue
            value = text[start:end]
            if not _is_secret_value(value, rule):
                continue
            if allow is not None and (_is_allowed(value, allowed)
                                      or _has_allow_marker(text, match.start(), match.end())):
                continue
            spans.append(_Span(start, end, rank, rule.type))
    spans.extend(_joined_literal_spans(text, allow, allowed))
    return _merge(spans)


def _matches(rule: _Rule, text: str, lowered: str) -> Iterator[re.Match[str]]:
    """The matches of `rule` in `text` (`lowered` = `text.lower()`). A heuristic rule (one with
    `min_entropy` and `keywords`: a name, an operator and a value) only matches from a line that
    holds one of its keywords to the end of the next line, so it is run on those lines only:
    most of a large text (a lock file, minified code) is never searched with it."""
    if rule.min_entropy is None or not rule.keywords or len(lowered) != len(text):
        yield from rule.pattern.finditer(text)
        return
    starts = sorted({text.rfind("\n", 0, at) + 1
                     for k in rule.keywords for at in _occurrences(lowered, k)})
    lo = hi = -1
    for start in starts:
        if start > hi:
            if hi >= 0:
                yield from rule.pattern.finditer(text, lo, hi)
            lo = start
        end = text.find("\n", text.find("\n", start) + 1)  # the end of the next line
        hi = len(text) if end == -1 or text.find("\n", start) == -1 else end
    if hi >= 0:
        yield from rule.pattern.finditer(text, lo, hi)


def _occurrences(text: str, word: str) -> Iterator[int]:
    """Offsets of every occurrence of `word` in `text` (str.find: no regex)."""
    at = text.find(word)
    while at != -1:
        yield at
        at = text.find(word, at + 1)


# String literals joined over line breaks: `"a"\n "b"` (Python, C), `"a" +\n "b"` (Java, JS),
# `"a" .\n "b"` (PHP), `"a" &\n "b"` (VB), `"a" \\\n "b"` (shell); each line may carry a diff
# marker. A piece holds no quote, backslash or line break.
_LITERAL = re.compile(r"([\"'`])([^\"'`\\\r\n]*)\1")
_LITERAL_JOIN = re.compile(
    r"[ \t]*(?:[+.&]|\|\|)?[ \t]*\\?\r?\n[+\- ]?[ \t]*(?:[+.&]|\|\|)?[ \t]*")
_JOIN_PREFIX_TRIM = " \t([{,"


def _joined_literal_spans(
    text: str, allow: tuple[str, ...] | None,
    allowed: Sequence[tuple[str, re.Pattern[str] | None]],
) -> list[_Span]:
    """Secrets whose value is written as two or more string literals joined over line breaks:
    each chain of literals is joined (after the text before its first piece on that line, so
    `aws_secret_access_key = ("..."` keeps its name) and the rules are run on the joined text;
    a match that takes characters from at least two pieces becomes one span over the pieces,
    with the pieces it touches as `parts`."""
    if "\n" not in text:
        return []
    out: list[_Span] = []
    for chain in _literal_chains(text):
        first = chain[0]
        line_start = text.rfind("\n", 0, first.start()) + 1
        head = text[line_start:first.start()].rstrip(_JOIN_PREFIX_TRIM) + " " + first.group(1)
        pieces: list[tuple[int, int, int]] = []  # (offset in joined, start in text, length)
        joined_parts = [head]
        offset = len(head)
        for m in chain:
            pieces.append((offset, m.start(2), m.end(2) - m.start(2)))
            joined_parts.append(m.group(2))
            offset += m.end(2) - m.start(2)
        joined = "".join(joined_parts) + first.group(1)
        lowered = joined.lower()
        for rank, rule in enumerate(_rules()):
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            for match in rule.pattern.finditer(joined):
                start, end = _value_span(match, rule.group)
                touched = [(max(start, o) - o + t, min(end, o + n) - o + t)
                           for o, t, n in pieces if start < o + n and o < end]
                if len(touched) < 2 or not _is_secret_value(joined[start:end], rule):
                    continue
                if allow is not None and (
                        _is_allowed(joined[start:end], allowed)
                        or _has_allow_marker(text, touched[0][0], touched[-1][1])):
                    continue
                out.append(_Span(touched[0][0], touched[-1][1], rank, rule.type,
                                 tuple(touched)))
    return out


def _literal_chains(text: str) -> list[list[re.Match[str]]]:
    """Runs of two or more string literals separated only by a join (`_LITERAL_JOIN`) that
    crosses a line break."""
    chains: list[list[re.Match[str]]] = []
    current: list[re.Match[str]] = []
    for m in _LITERAL.finditer(text):
        if current and _LITERAL_JOIN.fullmatch(text, current[-1].end(), m.start()):
            current.append(m)
            continue
        if len(current) > 1:
            chains.append(current)
        current = [m]
    if len(current) > 1:
        chains.append(current)
    return chains


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


def _is_allowed(value: str, matchers: Sequence[tuple[str, re.Pattern[str] | None]]) -> bool:
    return any(value == literal or (rx is not None and rx.fullmatch(value) is not None)
               for literal, rx in matchers)


def _is_secret_value(value: str, rule: _Rule) -> bool:
    """Whether a matched value is a real secret for `rule` (see the module docstring)."""
    if not _ALNUM.search(value) or _is_placeholder(value):
        return False
    if rule.min_entropy is None:
        return True
    threshold = rule.min_entropy - (_HEX_ENTROPY_ALLOWANCE if _HEX.fullmatch(value) else 0.0)
    return not _looks_like_code(value) and _shannon_entropy(value) >= threshold


def _is_placeholder(value: str) -> bool:
    """`changeme`, `xxxxxxxx`, `<your-token>`, `${VAR}`, `{{ secrets.X }}`, `AKIA...EXAMPLE`, ..."""
    stripped = value.strip()
    lowered = stripped.lower()
    if lowered in _PLACEHOLDER_VALUES or _PLACEHOLDER_RE.fullmatch(stripped):
        return True
    if any(mark in stripped for mark in _TEMPLATE_MARKS) or _ANGLE_PLACEHOLDER.search(stripped):
        return True
    return len(lowered) <= _PLACEHOLDER_WORDS_MAX_LEN and any(
        word in lowered for word in _PLACEHOLDER_WORDS)


def _looks_like_code(value: str) -> bool:
    """Whether a value names something instead of being a secret: a call or subscript
    (`get_password()`, `os.environ[`), a variable (`$TOKEN`), a number, a URL or ARN without
    credentials, a dotted name (`process.env.API_KEY`), or a name or path made of words
    (`MY_APP_SECRET_V2`, `getTokenFromVault`, `/run/secrets/db_password`)."""
    if _CALL_OR_INDEX.match(value) or any(ch in _CODE_CHARS for ch in value):
        return True
    if value.isdigit() or _SIGIL_NAME.fullmatch(value) or _URL.match(value):
        return True
    if _DOTTED_NAME.fullmatch(value.rstrip(")]")):  # also at the end of a call: f(x=a.b))
        return True
    parts = _PART_SEPARATORS.split(value)
    if len(parts) == 1:
        return _CAMEL_CASE.fullmatch(value) is not None
    return all(part == "" or _is_word(part) for part in parts)


def _is_word(part: str) -> bool:
    """`settings`, `API`, `V2`, `Token`, `2024`, `apiKey`; not `8f7d6a5b4c3e2f1a0b9c` or `x9Kq7`."""
    if _CAMEL_CASE.fullmatch(part):
        return True
    return _WORDY_PART.fullmatch(part) is not None and (
        len(part) <= 12 or not any(c.isdigit() for c in part))


def _shannon_entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character (0.0 for ""): -sum(p * log2 p) over the
    frequency p of each distinct character. Random base64 is near 6, hex near 4, words near 3."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """The rules of RULES_RESOURCE, compiled, in file order. Raises ValueError on a malformed
    entry (a packaging bug, not user input)."""
    return _parse_rules(resources.read_text(RULES_RESOURCE))


def _parse_rules(raw: str) -> tuple[_Rule, ...]:
    """Parse and compile the JSON rule list described in the module docstring. Raises ValueError
    naming the first bad entry."""
    data = json.loads(raw)
    if not isinstance(data, list):
        raise ValueError(f"{RULES_RESOURCE}: expected a JSON list of rules")
    rules: list[_Rule] = []
    for index, entry in enumerate(data):
        where = f"{RULES_RESOURCE}[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        type_, regex, group = entry.get("type"), entry.get("regex"), entry.get("group", 0)
        min_entropy = entry.get("min_entropy")
        if not isinstance(type_, str) or not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", type_):
            raise ValueError(f"{where}: type must be a lower-case-dashed name")
        if not isinstance(regex, str):
            raise ValueError(f"{where}: regex must be a string")
        try:
            pattern = re.compile(regex)
        except re.error as e:
            raise ValueError(f"{where} ({type_}): bad regex: {e}") from e
        if group not in (0, 1) or (group == 1 and pattern.groups == 0):
            raise ValueError(f"{where} ({type_}): group must be 0, or 1 with a capturing group")
        if min_entropy is not None and (
                isinstance(min_entropy, bool) or not isinstance(min_entropy, (int, float))):
            raise ValueError(f"{where} ({type_}): min_entropy must be null or a number")
        keywords = entry.get("keywords", [])
        if not isinstance(keywords, list) or not all(
                isinstance(k, str) and k and k == k.lower() for k in keywords):
            raise ValueError(f"{where} ({type_}): keywords must be a list of lower-case strings")
        rules.append(_Rule(type_, pattern, group,
                           None if min_entropy is None else float(min_entropy), tuple(keywords)))
    return tuple(rules)
