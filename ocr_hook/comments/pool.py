"""The comment pipeline's runtime (spec §8.2): a thread-safe collector of anchored findings and
a worker pool that anchors (and, when needed, re-locates) comments while the tool loop goes on.

``code_comment`` hands comments to ``CommentPool.submit``, which anchors them at once (pure and
fast) so the tool result can say where each landed; only a comment that needs the re-location
LLM call is finished on the pool, and the loop never waits on that. A comment that lands on no
reviewed file (``../../etc/passwd``, a file the change does not touch, a changed file that is
not reviewed) is dropped, never a finding: it comes back as :class:`Dropped`, and the run gets
one ``comment_outside_change`` warning per such path (spec §8.2). Once its rounds are over,
the group calls ``CommentPool.drain(key)`` to wait for the comments it submitted under ``key``
(the review filter needs their ids), then may remove findings from the collector by id.

The pool runs on an executor it is given (the run, ``pipeline.llm_stage``, owns the thread
pools: docs/architecture.md); the re-location LLM call is a callable it is given
(``agent.relocate_snippet``), so this module imports no LLM code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import NamedTuple

from ..diff import FileDiff
from ..findings import Finding, RawComment, RunWarning
from ..vocabulary import AnchorMethod
from .anchor import (
    anchor_comment,
    anchored_text,
    make_finding,
    plausibly_in_diff,
    relocated_finding,
)

log = logging.getLogger(__name__)

Order = tuple[int, ...]  # where an entry belongs among the collector's entries (see Collector)

OUTSIDE_CHANGE = "comment_outside_change"  # RunWarning.type of a dropped comment's path
WARNED_PATH_MAX_CHARS = 200  # a model-made path quoted in a warning is cut to this


class Dropped(NamedTuple):
    """A comment that was not kept: its claimed ``path`` and, for the run, the ``warning``
    (type OUTSIDE_CHANGE) naming the path."""

    path: str
    warning: RunWarning


def outside_change(path: str) -> Dropped:
    """The :class:`Dropped` value of a comment filed on ``path``, which is no reviewed file."""
    shown = path if len(path) <= WARNED_PATH_MAX_CHARS else path[:WARNED_PATH_MAX_CHARS] + "…"
    return Dropped(path, RunWarning(
        OUTSIDE_CHANGE, shown, f"comment on {shown!r} dropped: not a file under review"
        " (comments count only on the reviewed change)"))


class Collector:
    """Thread-safe store of anchored findings and run warnings.

    Each entry may carry an ``order`` key; ``snapshot``, ``for_path`` and ``warnings`` return
    entries sorted by it, and entries with equal keys (e.g. none given) in arrival order. The
    run orders by (group index, submission number), so what it reads does not depend on which
    thread finished first. ``snapshot()`` and ``warnings`` are copies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._findings: list[tuple[Order, Finding]] = []
        self._warnings: list[tuple[Order, RunWarning]] = []

    def add(self, finding: Finding, order: Order = ()) -> None:
        with self._lock:
            self._findings.append((order, finding))

    def warn(self, warning: RunWarning, order: Order = ()) -> None:
        with self._lock:
            self._warnings.append((order, warning))

    def _sorted_findings(self) -> list[Finding]:
        with self._lock:
            entries = list(self._findings)
        return [f for _o, f in sorted(entries, key=lambda e: e[0])]

    def for_path(self, path: str) -> list[Finding]:
        """Copies of the findings currently filed on ``path``."""
        return [f for f in self._sorted_findings() if f.path == path]

    def snapshot(self) -> list[Finding]:
        """A copy of every finding currently held."""
        return self._sorted_findings()

    @property
    def warnings(self) -> list[RunWarning]:
        with self._lock:
            entries = list(self._warnings)
        return [w for _o, w in sorted(entries, key=lambda e: e[0])]

    def remove(self, ids: Collection[str]) -> list[Finding]:
        """Remove every finding whose id is in ``ids``; returns the removed findings."""
        wanted = set(ids)
        with self._lock:
            removed = [f for _o, f in self._findings if f.id in wanted]
            self._findings = [(o, f) for o, f in self._findings if f.id not in wanted]
        return removed

    def __len__(self) -> int:
        with self._lock:
            return len(self._findings)


# (file diff, raw comment) -> exact snippet from the diff, or None (spec §8.1 re-location)
Relocator = Callable[[FileDiff, RawComment], "str | None"]


class CommentProcessor:
    """Anchors one raw comment (pure tiers, re-filing) and, when it stays unanchored and its
    quote plausibly comes from the claimed file's diff, asks ``relocate`` once for the exact
    snippet and anchors that (spec §8.1). ``files`` maps every changed path (old and new) to
    its diff; ``reviewed`` are the paths under review: the candidates for re-filing, and the
    only paths a comment may stay on (any other comes back :class:`Dropped`). Safe to call
    from several threads."""

    def __init__(
        self,
        files: Mapping[str, FileDiff],
        new_file_lines: Callable[[str], Sequence[str] | None],
        reviewed: Sequence[str],
        relocate: Relocator | None = None,
    ) -> None:
        self.files = files
        self.new_file_lines = new_file_lines
        self.refile_candidates = tuple(reviewed)
        self.reviewed = frozenset(reviewed)
        self.relocate = relocate

    def place(self, c: RawComment) -> tuple[Finding | Dropped, list[RunWarning]]:
        """The pure part: anchor ``c`` (tiers, re-filing, fragments) without any LLM call;
        the finding carries the anchored code. Dropped when it lands on no reviewed file."""
        finding, warnings = self._locate(c)
        if finding.path not in self.reviewed:
            return outside_change(c.path), []
        return self._with_code(finding), warnings

    def __call__(self, c: RawComment) -> tuple[Finding | Dropped, list[RunWarning]]:
        """:meth:`place`, then re-location for a comment it left unanchored."""
        finding, warnings = self._anchor(c)
        if finding.path not in self.reviewed:
            return outside_change(c.path), []
        return self._with_code(finding), warnings

    def _with_code(self, finding: Finding) -> Finding:
        """``finding`` with the code of its anchored lines (unanchored: as it is)."""
        fd = self.files.get(finding.path)
        if fd is None or finding.start_line == 0:
            return finding
        new_file = self.new_file_lines(fd.path) if finding.side == "new" else None
        code = anchored_text(fd, finding.side, finding.start_line, finding.end_line, new_file)
        return finding._replace(code=code)

    def _locate(self, c: RawComment) -> tuple[Finding, list[RunWarning]]:
        finding, refiled = anchor_comment(c, self.files, self.new_file_lines,
                                          self.refile_candidates)
        return finding, [RunWarning("comment_refiled", c.path, refiled)] if refiled else []

    def _anchor(self, c: RawComment) -> tuple[Finding, list[RunWarning]]:
        finding, warnings = self._locate(c)
        if finding.anchor != AnchorMethod.NONE or self.relocate is None:
            return finding, warnings
        fd = self.files.get(finding.path)
        if fd is None or not fd.hunks or not plausibly_in_diff(fd, c.existing_code):
            return finding, warnings
        snippet = self.relocate(fd, c)
        if snippet:
            moved = relocated_finding(c, fd, snippet)
            if moved is not None:
                return moved, warnings
        return finding, warnings


Process = Callable[[RawComment], tuple["Finding | Dropped", list[RunWarning]]]


class CommentPool:
    """Anchoring workers on ``executor`` (size = review concurrency) feeding ``collector``.

    ``place`` (optional, pure and fast) anchors a comment inside ``submit``, so the
    ``code_comment`` result can say where it landed; a comment it cannot place, and every
    comment when there is no ``place``, goes to ``process`` on the executor (anchoring plus
    the re-location LLM call), so ``submit`` never waits on the model. ``drain(key)`` waits
    for the comments submitted under ``key`` since the last drain and returns their findings
    in submission order. Findings and anchoring warnings reach the collector ordered by
    (``rank`` of the submit, submission number under its key). A crash of ``place`` hands the
    comment to ``process``; a crash of ``process`` is logged and the comment is kept
    unanchored, never lost. A :class:`Dropped` comment is not collected; its warning is, once
    per path and run.
    """

    def __init__(self, executor: Executor, process: Process, collector: Collector,
                 place: Process | None = None) -> None:
        self._executor = executor
        self._process = process
        self._place = place
        self.collector = collector
        self._lock = threading.Lock()
        self._pending: dict[str, list[Future[Finding | Dropped]]] = {}
        self._submitted: dict[str, int] = {}  # key -> comments submitted under it so far
        self._warned: set[str] = set()  # paths whose dropped comments were warned about

    def submit(self, comments: Sequence[RawComment], key: str,
               rank: int = 0) -> list[Finding | Dropped | None]:
        """Queue ``comments`` for anchoring under ``key``; ``rank`` orders them in the
        collector before the comments of higher ranks (the run passes the group's index).
        Returns per comment its finding when ``place`` anchored it at once (it is in the
        collector already), :class:`Dropped` when ``place`` found it on no reviewed file, else
        None (its anchoring goes on in the background)."""
        with self._lock:
            first = self._submitted.get(key, 0)
            self._submitted[key] = first + len(comments)
        placed: list[Finding | Dropped | None] = []
        futures: list[Future[Finding | Dropped]] = []
        for i, c in enumerate(comments):
            order = (rank, first + i)
            outcome = self._place_now(c, order)
            placed.append(outcome)
            if outcome is None:
                futures.append(self._executor.submit(self._run, c, order))
            else:
                done: Future[Finding | Dropped] = Future()
                done.set_result(outcome)
                futures.append(done)
        with self._lock:
            self._pending.setdefault(key, []).extend(futures)
        return placed

    def _place_now(self, c: RawComment, order: Order) -> Finding | Dropped | None:
        """Anchor ``c`` with ``place``; its finding when anchored (then collected), Dropped
        (then warned about), else None."""
        if self._place is None:
            return None
        try:
            outcome, warnings = self._place(c)
        except Exception:  # noqa: BLE001 - the background path retries and keeps the comment
            log.debug("placing a comment on %s crashed", c.path, exc_info=True)
            return None
        if isinstance(outcome, Finding) and outcome.anchor == AnchorMethod.NONE:
            return None
        self._collect(outcome, warnings, order)
        return outcome

    def _collect(self, outcome: Finding | Dropped, warnings: Sequence[RunWarning],
                 order: Order) -> None:
        if isinstance(outcome, Dropped):
            with self._lock:
                first = outcome.path not in self._warned
                self._warned.add(outcome.path)
            if first:
                self.collector.warn(outcome.warning, order)
            return
        for i, w in enumerate(warnings):
            self.collector.warn(w, (*order, i))
        self.collector.add(outcome, order)

    def _run(self, c: RawComment, order: Order) -> Finding | Dropped:
        try:
            outcome, warnings = self._process(c)
        except Exception:  # noqa: BLE001 - an anchoring bug must not lose the comment
            log.debug("anchoring a comment on %s crashed", c.path, exc_info=True)
            outcome, warnings = make_finding(c, None, c.path), []
        self._collect(outcome, warnings, order)
        return outcome

    def drain(self, key: str) -> list[Finding]:
        """Wait for ``key``'s pending comments; their findings (removed or not since), without
        the dropped ones."""
        with self._lock:
            futures = self._pending.pop(key, [])
        return [f for f in (fut.result() for fut in futures) if isinstance(f, Finding)]
