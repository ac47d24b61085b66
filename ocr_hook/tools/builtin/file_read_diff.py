"""``file_read_diff`` (spec §7.1): the diff of any changed file of this change.

Output (spec §7.1, the reference tool's (OCR) format): ``==== FILE: <p> ====`` + the file's
patch, files joined by newlines; over 500 lines the output starts with ``IS_TRUNCATED: true``
and ends with a note. A file the change set did not load (excluded from review, over a bound)
has its diff read on demand (``SnapshotView.read_patch``); a file too large to load says so in
place of its patch.
"""

from __future__ import annotations

from typing import Any

from ... import util
from ...diff import FileDiff
from ...errors import GitError
from ..registry import Handler, ToolResult
from ..snapshot import REDACT_WINDOW_LINES, SnapshotView, confine, is_secret_path
from .common import ToolEnv

READ_DIFF_MAX_LINES = 500  # spec §7.1 (OCR file_read_diff)
READ_DIFF_MAX_BYTES = 128 * 1024  # total file_read_diff output cap (ours)
READ_DIFF_LOAD_MAX_BYTES = 4 * 1024 * 1024  # a diff read on demand is held up to this (ours)


def file_read_diff(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_read_diff {path_array}`` (spec §7.1): ``==== FILE: <p> ====`` + the patch of each
    changed path (new or old name; reviewed or not), in request order, each file once.
    Unknown paths are omitted; secret paths are omitted too. At most 500 lines (and 128 KiB)
    in all. Each patch is redacted (``view.redact``) before it is cut, over its first
    READ_DIFF_MAX_LINES + REDACT_WINDOW_LINES lines (no more can be shown), so a secret written
    over several lines that the cut goes through is recognised whole."""
    paths = args.get("path_array")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not [p for p in paths if isinstance(p, str) and p.strip()]:
        return ToolResult.error("Error: no files found")
    lines: list[str] = []
    total = 0  # lines of every requested patch, cut or not
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
        body = _body(view, fd).split("\n")
        total += 1 + len(body)
        head = view.redact("\n".join(body[:READ_DIFF_MAX_LINES + REDACT_WINDOW_LINES]))
        lines += [f"==== FILE: {fd.path} ====", *head.split("\n")]
    if not seen:
        return ToolResult.error("Error: diff not found for the requested paths")
    kept: list[str] = []
    size = 0
    for ln in lines[:READ_DIFF_MAX_LINES]:
        size += len(ln.encode("utf-8", "replace")) + 1
        if size > READ_DIFF_MAX_BYTES and kept:
            break
        kept.append(ln)
    if len(kept) == total:  # every patch was redacted above, before any cut
        return ToolResult("\n".join(kept))
    return ToolResult(
        "IS_TRUNCATED: true\n" + "\n".join(kept) + f"\n\nNote: Results truncated to {len(kept)}"
        f" of {total} diff lines. Request fewer paths per call, or use file_read for the"
        " rest of a file."
    )


def _body(view: SnapshotView, fd: FileDiff) -> str:
    """``fd``'s patch (without a last newline), or what stands in its place: a file too large
    to load, a diff larger than READ_DIFF_LOAD_MAX_BYTES, a failed read."""
    if fd.size_bytes is not None and not fd.loaded:
        return (f"(diff not shown: the file is {fd.size_bytes} bytes, above"
                " select.max_file_bytes)")
    try:
        patch, size = view.read_patch(fd, READ_DIFF_LOAD_MAX_BYTES)
    except GitError as e:
        return f"(diff could not be read: {util.one_line(str(e))})"
    if patch is not None:
        return patch.rstrip("\n")
    if size:
        return (f"(diff not shown: {util.human_bytes(size)}, more than file_read_diff reads"
                f" ({util.human_bytes(READ_DIFF_LOAD_MAX_BYTES)}))")
    return "(diff not available)"


def make_handler(env: ToolEnv) -> Handler:
    """``file_read_diff`` on ``env.view``."""
    return lambda a: file_read_diff(env.view, a)
