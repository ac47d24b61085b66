"""Read-only context tools on the reviewed snapshot (spec §7.1): file_read, file_read_diff,
file_find, code_search.

They read ``<head>:<path>`` through git (``snapshot.SnapshotView``; ``head`` is the staged
snapshot tree, or the reviewed commit), never the work tree, and are confined to the
repository: paths with ``..``, absolute paths and drive letters are refused before git runs,
and git's own ``<tree>:<path>`` lookup never follows a symlink, so a symlink reads as its link
text and nothing behind it (a path through a symlinked directory is "not found"). Files on the
secret-path list of spec §4 (``config/path_lists.json``: ``.env``, keys, ``.netrc`` …) are never
returned, since they are excluded from the review for exactly that reason.

Output formats and strings follow spec §7.1, which keeps those of the reference tool (OCR):

- ``file_read``: ``File: <p> (Total lines: N)`` / ``IS_TRUNCATED: true|false`` /
  ``LINE_RANGE: s-e`` / ``<n>|<line>``…; on truncation a blank line and
  ``Note: Results truncated to 500 lines. Please narrow your line range.``. An empty file
  reads as the header with ``LINE_RANGE: 0-0`` and no lines.
- ``file_read_diff``: ``==== FILE: <p> ====`` + the file's patch, files joined by newlines; over
  500 lines the output starts with ``IS_TRUNCATED: true`` and ends with a note.
- ``file_find``: newline-joined paths; ``// The file was not found``.
- ``code_search``: per file ``File: <p>`` / ``Match lines: n`` / ``<ln>|<content>``, files
  separated by a blank line; ``No matches found``; ``Error: search_text is blank``.

Every failure is a ``ToolResult`` starting with ``Error:``; nothing here raises for bad
arguments or git failures (timeouts included).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from ... import git, util
from ...errors import GitError
from ...util import real_path
from ..registry import Handler, ToolResult
from ..snapshot import GREP_TIMEOUT_S, SnapshotView, confine, is_secret_path

FILE_READ_MAX_LINES = 500  # spec §7.1 (OCR file_read)
FILE_READ_MAX_BYTES = 128 * 1024  # total file_read output cap (ours; OCR's search response cap)
FILE_READ_LINE_MAX_CHARS = 2000  # one very long line (minified code) is cut here (ours)
READ_DIFF_MAX_LINES = 500  # spec §7.1 (OCR file_read_diff)
READ_DIFF_MAX_BYTES = 128 * 1024  # total file_read_diff output cap (ours)
FILE_FIND_MAX = 100  # spec §7.1 (OCR file_find)
SEARCH_MAX_PER_FILE = 100  # spec §7.1 (OCR code_search)
SEARCH_OUTPUT_MAX_BYTES = 128 * 1024  # total code_search output cap (OCR newest: 128 KiB)
SEARCH_LINE_MAX_CHARS = 1000  # one matching line is cut here (ours)
BINARY_SNIFF_BYTES = 8000  # spec §4 gate 1: a NUL byte in the first 8000 bytes means binary
# Secrets are redacted in their file context before lines are numbered (see
# ``tools.snapshot``). file_read: SnapshotView.redacted_rows defaults. code_search: windows of
# SEARCH_REDACT_WINDOW_LINES lines around each matching line that may be part of such a value
# (_MULTI_LINE_PART), for at most SEARCH_CONTEXT_MAX_BYTES of files per call, read in one
# `git cat-file --batch` (ours).
SEARCH_REDACT_WINDOW_LINES = 64  # a 4096-bit RSA key's PEM block has 51 lines
SEARCH_CONTEXT_MAX_BYTES = 16 * 1024 * 1024
SEARCH_CONTEXT_LINES = 1  # lines shown on each side of a match
SEARCH_CONTEXT_MAX_MATCHES = 30  # context only for searches with at most this many matches
# A line that is only a string literal or a token-like run (a continuation piece, a PEM body line,
# a JSON value under its key), or that ends in a token-like literal (a first piece).
_MULTI_LINE_PART = (  # compiled on first use (re's cache): most reviews run no search
    r"""^[ \t+\-.&|(\[{,]*(?:["'`][^"'`]*["'`]|[A-Za-z0-9+/=_\-]{16,})[ \t)\]},;\\]*$"""
    r"""|["'`][A-Za-z0-9+/=_\-]{8,}["'`][ \t]*[+.&\\(]?[ \t]*$""")

NOT_FOUND_FILE = "// The file was not found"  # spec §7.1
NO_MATCHES = "No matches found"  # spec §7.1
LINE_CUT = " … [line truncated]"


def _secret_error(path: str) -> ToolResult:
    return ToolResult.error(
        f'Error: "{path}" is on the secret-path list (keys, .env, credentials); its content is'
        " never shared"
    )


def _bool(v: Any, default: bool = False) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("1", "true", "yes"):
            return True
        if s in ("0", "false", "no", ""):
            return False
    if isinstance(v, int):
        return v != 0
    return default


def _int(v: Any, name: str) -> int | None:
    """An optional integer argument: int, integral float or digit string; None when absent.
    Raises ValueError("<name> must be an integer, got <v>") otherwise."""
    if v is None or v == "":
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    raise ValueError(f"{name} must be an integer, got {v!r}")


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + LINE_CUT


def _read_blob(view: SnapshotView, raw_path: str, path: str) -> tuple[bytes | None, str]:
    """The blob at ``path`` and ``path``; else, for a path the model copied as a prompt shows
    it (``a&amp;b.py``), the blob of the real path and that path; (None, ``path``) when
    neither exists. Raises GitError as ``SnapshotView.read``."""
    data = view.read(path)
    alt = confine(util.unescape_prompt_path(raw_path))
    if data is not None or alt is None or alt == path or view.is_secret(alt):
        return data, path
    data = view.read(alt)
    return (data, alt) if data is not None else (None, path)


def file_read(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_read {file_path, start_line?, end_line?}`` (spec §7.1).

    start_line < 1 or absent → 1; end_line < 1 or absent → the last line; end_line past the
    end is clamped. At most 500 lines and 128 KiB per call; lines longer than 2000 characters
    are cut. ``\\r`` at line ends is dropped.
    """
    raw_path = args.get("file_path")
    if not isinstance(raw_path, str) or not raw_path.strip():
        return ToolResult.error("Error: file_path is required")
    path = confine(raw_path)
    if path is None:
        return ToolResult.error(
            f'Error: file_path "{raw_path}" is outside the repository; use a repository-relative'
            " path without .."
        )
    if view.is_secret(path):
        return _secret_error(path)
    changed = view.diff_for(path)
    if changed is not None and changed.size_bytes is not None and path == changed.new_path:
        return ToolResult.error(  # a file too large to load is never read whole
            f'Error: "{path}" is too large to read ({changed.size_bytes} bytes, above '
            "select.max_file_bytes); use code_search to find lines in it"
        )
    try:
        start = _int(args.get("start_line"), "start_line")
        end = _int(args.get("end_line"), "end_line")
    except ValueError as e:
        return ToolResult.error(f"Error: {e}")
    try:
        data, path = _read_blob(view, raw_path, path)
    except GitError as e:
        return ToolResult.error(f'Error: could not read file "{path}": {e}')
    if data is None:
        return ToolResult.error(
            f'Error: file not found: "{path}". Use file_find to locate the exact path, then retry'
            " file_read."
        )
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return ToolResult.error(f'Error: file "{path}" is binary; file_read shows text files only')
    lines = git.decode_text(data).split("\n")
    if lines[-1] == "":
        lines.pop()
    total = len(lines)
    if total == 0:
        return ToolResult(f"File: {path} (Total lines: 0)\nIS_TRUNCATED: false\nLINE_RANGE: 0-0")
    end_given = end is not None and end >= 1
    s = 1 if start is None or start < 1 else start
    last = end if end is not None and end_given else total
    if end_given and s > last:
        return ToolResult.error(
            f"Error: invalid line range: start_line {s} is greater than end_line {last}"
        )
    if s > total:
        shown = last if end_given else "end"
        return ToolResult.error(
            f'Error: file "{path}" has only {total} lines, requested range {s}-{shown}'
        )
    last = min(last, total)
    note = ""
    if last - s + 1 > FILE_READ_MAX_LINES:
        last = s + FILE_READ_MAX_LINES - 1
        note = (
            f"Note: Results truncated to {FILE_READ_MAX_LINES} lines. Please narrow your line"
            " range."
        )
    body, last, note = _numbered_rows(view, lines, s, last, note)
    out = (
        f"File: {path} (Total lines: {total})\nIS_TRUNCATED: {'true' if note else 'false'}\n"
        f"LINE_RANGE: {s}-{last}\n" + "\n".join(body)
    )
    if note:
        out += "\n\n" + note
    return ToolResult(view.redact(out))


def _numbered_rows(view: SnapshotView, lines: list[str], first: int, last: int, note: str
                   ) -> tuple[list[str], int, str]:
    """``<n>|<line>`` rows of lines ``first``..``last`` (1-based), redacted in their file
    context, long lines cut, up to FILE_READ_MAX_BYTES: (rows, last line shown, note), where
    the note is ``note`` or, when the byte cap cut the rows, the byte truncation note."""
    redacted = view.redacted_rows(lines, range(first, last + 1))
    body: list[str] = []
    size = 0
    for n in range(first, last + 1):
        row = f"{n}|{_cut(redacted[n].removesuffix(chr(13)), FILE_READ_LINE_MAX_CHARS)}"
        size += len(row.encode("utf-8", "replace")) + 1
        if size > FILE_READ_MAX_BYTES and body:
            return body, n - 1, (
                f"Note: Results truncated to {FILE_READ_MAX_BYTES} bytes (through line {n - 1})."
                " Please narrow your line range."
            )
        body.append(row)
    return body, last, note


def file_read_diff(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_read_diff {path_array}`` (spec §7.1): ``==== FILE: <p> ====`` + the patch of each
    known changed path, in request order, each file once. Unknown paths are omitted; secret
    paths are omitted too. At most 500 lines (and 128 KiB)."""
    paths = args.get("path_array")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not [p for p in paths if isinstance(p, str) and p.strip()]:
        return ToolResult.error("Error: no files found")
    blocks: list[str] = []
    seen: set[int] = set()
    for p in paths:
        norm = confine(p)
        fd = view.diff_for(norm) if norm else None
        if fd is None and isinstance(p, str):  # a path copied as the prompt shows it
            alt = confine(util.unescape_prompt_path(p))
            fd = view.diff_for(alt) if alt else None
        if fd is None or id(fd) in seen or is_secret_path(fd.new_path) or is_secret_path(
            fd.old_path
        ):
            continue
        seen.add(id(fd))
        body = (fd.patch.rstrip(chr(10)) if fd.loaded
                else "(diff not loaded: the file is not part of this review)")
        blocks.append(f"==== FILE: {fd.path} ====\n{body}")
    if not blocks:
        return ToolResult.error("Error: diff not found for the requested paths")
    lines = "\n".join(blocks).split("\n")
    kept: list[str] = []
    size = 0
    for ln in lines[:READ_DIFF_MAX_LINES]:
        size += len(ln.encode("utf-8", "replace")) + 1
        if size > READ_DIFF_MAX_BYTES and kept:
            break
        kept.append(ln)
    if len(kept) == len(lines):
        return ToolResult(view.redact("\n".join(kept)))
    text = (
        "IS_TRUNCATED: true\n" + "\n".join(kept) + f"\n\nNote: Results truncated to {len(kept)}"
        f" of {len(lines)} diff lines. Request fewer paths per call, or use file_read for the"
        " rest of a file."
    )
    return ToolResult(view.redact(text))


def file_find(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_find {query_name, case_sensitive?}`` (spec §7.1): paths of the snapshot whose
    basename contains the query; when none does, paths that contain it. At most 100 paths;
    more add a last ``Note:`` line; none (or a blank query) → ``// The file was not found``."""
    q = args.get("query_name")
    if not isinstance(q, str) or not q.strip():
        return ToolResult(NOT_FOUND_FILE)
    q = real_path(q.strip()).replace("\\", "/")
    case_sensitive = _bool(args.get("case_sensitive"))
    norm: Callable[[str], str] = (lambda s: s) if case_sensitive else str.lower
    needle = norm(q)
    try:
        paths = view.tree_paths()
    except GitError as e:
        return ToolResult.error(f"Error: file_find failed: {e}")
    hits = [p for p in paths if needle in norm(posixpath.basename(p))]
    if not hits:
        hits = [p for p in paths if needle in norm(p)]
    if not hits:
        return ToolResult(NOT_FOUND_FILE)
    out = "\n".join(hits[:FILE_FIND_MAX])
    if len(hits) > FILE_FIND_MAX:
        out += (
            f"\nNote: showing the first {FILE_FIND_MAX} of {len(hits)} matching files; use a more"
            " specific query_name."
        )
    return ToolResult(out)


def _pathspec_body(spec: str) -> str:
    """The path part of a git pathspec: ``:(magic)path``, ``:!path``, ``:^path``, ``:/path``."""
    if spec.startswith(":("):
        return spec.split(")", 1)[1] if ")" in spec else ""
    if spec.startswith(":"):
        return spec[1:].lstrip("!^/")
    return spec


def _search_args(args: dict[str, Any]) -> tuple[str, list[str]] | ToolResult:
    """``code_search``'s (search text, pathspecs), or the error result for bad arguments."""
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
    patterns = [p.strip() for p in patterns if p.strip()]
    for p in patterns:
        body = _pathspec_body(p).replace("\\", "/")
        if ".." in body.split("/"):
            return ToolResult.error("Error: file_patterns must not contain ..")
        if body.startswith("/") or (len(body) > 1 and body[1] == ":" and not p.startswith(":")):
            return ToolResult.error("Error: file_patterns must be repository-relative")
    return text, patterns


def code_search(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``code_search {search_text, file_patterns?, case_sensitive?, use_perl_regexp?}``
    (spec §7.1): ``git grep`` on the snapshot tree, literal (``-F``) unless Perl regexp
    (``-P``), case-insensitive unless asked; the text goes after ``-e`` and pathspecs after
    ``--``, so neither can be read as an option. At most 100 matches per file (a note says
    when a file has more), 1000 characters per line, 128 KiB in all (a first-line note says
    how many matching files were left out). Matches in secret paths are dropped. With at
    most SEARCH_CONTEXT_MAX_MATCHES matches, each comes with one line of context on each side
    (``n-line``; matches are ``n|line``); above that a last note says the context was left
    out."""
    parsed = _search_args(args)
    if isinstance(parsed, ToolResult):
        return parsed
    text, patterns = parsed
    try:
        rc, out, err = view.grep(text, patterns, ignore_case=not _bool(args.get("case_sensitive")),
                                 perl=_bool(args.get("use_perl_regexp")),
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
        row = f"{parts[1].decode('ascii', 'replace')}|{_cut(content, SEARCH_LINE_MAX_CHARS)}"
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
            rows.append(f"{n}|{_cut(red[n].removesuffix(chr(13)), SEARCH_LINE_MAX_CHARS)}"
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
        out[name] = {n: f"{n}-{_cut(text.removesuffix(chr(13)), SEARCH_LINE_MAX_CHARS)}"
                     for n, text in red.items()}
    return out


def _with_context(shown: list[str], around: dict[int, str]) -> list[str]:
    """Match rows and their context rows (:func:`_context_rows`), by line number."""
    rows = {_row_number(r): r for r in shown}
    return [rows.get(n) or around[n] for n in sorted(set(rows) | set(around))]


def builtin_handlers(view: SnapshotView) -> dict[str, Handler]:
    """Handlers of the four context tools bound to ``view``: tool name → handler."""
    return {
        "file_read": lambda a: file_read(view, a),
        "file_read_diff": lambda a: file_read_diff(view, a),
        "file_find": lambda a: file_find(view, a),
        "code_search": lambda a: code_search(view, a),
    }
