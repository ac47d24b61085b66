"""One single-range run up to its first LLM call (spec §6.1 steps 1–2 and §10's run-level
lookup): the change loaded (``pipeline.input``), the selection, the deterministic findings
(``change.scan``), the result being filled in, the redaction of the reviewed diffs and the
run-level cache lookup. ``pipeline.review`` wires it to the groups' LLM work.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import change, secrets, util
from ..change import changes_only_notice, filter_paths, input_warnings
from ..findings import MOVED_UNKNOWN, RunWarning
from ..gate import decide, would_block
from ..report import FileOutcome, ReviewResult, merged_findings
from ..vocabulary import StopReason

if TYPE_CHECKING:  # imported where used: a preview or a cache hit needs none of them
    from .. import git
    from ..agent import Redactor
    from ..diff import FileDiff
    from ..findings import Finding
    from ..report import Session
    from .cache.policy import CachePolicy
    from .cache.store import ResultCache
    from .request import ReviewRequest

__all__ = ["RunState"]


class RunState:
    """One single-range run up to the first LLM call: the loaded diff, the selection, the
    deterministic findings, the result being filled in and the run-level cache lookup."""

    def __init__(
        self,
        req: ReviewRequest,
        targets: Sequence[git.Target],
        t0: float,
        *,
        session: Session | None,
        rules_for: Callable[[Sequence[str]], str] | None,
    ) -> None:
        self.req = req
        self.cfg = req.config
        self.t0 = t0
        self.session = session
        self.rules_for = rules_for
        # spec §13.7: the money caps' per-request ceiling (pipeline.spend.SpendGuard) and the
        # run's Meter (set by llm_stage), whose usage the ledger records even on Ctrl-C
        self.spend_guard: Any = None
        self.meter: Any = None
        self.record: Callable[[str, Any], None] = (
            session.record if session else (lambda kind, data: None))
        decisions, notice, scan_warnings = self._load(targets)
        self.outcomes = {id(d.file): FileOutcome.selected(d) for d in decisions}
        self.reviewable = [d.file for d in decisions if d.reviewed]
        self.bounded = [d for d in decisions if d.reason in change.NOT_REVIEWED_REASONS]
        self.head = targets[0]
        self.result = ReviewResult.start(
            gate=req.gate, files=[self.outcomes[id(d.file)] for d in decisions],
            input={"mode": req.mode, "base": self.head.base_label, "head": self.head.head_label,
                   "snapshot_tree": self.head.snapshot_tree},
            llm=req.llm_labels, session_id=session.id if session else "", preview=req.preview)
        if self.head.paths is not None:  # spec §3.4.1: limited to the un-noted commits' files
            self.result.input["paths"] = list(self.head.paths)
        if req.mode == "push":  # the ranges' machinery: push mode only
            from .ranges import ranges_json, skipped_commits_warnings

            self.result.input["ranges"] = ranges_json(targets)
            self.result.warnings.extend(skipped_commits_warnings(targets))
        if req.guidance.files:
            self.result.input["guidance"] = req.guidance.listing()
        self.result.warnings.extend(input_warnings(self.files, notice, scan_warnings))
        self.cache_policy: CachePolicy | None = None  # set by run_cache_hit

    def _load(self, targets: Sequence[git.Target]
              ) -> tuple[list[change.Decision], str, list[str]]:
        """Load the change of ``targets`` and make its deterministic findings: sets ``files``,
        ``config_findings`` and ``secret_literals``; returns (the selection decisions, the
        changes-only notice or "", the secret scan's warnings). A change whose every target's
        head is its base (an index that matches HEAD) has no file: nothing is loaded or
        scanned, and neither machinery is imported, so such a run starts fast."""
        req = self.req
        self.secret_literals: dict[str, str] = {}  # detect-secrets values, redacted like ours
        if all(t.base == t.head for t in targets):
            self.files: list[FileDiff] = []
            self.config_findings: list[Finding] = []
            return [], changes_only_notice(
                filter_paths([], req.path_filter)[1] if req.path_filter is not None else [],
                0, req.environ, req.mode), []
        from .input import load_targets, scan_inputs

        cs, notice = load_targets(req, targets, self.count)
        self.files = cs.files
        # spec §14: deterministic, so also without an endpoint or reviewable file; files not
        # loaded (excluded, too large, over a bound) were scanned while loading, or
        # come back parsed (cs.probes) for the detect-secrets pass
        to_scan, listed = scan_inputs(cs)
        scanned = change.change_findings(req.repo, to_scan, req.protected_paths,
                                         self.cfg.security.allow_secrets, scan=not req.preview,
                                         detect_secrets=self.cfg.security.detect_secrets,
                                         listed=listed)
        self.config_findings = [*scanned.findings, *cs.findings]
        if req.mode == "scan":  # spec §3.9: "in the scanned file", not "in the change"
            self.config_findings = secrets.worded_for_scan(self.config_findings)
        self.secret_literals = scanned.literals
        return cs.decisions, notice, scanned.warnings

    def count(self, text: str) -> int:
        """Tokens of ``text`` for the configured model (tiktoken is loaded on first use)."""
        return util.count_tokens(text, self.cfg.llm.model)

    def rules(self, paths: Sequence[str]) -> str:
        """The rule text for ``paths`` ("" without a rules source)."""
        return self.rules_for(paths) if self.rules_for else ""

    def finished(self) -> ReviewResult:
        """Account for the selected files that could not be fitted (too large, a bound of the
        change set) and for the files whose added text the secret scan did not read to its
        end: each makes the review incomplete. Stamp the elapsed time on the result and
        return it. Before that, the findings that would block are checked for code moved
        unchanged (:meth:`mark_moved`)."""
        result = self.result
        if not self.req.preview:
            self.mark_moved()
        gaps = [o for o in result.files if o.scan_gap]
        if (self.bounded or gaps) and not self.req.preview:
            from .input import bound_text, scan_gap_text  # a run with a change set: loaded

            if self.bounded:
                result.left_out(len(self.bounded), len(self.reviewable) + len(self.bounded),
                                bound_text(self.bounded, self.req.selection_policy,
                                           scan=self.req.mode == "scan"))
            if gaps:
                result.not_scanned(scan_gap_text(gaps, self.cfg.security.max_scan_bytes))
        result.elapsed_ms = int((time.monotonic() - self.t0) * 1000)
        return result

    def mark_moved(self) -> None:
        """spec §9: among the model's findings that would block (``gate.would_block``), set
        ``moved_from`` on those anchored on new-side lines git's moved-code detection shows as
        moved unchanged (``git.moved_lines``), and decide the gate again; one the model marked
        ``preexisting: false`` (the change causes it) is never asked. A ``preexisting`` flag on
        lines the change wrote (added lines not moved, removed lines) or on a finding whose
        quote was not located is dropped with a ``preexisting_refused`` warning: new code is
        never waved through. In a scan nothing is pre-existing or moved (the whole file is
        under review): every flag is dropped so, and git is not asked. Nothing to ask (no
        such finding, ``gate.block_preexisting``): no git call. A git failure is a
        ``moved_code`` warning and the findings keep blocking (an unverified flag is dropped)."""
        gate, result = self.req.gate, self.result
        if self.req.mode == "scan":
            self._refuse({id(f) for f in result.findings if f.preexisting},
                         "but a scan reviews the whole file: nothing in it predates the change")
            return
        if gate.block_preexisting or not any(would_block(f, gate) for f in result.findings):
            return
        diffs = {p: fd for fd in self.files for p in (fd.old_path, fd.new_path) if p}
        asked = [f for f in result.findings if would_block(f, gate) and f.source == "llm"
                 and f.preexisting is not False
                 and ((f.start_line <= 0 or _touches_change(diffs.get(f.path), f))
                      if f.preexisting else f.side == "new" and f.start_line > 0)]
        if not asked:
            return
        moved: Any = None
        if any(f.side == "new" and f.start_line > 0 for f in asked):
            from .. import git
            from ..errors import GitError

            paths = {f.path for f in asked} | {fd.old_path for fd in self.files
                                               if fd.deletions and fd.old_path}
            try:
                moved = git.moved_lines(self.req.repo, self.head.base, self.head.head,
                                        sorted(paths))
            except GitError as e:
                result.warnings.append(RunWarning("moved_code", "",
                                                  f"moved code not checked: {e}"))
        asked_ids = {id(f) for f in asked}
        refused = set()
        out = []
        for f in result.findings:
            src = None
            if id(f) in asked_ids and moved is not None and f.side == "new":
                src = moved.moved_source(f.path, f.start_line, f.end_line)
            if src is not None:
                f = f._replace(moved_from=src or MOVED_UNKNOWN)
            elif id(f) in asked_ids and f.preexisting:
                refused.add(id(f))
            out.append(f)
        result.findings = out
        self._refuse(refused, "but its lines were not found or the change wrote them:"
                              " it counts as the change's")

    def _refuse(self, ids: set[int], why: str) -> None:
        """Drop the ``preexisting`` flag of the findings whose ``id()`` is in ``ids``, one
        ``preexisting_refused`` warning each (``finding <id> was flagged pre-existing`` + ``why``),
        and decide the gate again."""
        result = self.result
        out = []
        for f in result.findings:
            if id(f) in ids:
                f = f._replace(preexisting=None)
                result.warnings.append(RunWarning(
                    "preexisting_refused", f.path,
                    f"finding {f.id} was flagged pre-existing {why}"))
            out.append(f)
        result.findings = out
        result.decision = decide(out, result.incomplete, self.req.gate)

    def finish_without_llm(self) -> ReviewResult:
        """Preview, or nothing to review: only the deterministic findings are reported."""
        result = self.result
        if not self.req.preview:
            result.findings = self.config_findings
            result.decision = decide(self.config_findings, False, self.req.gate)
            if self.config_findings:
                result.status = "complete"
        return self.finished()

    def not_reviewed(self, reason: StopReason, why: str) -> ReviewResult:
        """No LLM review at all (``reason``: ``NO_ENDPOINT``, spec §2; ``LOCKED``): the
        deterministic findings are reported and gated, every reviewable file is not reviewed
        with ``reason``, and gate.on_error decides."""
        result = self.result
        for f in self.reviewable:
            self.outcomes[id(f)].settle(reason)
        result.incomplete_reasons.append(f"NOT REVIEWED: {why}")
        result.warnings.append(RunWarning(reason, "", why))
        result.status = "failed"
        result.findings = self.config_findings
        result.decision = decide(self.config_findings, True, self.req.gate)
        return self.finished()

    def redact_reviewed(self) -> Redactor:
        """spec §14: from here on the reviewed diffs are redacted (in place: prompts, cache keys
        and anchoring all see placeholders; other files' diffs reach the model only through
        file_read_diff, whose output the view redacts); the client redacts every request again.
        Returns the run's redactor."""
        from .. import agent, secrets  # a run with something for the model only

        # no allow-list: allowed values are redacted too
        redactor = agent.Redactor(self.secret_literals)
        for f in self.reviewable:
            secrets.redact_file_diff(f, redactor)
        return redactor

    def run_cache_hit(self, cache: ResultCache | None) -> ReviewResult | None:
        """spec §10: run-level cache lookup in ``cache`` (None: no cache) before any LLM work;
        an unchanged snapshot makes no call. Returns the finished result on a hit; sets
        ``cache_policy`` for the groups."""
        req, result = self.req, self.result
        if cache is None or req.endpoint is None:
            return None
        from .. import agent
        from .cache.policy import CachePolicy  # only a run with a cache and an endpoint

        self.cache_policy = CachePolicy.for_run(
            cache, self.cfg, req.endpoint, req.effort, req.background, self.files,
            self.rules, self.record, req.tool_defs, guidance=req.guidance.block,
            scan=req.mode == "scan")
        hit = self.cache_policy.lookup_run(self.reviewable)
        if hit is None:
            return None
        paths = {f.path: f for f in self.reviewable}
        result.groups = [agent.Group(label, [paths[p] for p in ps if p in paths])
                         for label, ps in hit.groups]
        for f in self.reviewable:
            self.outcomes[id(f)].settle("")
        result.warnings.extend(hit.warnings)
        result.findings = merged_findings([*self.config_findings, *hit.findings])
        result.status = "complete"
        result.decision = decide(result.findings, False, req.gate)
        result.cache_hits = self.cache_policy.hits
        return self.finished()


def _touches_change(fd: FileDiff | None, f: Finding) -> bool:
    """Whether finding ``f`` lies on a line the change wrote: an added line (new side) or a
    removed line (old side) of ``fd``'s hunks within ``f``'s lines. An unanchored finding, or
    one on a file without hunks, touches none."""
    if fd is None or f.start_line <= 0:
        return False
    kind = "+" if f.side == "new" else "-"
    for h in fd.hunks:
        for ln in h.lines:
            num = ln.new_line if f.side == "new" else ln.old_line
            if ln.kind == kind and num is not None and f.start_line <= num <= f.end_line:
                return True
    return False
