"""Wires the stages of a review (spec §6.1) up to the LLM, and hands over to
``pipeline.llm_stage``.

input (target + diff) → selection → deterministic findings (``change.scan``) in ``RunState``
(``pipeline.prepare``); a preview or a run with nothing to send to a model ends there. Otherwise
the reviewed diffs are redacted, the run takes its lock (``pipeline.lock``: one run per input at
a time) and looks up the run-level cache; on a miss the money caps are checked
(``pipeline.spend``, spec §13.7); only then is ``pipeline.llm_stage`` imported,
with groups (``agent.build_groups``: deterministic or one grouping call), the group pool and
each group's review (``pipeline.group``), the run deadline, the merge in group order and the
gate. Nothing else wires stages. LLM and tool failures come back inside the result; only
input/config problems raise (OcrError).

Start-up: a preview, nothing to review or a cache hit imports none of the LLM
machinery (grouping, pools, prompts, clients, tools); the result cache is opened (``cache``:
a function that opens it on first call) only by a run with something for the model.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import git
from ..errors import GitError
from ..findings import RunWarning
from ..report import ReviewResult
from ..util import tracing
from ..vocabulary import StopReason
from .prepare import RunState
from .request import ReviewRequest

if TYPE_CHECKING:  # imported where used: a preview or a cache hit needs none of them
    from ..agent import Redactor
    from ..report import Session
    from .cache.store import ResultCache

__all__ = ["CacheOpener", "resolve_targets", "run"]

log = logging.getLogger(__name__)
CacheOpener = Callable[[], "ResultCache | None"]  # the run's cache, opened on first call


def resolve_targets(req: ReviewRequest) -> list[git.Target]:
    """The review inputs of ``req`` (one, or one per pushed range; none for a push with
    nothing new)."""
    if req.targets or req.mode == "push" or req.notes_applied:
        return list(req.targets)
    if req.mode == "commit":
        return [git.commit_target(req.repo, req.commit)]
    if req.mode == "range":
        return [git.range_target(req.repo, req.from_ref, req.to_ref)]
    if req.mode == "merge":
        return [git.merge_snapshot(req.repo, req.environ)]
    return [git.staged_snapshot(req.repo, req.environ)]


def run(
    req: ReviewRequest,
    *,
    session: Session | None = None,
    rules_for: Callable[[Sequence[str]], str] | None = None,
    cache: CacheOpener | None = None,
) -> ReviewResult:
    """Review ``req`` end to end and return the result (never raises for LLM/tool failures).
    ``cache`` opens the result cache (spec §10) when the run first needs it; None: no cache.

    Raises UsageError/GitError/ConfigError for input problems (bad ref, conflicts).
    """
    t0 = time.monotonic()
    targets = resolve_targets(req)
    if req.mode in ("push", "range") and not req.notes_applied:  # spec §3.4.1
        from .review_notes import apply_notes

        try:
            left, covered, notes_warnings = apply_notes(req, targets)
        except GitError as e:  # a broken notes ref: trust no note, review every commit
            left, covered = list(targets), []
            notes_warnings = [RunWarning("review_notes", "", f"review notes not read: {e}")]
        result = run(req._replace(targets=tuple(left), notes_applied=True), session=session,
                     rules_for=rules_for, cache=cache)
        if covered:
            result.input["reviewed_at_commit"] = covered
        result.warnings.extend(notes_warnings)
        return result
    if len(targets) != 1:  # push mode: no range, or several (spec §3.4)
        from .ranges import run_ranges

        return run_ranges(
            req, targets, lambda r: run(r, session=session, rules_for=rules_for, cache=cache)
        )
    # input → selection → deterministic findings
    with tracing.span("ocr.stage.prepare") as span:  # spec §11.7
        state = RunState(req, targets, t0, session=session, rules_for=rules_for)
        span.set("ocr.files.reviewable", len(state.reviewable))
    if req.preview or not state.reviewable:
        return state.finish_without_llm()
    if req.endpoint is None:  # a result `git ocr delegate submit` stored, else not reviewed
        from .delegated import DELEGATE_HINT, delegated_hit

        hit = delegated_hit(state, cache() if cache else None)
        hint = DELEGATE_HINT if req.mode != "scan" else ""  # delegation takes no scan
        return hit or state.not_reviewed(StopReason.NO_ENDPOINT, req.endpoint_error + hint)
    from . import lock  # only a run with something for the model takes the lock

    redactor = state.redact_reviewed()
    opened = cache() if cache else None
    return lock.exclusive(  # one run per input at a time; a second one uses the cache
        opened.root if opened else None, state.head.base, state.head.head,
        req.config.review.timeout_s, lambda: _review_with_llm(state, redactor, session, opened),
        locked=lambda why: state.not_reviewed(StopReason.LOCKED, why),
        note=lambda msg: state.result.warnings.append(RunWarning("lock_wait", "", msg)))


def _review_with_llm(state: RunState, redactor: Redactor, session: Session | None,
                     cache: ResultCache | None) -> ReviewResult:
    """From the cache lookup on: a cached result, or (``pipeline.llm_stage``) groups, their reviews,
    merge and gate."""
    run_hit = state.run_cache_hit(cache)
    if run_hit is not None:
        return run_hit
    budget = state.cfg.budget
    if budget.daily_usd is not None or budget.monthly_usd is not None:
        refused = _over_budget(state)  # spec §13.7: before the first model call
        if refused is not None:
            return refused
    from .llm_stage import review_with_llm

    result = None
    try:
        result = review_with_llm(state, redactor, session)
    finally:  # spec §13.7: also a run cut by Ctrl-C, a signal or an error is recorded
        problem = _record_spend(state, cut_short=result is None)
    if problem:
        result.warnings.append(RunWarning("spend_ledger", "", problem))
    return result


def _record_spend(state: RunState, *, cut_short: bool) -> str:
    """Append the run's usage so far (its Meter's, requests in flight included) to the ledger,
    still under the run lock; returns "" or the one-line problem of an unwritable ledger
    (logged when the run was ``cut_short`` by an exception: it has no report to carry it)."""
    endpoint, meter = state.req.endpoint, state.meter
    if endpoint is None or meter is None:
        return ""
    from .spend import record_run

    usage, requests = meter.settled()
    _line, problem = record_run(state.req.environ, endpoint.provider, endpoint.model, usage,
                                requests)
    if problem and cut_short:  # no report will carry it
        log.warning("%s", problem)
    return problem


def _over_budget(state: RunState) -> ReviewResult | None:
    """The NOT REVIEWED result when this run would pass a money cap (``pipeline.spend``) or the
    ledger cannot be read, else None (the run's per-request ceiling is set); a cap that cannot
    be enforced (no price for the model) is one warning."""
    from .spend import check_caps

    endpoint = state.req.endpoint
    assert endpoint is not None  # the caller reviews with an endpoint
    verdict = check_caps(state.cfg, state.req.environ, endpoint.provider, endpoint.model,
                         [f.patch for f in state.reviewable], endpoint.max_output_tokens,
                         sources=state.req.cap_sources)
    if verdict.warning:
        state.result.warnings.append(RunWarning(verdict.kind, "", verdict.warning))
    if verdict.why:
        return state.not_reviewed(StopReason.SPEND_CAP, verdict.why)
    state.spend_guard = verdict.guard
    return None
