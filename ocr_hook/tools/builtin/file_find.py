"""``file_find`` (spec §7.1): paths of the reviewed snapshot by name.

Output (spec §7.1, the reference tool's (OCR) format): newline-joined paths; when none
matches, the plain statement ``No file name or path contains '<query>'.``

The query is matched against the paths as the model sees them, redacted
(``SnapshotView.shown_paths``), so that a path holding a secret (``keys/ghp_….json``) cannot be
probed character by character: ``ghp_A`` finds it only if the redacted path shows that text.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from ...errors import GitError
from ...util import real_path, shown_text
from ..registry import Handler, ToolResult
from ..snapshot import SnapshotView
from .common import ToolEnv, as_bool

FILE_FIND_MAX = 100  # spec §7.1 (OCR file_find)
NOT_FOUND_FILE = "No file name or path contains '{}'."  # spec §7.1


def file_find(view: SnapshotView, args: dict[str, Any]) -> ToolResult:
    """``file_find {query_name, case_sensitive?}`` (spec §7.1): paths of the snapshot whose
    basename contains the query; when none does, paths that contain it; both matched and
    shown as redacted (``SnapshotView.shown_paths``). At most 100 paths;
    more add a last ``Note:`` line; none → NOT_FOUND_FILE (a statement, not an error;
    ``(case-sensitive)`` added when asked); a blank query → ``Error: query_name is blank``."""
    q = args.get("query_name")
    if not isinstance(q, str) or not q.strip():
        return ToolResult.error("Error: query_name is blank")
    q = real_path(q.strip()).replace("\\", "/")
    case_sensitive = as_bool(args.get("case_sensitive"))
    norm: Callable[[str], str] = (lambda s: s) if case_sensitive else str.lower
    needle = norm(shown_text(q))  # as the shown paths write a non-UTF-8 byte
    try:
        paths = view.shown_paths()
    except GitError as e:
        return ToolResult.error(f"Error: file_find failed: {e}")
    hits = [p for p in paths if needle in norm(posixpath.basename(p))]
    if not hits:
        hits = [p for p in paths if needle in norm(p)]
    if not hits:
        found = NOT_FOUND_FILE.format(q)
        return ToolResult(found[:-1] + " (case-sensitive)." if case_sensitive else found)
    out = "\n".join(hits[:FILE_FIND_MAX])
    if len(hits) > FILE_FIND_MAX:
        out += (
            f"\nNote: showing the first {FILE_FIND_MAX} of {len(hits)} matching files; use a more"
            " specific query_name."
        )
    return ToolResult(out)


def make_handler(env: ToolEnv) -> Handler:
    """``file_find`` on ``env.view``."""
    return lambda a: file_find(env.view, a)
