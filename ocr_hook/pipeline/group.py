"""One group's review (spec §6.1 steps 4–6, §10 group level), run on a group-pool thread:
the cache lookup, the prompt size check, the effort rounds of the tool loop, the review
filter (opt-in: ``review.filter``) once over all the group's comments (only when there is
something to filter, at most one call per group, on the group's own thread so groups filter
in parallel), and the group's comments drained before it returns.

``review_group`` returns a ``GroupOutcome`` (stop reason, report, the group's own warnings)
and writes no shared state besides the run's thread-safe services: comments go through the
``CommentPool`` into the ``Collector``, ordered by the group's index, and the filter removes
findings from it by id. The pools themselves belong to ``pipeline.llm_stage``
(docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .. import agent
from ..agent import (
    CONFIRMED_CAP,
    ContextPolicy,
    Group,
    Meter,
    confirmed_block,
    earlier_block,
    exceeds_tokens,
    group_fields,
    group_messages,
    run_loop,
)
from ..comments import OUTSIDE_CHANGE, Collector, CommentPool, Dropped
from ..config import Config
from ..diff import FileDiff
from ..findings import Finding, RawComment, RunWarning
from ..llm import ChatClient
from ..report import CAP_STOPS, INCOMPLETE_STOPS, GroupOutcome, GroupReport, display_text
from ..tools import Handler, Registry, code_comment_handler
from ..vocabulary import StopReason

if TYPE_CHECKING:  # a review without a cache never imports it
    from .cache.policy import CachePolicy

log = logging.getLogger(__name__)

# Default tokens per group, in context windows: the cap keeps a model that loops on tools from
# spending the run's budget on one group. A thorough review of a large group fills the context a
# few times (compression keeps each request under 80 % of it); ten fills is far past that.
GROUP_TOKENS_CONTEXTS = 10
# Comments one group may file (spec §8.2), all rounds together, before the review filter: past
# it a model is flooding, not reviewing, and every comment it files adds to the filter's one
# request (a 5,000-comment flood is over a megabyte). A careful review of a large group files a few
# dozen. Later comments are not filed, so the group is not fully reviewed: it ends with stop
# COMMENTS_CAPPED (incomplete, never cached) and the warning of that type says how many.
GROUP_COMMENTS_MAX = 200
COMMENTS_CAPPED = StopReason.COMMENTS_CAPPED.value  # also the RunWarning.type
NOT_FILED_CAP = (f"not filed: this group's limit of {GROUP_COMMENTS_MAX} comments is reached;"
                 " finish the review with task_done")
NOT_FILED_OUTSIDE = ("not filed: not a file under review; comment on the reviewed change"
                     " that causes the problem")


@dataclasses.dataclass(frozen=True, eq=False)
class GroupDeps:
    """What every group review of a run shares, built once by ``pipeline.llm_stage`` (each
    thread-safe). Frozen: the worker threads share it; not a value (services, callables), so
    it compares by identity.

    ``files``: every changed file (the prompts' "other files"); ``by_path``: changed files by
    old and new path; ``rules``: paths → rule text; ``now``: the prompts' date;
    ``context_limit``: tokens above which a group prompt is skipped (spec §6.3); ``spawn``:
    runs a compression summary on the run's background pool; ``cache``: None without a cache;
    ``line_count``: a changed file's line count after the change (None when unknown).
    """

    client: ChatClient
    registry: Registry
    meter: Meter
    comment_pool: CommentPool
    collector: Collector
    files: Sequence[FileDiff]
    by_path: Mapping[str, FileDiff]
    rules: Callable[[Sequence[str]], str]
    cfg: Config
    background: str
    now: str
    context_limit: int
    rounds_total: int
    count: Callable[[str], int]
    record: Callable[[str, Any], None]
    redact: Callable[[str], str]
    spawn: Callable[[Callable[[], str]], Future[str]]
    cache: CachePolicy | None = None
    line_count: Callable[[str], int | None] = lambda _path: None
    guidance: str = ""  # the <project_guidance> text (change.Guidance.block)
    scan: bool = False  # a whole-file scan (git ocr scan): the prompt says so
    # spec §12.3: the findings of the last blocked review of the branch (shown to the groups
    # that review their files)
    earlier: Sequence[Finding] = ()

    def earlier_of(self, group: Group) -> str:
        """The ``<earlier_findings>`` lines of ``group``'s files ("" when none)."""
        return earlier_block(self.earlier, {f.path for f in group.files})

    @property
    def language(self) -> str:
        return self.cfg.review.language or "English"

    @property
    def group_tokens_cap(self) -> int:
        """Input + output tokens one group's tool loops may use, 0 = no cap
        (``review.max_group_tokens``; unset: GROUP_TOKENS_CONTEXTS × ``llm.context_tokens``)."""
        cap = self.cfg.review.max_group_tokens
        return GROUP_TOKENS_CONTEXTS * self.cfg.llm.context_tokens if cap is None else cap

    @property
    def summary_tokens(self) -> int:
        return min(self.cfg.llm.max_output_tokens, 2000)


def log_lost_comments(warnings: Sequence[RunWarning]) -> None:
    """Log on stderr, in every output format, the warnings of comments that were not kept
    (COMMENTS_CAPPED, ``comments.OUTSIDE_CHANGE``): the text report lists no warnings, and a
    flood or a comment on another file must not pass unseen. Model text, so escaped."""
    for w in warnings:
        if w.type in (COMMENTS_CAPPED, OUTSIDE_CHANGE):
            log.warning("%s", display_text(w.message))


def review_group(deps: GroupDeps, group: Group, rank: int) -> GroupOutcome:
    """Review ``group``, the ``rank``-th group of the run (its comments sort by it). A stored
    answer for the same group input (spec §10) replaces the review: its findings and warnings
    go to the collector and the outcome is ``cache_hit``. Otherwise see ``_GroupRun``; the
    outcome then carries the group's cache key (when there is a cache)."""
    if deps.cache is None:
        return _GroupRun(deps, group, rank).run()
    key = deps.cache.group_key(group)
    hit = deps.cache.lookup_group(group, key)
    if hit is None:
        return dataclasses.replace(_GroupRun(deps, group, rank).run(), cache_key=key)
    for i, f in enumerate(hit.findings):
        deps.collector.add(f, (rank, i))
    for i, w in enumerate(hit.warnings):
        deps.collector.warn(w, (rank, i))
    return GroupOutcome(StopReason.CACHE_HIT, "", GroupReport(
        group.label, [f.path for f in group.files], [StopReason.CACHE_HIT]))


class _GroupRun:
    """The state of one group's review, private to its thread: the report, the group's own
    warnings and its raw comments (guarded by a lock: the tool handler files them)."""

    def __init__(self, deps: GroupDeps, group: Group, rank: int) -> None:
        self.deps = deps
        self.group = group
        self.rank = rank
        self.key = f"group-{rank}"  # the comment pool's key of this group
        self.report = GroupReport(group.label, [f.path for f in group.files])
        self.warnings: list[RunWarning] = []
        self.raw: list[RawComment] = []  # the comments kept (not dropped, not over the cap)
        self.offered = 0  # comments handed to the pool, dropped ones included
        self.over_cap = 0  # comments not filed: GROUP_COMMENTS_MAX was reached
        self.raw_lock = threading.Lock()
        self.as_git = False  # the prompt shows git's hunks, without the scope context

    def warn(self, type_: str, message: str) -> None:
        self.warnings.append(RunWarning(type_, self.group.label, message))

    def sink(self, cs: list[RawComment]) -> list[Finding | str | None]:
        """``code_comment``'s sink: hand the comments to the comment pool, at most
        GROUP_COMMENTS_MAX in the group's life, and keep those it does not drop. Per comment
        its finding when anchored at once, None when still being anchored, or why it was not
        filed (outside the change, over the cap)."""
        with self.raw_lock:  # one lock: raw and the pool see comments in the same order
            room = max(0, GROUP_COMMENTS_MAX - self.offered)
            taken, over = cs[:room], len(cs) - min(room, len(cs))
            self.offered += len(taken)
            self.over_cap += over
            placed = self.deps.comment_pool.submit(taken, self.key, self.rank) if taken else []
            self.raw.extend(c for c, p in zip(taken, placed, strict=True)
                            if not isinstance(p, Dropped))
        answers: list[Finding | str | None] = [
            NOT_FILED_OUTSIDE if isinstance(p, Dropped) else p for p in placed]
        return answers + [NOT_FILED_CAP] * over

    def run(self) -> GroupOutcome:
        """Rounds, then wait for every comment filed to be anchored (spec §8.2: also of a
        group that failed later). ``stop`` in INCOMPLETE_STOPS leaves the group unreviewed;
        ``ROUND_INCOMPLETE`` means round 1 completed but a later round was cut short."""
        local = {"code_comment": code_comment_handler(self.sink, self.group.label)}
        try:
            stop, err = self.rounds(local)
            self.filter_group(stop)  # the comments kept under the cap are filtered as usual
            if self.note_cap() and stop not in INCOMPLETE_STOPS:
                stop, err = StopReason.COMMENTS_CAPPED, StopReason.COMMENTS_CAPPED.words
        finally:
            self.deps.comment_pool.drain(self.key)
        self.report.reason = stop if stop in INCOMPLETE_STOPS else ""
        return GroupOutcome(stop, err, self.report, tuple(self.warnings))

    def rounds(self, local: Mapping[str, Handler]) -> tuple[StopReason, str]:
        """The prompt size check (a group whose prompt with the scope context of spec §3.5
        does not fit is shown git's hunks; then it is checked again) and the effort rounds
        (spec §6.1 step 5: later rounds see the findings so far, before the filter; stop early
        when a round adds nothing or CONFIRMED_CAP is reached). Returns (stop, error)."""
        d, group = self.deps, self.group
        rules_text = d.rules([f.path for f in group.files])
        fields = group_fields(group, d.files, rules_text, d.background, d.now, d.line_count,
                              guidance=d.guidance, scan=d.scan)
        earlier = d.earlier_of(group)  # part of every round's prompt: in the size check too
        first = group_messages(fields, d.language, d.redact, earlier=earlier)
        if (any(f.git_hunks is not None for f in group.files)
                and exceeds_tokens([m.content for m in first], d.context_limit, d.count)):
            self.as_git = True  # the scope context (diff.context) does not fit: git's hunks
            fields = group_fields(group, d.files, rules_text, d.background, d.now,
                                  d.line_count, as_git=True, guidance=d.guidance, scan=d.scan)
            first = group_messages(fields, d.language, d.redact, earlier=earlier)
        if exceeds_tokens([m.content for m in first], d.context_limit, d.count):
            msg = (f"prompt of group {group.label!r} exceeds 80% of llm.context_tokens "
                   f"({d.cfg.llm.context_tokens}); group skipped")
            self.warn(StopReason.TOKEN_THRESHOLD_EXCEEDED, msg)  # the warning's type: the stop
            self.report.stop_reasons.append(StopReason.TOKEN_THRESHOLD_EXCEEDED)
            return StopReason.TOKEN_THRESHOLD_EXCEEDED, msg
        cap, used = d.group_tokens_cap, 0
        for rnd in range(1, d.rounds_total + 1):
            with self.raw_lock:
                before = len(self.raw)
                confirmed = confirmed_block(self.raw) if rnd > 1 else ""
            msgs = group_messages(fields, d.language, d.redact, confirmed=confirmed,
                                  earlier=earlier)
            res = run_loop(d.client, d.registry, msgs, local=local, meter=d.meter,
                           max_rounds=d.cfg.review.max_tool_rounds, redact=d.redact,
                           record=d.record, label=group.label, context=self.context_policy(),
                           max_tokens=max(cap - used, 1) if cap else 0)
            used += res.usage.total
            self.report.stop_reasons.append(res.stop_reason)
            self.report.compressions += res.compressions
            if res.stop_reason in CAP_STOPS:  # a cap hit in any round: incomplete
                return res.stop_reason, res.error or res.stop_reason
            if res.stop_reason in INCOMPLETE_STOPS:
                if rnd == 1:
                    return res.stop_reason, res.error or res.stop_reason
                self.warn(StopReason.ROUND_INCOMPLETE,
                          f"effort round {rnd} stopped: {res.error or res.stop_reason}")
                return StopReason.ROUND_INCOMPLETE, ""
            stop, err = res.stop_reason, ""
            if res.stop_reason == StopReason.COMPRESSION_FAILED:
                self.warn(StopReason.COMPRESSION_FAILED, res.error)
            with self.raw_lock:
                added, total = len(self.raw) - before, len(self.raw)
            if not added or total >= CONFIRMED_CAP:  # early stop: nothing new, or cap reached
                break
        return stop, err

    def note_cap(self) -> bool:
        """The COMMENTS_CAPPED warning when comments went past GROUP_COMMENTS_MAX; whether
        they did."""
        with self.raw_lock:
            over = self.over_cap
        if over:
            self.warn(COMMENTS_CAPPED, f"the model filed more than {GROUP_COMMENTS_MAX} comments"
                      f" in group {self.group.label!r}; the first {GROUP_COMMENTS_MAX} were"
                      f" kept, {over} later ones were not filed")
        return bool(over)

    def filter_group(self, stop: StopReason) -> None:
        """spec §8.4: once the rounds are over, the review filter sees every comment
        of the group (anchored, with ids) in one call and removes only those it reports. No call
        without a comment, with ``review.filter`` off, or when the group stopped incomplete
        (also ``ROUND_INCOMPLETE``: budget or deadline would refuse the call; comments kept)."""
        d = self.deps
        found = d.comment_pool.drain(self.key)
        if (d.cfg.review.filter and found
                and stop not in (*INCOMPLETE_STOPS, StopReason.ROUND_INCOMPLETE)):
            self.filter_findings(found)

    def filter_findings(self, new: Sequence[Finding]) -> frozenset[str]:
        """Run the review filter on the group's findings; remove and return the ids it
        reports (none when it fails: fail-open)."""
        d = self.deps
        shown = list(self.group.files)  # plus the diffs of files comments were re-filed to
        for f in new:
            fd = d.by_path.get(f.path)
            if fd is not None and all(fd.path != x.path for x in shown):  # a window is its file
                shown.append(fd)
        outcome = agent.review_filter(
            d.client, shown, new, meter=d.meter, redact=d.redact, record=d.record,
            label=self.group.label, language=d.language, as_git=self.as_git)
        if not outcome.ok:
            self.warn("review_filter_failed", f"{outcome.error}; all comments kept")
        d.collector.remove(outcome.removed_ids)
        return outcome.removed_ids

    def context_policy(self) -> ContextPolicy:
        """How the tool loop compresses its history (summaries run on the background pool)."""
        d, label = self.deps, self.group.label
        return ContextPolicy(
            context_tokens=d.cfg.llm.context_tokens,
            count_tokens=d.count,
            summarize=lambda text: agent.summary_call(
                d.client, text, language=d.language, max_output_tokens=d.summary_tokens,
                meter=d.meter, record=d.record, label=label),
            spawn=d.spawn,
            summary_max_tokens=d.summary_tokens,
        )
