"""``file_read`` (spec §7.1): a file of the reviewed snapshot with line numbers.

Output (spec §7.1, the reference tool's (OCR) format): ``File: <p> (Total lines: N)`` /
``IS_TRUNCATED: true|false`` / ``LINE_RANGE: s-e`` / ``<n>|<line>``…; on truncation a blank
line and ``Note: Results truncated to 500 lines. Please narrow your line range.``. An empty file
reads as the header with ``LINE_RANGE: 0-0`` and no lines.
"""

from __future__ import annotations

from typing import Any

from ... import git
from ...errors import GitError
from ..registry import Handler, ToolResult
from ..snapshot import SnapshotView, confine
from .common import ToolEnv, as_int, cut, read_blob, secret_refusal

FILE_READ_MAX_LINES = 500  # spec §7.1 (OCR file_read)
FILE_READ_MAX_BYTES = 128 * 1024  # total file_read output cap (ours; OCR's search response cap)
FILE_READ_LINE_MAX_CHARS = 2000  # one very long line (minified code) is cut here (ours)
BINARY_SNIFF_BYTES = 8000  # spec §4 gate 1: a NUL byte in the first 8000 bytes means binary
# Secrets are redacted in their file context before lines are numbered (``tools.snapshot``:
# SnapshotView.redacted_rows with its defaults).


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
        return secret_refusal(path)
    changed = view.diff_for(path)
    if changed is not None and changed.size_bytes is not None and path == changed.new_path:
        return ToolResult.error(  # a file too large to load is never read whole
            f'Error: "{path}" is too large to read ({changed.size_bytes} bytes, above '
            "select.max_file_bytes); use code_search to find lines in it"
        )
    try:
        start = as_int(args.get("start_line"), "start_line")
        end = as_int(args.get("end_line"), "end_line")
    except ValueError as e:
        return ToolResult.error(f"Error: {e}")
    try:
        data, path = read_blob(view, raw_path, path)
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
        row = f"{n}|{cut(redacted[n].removesuffix(chr(13)), FILE_READ_LINE_MAX_CHARS)}"
        size += len(row.encode("utf-8", "replace")) + 1
        if size > FILE_READ_MAX_BYTES and body:
            return body, n - 1, (
                f"Note: Results truncated to {FILE_READ_MAX_BYTES} bytes (through line {n - 1})."
                " Please narrow your line range."
            )
        body.append(row)
    return body, last, note


def make_handler(env: ToolEnv) -> Handler:
    """``file_read`` on ``env.view``."""
    return lambda a: file_read(env.view, a)
