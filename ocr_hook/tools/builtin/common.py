"""What the built-in tools share: the environment their handlers are bound to (:class:`ToolEnv`),
argument coercion, line cutting, the secret-path refusal and blob reading.

Every failure a tool reports is a ``ToolResult`` starting with ``Error:``; nothing here raises
for bad arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ... import util
from ...findings import Finding, RawComment
from ..registry import ToolResult
from ..snapshot import SnapshotView, confine

LINE_CUT = " … [line truncated]"

# Where ``code_comment`` hands a group's comments; it may answer with where each landed (its
# Finding, or None when not placed) so the result can tell the model.
Sink = Callable[[list[RawComment]], "Sequence[Finding | None] | None"]


class ToolEnv(NamedTuple):
    """What a built-in tool's handler is bound to: the reviewed snapshot (one per run) and,
    for ``code_comment``, which each group binds for itself, the group's comment sink and
    label."""

    view: SnapshotView
    sink: Sink | None = None
    group: str = ""


def secret_refusal(path: str) -> ToolResult:
    """The answer for a path on the secret-path list (spec §4): its content is never shared."""
    return ToolResult.error(
        f'Error: "{path}" is on the secret-path list (keys, .env, credentials); its content is'
        " never shared"
    )


def as_bool(v: Any, default: bool = False) -> bool:
    """A boolean argument: a bool, ``1/true/yes`` or ``0/false/no/""`` (any case), an int
    (non-zero is true); anything else is ``default``."""
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


def as_int(v: Any, name: str) -> int | None:
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


def cut(line: str, limit: int) -> str:
    """``line``, cut after ``limit`` characters with LINE_CUT appended."""
    return line if len(line) <= limit else line[:limit] + LINE_CUT


def read_blob(view: SnapshotView, raw_path: str, path: str) -> tuple[bytes | None, str]:
    """The blob at ``path`` and ``path``; else, for a path the model copied as a prompt shows
    it (``a&amp;b.py``), the blob of the real path and that path; (None, ``path``) when
    neither exists. Raises GitError as ``SnapshotView.read``."""
    data = view.read(path)
    alt = confine(util.unescape_prompt_path(raw_path))
    if data is not None or alt is None or alt == path or view.is_secret(alt):
        return data, path
    data = view.read(alt)
    return (data, alt) if data is not None else (None, path)
