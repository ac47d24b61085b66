"""``code_search`` (spec §7.1): ``git grep`` of the reviewed snapshot.

Output (spec §7.1, the reference tool's (OCR) format): per file ``File: <p>`` /
``Match lines: n`` / ``<ln>|<content>``, files separated by a blank line; ``No matches found``;
``Error: search_text is blank``.
"""

from __future__ import annotations

import re
from typing import Any

from ... import git
from ...errors import GitError
from ..registry import Handler, ToolResult
from ..snapshot import GREP_TIMEOUT_S, SnapshotView
from .common import ToolEnv, as_bool, cut

SEARCH_MAX_PER_FILE = 100  # spec §7.1 (OCR code_search)
SEARCH_OUTPUT_MAX_BYTES = 128 * 1024  # total code_search output cap (OCR newest: 128 KiB)
SEARCH_LINE_MAX_CHARS = 1000  # one matching line is cut here (ours)
# Secrets are redacted in their file context before lines are numbered (see ``tools.snapshot``):
# in windows of SEARCH_REDACT_WINDOW_LINES lines around each matching line that may be part of
# such a value (_MULTI_LINE_PART), for at most SEARCH_CONTEXT_MAX_BYTES of files per call, read
# in one `git cat-file --batch` (ours).
SEARCH_REDACT_WINDOW_LINES = 64  # a 4096-bit RSA key's PEM block has 51 lines
SEARCH_CONTEXT_MAX_BYTES = 16 * 1024 * 1024
SEARCH_CONTEXT_LINES = 1  # lines shown on each side of a match
SEARCH_CONTEXT_MAX_MATCHES = 30  # context only for searches with at most this many matches
# A line that is only a string literal or a token-like run (a continuation piece, a PEM body line,
# a JSON value under its key), or that ends in a token-like literal (a first piece).
_MULTI_LINE_PART = (  # compiled on first use (re's cache): most reviews run no search
    r"""^[ \t+\-.&|(\[{,]*(?:["'`][^"'`]*["'`]|[A-Za-z0-9+/=_\-]{16,})[ \t)\]},;\\]*$"""
    r"""|["'`][A-Za-z0-9+/=_\-]{8,}["'`][ \t]*[+.&\\(]?[ \t]*$""")

NO_MATCHES = "No matches found"  # spec §7.1


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


def code_search(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``code_search {search_text, file_patterns?, case_sensitive?, use_perl_regexp?}``
    (spec §7.1): ``git grep`` on the snapshot tree, literal (``-F``) unless Perl regexp
    (``-P``), case-insensitive unless asked (``SnapshotView.grep``: neither the text nor a
    pattern can be read as an option); ``file_patterns`` are globs matched like .gitignore
    lines (:func:`_search_args`). At most 100 matches per file (a note says
    when a file has more), 1000 characters per line, 128 KiB in all (a first-line note says
    how many matching files were left out). Matches in secret paths are dropped. With at
    most SEARCH_CONTEXT_MAX_MATCHES matches, each comes with one line of context on each side
    (``n-line``; matches are ``n|line``); above that a last note says the context was left
    out."""
    parsed = _search_args(args)
    if isinstance(parsed, ToolResult):
        return parsed
    text, pathspecs = parsed
    try:
        rc, out, err = view.grep(text, pathspecs, perl=as_bool(args.get("use_perl_regexp")),
                                 ignore_case=not as_bool(args.get("case_sensitive")),
                                 max_per_file=SEARCH_MAX_PER_FILE + 1)
    except GitError as e:
        if "timed out" in str(e):
            return ToolResult.error(
                f"Error: git grep timed out after {GREP_TIMEOUT_S:g}s; try narrowing file_patterns"
                " to a more specific path"
            )
        return ToolResult.error(f"Error: code_search failed: {e}")
    if rc == 128:
        msg = [m for m in err.decode("utf-8", "replace").splitlines() if m.strip()]
        first = msg[0].removeprefix("fatal: ") if msg else "git grep failed"
        return ToolResult.error(f"Error: invalid search: {first}")
    prefix = f"{view.head}:"
    per_file: dict[str, list[str]] = {}
    for rec in out.split(b"\n"):
        parts = rec.split(b"\0", 2)
        if len(parts) != 3:
            continue
        name = git.decode_text(parts[0]).removeprefix(prefix)
        if view.is_secret(name):
            continue
        content = git.decode_text(parts[2]).removesuffix("\r")
        row = f"{parts[1].decode('ascii', 'replace')}|{cut(content, SEARCH_LINE_MAX_CHARS)}"
        per_file.setdefault(name, []).append(row)
    if not per_file:
        return ToolResult(NO_MATCHES)
    per_file = _redact_in_context(view, per_file)
    total = sum(min(len(rows), SEARCH_MAX_PER_FILE) for rows in per_file.values())
    around = _context_rows(view, per_file) if total <= SEARCH_CONTEXT_MAX_MATCHES else {}
    blocks: list[str] = []
    size = 0
    for name, rows in per_file.items():
        shown = rows[:SEARCH_MAX_PER_FILE]
        block = f"File: {name}\nMatch lines: {len(shown)}\n" + "\n".join(
            _with_context(shown, around.get(name, {})))
        if len(rows) > SEARCH_MAX_PER_FILE:
            block += (
                f"\nNote: more than {SEARCH_MAX_PER_FILE} matches in this file; only the first"
                f" {SEARCH_MAX_PER_FILE} are shown. Narrow search_text or file_patterns."
            )
        size += len(block.encode("utf-8", "replace")) + 2
        if size > SEARCH_OUTPUT_MAX_BYTES and blocks:
            break
        blocks.append(block)
    result = "\n\n".join(blocks)
    if total > SEARCH_CONTEXT_MAX_MATCHES:
        result += (f"\n\nNote: {total} matches, so no context lines (given for at most"
                   f" {SEARCH_CONTEXT_MAX_MATCHES}); file_read shows the lines around one.")
    if len(blocks) < len(per_file):
        result = (
            f"Note: output truncated to {SEARCH_OUTPUT_MAX_BYTES} bytes: showing {len(blocks)} of"
            f" {len(per_file)} matching files. Narrow file_patterns to see the rest.\n\n" + result
        )
    return ToolResult(view.redact(result))


def _redact_in_context(view: SnapshotView, per_file: dict[str, list[str]]
                       ) -> dict[str, list[str]]:
    """``per_file`` (path → ``<n>|<text>`` rows of git grep) with each row that may be part of
    a secret written over several lines (_MULTI_LINE_PART) redacted in the context of its file
    (SnapshotView.redacted_rows, windows of SEARCH_REDACT_WINDOW_LINES). The files are read in
    one batch, SEARCH_CONTEXT_MAX_BYTES at most; rows of files left unread stay as they are
    (every row is still redacted on its own with the whole result)."""
    suspects = {name: [int(r.split("|", 1)[0]) for r in rows[:SEARCH_MAX_PER_FILE]
                       if re.search(_MULTI_LINE_PART, r.split("|", 1)[1])]
                for name, rows in per_file.items()}
    names = [name for name, numbers in suspects.items() if numbers]
    if not names:
        return per_file
    try:
        blobs = view.read_many(names, SEARCH_CONTEXT_MAX_BYTES)
    except GitError:
        return per_file
    out = dict(per_file)
    for name, data in blobs.items():
        red = view.redacted_rows(git.decode_text(data).split("\n"), suspects[name],
                                 SEARCH_REDACT_WINDOW_LINES)
        rows = []
        for row in per_file[name]:
            n = int(row.split("|", 1)[0])
            rows.append(f"{n}|{cut(red[n].removesuffix(chr(13)), SEARCH_LINE_MAX_CHARS)}"
                        if n in red else row)
        out[name] = rows
    return out


def _row_number(row: str) -> int:
    return int(row.split("|", 1)[0])


def _context_rows(view: SnapshotView, per_file: dict[str, list[str]]
                  ) -> dict[str, dict[int, str]]:
    """Path → {n: ``<n>-<text>``} for the SEARCH_CONTEXT_LINES lines on each side of every
    shown match that are not matches themselves, redacted in their file context like the
    matches. The files are read in one batch, SEARCH_CONTEXT_MAX_BYTES at most; a file left
    unread (or a failed read) gets no context."""
    try:
        blobs = view.read_many(list(per_file), SEARCH_CONTEXT_MAX_BYTES)
    except GitError:
        return {}
    out: dict[str, dict[int, str]] = {}
    for name, data in blobs.items():
        lines = git.decode_text(data).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = {_row_number(r) for r in per_file[name][:SEARCH_MAX_PER_FILE]}
        near = {n + d for n in hits for d in range(-SEARCH_CONTEXT_LINES,
                                                    SEARCH_CONTEXT_LINES + 1)} - hits
        red = view.redacted_rows(lines, near, SEARCH_REDACT_WINDOW_LINES)
        out[name] = {n: f"{n}-{cut(text.removesuffix(chr(13)), SEARCH_LINE_MAX_CHARS)}"
                     for n, text in red.items()}
    return out


def _with_context(shown: list[str], around: dict[int, str]) -> list[str]:
    """Match rows and their context rows (:func:`_context_rows`), by line number."""
    rows = {_row_number(r): r for r in shown}
    return [rows.get(n) or around[n] for n in sorted(set(rows) | set(around))]


def make_handler(env: ToolEnv) -> Handler:
    """``code_search`` on ``env.view``."""
    return lambda a: code_search(env.view, a)
