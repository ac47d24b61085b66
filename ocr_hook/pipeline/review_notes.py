"""Review notes in a run (spec §3.4.1): the pre-commit hook records what it reviewed, and a
push or range review leaves out the commits whose patch has a passing note for the same
settings. The git side (the snapshot file, the notes, patch-ids) is ``git.review_notes``.

A note is trusted when its verdict is ``pass``, its settings fingerprint is this run's
(:func:`settings_fingerprint`: the result cache's settings, spec §10) and its effort covers this
run's (``cache.entries.effort_covers``). ``review.trust_notes = false`` trusts none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import git
from ..errors import OcrError

if TYPE_CHECKING:
    from ..report import ReviewResult
    from .request import ReviewRequest

log = logging.getLogger("ocr_hook")
_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def settings_fingerprint(req: ReviewRequest) -> str:
    """SHA-256 hex of the settings that can change a review's answer: exactly the result
    cache's ``result_settings`` (configuration but NOT_IN_KEY, endpoint, templates, tools,
    background, guidance, version); "" without an endpoint (nothing was reviewed)."""
    if req.endpoint is None:
        return ""
    from .. import __version__
    from .cache.store import digest, result_settings

    return digest(result_settings(req.config, req.endpoint, req.background, __version__,
                                  req.tool_defs, req.guidance.block))


def record_review(req: ReviewRequest, result: ReviewResult) -> None:
    """After a pre-commit hook's review of the whole staged snapshot (no file list, no
    preview, something staged): record the snapshot's tree, its parent commit, the verdict,
    the fingerprint, the effort and the session for the post-commit hook
    (``git.record_snapshot``). Best effort: a failure is logged at debug level, never
    raised."""
    if (req.stage != "pre-commit" or req.mode != "staged" or req.path_filter is not None
            or req.preview or not result.files):  # nothing staged: no commit with a patch
        return
    tree = str(result.input.get("snapshot_tree") or "")
    base = str(result.input.get("base") or "")
    fingerprint = settings_fingerprint(req)
    if not tree or not fingerprint:
        return
    try:
        git.record_snapshot(req.repo, tree, base if _OID.fullmatch(base) else "",
                            result.decision.verdict, fingerprint, req.effort, result.session_id)
    except (OSError, OcrError) as e:
        log.debug("reviewed snapshot not recorded: %s", e)


def trusted_patches(req: ReviewRequest) -> dict[str, git.ReviewNote]:
    """``{patch-id: note}`` of the notes on ``refs/notes/ocr-hook`` this run trusts (see the
    module doc); {} with ``review.trust_notes = false`` or no endpoint. Raises GitError."""
    fingerprint = settings_fingerprint(req) if req.config.review.trust_notes else ""
    if not fingerprint:
        return {}
    from .cache.entries import effort_covers

    return {n.patch_id: n for n in git.read_notes(req.repo)
            if n.verdict == "pass" and n.fingerprint == fingerprint
            and effort_covers(n.effort, req.effort)}


def apply_notes(req: ReviewRequest, targets: Sequence[git.Target]
                ) -> tuple[list[git.Target], list[dict[str, Any]]]:
    """``targets`` without the commits reviewed at commit time, and those commits (JSON
    ``input.reviewed_at_commit``: ``{commit, noted_commit, session, ref}``, oldest first per
    range). A range that is one first-parent chain without merges is cut into the runs of
    consecutive commits without a trusted note (each a range of its own, with the range's
    refs); a range with merges is reviewed whole. In a range cut to its newest commits
    (``git.bound_push_range``) the noted commits at its base are reviewed, so the part that
    starts there still names the older commits left out. Raises GitError."""
    trusted = trusted_patches(req)
    if not trusted:
        return list(targets), []
    out: list[git.Target] = []
    covered: list[dict[str, Any]] = []
    for t in targets:
        rows = git.range_commits(req.repo, t.base, t.head)
        ids = git.patch_ids(req.repo, [r[0] for r in rows]) if rows else {}
        notes = [trusted.get(ids.get(r[0], "")) for r in rows or ()]
        if t.skipped_commits:  # cut by review.max_push_commits: the first part keeps the cut
            lead = next((i for i, n in enumerate(notes) if n is None), len(notes))
            notes[:lead] = [None] * lead  # base, so its "older commits not reviewed" is right
        if not rows or not any(notes):
            out.append(t)
            continue
        start: int | None = None
        for i, (row, note) in enumerate(zip(rows, notes, strict=True)):
            if note is not None:
                covered.append({"commit": row[0], "noted_commit": note.commit,
                                "session": note.session, "ref": ", ".join(t.refs)})
            elif start is None:
                start = i
            if start is not None and (note is not None or i == len(rows) - 1):
                out.append(_segment(t, rows, start, i - 1 if note is not None else i))
                start = None
    return out, covered


def _segment(t: git.Target, rows: Sequence[tuple[str, ...]], first: int,
             last: int) -> git.Target:
    """The part ``rows[first..last]`` of the range ``t`` (its refs kept; the older commits a
    bound left out stay on the part that starts at ``t``'s base)."""
    base = rows[first - 1][0] if first else t.base
    head = rows[last][0]
    return t._replace(
        base=base, base_label=base if first else t.base_label, head=head,
        head_label=t.head_label if last == len(rows) - 1 else head,
        commits=last - first + 1, skipped_commits=0 if first else t.skipped_commits,
        skipped_base_label="" if first else t.skipped_base_label)
