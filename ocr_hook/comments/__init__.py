"""Comments: anchoring a quoted snippet to exact lines (pure), the thread-safe comment pool,
dismissals and their files, the comparison of two reviews' findings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .compare import Comparison, compare_by_key, compare_since, finding_from_record
    from .dismissal_files import (
        git_author,
        load_for_review,
        load_personal,
        load_shared_worktree,
        now_iso,
        save_personal,
        save_shared,
    )
    from .dismissals import (
        IGNORE_MARKER,
        Dismissal,
        DismissedFinding,
        apply_dismissals,
        can_dismiss,
        finding_key,
    )
    from .pool import OUTSIDE_CHANGE, Collector, CommentPool, CommentProcessor, Dropped

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "compare": ("Comparison", "compare_by_key", "compare_since", "finding_from_record"),
    "dismissal_files": (
        "git_author",
        "load_for_review",
        "load_personal",
        "load_shared_worktree",
        "now_iso",
        "save_personal",
        "save_shared",
    ),
    "dismissals": (
        "Dismissal",
        "DismissedFinding",
        "IGNORE_MARKER",
        "apply_dismissals",
        "can_dismiss",
        "finding_key",
    ),
    "pool": ("Collector", "CommentPool", "CommentProcessor", "Dropped", "OUTSIDE_CHANGE"),
})
