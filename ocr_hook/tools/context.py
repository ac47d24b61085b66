"""Read-only context tools on the reviewed snapshot (SPEC §7.1): file_read, file_read_diff,
file_find, code_search. They read ``<head tree>:<path>`` through git, never the work tree, and
are confined to the repository (no ``..``, no absolute paths; symlinks read as link text).
Output formats and strings follow SPEC §7.1 exactly.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import gitio
from ..diff import FileDiff
from ..errors import GitError
from .registry import ToolResult

FILE_READ_MAX_LINES = 500  # SPEC §7.1
READ_DIFF_MAX_LINES = 500  # SPEC §7.1
FILE_FIND_MAX = 100  # SPEC §7.1
SEARCH_MAX_PER_FILE = 100  # SPEC §7.1
SEARCH_OUTPUT_CAP_BYTES = 128 * 1024  # total code_search output cap
SEARCH_LINE_CAP_CHARS = 1000
GREP_TIMEOUT_S = 10.0  # SPEC §7 (OCR git grep / ls-files)
READ_TIMEOUT_S = 30.0  # SPEC §7 (OCR git show)
NOT_FOUND_FILE = "// The file was not found"


def confine(path: object) -> str | None:
    """Normalise a model-supplied repository path; None when it is empty, absolute or leaves
    the repository (``..``)."""
    if not isinstance(path, str):
        return None
    p = path.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    if not p or p.startswith("/") or (len(p) > 1 and p[1] == ":"):
        return None
    norm = posixpath.normpath(p)
    if norm in (".", "..") or norm.startswith("../") or "/../" in f"/{p}/":
        return None
    return norm


def _bool(v: Any, default: bool = False) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes")
    return default


def _int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    raise ValueError(f"not an integer: {v!r}")


@dataclass
class SnapshotView:
    """The files a review may read: ``head`` tree-ish in ``repo`` and the change set's diffs.

    ``redact`` is applied to every text a tool returns (secret redaction choke point).
    """

    repo: Path
    head: str
    files: Sequence[FileDiff]
    redact: Callable[[str], str] = lambda s: s

    def __post_init__(self) -> None:
        self._by_path: dict[str, FileDiff] = {}
        for f in self.files:
            self._by_path.setdefault(f.new_path, f)
            self._by_path.setdefault(f.old_path, f)
        self._tree_cache: list[str] | None = None

    def diff_for(self, path: str) -> FileDiff | None:
        return self._by_path.get(path)

    def read(self, path: str) -> bytes | None:
        rc, out, _ = gitio.run_git_full(
            self.repo, "cat-file", "blob", f"{self.head}:{path}", timeout_s=READ_TIMEOUT_S,
            ok_codes=(0, 128),
        )
        return out if rc == 0 else None

    def tree_paths(self) -> list[str]:
        if self._tree_cache is None:
            out = gitio.run_git(
                self.repo, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "-z",
                "--end-of-options", self.head, timeout_s=GREP_TIMEOUT_S,
            )
            self._tree_cache = gitio.zsplit(out)
        return self._tree_cache


def file_read(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_read {file_path, start_line?, end_line?}`` (SPEC §7.1)."""
    raw_path = args.get("file_path")
    if not isinstance(raw_path, str) or not raw_path.strip():
        return ToolResult.error("Error: file_path is required")
    path = confine(raw_path)
    if path is None:
        return ToolResult.error(
            f'Error: file_path "{raw_path}" is outside the repository; use a repository-relative path'
        )
    try:
        start = _int(args.get("start_line"))
        end = _int(args.get("end_line"))
    except ValueError as e:
        return ToolResult.error(f"Error: {e}")
    data = view.read(path)
    if data is None:
        return ToolResult.error(
            f'Error: file not found: "{path}". Use file_find to locate the exact path, then retry'
            " file_read."
        )
    lines = gitio.decode_text(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    s = 1 if start is None or start < 1 else start
    e = total if end is None or end < 1 else end
    if s > e:
        return ToolResult.error(
            f"Error: invalid line range: start_line {s} is greater than end_line {e}"
        )
    if total == 0 or s > total:
        return ToolResult.error(
            f'Error: file "{path}" has only {total} lines, requested range {s}-{e}'
        )
    e = min(e, total)
    truncated = e - s + 1 > FILE_READ_MAX_LINES
    if truncated:
        e = s + FILE_READ_MAX_LINES - 1
    body = "\n".join(f"{n}|{lines[n - 1].rstrip(chr(13))}" for n in range(s, e + 1))
    out = (
        f"File: {path} (Total lines: {total})\nIS_TRUNCATED: {'true' if truncated else 'false'}\n"
        f"LINE_RANGE: {s}-{e}\n{body}"
    )
    if truncated:
        out += (
            f"\n\nNote: Results truncated to {FILE_READ_MAX_LINES} lines. Please narrow your line"
            " range."
        )
    return ToolResult(view.redact(out))


def file_read_diff(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_read_diff {path_array}`` (SPEC §7.1): ``==== FILE: <p> ====`` + diff per file."""
    paths = args.get("path_array")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not [p for p in paths if isinstance(p, str) and p.strip()]:
        return ToolResult.error("Error: no files found")
    blocks: list[str] = []
    for p in paths:
        norm = confine(p)
        fd = view.diff_for(norm) if norm else None
        if fd is None:
            continue
        blocks.append(f"==== FILE: {fd.path} ====\n{fd.patch}")
    if not blocks:
        return ToolResult.error("Error: diff not found for the requested paths")
    lines = "\n".join(blocks).split("\n")
    if len(lines) > READ_DIFF_MAX_LINES:
        lines = lines[:READ_DIFF_MAX_LINES]
        text = "IS_TRUNCATED: true\n" + "\n".join(lines) + (
            f"\n\nNote: Results truncated to {READ_DIFF_MAX_LINES} lines. Request fewer paths"
            " per call to see the rest."
        )
    else:
        text = "\n".join(lines)
    return ToolResult(view.redact(text))


def file_find(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_find {query_name, case_sensitive?}``: basename substring, then full-path
    substring; at most 100 paths; none → ``// The file was not found``."""
    q = args.get("query_name")
    if not isinstance(q, str) or not q.strip():
        return ToolResult(NOT_FOUND_FILE)
    q = q.strip().replace("\\", "/")
    cs = _bool(args.get("case_sensitive"))
    norm = (lambda s: s) if cs else str.lower
    needle = norm(q)
    try:
        paths = view.tree_paths()
    except GitError as e:
        return ToolResult.error(f"Error: {e}")
    hits = [p for p in paths if needle in norm(posixpath.basename(p))]
    if not hits:
        hits = [p for p in paths if needle in norm(p)]
    if not hits:
        return ToolResult(NOT_FOUND_FILE)
    return ToolResult("\n".join(hits[:FILE_FIND_MAX]))


def code_search(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``code_search {search_text, file_patterns?, case_sensitive?, use_perl_regexp?}``:
    ``git grep`` on the snapshot tree; ``-e`` before the text, ``--`` before pathspecs."""
    text = args.get("search_text")
    if not isinstance(text, str) or not text.strip():
        return ToolResult.error("Error: search_text is blank")
    patterns = args.get("file_patterns") or []
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        return ToolResult.error("Error: file_patterns must be an array of strings")
    for p in patterns:
        body = p.split(")", 1)[1] if p.startswith(":(") and ")" in p else p
        if ".." in body.split("/") or body.startswith("/"):
            return ToolResult.error("Error: file_patterns must not contain .. or absolute paths")
    cmd = ["-c", "core.quotePath=false", "grep", "-n", "-z", "--no-color", "-I",
           "--max-count", str(SEARCH_MAX_PER_FILE + 1)]
    if not _bool(args.get("case_sensitive")):
        cmd.append("-i")
    cmd.append("-P" if _bool(args.get("use_perl_regexp")) else "-F")
    cmd += ["-e", text, view.head, "--", *[p for p in patterns if p.strip()]]
    try:
        rc, out, err = gitio.run_git_full(view.repo, *cmd, timeout_s=GREP_TIMEOUT_S,
                                          ok_codes=(0, 1, 128))
    except GitError as e:
        return ToolResult.error(
            f"Error: git grep failed ({e}); try narrowing file_patterns to a more specific path"
        )
    if rc == 128:
        msg = err.decode("utf-8", "replace").strip().splitlines()
        return ToolResult.error(f"Error: invalid search: {msg[0] if msg else 'git grep failed'}")
    if rc == 1 or not out:
        return ToolResult("No matches found")
    prefix = f"{view.head}:"
    per_file: dict[str, list[tuple[str, str]]] = {}
    for rec in out.split(b"\n"):
        if not rec:
            continue
        parts = rec.split(b"\0", 2)
        if len(parts) != 3:
            continue
        name = parts[0].decode("utf-8", "replace")
        if name.startswith(prefix):
            name = name[len(prefix):]
        content = parts[2].decode("utf-8", "replace").rstrip("\r")
        if len(content) > SEARCH_LINE_CAP_CHARS:
            content = content[:SEARCH_LINE_CAP_CHARS] + " …"
        per_file.setdefault(name, []).append((parts[1].decode(), content))
    blocks: list[str] = []
    size = 0
    omitted = 0
    for name, matches in per_file.items():
        shown = matches[:SEARCH_MAX_PER_FILE]
        block = f"File: {name}\nMatch lines: {len(shown)}\n" + "".join(
            f"{ln}|{c}\n" for ln, c in shown
        )
        if len(matches) > SEARCH_MAX_PER_FILE:
            block += (
                f"Note: more than {SEARCH_MAX_PER_FILE} matches in this file; only the first"
                f" {SEARCH_MAX_PER_FILE} are shown. Narrow search_text or file_patterns.\n"
            )
        if size + len(block) > SEARCH_OUTPUT_CAP_BYTES:
            omitted += 1
            continue
        size += len(block)
        blocks.append(block)
    result = "\n".join(blocks)
    if omitted:
        result += (
            f"\nNote: output truncated; {omitted} more matching file(s) omitted. Narrow"
            " file_patterns to see the rest."
        )
    return ToolResult(view.redact(result))
