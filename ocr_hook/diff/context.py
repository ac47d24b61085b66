r"""Context that decides: a hunk shown with its enclosing function or block instead of git's
three lines (spec §3.5). Pure: the new file's lines are passed in.

Git's ``-U3`` hunks often stop just short of what decides whether a change matters (the
guard above it, the loop or condition it sits in, the function's start), which costs the
model a ``file_read`` round trip. :func:`widen_file` extends each small hunk with real context
lines of the new file (marker ``" "``, old and new numbers), so the prompt, anchoring (spec
§8.1: a quote of such a line anchors ``hunk_new``) and the review page all see them.

Why not ``git diff --function-context`` (``-W``): it shows whole functions however long they
are, its function boundaries come from the diff driver's ``funcname`` pattern, which without a
``.gitattributes`` driver is git's default (a line starting with a letter, ``_`` or ``$``:
for an indented method that is the class line, so ``-W`` shows the whole class), and it
changes the patch git prints, which the selection bounds, the secret scan and the cache keys
are defined on. Here the patch stays git's and the widening is bounded.

How a hunk's scope is found (language-agnostic, by indentation):

- the base indentation is the smallest one of the hunk's non-blank changed lines;
- walking up from the change, each non-blank line indented less than the level so far opens
  an enclosing block (comment lines, lone ``{``/``(``/``[`` and keyword closers such as
  ``end``/``fi`` are passed over; a line that closes brackets opened above it, such as the
  ``):`` of a multi-line Python signature, stands for the line that opened them; a bare
  ``label:`` is passed over in brace code, where the block ends with ``}``). The walk stops
  at a line that looks like a definition (:data:`DEFINITION_RE`, :data:`SIGNATURE_RE`:
  ``def``/``class``/``func``/``fn``/``function``…, or ``name(args)`` without ``;``) or at
  indentation 0; that line is the scope's header. No enclosing block (a top-level change):
  git's hunk as it is;
- the scope ends before the first non-blank line after the change indented no more than the
  header, or on it when it closes the block (``}``, ``)``, ``]``, ``end``, ``fi``…); a line
  that carries the block on (``) {``, ``):``, ``} else {``, ``else:``, ``except …:``) does not
  end it. Python decorators and Java annotations right above the header belong to it.

Bounds: a hunk with at most SMALL_HUNK_MAX_CHANGED changed lines shows its whole scope when
that adds at most SCOPE_CONTEXT_MAX_LINES lines. A larger scope shows the headers of its
enclosing blocks (at most HEADER_CHAIN_MAX lines, outermost first, each at its own line
number) and, together within WINDOW_MAX_LINES, the largest block inside it that encloses the
change and fits (the ``if``/``for``/``try`` it sits in), else a window of the lines right
around the change (most of them above it, where guards are). A larger hunk gets only the
header lines. A file gains at most FILE_CONTEXT_MAX_LINES lines (hunks in order). Prose files
(PROSE_SUFFIXES: Markdown, reStructuredText, plain text), whose indentation is no scope, keep
git's hunks. Shown ranges that touch or overlap merge into one hunk, so no line is shown twice
and the numbers stay those of git's hunks. A file whose hunks disagree with the given lines
(another decoding or redaction) is left as git printed it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .model import FileDiff, Hunk, Line

SCOPE_CONTEXT_MAX_LINES = 60
"""Lines of context one hunk may gain (ours): a scope (function, class, block) that fits is
shown whole; a larger one gets its header lines plus a window of WINDOW_MAX_LINES around the
change. 60 lines is about 600 tokens of code: less than one ``file_read`` round trip, which
re-sends the whole conversation, and well inside any group's prompt budget (spec §6.3: a group
whose prompt with the added lines passes 80 % of the context is shown with git's hunks)."""

WINDOW_MAX_LINES = 30  # lines a hunk of a larger scope gains: headers + window (ours)
FILE_CONTEXT_MAX_LINES = 240  # lines one file may gain in all (ours): 4 hunks' worth
PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc")  # never widened
SMALL_HUNK_MAX_CHANGED = 20  # changed lines of a hunk that gets its scope (ours)
HEADER_CHAIN_MAX = 6  # header lines of enclosing blocks shown above a window (ours)
SCOPE_SCAN_MAX_LINES = 2000  # lines walked up or down looking for a scope's ends (ours)
TAB_WIDTH = 4  # columns of a tab when indentations are compared
DOWN_SHARE = 4  # a window gives at most 1/DOWN_SHARE of its lines to the side below the change

_COMMENT_STARTS = ("#", "//", "/*", "*", "<!--", "--", ";")
_KEYWORD_CLOSER = re.compile(  # not ``done = True``
    r"(?:end|fi|done|esac|endif|endfor|endforeach|endwhile|endfunction|endmodule|endclass)\b"
    r"(?!\s*[=(.:\[])")
_BARE_LABEL = re.compile(r"[A-Za-z_][\w-]*:")
# a line at the block's indentation that carries the block on: ``) {``, ``):``, ``} else {``,
# ``else:``, ``except E:``, ``catch (e) {``
_CONTINUES = re.compile(r"[)\]}].*[{:(\[]|(?:else|elif|elsif|except|finally|catch|rescue|ensure)\b")
_MODIFIERS = (r"(?:(?:public|private|protected|internal|static|final|abstract|override|virtual"
              r"|async|export|default|pub(?:\([\w:]+\))?|unsafe|extern|inline|const|open"
              r"|suspend|sealed|data|partial|local|synchronized)\s+)*")
DEFINITION_RE = re.compile(
    _MODIFIERS + r"(?:def|defp|defmodule|class|function|func|fun|fn|sub|proc|module|interface"
    r"|struct|enum|trait|impl|object|namespace|record|protocol|extension|macro|union)\b")
"""A definition line by its keyword (Python, Ruby, JS/TS, Go, Rust, Kotlin, Swift, PHP, Perl,
Elixir, C#, Java, Scala…), after optional modifiers."""
SIGNATURE_RE = re.compile(
    r"(?!(?:if|for|foreach|while|switch|catch|else|elif|elsif|do|try|return|with|unless|until"
    r"|when|match|case|except|finally|lock|using|sizeof|new|throw|await|yield|assert|print)\b)"
    r"[\w$.:<>,*&~\[\] \t]*[\w$>\]]\s*\([^;]*$|.*=>\s*\{$")
"""A C-like function or method header (``static int f(void) {``, ``void A::b(int x)``,
``name() {``) or a callback (``(x) => {``): a name and ``(`` with no ``;`` after it, not a
control keyword."""


def _indent(text: str) -> int:
    s = text.expandtabs(TAB_WIDTH)
    return len(s) - len(s.lstrip())


def _skipped(t: str) -> bool:
    """A stripped line that never opens or ends a block: blank, a comment, a lone bracket."""
    return not t or t.startswith(_COMMENT_STARTS) or t in ("{", "(", "[")


def _balance(t: str) -> int:
    """Brackets opened minus brackets closed on one line (strings are not told apart)."""
    return (t.count("(") + t.count("[") + t.count("{")
            - t.count(")") - t.count("]") - t.count("}"))


def is_definition(text: str) -> bool:
    """Whether a line looks like a function, method or class header (see the module doc)."""
    t = text.strip()
    return bool(DEFINITION_RE.match(t) or SIGNATURE_RE.match(t))


class _Scope:
    """The scope of one change in one file: its header chain and its last line."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines

    def text(self, n: int) -> str:
        return self.lines[n - 1].strip()

    def opening_line(self, n: int) -> int:
        """The line that opened the brackets line ``n`` closes (``n`` when none)."""
        depth = _balance(self.text(n))
        m = n
        while depth < 0 and m > 1 and n - m < SCOPE_SCAN_MAX_LINES:
            m -= 1
            depth += _balance(self.text(m))
        return m if depth >= 0 else n

    def block_end(self, after: int, indent: int) -> tuple[int, bool]:
        """(first line after line ``after`` indented at most ``indent``, whether it closes the
        block); (0, False) when the file or the scan ends first."""
        last = min(len(self.lines), after + SCOPE_SCAN_MAX_LINES)
        for n in range(after + 1, last + 1):
            t = self.text(n)
            if _skipped(t) and t not in ("{", "(", "["):
                continue
            if _indent(self.lines[n - 1]) <= indent and not _CONTINUES.match(t):
                return n, t[:1] in ")]}" or bool(_KEYWORD_CLOSER.match(t))
        return 0, False

    def chain(self, lo: int, hi: int, base: int) -> list[int]:
        """The header lines of the blocks enclosing lines ``lo``..``hi`` (indented ``base``),
        innermost first; the last one is the scope's header. [] at top level."""
        out: list[int] = []
        level, n = base, lo - 1
        while n >= 1 and level > 0 and lo - n <= SCOPE_SCAN_MAX_LINES:
            t = self.text(n)
            ind = _indent(self.lines[n - 1])
            if _skipped(t) or ind >= level or _KEYWORD_CLOSER.match(t):
                n -= 1
                continue
            if t[:1] in ")]}" and _balance(t) < 0:  # closes a construct opened above it
                m = self.opening_line(n)
                if _indent(self.lines[m - 1]) >= level:
                    n = m - 1
                    continue
                n, ind, t = m, _indent(self.lines[m - 1]), self.text(m)
            if _BARE_LABEL.fullmatch(t) and self.block_end(hi, ind)[1]:
                n -= 1  # a C label (``out:``), not a YAML key: the block ends with a brace
                continue
            out.append(n)
            level = ind
            if is_definition(t):
                break
            n -= 1
        return out

    def end(self, header: int, hi: int) -> int:
        """The last line of the scope headed by line ``header`` that contains line ``hi``."""
        ind = _indent(self.lines[header - 1])
        stop, closes = self.block_end(hi, ind)
        if stop and closes:
            return stop
        last = stop - 1 if stop else min(len(self.lines), hi + SCOPE_SCAN_MAX_LINES)
        while last > hi and _skipped(self.text(last)):
            last -= 1
        return last

    def start(self, header: int) -> int:
        """``header`` or the first of the decorator/annotation lines right above it."""
        ind = _indent(self.lines[header - 1])
        n = header
        while (n > 1 and self.text(n - 1).startswith("@")
               and _indent(self.lines[n - 2]) == ind and header - n < HEADER_CHAIN_MAX):
            n -= 1
        return n


def _changed_span(h: Hunk) -> tuple[int, int, int] | None:
    """(first, last new-side position of the hunk's change, its base indentation); a deleted
    line sits before the next new-side line. None for a hunk without a non-blank change."""
    lo, hi, base = 0, 0, -1
    nxt = h.new_start
    for ln in h.lines:
        if ln.kind == " ":
            nxt = (ln.new_line or nxt) + 1
            continue
        pos = ln.new_line if ln.kind == "+" and ln.new_line else nxt
        if ln.kind == "+":
            nxt = pos + 1
        first, last = pos, pos if ln.kind == "+" else pos - 1
        lo = first if not lo else min(lo, first)
        hi = max(hi, last)
        if ln.text.strip():
            ind = _indent(ln.text)
            base = ind if base < 0 else min(base, ind)
    if base < 0 or not lo:
        return None
    return lo, max(hi, lo - 1), base


def hunk_extents(h: Hunk, lines: Sequence[str], max_lines: int = SCOPE_CONTEXT_MAX_LINES,
                 window_lines: int = WINDOW_MAX_LINES) -> list[tuple[int, int]]:
    """The new-side line ranges (1-based, inclusive) to show for hunk ``h`` of a file whose
    new lines are ``lines``: its own range first, then the ranges that add context (see the
    module doc). Only the hunk's own range when it has no enclosing scope."""
    first, last = h.new_start, h.new_start + h.new_count - 1
    own = [(first, last)]
    span = _changed_span(h)
    if span is None:
        return own
    lo, hi, base = span
    scope = _Scope(lines)
    chain = scope.chain(lo, hi, base)
    if not chain:
        return own
    header = chain[-1]
    start, end = scope.start(header), max(scope.end(header, hi), last)
    changed = sum(1 for ln in h.lines if ln.kind != " ")
    small = changed <= SMALL_HUNK_MAX_CHANGED
    if small and max(0, first - start) + (end - last) <= max_lines:
        return [(min(start, first), end)]
    heads = [n for n in reversed(chain) if n < first][:HEADER_CHAIN_MAX]  # outermost first
    if not small:
        return own + [(n, n) for n in heads]
    room = window_lines - len(heads)
    window = _inner_block(scope, chain, first, last, hi, room)
    if window is None:  # no enclosing block fits: the lines around the change
        want_up, want_down = max(0, first - header - 1), end - last
        down = min(want_down, window_lines // DOWN_SHARE)
        up = max(0, min(want_up, room - down))
        down = max(0, min(want_down, room - up))
        window = (first - up, last + down)
    return [window] + [(n, n) for n in heads if n < window[0]]


def _inner_block(scope: _Scope, chain: Sequence[int], first: int, last: int, hi: int,
                 room: int) -> tuple[int, int] | None:
    """The largest block inside the scope that encloses the change (the ``if``/``for``/
    ``try`` it sits in) and adds at most ``room`` lines to the hunk's ``first``..``last``, as
    its range; None when none does."""
    for n in reversed(chain[:-1]):  # outermost first
        end = max(scope.end(n, hi), last)
        if max(0, first - n) + (end - last) <= room:
            return min(n, first), end
    return None


def _tail(header: str) -> str:
    """The function context git printed after a hunk's ``@@ … @@`` ("" when none)."""
    parts = header.split("@@", 2)
    return parts[2].strip() if len(parts) == 3 else ""


def _hunk_header(old_start: int, old_count: int, new_start: int, new_count: int,
                 tail: str) -> str:
    def side(start: int, count: int) -> str:
        return str(start) if count == 1 else f"{start},{count}"

    head = f"@@ -{side(old_start, old_count)} +{side(new_start, new_count)} @@"
    return f"{head} {tail}" if tail else head


def _next_numbers(h: Hunk) -> tuple[int, int]:
    """(old, new) number of the first line after hunk ``h`` (a side with count 0 starts
    after its start line, git's convention)."""
    old = h.old_start + h.old_count if h.old_count else h.old_start + 1
    new = h.new_start + h.new_count if h.new_count else h.new_start + 1
    return old, new


def _build(runs: Sequence[tuple[int, int]], hunks: Sequence[Hunk], lines: Sequence[str]
           ) -> tuple[Hunk, ...]:
    """One hunk per run of shown new lines: git's hunks inside it verbatim, the other lines
    as context from ``lines`` with their old numbers."""
    out: list[Hunk] = []
    hi = 0  # index of the next original hunk
    delta = 0  # old number minus new number of an unchanged line here
    for a, b in runs:
        body: list[Line] = []
        inner: list[Hunk] = []
        before_inner = 0  # lines shown above the first of git's hunks in this run
        n = a
        while n <= b:
            if hi < len(hunks) and hunks[hi].new_start == n:
                h = hunks[hi]
                if not inner:
                    before_inner = len(body)
                body.extend(h.lines)
                inner.append(h)
                old_next, new_next = _next_numbers(h)
                delta = old_next - new_next
                n = new_next
                hi += 1
                continue
            body.append(Line(" ", lines[n - 1], n + delta, n))
            n += 1
        if len(inner) == 1 and len(body) == len(inner[0].lines):
            out.append(inner[0])
            continue
        old_count = sum(1 for ln in body if ln.kind != "+")
        new_count = sum(1 for ln in body if ln.kind != "-")
        old_start = next((ln.old_line for ln in body if ln.old_line is not None),
                         inner[0].old_start if inner else a + delta)
        tail = _tail(inner[0].header) if inner else ""
        if tail and any(ln.text.strip().startswith(tail) for ln in body[:before_inner]):
            tail = ""  # git's function context is now one of the lines shown
        out.append(Hunk(old_start, old_count, a, new_count,
                        _hunk_header(old_start, old_count, a, new_count, tail), tuple(body)))
    return tuple(out)


def _runs(numbers: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _agrees(hunks: Sequence[Hunk], lines: Sequence[str]) -> bool:
    """Every new-side line of the hunks is that line of ``lines``; hunks in order, not
    overlapping, each with a new side."""
    prev = 0
    for h in hunks:
        if h.new_count <= 0 or h.new_start <= prev:
            return False
        for ln in h.lines:
            n = ln.new_line
            if n is not None and (n > len(lines) or lines[n - 1] != ln.text):
                return False
        prev = h.new_start + h.new_count - 1
    return True


def widened_hunks(hunks: Sequence[Hunk], new_lines: Sequence[str], *,
                  max_lines: int = SCOPE_CONTEXT_MAX_LINES,
                  file_max: int = FILE_CONTEXT_MAX_LINES) -> tuple[Hunk, ...] | None:
    """``hunks`` (git's, of one file, in order) with the context of the module doc added, or
    None when nothing is added or the hunks disagree with ``new_lines``.

    ``new_lines`` are the new file's lines split on ``\\n`` (``\\r`` kept); a last empty string
    (after the final newline) is not a line. ``max_lines``: lines one hunk may gain;
    ``file_max``: lines all of them may gain together (hunks in order; a hunk whose context
    would pass it gets only its header lines, or nothing)."""
    lines = new_lines[:-1] if new_lines and new_lines[-1] == "" else new_lines
    if not hunks or not _agrees(hunks, lines):
        return None
    shown: set[int] = set()
    for h in hunks:
        shown.update(range(h.new_start, h.new_start + h.new_count))
    added = 0
    for h in hunks:
        extents = hunk_extents(h, lines, max_lines)
        more = {n for a, b in extents for n in range(a, b + 1)} - shown
        if added + len(more) > file_max:
            more = {a for a, b in extents[1:] if a == b} - shown
            if added + len(more) > file_max:
                continue
        shown |= more
        added += len(more)
    if not added:
        return None
    return _build(_runs(shown), hunks, lines)


def widen_file(fd: FileDiff, new_lines: Sequence[str]) -> int:
    """Give ``fd`` its widened hunks (:func:`widened_hunks`) in place, keeping git's in
    ``fd.git_hunks``; returns the number of lines added (0: ``fd`` unchanged). Deleted,
    binary, symlink and submodule entries, prose files and files widened already are left
    alone."""
    if (fd.git_hunks is not None or fd.status == "deleted" or fd.binary or fd.symlink
            or fd.submodule or not fd.hunks or fd.path.lower().endswith(PROSE_SUFFIXES)):
        return 0
    wide = widened_hunks(fd.hunks, new_lines)
    if wide is None:
        return 0
    before = sum(len(h.lines) for h in fd.hunks)
    fd.git_hunks, fd.hunks = fd.hunks, wide
    return sum(len(h.lines) for h in wide) - before

