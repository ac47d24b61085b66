"""A review's input: the change set of every target, joined, loaded within the bounds of
``select.*`` and ``security.max_scan_bytes`` (``change.load_change_set``), and the words for
the files that could not be fitted (too large, a bound) and for a secret scan left incomplete.

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
    from ..report import FileOutcome
    from .request import ReviewRequest


def load_targets(req: ReviewRequest, targets: Sequence[Target], count: Callable[[str], int]
                 ) -> tuple[change.ChangeSet, str]:
    """(the joined change set, the changes-only notice or "") of ``targets``: sizes first,
    content only where a decision or the secret scan (not for ``--preview``) needs it, the
    hook's file names (``req.path_filter``) or a target's own ``paths`` as a filter.
    ``count`` counts tokens for the context gate. Raises GitError / DiffParseError."""
    security = req.config.security
    scan = None if req.preview else change.ScanPolicy(
        tuple(security.allow_secrets), security.max_scan_bytes)
    whole = change.ChangeSet([], [])
    unchanged: list[str] | None = None
    for t in targets:
        names = req.path_filter if t.paths is None else t.paths
        handed = req.files_handed and t.paths is None and names is not None
        cs = change.load_change_set(req.repo, t, req.selection_policy, count_tokens=count,
                                       scan=scan, names=None if handed else names)
        if handed and names is not None:  # every changed file, the names for the notice only
            cs.unchanged_names = change.filter_paths(cs.files, names).unchanged_names
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


def bound_text(bounded: Sequence[change.Decision], policy: change.SelectionPolicy,
               scan: bool = False) -> str:
    """Why selected files were not reviewed because they could not be fitted (too large, a
    bound of the change set), in words with the settings: at most NAMES_SHOWN paths of each
    kind of too-large file, then the bounds, then the command that lists them (``git ocr
    scan … --preview`` for a ``scan``, after the bound settings to raise)."""
    reasons = {d.reason for d in bounded}
    big = [d for d in bounded if d.reason == change.SelectionReason.TOO_LARGE]
    by_size = [d for d in big if d.file.size_bytes is not None and not d.file.loaded]
    sized = {id(d.file) for d in by_size}
    by_context = [d for d in big if id(d.file) not in sized]
    parts = []
    if by_context:
        parts.append(f"{_names(by_context)} too large for the model's context "
                     f"({change.TOO_LARGE_FRACTION:.0%} of llm.context_tokens = "
                     f"{policy.context_tokens:,} tokens)")
    if by_size:
        parts.append(f"{_names(by_size)} larger than select.max_file_bytes "
                     f"({util.human_bytes(policy.max_file_bytes)})")
    if change.SelectionReason.OVER_MAX_FILES in reasons:
        parts.append(f"the {'scan' if scan else 'change'} has more files to review than"
                     f" select.max_files "
                     f"({policy.max_files})")
    if change.SelectionReason.OVER_MAX_TOTAL_BYTES in reasons:
        parts.append(f"the {'files' if scan else 'diffs'} to review are larger than"
                     f" select.max_total_bytes "
                     f"({util.human_bytes(policy.max_total_bytes)})")
    command = "git ocr scan \u2026 --preview" if scan else "git ocr review --preview"
    keys = [k for r, k in ((change.SelectionReason.OVER_MAX_FILES, "select.max_files"), (
        change.SelectionReason.OVER_MAX_TOTAL_BYTES, "select.max_total_bytes")) if r in reasons]
    if scan and keys:  # spec §3.9: a bounded scan names the setting that reviews more
        return " and ".join(parts) + f"; raise {' or '.join(keys)} to review them, `{command}`" \
            " lists them"
    return " and ".join(parts) + f"; `{command}` lists them"


NAMES_SHOWN = 3  # paths named in a NOT REVIEWED reason; the coverage lines list them all


def _names(items: Sequence[change.Decision] | Sequence[FileOutcome]) -> str:
    """``a.py``, ``a.py, b.py``, ``a.py, b.py, c.py and 2 more`` (paths as shown to people)."""
    paths = [util.shown_text(x.file.path if isinstance(x, change.Decision) else x.path)
             for x in items]
    shown = ", ".join(paths[:NAMES_SHOWN])
    return shown + (f" and {len(paths) - NAMES_SHOWN} more" if len(paths) > NAMES_SHOWN else "")


def scan_gap_text(gaps: Sequence[FileOutcome], max_scan_bytes: int) -> str:
    """Why the secret scan is incomplete, in words with the setting, naming the files."""
    n = len(gaps)
    return (f"secret scan incomplete: the text added to {n} file{'s' if n != 1 else ''} "
            f"({_names(gaps)}) was not all scanned within security.max_scan_bytes "
            f"({util.human_bytes(max_scan_bytes)}); raise it, or name the files in "
            "select.exclude")
