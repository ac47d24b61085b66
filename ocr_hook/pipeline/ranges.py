"""Push mode with zero or several pushed ranges (spec §3.4): each range is reviewed on its own
by the ``run_one`` it is given, sharing the run's deadline and token budget, and the results
are merged into one (``input.ranges`` lists every pushed ref)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from .. import git
from ..findings import RunWarning
from ..llm import Usage
from ..report import ReviewResult
from .request import ReviewRequest


def ranges_json(targets: Sequence[git.Target]) -> list[dict[str, str | int | list[str]]]:
    """JSON ``input.ranges`` of push mode: one ``{ref, base, head, commits}`` per pushed remote
    ref (``base..head`` is what was reviewed, ``commits`` how many commits it holds); a range
    cut to its newest commits (``git.push_scope``) adds ``not_reviewed_commits`` and
    ``not_reviewed_base`` (the older commits ``not_reviewed_base..base`` were left out); a
    range limited to some files (review notes, spec §3.4.1) adds ``paths`` (a list);
    ``run_ranges`` adds ``status`` (``partial``, ``failed``) to a range not wholly reviewed."""
    out: list[dict[str, str | int | list[str]]] = []
    for t in targets:
        for ref in t.refs or ("",):
            entry: dict[str, str | int | list[str]] = {"ref": ref, "base": t.base_label,
                                           "head": t.head_label, "commits": t.commits}
            if t.skipped_commits:
                entry["not_reviewed_commits"] = t.skipped_commits
                entry["not_reviewed_base"] = t.skipped_base_label
            if t.paths is not None:  # spec §3.4.1: only the files of commits without a note
                entry["paths"] = list(t.paths)
            out.append(entry)
    return out


def skipped_commits_warnings(targets: Sequence[git.Target]) -> list[RunWarning]:
    """One ``commits_not_reviewed`` warning per range cut to its newest commits
    (``git.push_scope``), naming the reviewed range and the older commits left out."""
    return [RunWarning(
        "commits_not_reviewed", "",
        f"{', '.join(t.refs) or t.head_label}: reviewed the newest {t.commits} commit(s)"
        f" {t.base_label}..{t.head_label}; {t.skipped_commits} older commit(s) not reviewed"
        f" ({t.skipped_base_label}..{t.base_label}); raise review.max_push_commits to include"
        " them") for t in targets if t.skipped_commits]


def run_ranges(
    req: ReviewRequest,
    targets: Sequence[git.Target],
    run_one: Callable[[ReviewRequest], ReviewResult],
) -> ReviewResult:
    """Review each of ``targets`` with ``run_one`` (its head is what tools and anchoring read),
    one after the other, with what is left of the run's time limit and token budget; return
    the results concatenated into one (``status`` of the ranges that were not skipped)."""
    t0 = time.monotonic()
    results: list[ReviewResult] = []
    budget = req.budget_tokens
    spent = 0
    for t in targets:
        left_s = req.config.review.timeout_s - (time.monotonic() - t0)
        review_cfg = dataclasses.replace(
            req.config.review, timeout_s=max(left_s, 0.001),
            max_tokens_budget=max(budget - spent, 1) if budget else 0)
        cfg = dataclasses.replace(req.config, review=review_cfg)
        r = run_one(req._replace(targets=(t,), config=cfg))
        spent += r.usage.total
        results.append(r)
    merged = _merged_head(req, targets, results)
    entries = iter(merged.input["ranges"])  # ranges_json: one entry per ref of each target
    for t, r in zip(targets, results, strict=True):
        for _ref in t.refs or ("",):
            entry = next(entries)
            if r.status in ("partial", "failed"):
                entry["status"] = r.status  # the text report: `not reviewed <ref>: …`
    _concatenate(merged, results)
    if len(merged.incomplete_reasons) > 1:  # one NOT REVIEWED line for the whole push
        merged.incomplete_reasons = ["NOT REVIEWED: " + "; ".join(dict.fromkeys(
            r.removeprefix("NOT REVIEWED: ") for r in merged.incomplete_reasons))]
    merged.elapsed_ms = int((time.monotonic() - t0) * 1000)
    return merged


def merged_status(results: Sequence[ReviewResult]) -> str:
    """``skipped`` when every range was, else ``complete`` / ``failed`` when all the others
    are, else ``partial``."""
    done = [r.status for r in results if r.status != "skipped"]
    if not done:
        return "skipped"
    if all(s == "complete" for s in done):
        return "complete"
    if all(s == "failed" for s in done):
        return "failed"
    return "partial"


def _merged_head(
    req: ReviewRequest, targets: Sequence[git.Target], results: Sequence[ReviewResult]
) -> ReviewResult:
    """The merged result's own fields: status, gate decision over all findings, input (first
    range's base and head, every range) and the first range's LLM and session."""
    status = merged_status(results)
    findings = [f for r in results for f in r.findings]
    first = results[0] if results else None
    return ReviewResult.start(
        gate=req.gate, findings=findings, status=status,
        incomplete=status in ("partial", "failed"),
        input={
            "mode": req.mode,
            "base": first.input["base"] if first else "",
            "head": first.input["head"] if first else "",
            "snapshot_tree": "",
            "ranges": ranges_json(targets),
        },
        llm=dict(first.llm) if first else req.llm_labels,
        session_id=first.session_id if first else "", preview=req.preview)


_HEAD_FIELDS = {"status", "decision", "gate", "findings", "input", "llm", "session_id", "preview"}


def _concatenate(merged: ReviewResult, results: Sequence[ReviewResult]) -> None:
    """Every other field of ``merged``: lists concatenated in range order, usage and counts
    summed."""
    for fld in dataclasses.fields(ReviewResult):
        values = [getattr(r, fld.name) for r in results]
        if fld.name in _HEAD_FIELDS or not values:
            continue
        if isinstance(values[0], list):
            setattr(merged, fld.name, [x for v in values for x in v])
        elif isinstance(values[0], Usage):
            total = Usage()
            for v in values:
                total = total + v
            setattr(merged, fld.name, total)
        elif isinstance(values[0], int) and not isinstance(values[0], bool):
            setattr(merged, fld.name, sum(values))
