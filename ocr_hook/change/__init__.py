"""The change a review reads: the change set loaded within bounds, file selection, review rules,
the repository's agent guidance, the hook's file names, deleted files still referred to, findings
made without the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .changeset import ChangeSet, ScanPolicy, load_change_set
    from .guidance import GUIDANCE_FILES, NO_GUIDANCE, Guidance, GuidanceFile, load_guidance
    from .hookinput import changes_only_notice, filter_paths
    from .notes import input_warnings
    from .rule_sources import RuleLayers, load_rule_layers, selection_globs
    from .scan import change_findings
    from .selection import (
        BOUND_REASONS,
        NOT_REVIEWED_REASONS,
        TOO_LARGE_FRACTION,
        Decision,
        SelectionPolicy,
        SelectionReason,
        reason_words,
    )
    from .whole import WHOLE_DETAIL, WHOLE_GATES

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "changeset": ("ChangeSet", "ScanPolicy", "load_change_set",),
    "guidance": ("GUIDANCE_FILES", "NO_GUIDANCE", "Guidance", "GuidanceFile", "load_guidance",),
    "hookinput": ("changes_only_notice", "filter_paths",),
    "notes": ("input_warnings",),
    "rule_sources": ("RuleLayers", "load_rule_layers", "selection_globs",),
    "scan": ("change_findings",),
    "selection": ("BOUND_REASONS", "NOT_REVIEWED_REASONS", "TOO_LARGE_FRACTION", "Decision",
                  "SelectionPolicy", "SelectionReason", "reason_words",),
    "whole": ("WHOLE_DETAIL", "WHOLE_GATES",),
})
