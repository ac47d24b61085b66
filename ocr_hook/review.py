"""Wires the stages of a review (SPEC §6.1) and owns the thread pools and the run deadline.

input (target + diff) → selection → groups (build_groups: deterministic or one grouping call)
→ per group on the group pool (run_groups): optional plan, effort rounds of the tool loop with
compression, comment pipeline → merge → gate. Nothing else wires stages. LLM and tool failures
come back inside the result; only input/config problems raise (OcrError).

Budget and time (SPEC §6.4): one Meter per run is checked before every LLM attempt (the
clients' ``before_attempt``), which also caps each attempt's timeouts by the time left. At the
deadline queued groups are cancelled and running ones stop at their next check; both are
incomplete with reason ``timeout``. Pools are daemon-thread WorkerPools joined before ``run``
returns; on Ctrl-C the Meter is cancelled and the KeyboardInterrupt propagates (exit 130).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, gitio, grouping, prompts, secret_scan, selection, target
from .comments import Collector, CommentPool, CommentProcessor
from .config import Config
from .diff import FileDiff, render_numbered
from .errors import OcrError
from .findings import Finding, RawComment, merge_same_claims
from .gate import GateDecision, GateOptions, decide
from .grouping import Group
from .llm.types import Endpoint, Message, Usage
from .session import Session
from .workers import WorkerPool

if TYPE_CHECKING:
    from .agent.loop import ContextPolicy
    from .agent.redaction import Redactor
    from .cache import ResultCache

log = logging.getLogger(__name__)

EFFORT_ROUNDS = {"low": 1, "medium": 2, "high": 3}  # SPEC §2 (OCR effort presets)
CONFIRMED_CAP = 30  # SPEC §6.1 step 5 (OCR confirmedCap)
CONFIRMED_CODE_CHARS = 200  # SPEC §6.1 step 5 (OCR confirmedMaxExistingCode)
CONFIRMED_ISSUE_CHARS = 300  # SPEC §6.1 step 5 (OCR confirmedMaxContent)
PROMPT_CONTEXT_FRACTION = 0.8  # SPEC §6.3: a group prompt above 80 % of the context is skipped
DEADLINE_GRACE_S = 5.0  # after the deadline: wait this long for running groups to stop
INTERRUPT_GRACE_S = 0.5  # after Ctrl-C: wait this long for workers before giving up on them
# Loop stop reasons (agent.loop.STOP_REASONS) and group outcomes that leave a group unreviewed
# (SPEC §8.3 incomplete with reason). A stop in a later effort round only costs that round.
INCOMPLETE_STOPS = frozenset({
    "llm_error", "budget", "timeout", "cancelled", "task_failed", "no_tool_calls",
    "empty_rounds", "token_threshold_exceeded", "error",
})


@dataclass(frozen=True)
class ReviewRequest:
    """Everything a run needs, read once from flags, env and files by ``cli``."""

    repo: Path
    config: Config
    environ: Mapping[str, str]
    mode: str = "staged"  # staged | commit | range | push
    stage: str = "review"  # review | pre-commit | pre-push
    commit: str = ""
    from_ref: str = ""
    to_ref: str = ""
    targets: tuple[target.Target, ...] = ()  # pre-resolved (push mode)
    endpoint: Endpoint | None = None
    endpoint_error: str = ""
    # Runs llm.api_key_cmd (config_cli.ApiKeyCommand): set when the endpoint's key is still to
    # come from it. Called only right before the first LLM request; raises ConfigError when the
    # command fails, which makes the endpoint unavailable (reason no_endpoint, SPEC §2).
    api_key_cmd: Callable[[], str] | None = None
    preview: bool = False
    use_cache: bool = True
    background: str = ""
    protected_paths: tuple[str, ...] = ()  # review-configuration files (SPEC §5)
    # SPEC §7.2/§7.3: built-in tool definitions after tools.file (None = shipped tools.json),
    # and the MCP bridge (tools.mcp_bridge.McpBridge, built by cli, started here only when a
    # review reaches the tool loop, closed by cli).
    tool_defs: Mapping[str, Any] | None = None
    mcp: Any = None

    @property
    def effort(self) -> str:
        e = self.config.review.effort
        if e:
            return e
        return "low" if self.stage == "pre-commit" else "medium"

    @property
    def budget_tokens(self) -> int:
        b = self.config.review.max_tokens_budget
        if b is not None:
            return b
        return 300_000 if self.stage in ("pre-commit", "pre-push") else 0

    @property
    def gate(self) -> GateOptions:
        g = self.config.gate
        return GateOptions(g.mode, g.fail_on, g.on_error)


@dataclass
class FileOutcome:
    """Coverage entry of one changed path (SPEC §8.3)."""

    path: str
    old_path: str
    status: str
    reviewed: bool
    reason: str
    insertions: int
    deletions: int
    will_review: bool = False


@dataclass
class Warning_:
    type: str
    file: str
    message: str


@dataclass
class GroupReport:
    """How one group's review went (session log ``group_done``; SPEC §6.2 stop reasons).

    ``stop_reasons``: the loop's stop reason per effort round run (agent.loop.STOP_REASONS),
    or the single reason the group never reached a loop (``token_threshold_exceeded``,
    ``timeout`` before it started, ``error``). ``reason``: the incomplete reason ("" when the
    group counts as reviewed). ``planned``: a plan was used in round 1."""

    label: str
    files: list[str]
    stop_reasons: list[str] = field(default_factory=list)
    reason: str = ""
    planned: bool = False
    compressions: int = 0


@dataclass
class ReviewResult:
    """The outcome of a run, rendered by ``output``."""

    status: str  # complete | partial | failed | skipped
    decision: GateDecision
    gate: GateOptions
    findings: list[Finding]
    files: list[FileOutcome]
    groups: list[Group]
    warnings: list[Warning_]
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


def resolve_targets(req: ReviewRequest) -> list[target.Target]:
    """The review inputs of ``req`` (one, or one per pushed range; none for a push with
    nothing new)."""
    if req.targets or req.mode == "push":
        return list(req.targets)
    if req.mode == "commit":
        return [target.commit_target(req.repo, req.commit)]
    if req.mode == "range":
        return [target.range_target(req.repo, req.from_ref, req.to_ref)]
    return [target.staged_snapshot(req.repo, req.environ)]


def exceeds_tokens(texts: Sequence[str], limit: int, count: Callable[[str], int]) -> bool:
    """True when ``texts`` together have more than ``limit`` tokens. Counts exactly only when
    their UTF-8 size (an upper bound: a token is at least one byte) is above ``limit``, so small
    reviews never load a BPE table (SPEC §15)."""
    if sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) <= limit:
        return False
    return sum(count(t) for t in texts) > limit


def build_groups(
    files: Sequence[FileDiff],
    *,
    ask_model: Callable[[Sequence[FileDiff]], list[Group]] | None,
    group_too_large: Callable[[Sequence[FileDiff]], bool],
    warn: Callable[[Warning_], None],
) -> list[Group]:
    """SPEC §6.1 step 2. ≤ 1 file, or < 4 files: deterministic (bundle under 200 changed
    lines, else per file), no LLM call. Otherwise ``ask_model`` (the grouping call on metadata
    only; None = no endpoint) — any failure falls back to one group per file with a warning
    ``grouping_failed``. Then groups above 10 files are split in order and groups whose diffs
    are ``group_too_large`` split into single files."""
    groups = grouping.deterministic_groups(files)
    if groups is None:
        if ask_model is None:
            groups = grouping.per_file(files)
        else:
            try:
                groups = ask_model(files)
            except OcrError as e:  # LlmError, an unusable answer, budget or deadline
                log.info("LLM grouping failed (%s); reviewing one group per file", e)
                warn(Warning_("grouping_failed", "", f"{e}; reviewing one group per file"))
                groups = grouping.per_file(files)
    groups = grouping.cap_group_size(groups)
    return grouping.split_over_budget(groups, group_too_large)


def prompt_path(path: str) -> str:
    """A path as shown in a prompt: XML-escaped and on one line, so a file name cannot close a
    delimiter or start a line of its own (SPEC §14)."""
    return prompts.xml_attr(path).replace("\r", "\\r").replace("\n", "\\n")


def _other_files(all_files: Sequence[FileDiff], group: Group) -> str:
    mine = {id(f) for f in group.files}
    lines = [
        f"{f.status.upper():<9} {prompt_path(f.path)} (+{f.insertions}/-{f.deletions})"
        for f in all_files
        if id(f) not in mine
    ]
    return "\n".join(lines) if lines else "(none)"


def group_messages(
    group: Group,
    all_files: Sequence[FileDiff],
    rules_text: str,
    language: str,
    background: str,
    redact: Callable[[str], str],
    now: str,
    *,
    plan: str = "",
    confirmed: str = "",
) -> list[Message]:
    """System + user messages of one group's main task (SPEC §6.2); ``plan`` only in round 1,
    ``confirmed`` (earlier findings) only in rounds ≥ 2."""
    system = prompts.render("main_system", {"language": language or "English"})
    fields = group_fields(group, all_files, rules_text, background, now)
    user = prompts.render("main_user", {**fields, "plan": plan, "confirmed": confirmed})
    return [Message("system", system), Message("user", redact(user))]


def group_fields(
    group: Group, all_files: Sequence[FileDiff], rules_text: str, background: str, now: str
) -> dict[str, str]:
    """Template fields shared by the plan and main prompts of ``group``: date, other changed
    files (status + path, SPEC §6.2), the group's numbered diffs in ``<file>`` elements, rules
    and background."""
    diffs = "\n".join(
        f'<file path="{prompt_path(f.path)}">\n{render_numbered(f)}\n</file>'
        for f in group.files
    )
    return {
        "date": now,
        "other_files": _other_files(all_files, group),
        "diffs": diffs,
        "rules": rules_text,
        "background": background,
    }


def run(
    req: ReviewRequest,
    *,
    session: Session | None = None,
    rules_for: Callable[[Sequence[str]], str] | None = None,
    cache: ResultCache | None = None,
) -> ReviewResult:
    """Review ``req`` end to end and return the result (never raises for LLM/tool failures).

    Raises UsageError/GitError/ConfigError for input problems (bad ref, conflicts).
    """
    t0 = time.monotonic()
    targets = resolve_targets(req)
    if len(targets) != 1:  # push mode: no range, or several (SPEC §3.4)
        return run_ranges(
            req, targets, lambda r: run(r, session=session, rules_for=rules_for, cache=cache)
        )
    # input → selection → deterministic findings
    state = _RunState(req, targets, t0, session=session, rules_for=rules_for, cache=cache)
    if req.preview or not state.reviewable:
        return state.finish_without_llm()
    if req.endpoint is None:
        return state.no_endpoint(req.endpoint_error)
    redactor = state.redact_reviewed()
    run_hit = state.run_cache_hit()
    if run_hit is not None:
        return run_hit
    try:
        endpoint = state.endpoint_with_key(req.endpoint)
    except OcrError as e:
        return state.no_endpoint(f"no LLM endpoint: {e}")
    runner = _GroupRunner(state, endpoint, redactor)
    groups = runner.build_groups()
    ends = runner.review_groups(groups)
    runner.merge(groups, ends)
    return runner.gate(groups)


class _RunState:
    """One single-range run up to the first LLM call: the loaded diff, the selection, the
    deterministic findings, the result being filled in and the run-level cache lookup."""

    def __init__(
        self,
        req: ReviewRequest,
        targets: Sequence[target.Target],
        t0: float,
        *,
        session: Session | None,
        rules_for: Callable[[Sequence[str]], str] | None,
        cache: ResultCache | None,
    ) -> None:
        self.req = req
        self.cfg = req.config
        self.t0 = t0
        self.session = session
        self.rules_for = rules_for
        self.cache = cache
        self.record: Callable[[str, Any], None] = (
            session.record if session else (lambda kind, data: None))
        self.files: list[FileDiff] = []
        for t in targets:
            self.files.extend(target.load_diff(req.repo, t))
        cfg = self.cfg
        policy = selection.SelectionPolicy(
            include=tuple(cfg.select.include),
            exclude=tuple(cfg.select.exclude),
            review_tests=cfg.select.review_tests,
            context_tokens=cfg.llm.context_tokens,
        )
        decisions = selection.select(self.files, policy, self.count)
        self.outcomes = {
            id(d.file): FileOutcome(
                d.file.path, d.file.old_path, d.file.status, False, d.reason,
                d.file.insertions, d.file.deletions, d.reviewed,
            )
            for d in decisions
        }
        self.reviewable = [d.file for d in decisions if d.reviewed]
        self.config_findings = protected_path_findings(self.files, req.protected_paths)
        # SPEC §14: deterministic, so also without an endpoint or reviewable file
        if not req.preview:
            self.config_findings += scan_findings(req.repo, decisions, cfg.security.allow_secrets)
        self.head = targets[0]
        self.result = ReviewResult(
            status="skipped",
            decision=decide([], False, req.gate),
            gate=req.gate,
            findings=[],
            files=[self.outcomes[id(d.file)] for d in decisions],
            groups=[],
            warnings=[],
            input={
                "mode": req.mode,
                "base": self.head.base_label,
                "head": self.head.head_label,
                "snapshot_tree": self.head.snapshot_tree,
            },
            llm={
                "provider": req.endpoint.provider if req.endpoint else "",
                "model": req.endpoint.model if req.endpoint else "",
            },
            session_id=session.id if session else "",
            preview=req.preview,
        )
        if req.mode == "push":
            self.result.input["ranges"] = ranges_json(targets)
        self.cache_settings: dict[str, Any] | None = None
        self.run_key = ""

    def count(self, text: str) -> int:
        """Tokens of ``text`` for the configured model (tiktoken is loaded on first use)."""
        from .tokens import count_tokens

        return count_tokens(text, self.cfg.llm.model)

    def rules(self, paths: Sequence[str]) -> str:
        """The rule text for ``paths`` ("" without a rules source)."""
        return self.rules_for(paths) if self.rules_for else ""

    def finished(self) -> ReviewResult:
        """Stamp the elapsed time on the result and return it."""
        self.result.elapsed_ms = int((time.monotonic() - self.t0) * 1000)
        return self.result

    def finish_without_llm(self) -> ReviewResult:
        """Preview, or nothing to review: only the deterministic findings are reported."""
        result = self.result
        if not self.req.preview:
            result.findings = self.config_findings
            result.decision = decide(self.config_findings, False, self.req.gate)
            if self.config_findings:
                result.status = "complete"
        return self.finished()

    def no_endpoint(self, why: str) -> ReviewResult:
        """SPEC §2: no usable endpoint. The deterministic findings are reported and gated,
        every reviewable file is not reviewed (``no_endpoint``), and gate.on_error decides."""
        result = self.result
        for f in self.reviewable:
            o = self.outcomes[id(f)]
            o.reason = "no_endpoint"
        result.incomplete_reasons.append(f"NOT REVIEWED: {why}")
        result.warnings.append(Warning_("no_endpoint", "", why))
        result.status = "failed"
        result.findings = self.config_findings
        result.decision = decide(self.config_findings, True, self.req.gate)
        return self.finished()

    def redact_reviewed(self) -> Redactor:
        """SPEC §14: from here on the reviewed diffs are redacted (in place: prompts, cache keys
        and anchoring all see placeholders; other files' diffs reach the model only through
        file_read_diff, whose output the view redacts); the client redacts every request again.
        Returns the run's redactor."""
        from .agent.redaction import Redactor

        redactor = Redactor()  # no allow-list: allowed values are redacted too (issue 17)
        for f in self.reviewable:
            secret_scan.redact_file_diff(f, redactor)
        return redactor

    def run_cache_hit(self) -> ReviewResult | None:
        """SPEC §10: run-level cache lookup before any LLM work; an unchanged snapshot makes no
        call. Returns the finished result on a hit; sets ``cache_settings`` and ``run_key``."""
        cache, req, result = self.cache, self.req, self.result
        if cache is None or req.endpoint is None:
            return None
        from . import cache as cache_mod

        self.cache_settings = cache_mod.result_settings(self.cfg, req.endpoint, req.effort,
                                                        req.background, __version__)
        self.run_key = cache_mod.run_key(
            self.cache_settings, self.rules([f.path for f in self.reviewable]),
            self.reviewable, [(f.status, f.path) for f in self.files])
        run_hit = cache.get_run(self.run_key)
        if run_hit is None:
            return None
        if self.session is not None:
            self.session.record("cache_hit", {"level": "run", "key": self.run_key[:16]})
        paths = {f.path: f for f in self.reviewable}
        result.groups = [Group(g.label, [paths[p] for p in g.files if p in paths])
                         for g in run_hit.groups]
        for f in self.reviewable:
            self.outcomes[id(f)].reviewed = True
        result.warnings.extend(Warning_(w.type, w.file, w.message) for w in run_hit.warnings)
        result.findings = sorted(
            merge_same_claims([*self.config_findings,
                               *(cache_mod.entry_to_finding(e) for e in run_hit.findings)]),
            key=lambda f: (f.path, f.start_line == 0, f.start_line, -f.severity),
        )
        result.status = "complete"
        result.decision = decide(result.findings, False, req.gate)
        result.cache_hits = cache.hits
        return self.finished()

    def endpoint_with_key(self, endpoint: Endpoint) -> Endpoint:
        """The endpoint with its API key: the first LLM request is next, so now the key is
        needed (``api_key_cmd``). Raises OcrError when the key command fails."""
        if self.req.api_key_cmd is None:
            return endpoint
        endpoint = dataclasses.replace(endpoint, api_key=self.req.api_key_cmd())
        if self.session is not None:
            self.session.add_secret(endpoint.api_key)
        return endpoint


class _GroupRunner:
    """The LLM part of one run (SPEC §6.1 steps 3–7): the client behind the Meter, the tool
    registry, grouping, the group pool, the comment pool, the merge and the gate. The methods
    run on the group, comment and compression threads share this object's state."""

    def __init__(self, state: _RunState, endpoint: Endpoint, redactor: Redactor) -> None:
        from .agent.meter import Meter
        from .agent.redaction import RedactingClient
        from .llm import make_client
        from .tools.context import SnapshotView, builtin_handlers
        from .tools.registry import build_registry, parse_tools_json

        self.st = state
        self.req = req = state.req
        self.cfg = cfg = state.cfg
        self.result = state.result
        self.files = state.files
        self.record = state.record
        self.count = state.count
        self.meter = Meter(budget_tokens=req.budget_tokens,
                           deadline=state.t0 + cfg.review.timeout_s)
        # SPEC §6.4: budget, deadline and Ctrl-C are checked before every HTTP attempt, retries
        # included; the remaining run time caps each attempt's timeouts.
        self.client = RedactingClient(make_client(  # SPEC §14: the one way out is redacted
            endpoint, before_attempt=self.meter.before_attempt,
            count_tokens=self.count), redactor)  # when usage is absent
        self.redact: Callable[[str], str] = redactor
        self.view = SnapshotView(req.repo, state.head.head, self.files, self.redact)
        external: list[Any] = []
        if req.mcp is not None:  # SPEC §7.3: servers start once per run; failures are warnings
            req.mcp.start()
            external = req.mcp.tools()
            self.result.warnings.extend(
                Warning_("mcp", "", msg) for _server, msg in req.mcp.warnings)
        shipped = parse_tools_json()
        self.registry = build_registry(req.tool_defs or shipped, builtin_handlers(self.view),
                                       external, reserved=shipped, warn=self.tool_warning)
        self.context_limit = int(cfg.llm.context_tokens * PROMPT_CONTEXT_FRACTION)
        # comments, anchoring and compression (their threads start on first use)
        self.collector: Collector[Warning_] = Collector()
        self.by_path: dict[str, FileDiff] = {}
        for f in self.files:
            self.by_path.setdefault(f.new_path, f)
            self.by_path.setdefault(f.old_path, f)
        self._blob_cache: dict[str, list[str] | None] = {}
        self._blob_lock = threading.Lock()
        # SPEC §8.2: comments are anchored (and re-located) on their own pool; the loop never
        # waits.
        self.comment_workers = WorkerPool(cfg.review.concurrency, "ocr-comment")
        self.comment_pool = CommentPool(self.comment_workers, CommentProcessor(
            self.by_path, self.new_file_lines, [f.path for f in state.reviewable],
            relocate=self._relocate), self.collector, Warning_)
        self.now = ""  # the prompts' date, taken when group review starts
        self.rounds_total = EFFORT_ROUNDS[req.effort]
        self.language = cfg.review.language or "English"
        self.summary_tokens = min(cfg.llm.max_output_tokens, 2000)
        # Background compression summaries run here; the run waits for them at the end.
        self.background_pool = WorkerPool(cfg.review.concurrency, "ocr-compress")
        self.reports: dict[int, GroupReport] = {}  # id(group) → report
        self.fresh_groups: dict[int, tuple[str, str]] = {}  # id(group) → (cache key, stop)
        self.causes: list[tuple[int, str]] = []  # (files, why) of each group left unreviewed

    def tool_warning(self, msg: str) -> None:
        """A tool registry problem (MCP tool rejected or renamed): logged and a warning."""
        log.warning("%s", msg)
        self.result.warnings.append(Warning_("mcp", "", msg))

    # --- groups ---------------------------------------------------------------------------

    def build_groups(self) -> list[Group]:
        """Split the reviewable files into groups (deterministic, or one grouping call)."""
        groups = build_groups(
            self.st.reviewable,
            ask_model=self.ask_grouping,
            group_too_large=lambda fs: exceeds_tokens([f.patch for f in fs], self.context_limit,
                                                      self.count),
            warn=self.result.warnings.append,
        )
        self.result.groups = groups
        self.record("grouping", {"groups": [{"label": g.label, "files": [f.path for f in g.files]}
                                            for g in groups]})
        return groups

    def ask_grouping(self, fs: Sequence[FileDiff]) -> list[Group]:
        """The grouping call, answered from the cache when the same file list with the same
        stats was grouped before (SPEC §10)."""
        from .agent import tasks

        cache, cache_settings = self.st.cache, self.st.cache_settings
        key = ""
        if cache is not None and cache_settings is not None:
            from . import cache as cache_mod

            key = cache_mod.grouping_key(cache_settings, fs)
            hit = cache.get_grouping(key)
            if hit is not None:
                self.record("cache_hit", {"level": "grouping", "key": key[:16]})
                by_name = {f.path: f for f in fs}
                return [Group(label, [by_name[p] for p in ps if p in by_name]) for label, ps in hit]
        answer = tasks.grouping_call(self.client, fs, meter=self.meter, record=self.record)
        if cache is not None and key:
            cache.put_grouping(key, [(g.label, [f.path for f in g.files]) for g in answer])
        return answer

    # --- group pool -----------------------------------------------------------------------

    def review_groups(self, groups: Sequence[Group]) -> list[tuple[str, str]]:
        """Review every group on the group pool and return each one's (stop reason, error);
        then wait (bounded) for the comments of groups cut off by the deadline to be anchored."""
        self.now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        ends = run_groups(groups, self.cached_group, concurrency=self.cfg.review.concurrency,
                          meter=self.meter, background=self.background_pool)
        self.comment_workers.shutdown(
            timeout_s=max(0.0, self.meter.remaining_s() or 0.0) + DEADLINE_GRACE_S)
        return ends

    def cached_group(self, group: Group) -> tuple[str, str]:
        """SPEC §10 group level: a stored answer for the same group input replaces the review."""
        cache, cache_settings = self.st.cache, self.st.cache_settings
        if cache is None or cache_settings is None:
            return self.review_group(group)
        from . import cache as cache_mod

        mine = {id(f) for f in group.files}
        key = cache_mod.group_key(
            cache_settings, self.st.rules([f.path for f in group.files]),
            group.files, [(f.status, f.path) for f in self.files if id(f) not in mine])
        hit = cache.get_group(key)
        if hit is None:
            stop, err = self.review_group(group)
            self.fresh_groups[id(group)] = (key, stop)
            return stop, err
        for e in hit.findings:
            self.collector.add(cache_mod.entry_to_finding(e))
        for w in hit.warnings:
            self.collector.warn(Warning_(w.type, w.file, w.message))
        self.record("cache_hit", {"level": "group", "group": group.label, "key": key[:16]})
        return "cache_hit", ""

    def review_group(self, group: Group) -> tuple[str, str]:
        """Plan, effort rounds and comments of one group (SPEC §6.1 steps 4–6). Returns (stop,
        error): ``stop`` in INCOMPLETE_STOPS leaves the group unreviewed; ``round_incomplete``
        means round 1 completed but a later round was cut short."""
        from .tools.comment import code_comment_handler

        report = GroupReport(group.label, [f.path for f in group.files])
        self.reports[id(group)] = report
        raw: list[RawComment] = []
        raw_lock = threading.Lock()

        def sink(cs: list[RawComment]) -> None:
            with raw_lock:  # one lock: raw and the pool see comments in the same order
                raw.extend(cs)
                self.comment_pool.submit(cs, str(id(group)))

        local = {"code_comment": code_comment_handler(sink, group.label)}
        rules_text = self.st.rules([f.path for f in group.files])
        try:
            stop, err = self._group_rounds(group, rules_text, report, raw, raw_lock, local)
        finally:
            # SPEC §8.2: every comment filed is anchored, also of a group that failed later
            self.comment_pool.drain(str(id(group)))
        report.reason = stop if stop in INCOMPLETE_STOPS else ""
        return stop, err

    def _group_rounds(
        self, group: Group, rules_text: str, report: GroupReport, raw: list[RawComment],
        raw_lock: threading.Lock, local: Mapping[str, Any],
    ) -> tuple[str, str]:
        """The prompt size check, the optional plan and the effort rounds of one group; ``raw``
        (guarded by ``raw_lock``) holds the comments filed so far. Returns (stop, error)."""
        from .agent import tasks
        from .agent.loop import run_loop, stop_reason_for
        from .errors import BudgetExhausted, DeadlineExceeded, LlmError

        req, cfg, result, redact = self.req, self.cfg, self.result, self.redact
        fields = group_fields(group, self.files, rules_text, req.background, self.now)
        first = group_messages(group, self.files, rules_text, self.language, req.background,
                               redact, self.now)
        if exceeds_tokens([m.content for m in first], self.context_limit, self.count):
            msg = (f"prompt of group {group.label!r} exceeds 80% of llm.context_tokens "
                   f"({cfg.llm.context_tokens}); group skipped")
            result.warnings.append(Warning_("token_threshold_exceeded", group.label, msg))
            report.stop_reasons.append("token_threshold_exceeded")
            return "token_threshold_exceeded", msg
        plan = ""
        if grouping.plan_required(group.files):  # SPEC §6.1 step 4
            try:
                plan = tasks.plan_call(
                    self.client, plan_tools=self.registry.specs("plan"), user_fields=fields,
                    language=self.language, redact=redact, meter=self.meter, record=self.record,
                    label=group.label)
                report.planned = True
            except (BudgetExhausted, DeadlineExceeded) as e:
                stop = stop_reason_for(e)
                report.stop_reasons.append(stop)
                return stop, str(e)
            except LlmError as e:
                result.warnings.append(Warning_("plan_failed", group.label,
                                                f"{e} (continuing without a plan)"))
        stop, err = "", ""
        for rnd in range(1, self.rounds_total + 1):  # SPEC §6.1 step 5: effort rounds
            with raw_lock:
                before = len(raw)
                confirmed = confirmed_block(raw) if rnd > 1 else ""
            msgs = group_messages(group, self.files, rules_text, self.language, req.background,
                                  redact, self.now, plan=plan if rnd == 1 else "",
                                  confirmed=confirmed)
            res = run_loop(self.client, self.registry, msgs, local=local, meter=self.meter,
                           max_rounds=cfg.review.max_tool_rounds, redact=redact,
                           record=self.record, label=group.label,
                           context=self.context_policy(group.label))
            report.stop_reasons.append(res.stop_reason)
            report.compressions += res.compressions
            # SPEC §8.4: the review filter sees this round's new comments (anchored, with ids)
            # and removes only those it reports, before they count as confirmed.
            new = self.comment_pool.drain(str(id(group)))
            if cfg.review.filter and new and res.stop_reason not in INCOMPLETE_STOPS:
                gone = self.filter_round(group, new)
                if gone:
                    with raw_lock:
                        raw[before:before + len(new)] = [
                            c for c, f in zip(raw[before:before + len(new)], new, strict=True)
                            if f.id not in gone]
            if res.stop_reason in INCOMPLETE_STOPS:
                if rnd == 1:
                    return res.stop_reason, res.error or res.stop_reason
                result.warnings.append(Warning_(
                    "round_incomplete", group.label,
                    f"effort round {rnd} stopped: {res.error or res.stop_reason}"))
                return "round_incomplete", ""
            stop, err = res.stop_reason, ""
            if res.stop_reason == "compression_failed":
                result.warnings.append(Warning_("compression_failed", group.label, res.error))
            with raw_lock:
                added, total = len(raw) - before, len(raw)
            if not added or total >= CONFIRMED_CAP:  # early stop: nothing new, or cap reached
                break
        return stop, err

    def context_policy(self, label: str) -> ContextPolicy:
        """How the tool loop of group ``label`` compresses its history (summaries run on the
        background pool)."""
        from .agent import tasks
        from .agent.loop import ContextPolicy

        return ContextPolicy(
            context_tokens=self.cfg.llm.context_tokens,
            count_tokens=self.count,
            summarize=lambda text: tasks.summary_call(
                self.client, text, language=self.language,
                max_output_tokens=self.summary_tokens, meter=self.meter, record=self.record,
                label=label),
            spawn=lambda job: self.background_pool.submit(job),
            summary_max_tokens=self.summary_tokens,
        )

    def filter_round(self, group: Group, new: Sequence[Finding]) -> frozenset[str]:
        """Run the review filter on one round's findings; remove and return the ids it
        reports (none when it fails: fail-open)."""
        from .agent import comment_tasks

        shown = list(group.files)  # plus the diffs of files comments were re-filed to
        for f in new:
            fd = self.by_path.get(f.path)
            if fd is not None and all(fd is not x for x in shown):
                shown.append(fd)
        outcome = comment_tasks.review_filter(
            self.client, shown, new, meter=self.meter, redact=self.redact, record=self.record,
            label=group.label, language=self.language)
        if not outcome.ok:
            self.result.warnings.append(Warning_("review_filter_failed", group.label,
                                                 f"{outcome.error}; all comments kept"))
        self.collector.remove(outcome.removed_ids)
        return outcome.removed_ids

    # --- comment pool ---------------------------------------------------------------------

    def new_file_lines(self, path: str) -> list[str] | None:
        """The redacted lines of ``path`` in the snapshot (None: deleted or unreadable),
        read once per run."""
        with self._blob_lock:
            if path in self._blob_cache:
                return self._blob_cache[path]
        fd = self.by_path.get(path)
        data = None
        if fd is not None and fd.status != "deleted":
            data = self.view.read(fd.new_path)
        lines = None if data is None else self.redact(gitio.decode_text(data)).split("\n")
        with self._blob_lock:
            self._blob_cache[path] = lines
        return lines

    def _relocate(self, fd: FileDiff, c: RawComment) -> str | None:
        """Ask the model where comment ``c`` belongs in ``fd`` (SPEC §8.2 re-location)."""
        from .agent import comment_tasks

        return comment_tasks.relocate_snippet(
            self.client, fd, c, meter=self.meter, redact=self.redact, record=self.record,
            label=c.group)

    # --- merge and gate -------------------------------------------------------------------

    def merge(self, groups: Sequence[Group], ends: Sequence[tuple[str, str]]) -> None:
        """Record each group's outcome on its files and reports, then merge the findings."""
        cfg, req, result = self.cfg, self.req, self.result
        for g, (stop, err) in zip(groups, ends, strict=True):
            reason = stop if stop in INCOMPLETE_STOPS else ""
            for f in g.files:
                o = self.st.outcomes[id(f)]
                if reason:
                    o.reason = reason
                else:
                    o.reviewed = True
            if reason:
                err = "" if err == stop else err
                result.warnings.append(Warning_("subtask_error", g.label,
                                                err or STOP_REASON_TEXT.get(stop, stop)))
                self.causes.append((len(g.files), not_reviewed_cause(
                    stop, err, timeout_s=cfg.review.timeout_s, budget_tokens=req.budget_tokens)))
            report = (self.reports.get(id(g))
                      or GroupReport(g.label, [f.path for f in g.files], [stop]))
            report.reason = reason
            result.group_reports.append(report)
            self.record("group_done", {
                "group": g.label, "stop_reason": stop, "round_stop_reasons": report.stop_reasons,
                "reason": reason, "planned": report.planned, "compressions": report.compressions})
        result.warnings.extend(self.collector.warnings)
        result.findings = sorted(
            merge_same_claims([*self.st.config_findings, *self.collector.snapshot()]),
            key=lambda f: (f.path, f.start_line == 0, f.start_line, -f.severity),
        )

    def gate(self, groups: Sequence[Group]) -> ReviewResult:
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
        cache = self.st.cache
        if cache is not None:
            _store_in_cache(cache, self.st.run_key, groups, self.fresh_groups, self.collector,
                            result)
            result.cache_hits = cache.hits
        return self.st.finished()


CACHEABLE_STOPS = ("task_done", "max_rounds")  # a group that ended like this is complete
# What a stop reason (agent.loop.STOP_REASONS, group outcomes) means, for people: the
# ``NOT REVIEWED`` line and the warnings never show internal codes such as ``empty_rounds``.
STOP_REASON_TEXT = {
    "no_tool_calls": "the model made no tool calls (3 replies in a row without one; check the"
                     " model and server with `git ocr llm test`)",
    "empty_rounds": "the model's tool calls failed 3 rounds in a row",
    "task_failed": "the model gave up on the review (task_done FAILED)",
    "cancelled": "the review was cancelled",
    "timeout": "the review's time limit was reached",
    "budget": "the token budget was used up",
    "token_threshold_exceeded": "the change is too large for the model's context",
    "llm_error": "the LLM request failed",
    "error": "internal error",
}
MAX_CAUSES_SHOWN = 3  # distinct reasons on the NOT REVIEWED line; the rest are in the warnings


def not_reviewed_cause(stop: str, err: str, *, timeout_s: float, budget_tokens: int) -> str:
    """Why a group was not reviewed, in words for the ``NOT REVIEWED`` line. Limits are stated
    once with their setting (the per-group details stay in the warnings); errors (LLM, internal,
    context size) keep their own one-line message."""
    if stop == "timeout":
        return f"time limit of {timeout_s:g}s reached (review.timeout_s, --timeout)"
    if stop == "budget":
        return (f"token budget of {budget_tokens} used up (review.max_tokens_budget,"
                " --max-tokens-budget)")
    if stop in ("llm_error", "error", "token_threshold_exceeded") and err:
        return err
    return STOP_REASON_TEXT.get(stop, err or stop)


def not_reviewed_line(causes: Sequence[tuple[int, str]], selected: int) -> str:
    """The one loud line of an incomplete review (SPEC §9): ``NOT REVIEWED: [k of n files: ]
    <reason>[; <reason>…]`` from the (file count, reason) of each unreviewed group; distinct
    reasons in order of first appearance, at most MAX_CAUSES_SHOWN."""
    reasons = list(dict.fromkeys(why for _n, why in causes))
    shown = "; ".join(reasons[:MAX_CAUSES_SHOWN])
    if len(reasons) > MAX_CAUSES_SHOWN:
        shown += f"; and {len(reasons) - MAX_CAUSES_SHOWN} more (see the warnings)"
    missing = sum(n for n, _why in causes)
    count = f"{missing} of {selected} files: " if missing < selected else ""
    return f"NOT REVIEWED: {count}{shown}"


def _store_in_cache(
    cache: ResultCache,
    run_key: str,
    groups: Sequence[Group],
    fresh_groups: Mapping[int, tuple[str, str]],
    collector: Collector[Warning_],
    result: ReviewResult,
) -> None:
    """Store each freshly and completely reviewed group (its findings and warnings are those on
    its files), and the whole run when every group is complete (SPEC §10: only complete results
    are cached)."""
    llm_findings = merge_same_claims(collector.snapshot())
    warnings = list(collector.warnings)
    for g in groups:
        key, stop = fresh_groups.get(id(g), ("", ""))
        if not key or stop not in CACHEABLE_STOPS:
            continue
        paths = {f.path for f in g.files}
        cache.put_group(
            key, [f for f in llm_findings if f.path in paths], stop,
            [(w.type, w.file, w.message) for w in warnings if w.file in paths])
    complete = all(
        fresh_groups.get(id(g), ("", "cache_hit"))[1] in (*CACHEABLE_STOPS, "cache_hit")
        for g in groups
    )
    if run_key and complete and result.status == "complete":
        cache.put_run(run_key, llm_findings,
                      [(g.label, [f.path for f in g.files]) for g in groups],
                      [(w.type, w.file, w.message) for w in warnings])


def scan_findings(
    repo: Path, decisions: Sequence[selection.Decision], allow: Sequence[str]
) -> list[Finding]:
    """Deterministic security findings of the change (``secret_scan``): secrets added to any
    changed file, scanned whole for a rename or copy away from a secret path (``git mv .env
    notes.txt`` has no hunks), and prompt-injection phrases in the files sent to the LLM."""
    full: dict[str, str] = {}
    for d in decisions:
        f = d.file
        if d.reason == "secret_path" and f.status in ("renamed", "copied") and f.new_oid:
            rc, out, _ = gitio.run_git_full(repo, "cat-file", "blob", f.new_oid, ok_codes=(0, 128))
            if rc == 0 and b"\0" not in out[:8000]:
                full[f.path] = gitio.decode_text(out)
    files = [d.file for d in decisions]
    return [*secret_scan.secret_findings(files, allow, full),
            *secret_scan.injection_findings([d.file for d in decisions if d.reviewed])]


def protected_path_findings(
    files: Sequence[FileDiff], protected: Sequence[str]
) -> list[Finding]:
    """A ``medium``/``security`` finding for each staged change to a file that configures the
    review (``.ocr-hook.toml``, rule files): it does not take effect for this review, which uses
    the rules at HEAD (SPEC §5). Anchored to the first changed line of the file."""
    from .findings import Severity, finding_id

    wanted = set(protected)
    out: list[Finding] = []
    for f in files:
        if f.path not in wanted and f.old_path not in wanted:
            continue
        first = next(
            ((ln.new_line, ln.text) for h in f.hunks for ln in h.lines
             if ln.kind == "+" and ln.new_line is not None),
            None,
        )
        content = (
            f"This change edits review configuration ({f.path}). The change does not apply to "
            "the review of this commit, which used the rules committed at HEAD; make sure the "
            "edit is intended, since it changes how future commits are reviewed."
        )
        quote = first[1] if first else ""
        out.append(Finding(
            id=finding_id(f.path, "new", quote, content), path=f.path, side="new",
            start_line=first[0] if first else 0, end_line=first[0] if first else 0,
            severity=Severity.MEDIUM, category="security", content=content,
            existing_code=quote, suggestion_code="", anchor="hunk_new" if first else "none",
            source="config-guard",
        ))
    return out


def confirmed_block(confirmed: Sequence[RawComment]) -> str:
    """Findings of earlier rounds for rounds ≥ 2 (SPEC §6.1 step 5): at most 30, each on
    one line per field and trimmed (code 200, issue 300 characters, then "...")."""

    def trim(text: str, limit: int) -> str:
        flat = " ".join(text.split())
        return flat if len(flat) <= limit else flat[:limit] + "..."

    items = []
    for i, c in enumerate(confirmed[:CONFIRMED_CAP], 1):
        code = trim(c.existing_code, CONFIRMED_CODE_CHARS)
        issue = trim(c.content, CONFIRMED_ISSUE_CHARS)
        items.append(f"{i}. {c.path}\n   code: {code}\n   issue: {issue}")
    return "\n".join(items)


def run_groups(
    groups: Sequence[Group],
    review: Callable[[Group], tuple[str, str]],
    *,
    concurrency: int,
    meter: Any,
    background: WorkerPool,
) -> list[tuple[str, str]]:
    """Run ``review(group)`` for every group on ``concurrency`` threads (SPEC §6.1 step 3)
    and return each group's (stop reason, error), in order.

    Isolation: a group that raises becomes ("error", message). Deadline (SPEC §6.4,
    ``meter.deadline``): queued groups are cancelled and running ones stop at their next check
    (calls in flight end by then: their timeouts are capped by the deadline); both come back as
    ("timeout", …). Finally the background pool (compression summaries) is awaited. Ctrl-C:
    ``meter.cancel()`` stops every later LLM attempt, workers get INTERRUPT_GRACE_S, and the
    KeyboardInterrupt propagates.
    """
    if not groups:
        background.shutdown(timeout_s=DEADLINE_GRACE_S)
        return []
    pool = WorkerPool(min(concurrency, len(groups)), "ocr-group")
    futures: list[Future[tuple[str, str]]] = [pool.submit(review, g) for g in groups]
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
        meter.cancel()
        pool.shutdown(cancel_futures=True, timeout_s=INTERRUPT_GRACE_S)
        background.shutdown(cancel_futures=True, timeout_s=0.2)
        raise
    out: list[tuple[str, str]] = []
    for g, f in zip(groups, futures, strict=True):
        if f.cancelled():
            out.append(("timeout", "review deadline reached before the group started"))
        elif not f.done():
            out.append(("timeout", "review deadline reached while the group was running"))
        elif f.exception() is not None:
            e = f.exception()
            log.debug("group %s crashed", g.label, exc_info=e)
            out.append(("error", f"internal error: {type(e).__name__}: {e}"))
        else:
            out.append(f.result())
    return out


def ranges_json(targets: Sequence[target.Target]) -> list[dict[str, str]]:
    """JSON ``input.ranges`` of push mode: one ``{ref, base, head}`` per pushed remote ref."""
    return [
        {"ref": ref, "base": t.base_label, "head": t.head_label}
        for t in targets
        for ref in (t.refs or ("",))
    ]


def run_ranges(
    req: ReviewRequest,
    targets: Sequence[target.Target],
    run_one: Callable[[ReviewRequest], ReviewResult],
) -> ReviewResult:
    """Push mode with zero or several ranges (SPEC §3.4): each range is reviewed on its own
    (its head is what tools and anchoring read), one after the other, sharing the run's
    deadline and token budget; the results are concatenated into one."""
    t0 = time.monotonic()
    results: list[ReviewResult] = []
    budget = req.budget_tokens
    spent = 0
    for t in targets:
        left_s = req.config.review.timeout_s - (time.monotonic() - t0)
        review_cfg = req.config.review.model_copy(update={
            "timeout_s": max(left_s, 0.001),
            "max_tokens_budget": max(budget - spent, 1) if budget else 0,
        })
        cfg = req.config.model_copy(update={"review": review_cfg})
        r = run_one(dataclasses.replace(req, targets=(t,), config=cfg))
        spent += r.usage.total
        results.append(r)
    done = [r.status for r in results if r.status != "skipped"]
    if not done:
        status = "skipped"
    elif all(s == "complete" for s in done):
        status = "complete"
    elif all(s == "failed" for s in done):
        status = "failed"
    else:
        status = "partial"
    findings = [f for r in results for f in r.findings]
    first = results[0] if results else None
    merged = ReviewResult(
        status=status,
        decision=decide(findings, status in ("partial", "failed"), req.gate),
        gate=req.gate,
        findings=findings,
        files=[],
        groups=[],
        warnings=[],
        input={
            "mode": req.mode,
            "base": first.input["base"] if first else "",
            "head": first.input["head"] if first else "",
            "snapshot_tree": "",
            "ranges": ranges_json(targets),
        },
        llm=dict(first.llm) if first else {
            "provider": req.endpoint.provider if req.endpoint else "",
            "model": req.endpoint.model if req.endpoint else "",
        },
        session_id=first.session_id if first else "",
        preview=req.preview,
    )
    handled = {"status", "decision", "gate", "findings", "input", "llm", "session_id", "preview"}
    for fld in dataclasses.fields(ReviewResult):
        values = [getattr(r, fld.name) for r in results]
        if fld.name in handled or not values:
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
    if len(merged.incomplete_reasons) > 1:  # one NOT REVIEWED line for the whole push
        merged.incomplete_reasons = ["NOT REVIEWED: " + "; ".join(dict.fromkeys(
            r.removeprefix("NOT REVIEWED: ") for r in merged.incomplete_reasons))]
    merged.elapsed_ms = int((time.monotonic() - t0) * 1000)
    return merged
