"""A review's input: the change set of every target, joined, loaded within the bounds of
``select.*`` and ``security.max_scan_bytes`` (``change.load_change_set``), and the words for
the files a bound left out.

A push with several ranges is reviewed one range per run (``pipeline.ranges``), so there is
usually one target; the join keeps git's order within each target and the targets' order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import change, util
from ..diff import FileDiff
from ..git import Target

if TYPE_CHECKING:
    from .request import ReviewRequest


def load_targets(req: ReviewRequest, targets: Sequence[Target], count: Callable[[str], int]
                 ) -> tuple[change.ChangeSet, str]:
    """(the joined change set, the changes-only notice or "") of ``targets``: sizes first,
    content only where a decision or the secret scan (not for ``--preview``) needs it, the
    hook's file names (``req.path_filter``) as a filter. ``count`` counts tokens for the
    context gate. Raises GitError / DiffParseError."""
    security = req.config.security
    scan = None if req.preview else change.ScanPolicy(
        tuple(security.allow_secrets), security.max_scan_bytes)
    whole = change.ChangeSet([], [])
    unchanged: list[str] | None = None
    for t in targets:
        cs = change.load_change_set(req.repo, t, req.selection_policy, count_tokens=count,
                                       scan=scan, names=req.path_filter)
        whole.files += cs.files
        whole.decisions += cs.decisions
        whole.findings += cs.findings
        whole.probes += cs.probes
        if cs.unchanged_names is not None:  # a name is unchanged when no range changes it
            unchanged = (list(cs.unchanged_names) if unchanged is None
                         else [n for n in unchanged if n in cs.unchanged_names])
    notice = change.changes_only_notice(unchanged or [], len(whole.files), req.environ,
                                           req.mode)
    return whole, notice


def scan_inputs(cs: change.ChangeSet
                ) -> tuple[list[change.Decision], list[FileDiff]]:
    """What the caller's secret scan (``change.change_findings``) reads: the decisions
    of the loaded files and the probes (files parsed only for the scan), and every changed
    file for the protected-path check, a probe in place of its unloaded file."""
    probed = {(p.file.status, p.file.old_path, p.file.new_path): p.file for p in cs.probes}
    listed = [probed.get((f.status, f.old_path, f.new_path), f) for f in cs.files]
    return [*(d for d in cs.decisions if d.file.loaded), *cs.probes], listed


def bound_text(bounded: Sequence[change.Decision], policy: change.SelectionPolicy) -> str:
    """Why files were left out by a bound of the change set, in words with the settings."""
    reasons = {d.reason for d in bounded}
    parts = []
    if change.SelectionReason.OVER_MAX_FILES in reasons:
        parts.append(f"the change has more files to review than select.max_files "
                     f"({policy.max_files})")
    if change.SelectionReason.OVER_MAX_TOTAL_BYTES in reasons:
        parts.append(f"the diffs to review are larger than select.max_total_bytes "
                     f"({util.human_bytes(policy.max_total_bytes)})")
    return " and ".join(parts) + "; `git ocr review --preview` lists them"
