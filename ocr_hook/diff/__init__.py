"""The diff model and its parser: git's ``--raw --numstat -z`` and ``-p`` bytes -> files, hunks and
lines; hunks widened to their enclosing scope for the model (``diff.context``). Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .context import SCOPE_CONTEXT_MAX_LINES, widen_file, widened_hunks
    from .model import DiffParseError, FileDiff, Hunk, Line, RawEntry, render_numbered
    from .patch import build_file_diffs, parse_raw_numstat_z, split_raw_and_patch
    from .stream import PatchStream, fill_from_sections

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "context": ("SCOPE_CONTEXT_MAX_LINES", "widen_file", "widened_hunks",),
    "model": ("DiffParseError", "FileDiff", "Hunk", "Line", "RawEntry", "render_numbered",),
    "patch": ("build_file_diffs", "parse_raw_numstat_z", "split_raw_and_patch",),
    "stream": ("PatchStream", "fill_from_sections",),
})
