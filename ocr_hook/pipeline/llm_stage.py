"""The LLM part of one run (spec §6.1 steps 3–7), imported only when a run has files to send
to a model and no cached result: the client behind the Meter, the tool registry, grouping, the
group, comment and compression pools, the deadline, the merge and the gate.

Budget and time (spec §6.4): one Meter per run is checked before every LLM attempt (the
clients' ``before_attempt``), which also caps each attempt's timeouts by the time left. At the
deadline queued groups are cancelled and running ones stop at their next check; both are
incomplete with reason ``timeout``. Pools are daemon-thread WorkerPools joined before
``review_with_llm`` returns; on Ctrl-C the Meter is cancelled and the KeyboardInterrupt
propagates (exit 130).

Determinism: group workers return their outcomes and share only thread-safe services; the
merge takes outcomes in group order and the collector orders comments by (group, submission),
so the result does not depend on which thread finished first. Only the session's
``group_done`` records (and so the progress lines) come in the order the groups finish: each is
written when its group does.
"""
from __future__ import annotations

import datetime as _dt
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import TYPE_CHECKING, Any

from .. import agent, llm
from ..agent import PROMPT_CONTEXT_FRACTION, Group, exceeds_tokens
from ..diff import FileDiff
from ..errors import OcrError
from ..findings import RawComment, RunWarning, merge_same_claims
from ..gate import decide
from ..llm import Endpoint
from ..report import GroupOutcome, GroupReport, ReviewResult, merged_findings, not_reviewed_line
from ..util import WorkerPool, tracing
from ..vocabulary import StopReason

if TYPE_CHECKING:
    from ..agent import Redactor
    from ..report import Session
    from .prepare import RunState

__all__ = ["review_with_llm", "run_groups"]

log = logging.getLogger(__name__)

EFFORT_ROUNDS = {"low": 1, "medium": 2, "high": 3}  # spec §2 (OCR effort presets)
_NOT_STARTED = "review deadline reached before the group started"
DEADLINE_GRACE_S = 5.0  # after the deadline: wait this long for running groups to stop
INTERRUPT_GRACE_S = 0.5  # after Ctrl-C: wait this long for workers before giving up on them


def review_with_llm(state: RunState, redactor: Redactor,
                    session: Session | None) -> ReviewResult:
    """After a run-level cache miss: the endpoint's key, groups, their reviews, merge and gate.
    Never raises for LLM/tool failures (they are in the result)."""
    req = state.req
    llm.start_prefetch()  # the LLM will be called: import HTTP meanwhile
    try:  # the first LLM request is next: now the key is needed (llm.api_key_cmd)
        endpoint = req.endpoint_with_key()
    except OcrError as e:
        return state.not_reviewed(StopReason.NO_ENDPOINT, f"no LLM endpoint: {e}")
    if req.api_key_cmd is not None and session is not None:
        session.add_secret(endpoint.api_key)
    runner = _GroupRunner(state, endpoint, redactor)
    with tracing.span("ocr.stage.context"):  # spec §11.7: one span per stage
        runner.widen_context()
    with tracing.span("ocr.stage.grouping") as span:
        groups = runner.build_groups()
        span.set("ocr.groups", len(groups))
    with tracing.span("ocr.stage.review"):
        outcomes = runner.review_groups(groups)
    with tracing.span("ocr.stage.merge"):
        runner.merge(groups, outcomes)
        return runner.gate(groups, outcomes)


class _GroupRunner:
    """The LLM part of one run (spec §6.1 steps 3–7): the client behind the Meter, the tool
    registry, grouping, the group, comment and compression pools, the merge and the gate.
    Group workers share only thread-safe services (meter, client, pools, collector) and return
    their outcomes; the merge takes them in group order, not in the order they finished."""

    def __init__(self, state: RunState, endpoint: Endpoint, redactor: Redactor) -> None:
        # imported before make_client, which waits for the HTTP prefetch: these load meanwhile
        from ..agent import BudgetedClient, Meter, RedactingClient
        from ..comments import Collector, CommentPool, CommentProcessor
        from ..tools import SnapshotView, build_registry, builtin_handlers, parse_tools_json

        self.st = state
        self.req = req = state.req
        self.cfg = cfg = state.cfg
        self.result = state.result
        self.record = state.record
        self.meter = state.meter = Meter(budget_tokens=req.budget_tokens,
                                         deadline=state.t0 + cfg.review.timeout_s,
                                         spend_check=state.spend_guard)  # spec §13.7
        # spec §6.4: budget, deadline and Ctrl-C are checked before every HTTP attempt, retries
        # included; the remaining run time caps each attempt's timeouts.
        self.client = RedactingClient(BudgetedClient(llm.with_tracing(llm.make_client(  # §14
            endpoint, before_attempt=self.meter.before_attempt,
            count_tokens=state.count), redactor), self.meter), redactor)  # count: if no usage
        self.redact: Callable[[str], str] = redactor
        self.view = SnapshotView(req.repo, state.head.head, state.files, self.redact,
                                 base=state.head.base)
        external: list[Any] = []
        self.mcp_warnings_seen = 0
        if req.mcp is not None:  # spec §7.3: servers start once per run; failures are warnings
            req.mcp.start()
            external = req.mcp.tools()
            self.result.warnings.extend(
                RunWarning("mcp", "", msg) for _server, msg in req.mcp.warnings)
            self.mcp_warnings_seen = len(req.mcp.warnings)
        shipped = parse_tools_json()
        defs = req.tool_defs or shipped
        if req.mode == "scan":  # spec §3.9: whole files, no diff to read, nothing pre-exists
            defs = {k: _without_property(v, "preexisting") if k == "code_comment" else v
                    for k, v in defs.items() if k != "file_read_diff"}
        if not req.earlier:  # spec §12.3: no earlier findings in this run, nothing to repeat
            defs = {k: _without_property(v, "repeats") if k == "code_comment" else v
                    for k, v in defs.items()}
        self.registry = build_registry(defs, builtin_handlers(self.view),
                                       external, reserved=shipped, warn=self.tool_warning)
        self.context_limit = int(cfg.llm.context_tokens * PROMPT_CONTEXT_FRACTION)
        # comments, anchoring and compression (their threads start on first use)
        self.collector = Collector()
        # spec §8.2: comments are anchored when filed (code_comment says where they landed);
        # re-location runs on their own pool and the loop never waits for it.
        self.comment_workers = WorkerPool(cfg.review.concurrency, "ocr-comment")
        processor = CommentProcessor(
            self.view.changed, self.view.new_file_lines, [f.path for f in state.reviewable],
            relocate=self._relocate)
        self.comment_pool = CommentPool(self.comment_workers, processor, self.collector,
                                        place=processor.place)
        # Background compression summaries run here; the run waits for them at the end.
        self.background_pool = WorkerPool(cfg.review.concurrency, "ocr-compress")
        self.causes: list[tuple[int, str]] = []  # (files, why) of each group left unreviewed
        self.whole_of: dict[int, FileDiff] = {}  # a scan's window (by id) → its whole file

    def tool_warning(self, msg: str) -> None:
        """A tool registry problem (MCP tool rejected or renamed): logged and a warning."""
        log.warning("%s", msg)
        self.result.warnings.append(RunWarning("mcp", "", msg))

    def widen_context(self) -> None:
        """spec §3.5: each reviewed file's hunks get the lines of their enclosing scope as
        context (``diff.widen_file``, bounded), from the snapshot's redacted lines (one git
        process for the files no reader kept). Before grouping, so every group, the
        anchoring and the review page see the same hunks; a file that cannot be read keeps
        git's hunks."""
        from ..diff import widen_file

        # secret paths are never reviewable (spec §4 gate 3), also when renamed from one
        files = [f for f in self.st.reviewable if f.hunks and f.status != "deleted"]
        try:
            self.view.preload([f.path for f in files])
        except OcrError as e:  # each file is read on its own below
            log.debug("reading the reviewed files at once failed: %s", e)
        added = 0
        for f in files:
            try:
                lines = self.view.new_file_lines(f.path)
            except OcrError:
                continue
            if lines is not None:
                added += widen_file(f, lines)
        log.debug("scope context: %d lines added to %d files", added, len(files))

    def build_groups(self) -> list[Group]:
        """Split the reviewable files into groups (deterministic, or one grouping call)."""
        groups = agent.build_groups(
            self.st.reviewable,
            ask_model=self.ask_grouping,
            group_too_large=lambda fs: exceeds_tokens([f.patch for f in fs], self.context_limit,
                                                      self.st.count),
            on_failure=lambda msg: self.result.warnings.append(
                RunWarning("grouping_failed", "", msg)),
        )
        if self.req.mode == "scan":  # spec §3.9: a file too large for one prompt, in windows
            from .windows import windowed_groups

            groups, self.whole_of = windowed_groups(groups, self.context_limit, self.st.count)
        self.result.groups = groups
        self.record("grouping", {"groups": [{"label": g.label, "files": [f.path for f in g.files]}
                                            for g in groups],
                                 # a windowed file counts once (spec §3.9)
                                 "files": len({f.path for g in groups for f in g.files}),
                                 "model": self.req.llm_labels.get("model", "")})
        return groups

    def ask_grouping(self, fs: Sequence[FileDiff]) -> list[Group]:
        """The grouping call, answered from the cache when the same file list with the same
        stats was grouped before (spec §10)."""
        def ask(files: Sequence[FileDiff]) -> list[Group]:
            return agent.grouping_call(self.client, files, meter=self.meter, record=self.record)

        policy = self.st.cache_policy
        return ask(fs) if policy is None else policy.grouping(fs, ask)

    def review_groups(self, groups: Sequence[Group]) -> list[GroupOutcome]:
        """Review every group on the group pool and return each one's outcome, in group order;
        then wait (bounded) for the comments of groups cut off by the deadline to be anchored."""
        # here, not at module level: its imports (agent, tools, comments) would load before
        # llm.start_prefetch instead of alongside the HTTP stack (see __init__)
        from .group import GroupDeps, review_group

        st, cfg = self.st, self.cfg
        deps = GroupDeps(
            client=self.client, registry=self.registry, meter=self.meter,
            comment_pool=self.comment_pool, collector=self.collector, files=st.files,
            by_path=self.view.changed, rules=st.rules, cfg=cfg, background=self.req.background,
            guidance=self.req.guidance.block, scan=self.req.mode == "scan",
            earlier=self.req.earlier,
            now=_dt.date.today().isoformat(),  # the prompts' date: a day, so prefixes stay stable
            context_limit=self.context_limit, rounds_total=EFFORT_ROUNDS[self.req.effort],
            count=st.count, record=self.record, redact=self.redact,
            spawn=self.background_pool.submit, cache=st.cache_policy,
            line_count=self._line_count)

        parent = tracing.current()  # the review stage's span, for the group threads

        def review(g: Group, rank: int) -> GroupOutcome:  # its start: --format ndjson
            self.record("group_start", {"group": g.label, "files": [f.path for f in g.files]})
            with tracing.span("ocr.group", {"ocr.group": g.label, "ocr.group.files": len(g.files)},
                              parent=parent) as span:
                outcome = review_group(deps, g, rank)
                span.set("ocr.stop_reason", str(outcome.stop))
                return outcome

        outcomes = run_groups(groups, review,
                              concurrency=cfg.review.concurrency, meter=self.meter,
                              background=self.background_pool, on_done=self.group_done)
        self.comment_workers.shutdown(
            timeout_s=max(0.0, self.meter.remaining_s() or 0.0) + DEADLINE_GRACE_S)
        return outcomes

    def group_done(self, g: Group, o: GroupOutcome) -> None:
        """The session's ``group_done`` record of ``g``, written as soon as its outcome is
        known (``run_groups``' ``on_done``: on the group's thread when it finishes), so progress
        reports each group when it finishes, not when the results are merged."""
        report = o.report
        self.record("group_done", {
            "group": g.label, "stop_reason": o.stop, "round_stop_reasons": report.stop_reasons,
            "reason": o.reason, "compressions": report.compressions})

    def _line_count(self, path: str) -> int | None:
        """Lines of changed file ``path`` after the change (None when unreadable)."""
        return self.view.line_count(path)

    def _relocate(self, fd: FileDiff, c: RawComment) -> str | None:
        """Ask the model where comment ``c`` belongs in ``fd`` (spec §8.1 re-location)."""
        return agent.relocate_snippet(
            self.client, fd, c, meter=self.meter, redact=self.redact, record=self.record,
            label=c.group)

    def merge(self, groups: Sequence[Group], outcomes: Sequence[GroupOutcome]) -> None:
        """In group order: record each group's outcome on its files, its warnings and report;
        then the comment warnings and the merged findings (ordered by the collector). The
        session's ``group_done`` records were written as the groups finished
        (:meth:`group_done`)."""
        cfg, req, result = self.cfg, self.req, self.result
        if req.mcp is not None:  # servers that died or wrote junk during the review
            result.warnings.extend(RunWarning("mcp", "", msg) for _server, msg
                                   in req.mcp.warnings[self.mcp_warnings_seen:])
        ended: dict[int, str] = {}  # each file's reason; any of its windows' failures is its own
        counted: set[int] = set()  # the whole files the NOT REVIEWED line already counts
        spend_cause = ""
        for g, o in zip(groups, outcomes, strict=True):
            reason = o.reason
            for f in g.files:
                whole = id(self.whole_of.get(id(f), f))
                ended[whole] = ended.get(whole) or reason
            result.warnings.extend(o.warnings)
            if reason:
                warning, cause = o.not_reviewed(timeout_s=cfg.review.timeout_s,
                                                budget_tokens=req.budget_tokens)
                result.warnings.append(warning)
                if reason == StopReason.SPEND_CAP:  # one money-cap reason, the first group's
                    cause = spend_cause = spend_cause or cause
                wholes = {id(self.whole_of.get(id(f), f)) for f in g.files} - counted
                counted |= wholes  # a file in windows is one file, however many fail
                if wholes:
                    self.causes.append((len(wholes), cause))
            report = o.report
            report.reason = reason
            result.group_reports.append(report)
        for whole, why in ended.items():
            self.st.outcomes[whole].settle(why)
        result.warnings.extend(self.collector.warnings)
        from .group import log_lost_comments  # loaded by review_groups already

        log_lost_comments(result.warnings)
        result.findings = merged_findings([*self.st.config_findings, *self.collector.snapshot()])

    def gate(self, groups: Sequence[Group], outcomes: Sequence[GroupOutcome]) -> ReviewResult:
        """Status, gate decision and LLM statistics; store complete results in the cache."""
        result = self.result
        reviewed_n = sum(1 for o in self.st.outcomes.values() if o.reviewed)
        wanted = len(self.st.reviewable)
        result.status = ("complete" if reviewed_n == wanted
                         else ("partial" if reviewed_n else "failed"))
        result.incomplete_reasons = [not_reviewed_line(self.causes, wanted)] if self.causes else []
        result.decision = decide(result.findings, reviewed_n < wanted, self.req.gate)
        result.usage = self.meter.usage
        result.llm_calls = self.meter.llm_calls
        result.llm_attempts = self.meter.attempts
        self.record("llm_stats", self.client.stats.snapshot())  # HTTP requests and latency
        policy = self.st.cache_policy
        if policy is not None:
            policy.store(groups, outcomes, merge_same_claims(self.collector.snapshot()),
                         self.collector.warnings, result.status == "complete")
            result.cache_hits = policy.hits
        return self.st.finished()


def run_groups(
    groups: Sequence[Group],
    review: Callable[[Group, int], GroupOutcome],
    *,
    concurrency: int,
    meter: Any,
    background: WorkerPool,
    on_done: Callable[[Group, GroupOutcome], None] | None = None,
) -> list[GroupOutcome]:
    """Run ``review(group, index)`` for every group on ``concurrency`` threads (spec §6.1 step
    3) and return each group's outcome, in group order whatever order they finished in.

    ``on_done(group, outcome)`` is called exactly once per group, as soon as its outcome is
    known: on the group's thread when it finishes (in the order groups finish, one call at a
    time), and, for groups that never finished (the deadline), in group order before this
    returns. The outcome it is given is the one returned. Its errors are logged and ignored.

    Isolation: a group that raises becomes an ``error`` outcome. Deadline (spec §6.4,
    ``meter.deadline``): queued groups are cancelled and running ones stop at their next check
    (calls in flight end by then: their timeouts are capped by the deadline); both come back as
    ``timeout`` outcomes (one that finishes later is ignored). Finally the background pool
    (compression summaries) is awaited. Ctrl-C: ``meter.cancel()`` stops every later LLM
    attempt, workers get INTERRUPT_GRACE_S, and the KeyboardInterrupt propagates.
    """
    if not groups:
        background.shutdown(timeout_s=DEADLINE_GRACE_S)
        return []
    finished = _Finished(groups, review, on_done, meter.remaining_s)
    pool = WorkerPool(min(concurrency, len(groups)), "ocr-group")
    futures: list[Future[GroupOutcome]] = [
        pool.submit(finished.run, rank) for rank in range(len(groups))]
    try:
        left = meter.remaining_s()
        _, pending = wait_futures(futures, timeout=None if left is None else max(0.0, left))
        if pending:  # the run deadline: nothing new starts, running groups wind down
            for f in pending:
                f.cancel()
            wait_futures(pending, timeout=DEADLINE_GRACE_S)
        pool.shutdown(cancel_futures=True, timeout_s=DEADLINE_GRACE_S)
        left = meter.remaining_s()
        background.shutdown(timeout_s=max(0.0, left or 0.0) + DEADLINE_GRACE_S)
    except BaseException:
        finished.close(None)
        meter.cancel()
        pool.shutdown(cancel_futures=True, timeout_s=INTERRUPT_GRACE_S)
        background.shutdown(cancel_futures=True, timeout_s=0.2)
        raise
    return finished.close([_outcome_of(g, f) for g, f in zip(groups, futures, strict=True)])


class _Finished:
    """The outcomes of ``run_groups``' groups as they finish, and their ``on_done`` calls.
    One lock: a group's outcome is kept and reported once, and none after :meth:`close`."""

    def __init__(self, groups: Sequence[Group], review: Callable[[Group, int], GroupOutcome],
                 on_done: Callable[[Group, GroupOutcome], None] | None,
                 remaining_s: Callable[[], float | None]) -> None:
        self.groups = groups
        self.remaining_s = remaining_s  # seconds to the run deadline, None: no deadline
        self.review = review
        self.on_done = on_done
        self.lock = threading.Lock()
        self.outcomes: dict[int, GroupOutcome] = {}  # by group index
        self.closed = False

    def run(self, rank: int) -> GroupOutcome:
        """The group-pool task of group ``rank``: its review (a crash is an ``error``
        outcome), then its ``on_done``."""
        g = self.groups[rank]
        left = self.remaining_s()
        try:
            if left is not None and left <= 0:  # picked from the queue as the deadline passed
                o = _stopped(g, StopReason.TIMEOUT, _NOT_STARTED)
            else:
                o = self.review(g, rank)
        except Exception as e:  # isolation: one group's crash is its own outcome
            log.debug("group %s crashed", g.label, exc_info=e)
            o = _stopped(g, StopReason.ERROR, f"internal error: {type(e).__name__}: {e}")
        with self.lock:
            if not self.closed and rank not in self.outcomes:
                self.outcomes[rank] = o
                self._report(g, o)
        return o

    def close(self, fallback: Sequence[GroupOutcome] | None) -> list[GroupOutcome]:
        """Stop taking outcomes; return each group's, in group order: the one it finished with,
        else its ``fallback`` (reported now). None: the run is interrupted, nothing reported."""
        with self.lock:
            self.closed = True
            if fallback is None:
                return []
            final = [self.outcomes.get(i, fb) for i, fb in enumerate(fallback)]
            for i, (g, o) in enumerate(zip(self.groups, final, strict=True)):
                if i not in self.outcomes:
                    self._report(g, o)
            return final

    def _report(self, g: Group, o: GroupOutcome) -> None:  # under the lock
        if self.on_done is None:
            return
        try:
            self.on_done(g, o)
        except Exception as e:  # reporting never changes a review's outcome
            log.debug("reporting group %s failed", g.label, exc_info=e)


def _stopped(g: Group, stop: StopReason, err: str) -> GroupOutcome:
    """The outcome of a group that stopped before its review returned one."""
    return GroupOutcome(stop, err, GroupReport(g.label, [f.path for f in g.files], [stop]))


def _outcome_of(g: Group, fut: Future[GroupOutcome]) -> GroupOutcome:
    """The outcome of ``g``'s future after the group pool is shut down."""
    if fut.cancelled():
        return _stopped(g, StopReason.TIMEOUT, _NOT_STARTED)
    if not fut.done():
        return _stopped(g, StopReason.TIMEOUT,
                        "review deadline reached while the group was running")
    if (e := fut.exception()) is not None:  # run catches Exception: a BaseException
        log.debug("group %s crashed", g.label, exc_info=e)
        return _stopped(g, StopReason.ERROR, f"internal error: {type(e).__name__}: {e}")
    return fut.result()


def _without_property(d: Any, name: str) -> Any:
    """``code_comment``'s definition without the property ``name`` of its comments (a scan
    reviews whole files: nothing predates it, no ``preexisting``; a run given no earlier
    findings has nothing a comment ``repeats``: fewer tokens in every request); the definition
    as it is when it has no such property (a user's tools file)."""
    params = d.spec.parameters
    item = params.get("properties", {}).get("comments", {}).get("items", {})
    props = item.get("properties", {}) if isinstance(item, dict) else {}
    if name not in props:
        return d
    items = {**item, "properties": {k: v for k, v in props.items() if k != name}}
    comments = {**params["properties"]["comments"], "items": items}
    spec = d.spec._replace(parameters={**params, "properties": {**params["properties"],
                                                                "comments": comments}})
    return d._replace(spec=spec)
