"""What a review run returns (spec §8.3, §11): the result, each changed path's coverage, each
group's report and outcome, and the words of the ``NOT REVIEWED`` line (spec §9).

Plain data and pure functions. The formats of ``report.formats`` render these types,
``pipeline.cache`` stores the warnings and ``pipeline.review`` fills the result in. The warnings
are ``findings.RunWarning``, a leaf type, so ``comments`` raises anchoring warnings without
importing ``report``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..findings import Finding, RunWarning, merge_same_claims
from ..gate import GateDecision, GateOptions, decide
from ..llm import Usage
from ..vocabulary import StopReason

if TYPE_CHECKING:
    from ..agent import Group
    from ..change import Decision
    from ..comments import Dismissal, DismissedFinding

# The stop reasons (loop stops and group outcomes) that leave a group unreviewed (spec §8.3
# incomplete with reason). A stop in a later effort round only costs that round. A group
# without a final answer (``MAX_ROUNDS``: the round limit was reached; the grace turn's
# comments are kept) or with a reply cut at the output limit (``OUTPUT_LIMIT``) is unreviewed
# too, and so is one that hit another cap (tokens per group, tool calls per reply, argument
# size): neither passed nor cached.
CAP_STOPS = frozenset({StopReason.MAX_ROUNDS, StopReason.GROUP_TOKENS,
                       StopReason.TOO_MANY_TOOL_CALLS, StopReason.TOOL_ARGS_TOO_LARGE,
                       StopReason.COMMENTS_CAPPED})
INCOMPLETE_STOPS = frozenset({
    StopReason.LLM_ERROR, StopReason.BUDGET, StopReason.SPEND_CAP, StopReason.TIMEOUT,
    StopReason.CANCELLED,
    StopReason.TASK_FAILED, StopReason.NO_TOOL_CALLS, StopReason.EMPTY_ROUNDS,
    StopReason.TOKEN_THRESHOLD_EXCEEDED, StopReason.ERROR, StopReason.OUTPUT_LIMIT, *CAP_STOPS,
})
# only a group whose model gave its final answer is cached
CACHEABLE_STOPS = (StopReason.TASK_DONE,)


@dataclass
class FileOutcome:
    """Coverage entry of one changed path (spec §8.3)."""

    path: str
    old_path: str
    status: str
    reviewed: bool
    reason: str
    insertions: int
    deletions: int
    will_review: bool = False
    detail: str = ""  # the reason in words, and the secret scan of a file not loaded
    size_bytes: int | None = None  # the larger blob's size, when it made the file too_large
    scan_gap: bool = False  # the secret scan left part of its added text unread
    whole: str = ""  # reviewed whole: the reason its old side was left out (spec §4)

    @classmethod
    def selected(cls, d: Decision) -> FileOutcome:
        """The entry of a selection decision: not reviewed yet, excluded with its reason;
        ``will_review`` also for a file left out only because it could not be fitted (too
        large, a bound of the change set: it keeps that reason and makes the review
        incomplete); ``scan_gap`` as the decision's (it makes the review incomplete too)."""
        f = d.file
        return cls(f.path, f.old_path, f.status, False, d.reason, f.insertions, f.deletions,
                   d.selected, d.detail, f.size_bytes, d.scan_gap, f.whole)

    @property
    def not_reviewed(self) -> bool:
        """Selected but not reviewed: the file makes the review incomplete."""
        return self.will_review and not self.reviewed

    def settle(self, reason: str) -> None:
        """The file's review ended: reviewed when ``reason`` is "", else not, with ``reason``."""
        if reason:
            self.reason = reason
        else:
            self.reviewed = True


@dataclass(eq=False)  # filled in as the group runs, never compared: identity equality
class GroupReport:
    """How one group's review went (session log ``group_done``; spec §6.2 stop reasons).

    ``stop_reasons``: the loop's stop reason per effort round run, or the single reason the
    group never reached a loop (``TOKEN_THRESHOLD_EXCEEDED``, ``TIMEOUT`` before it started,
    ``ERROR``, ``CACHE_HIT``). ``reason``: the incomplete reason ("" when the group counts as
    reviewed)."""

    label: str
    files: list[str]
    stop_reasons: list[StopReason] = field(default_factory=list)
    reason: str = ""
    compressions: int = 0


@dataclass(frozen=True, eq=False)  # never compared: identity equality
class GroupOutcome:
    """What one group's worker returns; the run merges these in group order, so the result
    does not depend on which group finished first.

    ``stop``: the loop's stop reason of the last round run, or a group outcome (``CACHE_HIT``,
    ``ROUND_INCOMPLETE``, ``TOKEN_THRESHOLD_EXCEEDED``, ``TIMEOUT``, ``ERROR``); in
    INCOMPLETE_STOPS the group is not reviewed. ``error``: one line, "" when none.
    ``warnings``: the group's own warnings in the order it raised them (its comments' anchoring
    warnings go to the run's collector). ``cache_key``: the group's cache key when it was
    freshly reviewed with a cache ("" otherwise)."""

    stop: StopReason
    error: str
    report: GroupReport
    warnings: tuple[RunWarning, ...] = ()
    cache_key: str = ""

    @property
    def reason(self) -> str:
        """The incomplete reason ("" when the group counts as reviewed)."""
        return self.stop if self.stop in INCOMPLETE_STOPS else ""

    def not_reviewed(self, *, timeout_s: float, budget_tokens: int) -> tuple[RunWarning, str]:
        """For a group left unreviewed: its ``subtask_error`` warning (the error, else the
        stop reason in words) and its cause for the NOT REVIEWED line (``not_reviewed_cause``)."""
        err = "" if self.error == self.stop else self.error
        warning = RunWarning("subtask_error", self.report.label,
                             err or _stop_words(self.stop) or self.stop)
        cause = not_reviewed_cause(self.stop, err, timeout_s=timeout_s,
                                   budget_tokens=budget_tokens)
        return warning, cause


@dataclass(eq=False)  # filled in as the run goes, never compared: identity equality
class ReviewResult:
    """The outcome of a run, rendered by the formats of ``report.formats``. ``status``:
    complete | partial | failed | skipped; ``findings`` in output order; ``warnings`` in a stable
    order (run warnings, then each group's in group order, then the comments')."""

    status: str  # complete | partial | failed | skipped
    decision: GateDecision
    gate: GateOptions
    findings: list[Finding]
    files: list[FileOutcome]
    groups: list[Group]
    warnings: list[RunWarning]
    input: dict[str, Any]
    llm: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    llm_attempts: int = 0  # HTTP attempts started, failed ones and retries included
    cache_hits: int = 0
    elapsed_ms: int = 0
    session_id: str = ""
    preview: bool = False
    incomplete_reasons: list[str] = field(default_factory=list)
    group_reports: list[GroupReport] = field(default_factory=list)
    dismissed: list[DismissedFinding] = field(default_factory=list)
    # spec §12.3: {"session": id, "resolved", "persisting", "new", "carried", "dismissed": [ids]}
    # against the last blocked review of the branch; None when there was none
    since_last: dict[str, Any] | None = None

    @property
    def incomplete(self) -> bool:
        """Some selected file was not reviewed, or some file's added text was not all
        secret-scanned (spec §9 ``incomplete``)."""
        return any(o.not_reviewed or o.scan_gap for o in self.files)

    def dismiss(self, dismissals: Sequence[Dismissal]) -> None:
        """Gate time: move the findings that are dismissed (inline marker, shared or
        personal record) to ``dismissed`` and decide the gate again on the rest. Applied to
        every result, cached ones included, so a dismissal never needs a new review."""
        if self.preview:
            return
        from .. import comments  # called for a result with findings only

        kept, gone = comments.apply_dismissals(self.findings, dismissals)
        if not gone:
            return
        self.findings = kept
        self.dismissed = [*self.dismissed, *gone]
        self.decision = decide(kept, self.incomplete, self.gate)

    def left_out(self, bounded: int, selected: int, why: str) -> None:
        """``bounded`` of the ``selected`` files were left out because they could not be
        fitted (too large, a bound of the change set; ``why`` in words): the NOT REVIEWED line
        says so (its first reason gains ``why``), a complete or skipped run becomes partial
        (failed when nothing was reviewed) and the gate decides as for an incomplete review."""
        self._incomplete(why, f"{bounded} of {selected} files: ")

    def not_scanned(self, why: str) -> None:
        """The secret scan left text some files add unread (``why`` in words, naming them):
        the NOT REVIEWED line says so, and the run is incomplete as for :meth:`left_out`."""
        self._incomplete(why)

    def _incomplete(self, why: str, count: str = "") -> None:
        if self.incomplete_reasons:
            self.incomplete_reasons[0] += f"; {why}"
        else:
            self.incomplete_reasons.append(f"NOT REVIEWED: {count}{why}")
        if self.status in ("complete", "skipped"):
            self.status = "partial" if any(o.reviewed for o in self.files) else "failed"
        self.decision = decide(self.findings, True, self.gate)

    @classmethod
    def start(
        cls, *, gate: GateOptions, input: dict[str, Any], llm: dict[str, str],
        session_id: str, preview: bool, files: Sequence[FileOutcome] = (),
        findings: Sequence[Finding] = (), status: str = "skipped", incomplete: bool = False,
    ) -> ReviewResult:
        """A result without groups or warnings yet, gated on ``findings`` (``incomplete``:
        files were not reviewed)."""
        return cls(status=status, decision=decide(findings, incomplete, gate), gate=gate,
                   findings=list(findings), files=list(files), groups=[], warnings=[],
                   input=input, llm=llm, session_id=session_id, preview=preview)


def finding_order(f: Finding) -> tuple[str, bool, int, int]:
    """Sort key of the findings in a result: by path, anchored before unanchored, by first
    line, most severe first."""
    return (f.path, f.start_line == 0, f.start_line, -f.severity)


def merged_findings(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with same claims merged (``merge_same_claims``: the first of equals wins,
    so the input order must not depend on timing) in ``finding_order``, ties in input order."""
    return sorted(merge_same_claims(findings), key=finding_order)


# --- the NOT REVIEWED line (spec §9) -------------------------------------------------------

MAX_CAUSES_SHOWN = 3  # distinct reasons on the NOT REVIEWED line; the rest are in the warnings
# stops whose own error message says more than their words (the LLM's, the exception's, the
# prompt's size, a cap with its numbers)
_OWN_MESSAGE_STOPS = frozenset({StopReason.LLM_ERROR, StopReason.ERROR, StopReason.SPEND_CAP,
                                StopReason.TOKEN_THRESHOLD_EXCEEDED, *CAP_STOPS})


def _stop_words(stop: str) -> str | None:
    """A stop reason for people (``StopReason.words``: the ``NOT REVIEWED`` line and the
    warnings never show codes such as ``empty_rounds``); None for an unknown code."""
    known = StopReason.lookup(stop)
    return known.words if known is not None else None


def not_reviewed_cause(stop: str, err: str, *, timeout_s: float, budget_tokens: int) -> str:
    """Why a group was not reviewed, in words for the ``NOT REVIEWED`` line. Limits are stated
    once with their setting (the per-group details stay in the warnings); errors (LLM, internal,
    context size) keep their own one-line message."""
    if stop == StopReason.TIMEOUT:
        return f"time limit of {timeout_s:g}s reached (review.timeout_s, --timeout)"
    if stop == StopReason.BUDGET:
        return (f"token budget of {budget_tokens} used up (review.max_tokens_budget,"
                " --max-tokens-budget)")
    if stop in _OWN_MESSAGE_STOPS and err:
        return err
    return _stop_words(stop) or err or stop


def not_reviewed_line(causes: Sequence[tuple[int, str]], selected: int) -> str:
    """The one loud line of an incomplete review (spec §9): ``NOT REVIEWED: [k of n files: ]
    <reason>[; <reason>…]`` from the (file count, reason) of each unreviewed group; distinct
    reasons in order of first appearance, at most MAX_CAUSES_SHOWN."""
    reasons = list(dict.fromkeys(why for _n, why in causes))
    shown = "; ".join(reasons[:MAX_CAUSES_SHOWN])
    if len(reasons) > MAX_CAUSES_SHOWN:
        shown += f"; and {len(reasons) - MAX_CAUSES_SHOWN} more (see the warnings)"
    missing = sum(n for n, _why in causes)
    count = f"{missing} of {selected} files: " if missing < selected else ""
    return f"NOT REVIEWED: {count}{shown}"
