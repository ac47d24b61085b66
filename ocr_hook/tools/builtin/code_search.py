"""``code_search`` (spec §7.1): ``git grep`` of the reviewed snapshot, answered as a search of
the redacted text would be.

Output (spec §7.1, the reference tool's (OCR) format): per file ``File: <p>`` /
``Match lines: n`` / ``<ln>|<content>``, files separated by a blank line; ``No matches found``;
``Error: search_text is blank``.

No oracle (spec §14.2). git greps the raw blobs, so a hit on a line that holds a secret would
tell the model whether its pattern matches characters the redaction hides (``ghp_.{7}[a-m]``,
a lookahead next to the value, a glob over a file name). So every hit line is redacted on its
own and, when it may be part of a value written over several lines (_MULTI_LINE_PART), in its
file context, in fixed chunks (``SnapshotView.chunk_rows``: the same whatever was searched). A
line that the redaction changes is kept only for a literal search whose text occurs within the
characters the redaction keeps before the first placeholder or after the last one; never for a
Perl regexp, whose lookarounds and ``\b`` test characters outside what it matches. A file whose
name the redaction changes is searched only without ``file_patterns``. Every count, cap, note
and context line is computed from the hits kept, never from git's raw hits, and no note says
that a hit was left out (such a note would be the answer itself): the result is one the
redacted text alone decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from ... import git
from ...errors import GitError
from ..registry import Handler, ToolResult
from ..search_retry import MATCH_FAILED, Retry, invalid, literal
from ..snapshot import GREP_TIMEOUT_S, SnapshotView
from .common import ToolEnv, as_bool, cut

SEARCH_MAX_PER_FILE = 100  # spec §7.1 (OCR code_search)
SEARCH_GREP_SLACK = 20  # git grep reads this many more per file, for hits left out (ours)
SEARCH_OUTPUT_MAX_BYTES = 128 * 1024  # total code_search output cap (OCR newest: 128 KiB)
SEARCH_LINE_MAX_CHARS = 1000  # one matching line is cut here, after its redaction (ours)
# Secrets are redacted in their file context before lines are numbered (see ``tools.snapshot``):
# a matching line that may be part of such a value (_MULTI_LINE_PART), and the context lines,
# in fixed chunks of SEARCH_REDACT_WINDOW_LINES lines, each redacted with as many lines either
# side; files are read in batches of `git cat-file --batch` up to SEARCH_CONTEXT_MAX_BYTES, and
# a file larger than that is never read for context: its matching lines that may be part of
# such a value are left out (ours).
SEARCH_REDACT_WINDOW_LINES = 64  # a 4096-bit RSA key's PEM block has 51 lines
SEARCH_CONTEXT_MAX_BYTES = 16 * 1024 * 1024
SEARCH_PREFETCH_FILES = 32  # files read for context in one batch, at most (ours)
SEARCH_CONTEXT_LINES = 1  # lines shown on each side of a match
SEARCH_CONTEXT_MAX_MATCHES = 30  # context only for searches with at most this many matches
# A line that is only a string literal or a token-like run (a continuation piece, a PEM body line,
# a JSON value under its key), or that ends in a token-like literal (a first piece).
_MULTI_LINE_PART = (  # compiled on first use (re's cache): most reviews run no search
    r"""^[ \t+\-.&|(\[{,]*(?:["'`][^"'`]*["'`]|[A-Za-z0-9+/=_\-]{16,})[ \t)\]},;\\]*$"""
    r"""|["'`][A-Za-z0-9+/=_\-]{8,}["'`][ \t]*[+.&\\(]?[ \t]*$""")

NO_MATCHES = "No matches found"  # spec §7.1
PERL_NOTE = ("Note: a Perl regexp never matches a line that holds a redacted secret; search such"
             " a line with literal text.")
_PLACEHOLDER = r"\[REDACTED:[^\]\n]*\]"  # the placeholder of spec §14.2, any type
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


PATTERN_HELP = ("file_patterns are globs matched like .gitignore lines ('src/**/*.py',"
                " '*.py', ':(exclude)tests/**')")
_OWN_MAGIC = frozenset({"glob", "literal"})  # a pattern with these is passed to git as written
_KEPT_MAGIC = frozenset({"exclude", "icase"})  # these are kept on our glob translation


def _split_magic(spec: str) -> tuple[frozenset[str], str] | None:
    """(magic words, the path part) of a git pathspec: ``:(w1,w2)path``, the short forms
    ``:!path`` / ``:^path`` (exclude) and ``:/path`` (top); None for an unclosed ``:(``."""
    if spec.startswith(":("):
        if ")" not in spec:
            return None
        words, body = spec[2:].split(")", 1)
        return frozenset(w.strip() for w in words.split(",") if w.strip()), body
    if spec.startswith(":"):
        words = set()
        body = spec[1:]
        while body[:1] in ("!", "^", "/"):
            words.add("top" if body[0] == "/" else "exclude")
            body = body[1:]
        return frozenset(words), body.removeprefix(":")
    return frozenset(), spec


def _glob_pathspecs(words: frozenset[str], body: str) -> list[str]:
    """git ``:(glob)`` pathspecs that match ``body`` as a .gitignore line matches (without its
    ``!`` and leading ``/``): a pattern without ``/`` (but a trailing one) matches at any
    depth (``*.py`` → ``**/*.py``), one ending in ``/`` only directories, and a pattern that
    matches a directory matches everything under it (``src/*`` → also ``src/*/**``). git's
    ``:(glob)`` ``**`` is gitignore's: ``a/**/b`` matches ``a/b`` too."""
    pattern = body.removeprefix("./")
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if "/" not in pattern:
        pattern = f"**/{pattern}"
    magic = ",".join(["glob", *sorted(words)])
    forms = [f"{pattern}/**"] if dir_only else [pattern, f"{pattern}/**"]
    return [f":({magic}){p}" for p in forms]


def _search_args(args: dict[str, Any]) -> tuple[str, list[str]] | ToolResult:
    """``code_search``'s (search text, git pathspecs), or the error result for bad
    arguments. Patterns are globs matched like .gitignore lines (:func:`_glob_pathspecs`),
    ``:(exclude)``/``:!``/``:^`` and ``:(icase)`` kept on them; a pattern with its own
    ``:(glob)`` or ``:(literal)`` goes to git as written; other magic (``:(top)``, ``:/``,
    ``:(attr:…)``), ``..`` and absolute paths are refused."""
    text = args.get("search_text")
    if not isinstance(text, str) or not text.strip():
        return ToolResult.error("Error: search_text is blank")
    patterns = args.get("file_patterns")
    if patterns is None or patterns == "":
        patterns = []
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        return ToolResult.error("Error: file_patterns must be an array of strings")
    specs: list[str] = []
    for p in (p.strip() for p in patterns):
        if not p:
            continue
        split = _split_magic(p)
        if split is None or not split[0] <= _OWN_MAGIC | _KEPT_MAGIC:
            return ToolResult.error(f"Error: unsupported pathspec magic in {p!r}; {PATTERN_HELP}")
        words, body = split
        norm = body.replace("\\", "/")
        if ".." in norm.split("/"):
            return ToolResult.error("Error: file_patterns must not contain ..")
        if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
            return ToolResult.error("Error: file_patterns must be repository-relative")
        if not body.strip("/"):
            continue
        specs += [p] if words & _OWN_MAGIC else _glob_pathspecs(words, body)
    return text, specs


class _Query(NamedTuple):
    text: str
    pathspecs: tuple[str, ...]
    perl: bool
    ignore_case: bool


class _File(NamedTuple):
    """One file's git grep records: its path as git wrote it, ``(n, line bytes)`` in line
    order, and whether git stopped at the per-file count (more may follow)."""

    raw_path: bytes
    rows: list[tuple[int, bytes]]
    capped: bool


def code_search(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``code_search {search_text, file_patterns?, case_sensitive?, use_perl_regexp?}``
    (spec §7.1): ``git grep`` on the snapshot tree, literal (``-F``) unless Perl regexp
    (``-P``), case-insensitive unless asked (``SnapshotView.grep``: neither the text nor a
    pattern can be read as an option); ``file_patterns`` are globs matched like .gitignore
    lines (:func:`_search_args`). Only hits the redacted text shows are answered (the module
    docstring). At most 100 matches per file (a note says when a file has more), 1000
    characters per line, 128 KiB in all (a first-line note says the output was cut). Matches
    in secret paths are dropped. With at most SEARCH_CONTEXT_MAX_MATCHES matches, each comes
    with one line of context on each side (``n-line``; matches are ``n|line``); above that a
    last note says the context was left out."""
    parsed = _search_args(args)
    if isinstance(parsed, ToolResult):
        return parsed
    text, pathspecs = parsed
    query = _Query(text, tuple(pathspecs), as_bool(args.get("use_perl_regexp")),
                   not as_bool(args.get("case_sensitive")))
    try:
        found = _grep(view, query)
    except GitError as e:
        if "timed out" in str(e):
            return ToolResult.error(
                f"Error: git grep timed out after {GREP_TIMEOUT_S:g}s; try narrowing file_patterns"
                " to a more specific path"
            )
        return ToolResult.error(f"Error: code_search failed: {e}")
    if isinstance(found, ToolResult):
        return found
    return _render(view, _Hits(view, query, found))


def _grep(view: SnapshotView, q: _Query, only: bytes | None = None
          ) -> dict[str, _File] | ToolResult:
    """``q``'s git grep records by file (secret paths left out), SEARCH_MAX_PER_FILE + 1 +
    SEARCH_GREP_SLACK per file; with ``only`` (a path as git wrote it), every record of that
    one file. An invalid pattern (git exit 128) is the error result; a Perl regexp git could
    not finish on some line is searched again around the lines that hold secrets
    (``tools.search_retry.Retry``). Raises GitError."""
    if only is None:
        specs, limit = list(q.pathspecs), SEARCH_MAX_PER_FILE + 1 + SEARCH_GREP_SLACK
    else:
        specs, limit = [literal(only)], None
    rc, out, err = view.grep(q.text, specs, perl=q.perl, ignore_case=q.ignore_case,
                             max_per_file=limit)
    if rc == 128 and MATCH_FAILED in err:
        hits = _Hits(view, q._replace(perl=True), {})
        got = Retry(view, q.text, q.ignore_case, limit, hits.shown_alone).records(
            view.grep_files(specs))
        if isinstance(got, ToolResult):
            return got
        out = got
    elif rc == 128:
        return invalid(err)
    records: dict[bytes, list[tuple[int, bytes]]] = {}
    for rec in out.split(b"\n"):
        parts = rec.split(b"\0", 2)
        if len(parts) == 3 and parts[1].isdigit():
            records.setdefault(parts[0], []).append((int(parts[1]), parts[2]))
    prefix = f"{view.head}:".encode()
    found: dict[str, _File] = {}
    for raw, rows in records.items():
        path = raw.removeprefix(prefix)
        name = git.decode_text(path)
        if not view.is_secret(name):
            found[name] = _File(path, rows, limit is not None and len(rows) >= limit)
    return found


class _Hits:
    """The hits of one search the model may see (the module docstring), worked out file by
    file when asked: ``visible(name)`` gives up to SEARCH_MAX_PER_FILE + 1 rows ``n|text``."""

    def __init__(self, view: SnapshotView, query: _Query, found: dict[str, _File]) -> None:
        self.view = view
        self.query = query
        self.found = found
        self._visible: dict[str, list[str]] = {}
        self._blobs: dict[str, list[str] | None] = {}
        self._order = list(found)
        self._scan = 0  # files before this index were looked at for the next batch read

    def visible(self, name: str) -> list[str]:
        """Rows ``n|text`` (redacted, cut) of ``name``'s hits that are kept, in line order, up
        to SEARCH_MAX_PER_FILE + 1; a file whose git grep stopped at its count is searched
        again whole when too few of its first hits are kept."""
        if name in self._visible:
            return self._visible[name]
        f = self.found[name]
        out: list[str] = []
        if not self.query.pathspecs or self.view.redact(name) == name:
            seen = 0
            while len(out) <= SEARCH_MAX_PER_FILE:
                if seen == len(f.rows):
                    if not f.capped or not (f := self._whole(name, f)).rows[seen:]:
                        break
                n, raw = f.rows[seen]
                seen += 1
                shown = self.row(name, n, git.decode_text(raw).removesuffix("\r"))
                if shown is not None:
                    out.append(f"{n}|{cut(shown, SEARCH_LINE_MAX_CHARS)}")
        self._visible[name] = out
        return out

    def _whole(self, name: str, f: _File) -> _File:
        """``f`` with every hit of the file (one more git grep of that file alone)."""
        try:
            again = _grep(self.view, self.query, f.raw_path)
        except GitError:
            again = {}
        whole = again.get(name) if isinstance(again, dict) else None
        return f._replace(capped=False) if whole is None else whole

    def row(self, name: str, n: int, line: str) -> str | None:
        """Line ``n`` of ``name`` (a hit) as shown, redacted; None when it is left out."""
        red = self.view.redact(line)
        if re.search(_MULTI_LINE_PART, line):
            ctx = self.context(name, [n]).get(n)
            if ctx is None:
                return None  # the file is too large to read for context
            if ctx != line:
                if red not in (line, ctx):
                    return None  # redacted differently alone and in context: fail closed
                red = ctx
        if red == line:
            return line
        if self.query.perl:
            return None
        start, end = _hidden(line, red)
        fold: Callable[[str], str] = (lambda s: s.translate(_ASCII_LOWER)) if (
            self.query.ignore_case) else (lambda s: s)
        needle = fold(self.query.text)
        return red if needle in fold(line[:start]) or needle in fold(line[end:]) else None

    def shown_alone(self, name: str, n: int, lines: list[str]) -> bool:
        """Whether line ``n`` of ``lines`` (all of file ``name``, read by the caller) is a
        row a Perl-regexp hit would show (``tools.search_retry.Retry`` leaves the others out)."""
        self._blobs.setdefault(name, lines)
        return self.row(name, n, lines[n - 1].removesuffix("\r")) is not None

    def context(self, name: str, numbers: list[int]) -> dict[int, str]:
        """``{n: line n of name redacted in context}`` (``\r`` dropped) for ``numbers``; lines
        of a file too large to read are left out."""
        rows = self.view.chunk_rows(name, numbers, lambda: self._lines(name),
                                    SEARCH_REDACT_WINDOW_LINES)
        return {n: text.removesuffix("\r") for n, text in rows.items()}

    def _lines(self, name: str) -> list[str] | None:
        """All lines of ``name`` (without the empty one after a last line break); read with
        the next files that may need context (those with a hit that may be part of a value
        written over several lines), up to SEARCH_PREFETCH_FILES files and
        SEARCH_CONTEXT_MAX_BYTES in one batch. None when the file alone is larger than that,
        or the read fails."""
        if name not in self._blobs:
            batch = [name]
            while len(batch) < SEARCH_PREFETCH_FILES and self._scan < len(self._order):
                other = self._order[self._scan]
                self._scan += 1
                if other != name and other not in self._blobs and any(
                        re.search(_MULTI_LINE_PART, git.decode_text(raw))
                        for _, raw in self.found[other].rows[:SEARCH_MAX_PER_FILE]):
                    batch.append(other)
            try:
                blobs = self.view.read_many(batch, SEARCH_CONTEXT_MAX_BYTES)
            except GitError:
                blobs = {}
            self._blobs[name] = None
            for other, data in blobs.items():
                lines = git.decode_text(data).split("\n")
                if lines[-1] == "":
                    lines.pop()
                self._blobs[other] = lines
        return self._blobs[name]


def _hidden(line: str, red: str) -> tuple[int, int]:
    """``(start, end)``: the characters of ``line`` its redaction ``red`` may hide, from the
    first placeholder to the last one (what the redaction keeps before and after them is
    ``line[:start]`` and ``line[end:]``); the whole line when ``red`` holds no placeholder."""
    marks = [m.span() for m in re.finditer(_PLACEHOLDER, red)]
    if not marks:
        return 0, len(line)
    head = min(marks[0][0], len(os.path.commonprefix([line, red])))
    tail = min(len(red) - marks[-1][1], len(os.path.commonprefix([line[::-1], red[::-1]])))
    if head + tail > len(line):
        return 0, len(line)
    return head, len(line) - tail


def _render(view: SnapshotView, hits: _Hits) -> ToolResult:
    """The result text of the kept hits (``code_search``'s format), redacted."""
    count = 0
    for name in hits.found:
        count += min(len(hits.visible(name)), SEARCH_MAX_PER_FILE)
        if count > SEARCH_CONTEXT_MAX_MATCHES:
            break
    with_context = count <= SEARCH_CONTEXT_MAX_MATCHES
    blocks: list[str] = []
    size = 0
    cut_off = False
    for name, rows in ((n, hits.visible(n)) for n in hits.found):
        if not rows:
            continue
        shown = rows[:SEARCH_MAX_PER_FILE]
        around = _context_rows(hits, name, shown) if with_context else {}
        block = f"File: {name}\nMatch lines: {len(shown)}\n" + "\n".join(
            _with_context(shown, around))
        if len(rows) > SEARCH_MAX_PER_FILE:
            block += (
                f"\nNote: more than {SEARCH_MAX_PER_FILE} matches in this file; only the first"
                f" {SEARCH_MAX_PER_FILE} are shown. Narrow search_text or file_patterns."
            )
        size += len(block.encode("utf-8", "replace")) + 2
        if size > SEARCH_OUTPUT_MAX_BYTES and blocks:
            cut_off = True
            break
        blocks.append(block)
    if not blocks:
        return ToolResult(f"{NO_MATCHES}\n{PERL_NOTE}" if hits.query.perl else NO_MATCHES)
    result = "\n\n".join(blocks)
    if not with_context:
        result += (f"\n\nNote: more than {SEARCH_CONTEXT_MAX_MATCHES} matches, so no context"
                   " lines; file_read shows the lines around one.")
    if cut_off:
        result = (
            f"Note: output truncated to {SEARCH_OUTPUT_MAX_BYTES} bytes: more files match than"
            f" the {len(blocks)} shown. Narrow file_patterns to see the rest.\n\n" + result
        )
    return ToolResult(view.redact(result))


def _row_number(row: str) -> int:
    return int(row.split("|", 1)[0])


def _context_rows(hits: _Hits, name: str, shown: list[str]) -> dict[int, str]:
    """{n: ``<n>-<text>``} for the SEARCH_CONTEXT_LINES lines on each side of every shown
    match of ``name`` that are not matches themselves, redacted in their file context like the
    matches (none for a file too large to read)."""
    rows = {_row_number(r) for r in shown}
    near = {n + d for n in rows for d in range(-SEARCH_CONTEXT_LINES,
                                                 SEARCH_CONTEXT_LINES + 1)} - rows
    return {n: f"{n}-{cut(text, SEARCH_LINE_MAX_CHARS)}"
            for n, text in hits.context(name, sorted(near)).items()}


def _with_context(shown: list[str], around: dict[int, str]) -> list[str]:
    """Match rows and their context rows (:func:`_context_rows`), by line number."""
    rows = {_row_number(r): r for r in shown}
    return [rows.get(n) or around[n] for n in sorted(set(rows) | set(around))]


def make_handler(env: ToolEnv) -> Handler:
    """``code_search`` on ``env.view``."""
    return lambda a: code_search(env.view, a)
