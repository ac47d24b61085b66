"""``file_read_diff`` (spec §7.1): the diffs of other changed files of this change.

Output (spec §7.1, the reference tool's (OCR) format): ``==== FILE: <p> ====`` + the file's
patch, files joined by newlines; over 500 lines the output starts with ``IS_TRUNCATED: true``
and ends with a note.
"""

from __future__ import annotations

from typing import Any

from ... import util
from ..registry import Handler, ToolResult
from ..snapshot import SnapshotView, confine, is_secret_path
from .common import ToolEnv

READ_DIFF_MAX_LINES = 500  # spec §7.1 (OCR file_read_diff)
READ_DIFF_MAX_BYTES = 128 * 1024  # total file_read_diff output cap (ours)


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


def make_handler(env: ToolEnv) -> Handler:
    """``file_read_diff`` on ``env.view``."""
    return lambda a: file_read_diff(env.view, a)
