"""Code the change moved without altering it (spec §9 "moved unchanged"): which added lines git's
moved-code detection paints as moved, and where they came from.

One ``git diff --color-moved=blocks`` of the reviewed range, limited to the paths asked about,
with every diff colour pinned by ``-c`` (so the user's colour settings change nothing) and the
moved lines recognised by their pinned colour. ``blocks`` mode counts a run of removed lines
that reappears elsewhere in the diff (same file or another one) as moved once it holds at least
20 alphanumeric characters (git-diff(1) ``--color-moved``). Only exact moves count: no
``--color-moved-ws`` option, since code re-indented into another scope changed what it does (a
body de-indented out of its ``if`` runs unguarded); and only blocks of at least
:data:`MIN_MOVED_LINES` lines, since swapping two lines is a one-line move that can reorder a
check and the action it guards. Adjacent blocks are told apart by git's alternating colour.
Only the pipeline's gate step asks, and only for files with findings that would block, so an
ordinary run starts no extra git.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from . import process
from .target import CONFIG_PINS, DIFF_FLAGS

MOVED_TIMEOUT_S = 30.0
MIN_MOVED_LINES = 3  # a moved block shorter than this is not "moved unchanged": swapping two
# lines (a permission check and the action it guards) moves one line each
# Pinned SGR colours: what git writes before each line of that kind (git-config(1) color.diff.*).
_COLORS = {
    "meta": "bold", "frag": "cyan", "func": "normal", "context": "normal", "old": "red",
    "new": "green", "oldMoved": "blue", "newMoved": "magenta",
    "oldMovedAlternative": "yellow", "newMovedAlternative": "yellow",
    "oldMovedDimmed": "blue", "newMovedDimmed": "magenta",
    "oldMovedAlternativeDimmed": "blue", "newMovedAlternativeDimmed": "magenta",
    "whitespace": "normal",
}
_NEW_MOVED = b"\x1b[35m"  # magenta
_OLD_MOVED = b"\x1b[34m"  # blue
_ALT_MOVED = b"\x1b[33m"  # yellow: the next block of a run of adjacent moved blocks
_SGR = re.compile(rb"\x1b\[[0-9;]*m")
_HUNK = re.compile(rb"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


class MovedLines(NamedTuple):
    """The moved-code reading of a diff. ``new_moved``/``new_added``: per new path, the
    new-side line numbers (1-based) of added lines git painted moved / not moved.
    ``old_moved``: per old path, (old line number, stripped text) of the removed lines painted
    moved, in diff order. ``new_block``: per new path, moved line → the number of lines of the
    moved block it belongs to (a run of consecutive lines in one colour)."""

    new_moved: dict[str, dict[int, str]]
    new_added: dict[str, set[int]]
    old_moved: dict[str, list[tuple[int, str]]]
    new_block: dict[str, dict[int, int]] = {}

    def moved_source(self, path: str, start: int, end: int) -> str | None:
        """Whether new-side lines ``start``..``end`` of ``path`` are code moved unchanged: at
        least one moved line, every moved line in a block of at least :data:`MIN_MOVED_LINES`
        lines, and no other added line in the range. None when not; else where they came
        from, ``old/path:a–b`` (en dash; ``old/path:a`` for one line), or "" when no removed
        run of the same text is found (several moves painted as one)."""
        moved = self.new_moved.get(path, {})
        added = self.new_added.get(path, set())
        sizes = self.new_block.get(path, {})
        rng = range(start, end + 1)
        if start <= 0 or any(n in added for n in rng):
            return None
        texts = [moved[n] for n in rng if n in moved]
        if not texts or any(sizes.get(n, 0) < MIN_MOVED_LINES for n in rng if n in moved):
            return None
        for old_path, rows in self.old_moved.items():
            for i in range(len(rows) - len(texts) + 1):
                window = rows[i:i + len(texts)]
                if [t for _, t in window] == texts and window[-1][0] - window[0][0] == len(
                        texts) - 1:
                    a, b = window[0][0], window[-1][0]
                    return f"{old_path}:{a}" if a == b else f"{old_path}:{a}\u2013{b}"
        return ""


_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34,
            b"\\": 92}


def unquote_c(raw: bytes) -> bytes:
    """A name as git prints it in a patch header, decoded: a C-quoted ``"…"`` name (git quotes
    names holding ``"``, ``\\`` or control characters, and non-ASCII ones unless
    core.quotePath is off) with its escapes (``\\t``, ``\\"``, ``\\ooo`` octal bytes) undone;
    else the name with the one TAB git appends after a name holding a space dropped."""
    if not (len(raw) >= 2 and raw[:1] == b'"' and raw.endswith(b'"')):
        return raw[:-1] if raw.endswith(b"\t") else raw
    out = bytearray()
    body, i = raw[1:-1], 0
    while i < len(body):
        c = body[i:i + 1]
        if c != b"\\" or i + 1 >= len(body):
            out += c
            i += 1
        elif body[i + 1:i + 2] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1:i + 2]])
            i += 2
        else:
            digits = body[i + 1:i + 4]
            if len(digits) == 3 and all(48 <= d <= 55 for d in digits):
                out.append(int(digits, 8) & 0xFF)
                i += 4
            else:
                out += c
                i += 1
    return bytes(out)


def _name(raw: bytes, prefix: bytes) -> str | None:
    """The path of a ``--- a/x`` / ``+++ b/x`` line (None for /dev/null), C-quoted or not."""
    raw = unquote_c(raw)
    if raw == b"/dev/null" or not raw.startswith(prefix):
        return None
    return os.fsdecode(raw[len(prefix):])


def parse_moved(out: bytes) -> MovedLines:
    """Read the coloured ``-U0`` patch ``out`` (pinned colours, see module doc). Pure."""
    new_moved: dict[str, dict[int, str]] = {}
    new_added: dict[str, set[int]] = {}
    old_moved: dict[str, list[tuple[int, str]]] = {}
    new_block: dict[str, dict[int, int]] = {}
    block: list[int] = []  # the new-side lines of the moved block being read
    colour = b""
    old_path = new_path = None
    old_no = new_no = 0
    in_hunk = False

    def close() -> None:
        for n in block:
            new_block.setdefault(str(new_path), {})[n] = len(block)
        block.clear()

    for raw in out.split(b"\n"):
        plain = _SGR.sub(b"", raw)
        if plain.startswith(b"diff --git "):
            close()
            in_hunk = False
            continue
        if not in_hunk and plain.startswith(b"--- "):
            old_path = _name(plain[4:], b"a/")
            continue
        if not in_hunk and plain.startswith(b"+++ "):
            new_path = _name(plain[4:], b"b/")
            continue
        m = _HUNK.match(plain)
        if m:
            close()
            in_hunk = True
            old_no, new_no = int(m.group(1)), int(m.group(2))
            continue
        if not in_hunk or not plain:
            continue
        text = plain[1:].decode("utf-8", "replace").strip()
        if plain[:1] == b"+" and new_path is not None:
            lead = raw[:len(_NEW_MOVED)]
            if lead in (_NEW_MOVED, _ALT_MOVED):
                if lead != colour or (block and block[-1] != new_no - 1):
                    close()
                colour = lead
                block.append(new_no)
                new_moved.setdefault(new_path, {})[new_no] = text
            else:
                close()
                new_added.setdefault(new_path, set()).add(new_no)
            new_no += 1
        elif plain[:1] == b"-" and old_path is not None:
            if raw.startswith((_OLD_MOVED, _ALT_MOVED)):
                old_moved.setdefault(old_path, []).append((old_no, text))
            old_no += 1
    close()
    return MovedLines(new_moved, new_added, old_moved, new_block)


def moved_lines(repo: Path, base: str, head: str, paths: Sequence[str],
                timeout_s: float = MOVED_TIMEOUT_S) -> MovedLines:
    """Moved-code reading (:class:`MovedLines`) of ``base..head`` limited to ``paths`` (literal
    pathspecs; pass the files with findings and every file with removed lines, where a block
    may come from). Raises GitError (a timeout after ``timeout_s``)."""
    pins = [a for k, v in _COLORS.items() for a in ("-c", f"color.diff.{k}={v}")]
    flags = [f for f in DIFF_FLAGS if f != "--no-color"]
    out = process.run_git(
        repo, "--literal-pathspecs", *CONFIG_PINS, *pins, "diff", *flags, "--color=always",
        "--color-moved=blocks", "--color-moved-ws=no",
        "--ws-error-highlight=none", "-U0", base, head, "--", *paths, timeout_s=timeout_s)
    return parse_moved(out)
