"""How a review run uses the result cache (spec §10): which keys it computes, when it looks
them up, and which outcomes it stores. The store and the keys are ``pipeline.cache.store``, the
stored shapes ``pipeline.cache.entries``.

Order of use in a run: ``lookup_run`` before any LLM work (an unchanged snapshot makes no
call); ``grouping`` around the grouping call; ``group_key``/``lookup_group`` before each group;
``store`` after the merge. Only complete results are stored: a group that ended with a stop in
CACHEABLE_STOPS, and the whole run when every group is complete and the status is ``complete``.
Thread-safe: the groups call ``group_key``/``lookup_group`` from the group pool.

Effort is not part of the keys: the run's effort is stored with each entry, and a lookup takes
an entry of this effort or a higher one (``entries.effort_covers``), so a ``git ocr review`` at
medium answers the low-effort pre-commit hook on the same snapshot, never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ... import __version__
from ...agent import Group
from ...config import Config
from ...diff import FileDiff
from ...findings import Finding, RunWarning
from ...llm import Endpoint
from ...report import CACHEABLE_STOPS, GroupOutcome
from ...vocabulary import StopReason
from . import store as cache_mod

Record = Callable[[str, Any], None]


class CacheHit(NamedTuple):
    """A stored answer: the findings and warnings of a run or of one group, and for a run the
    groups as (label, paths)."""

    findings: list[Finding]
    warnings: list[RunWarning]
    groups: list[tuple[str, list[str]]]


class CachePolicy:
    """One run's use of ``cache``. ``settings`` is ``store.result_settings`` of the run;
    ``files`` every changed file (their (status, path) are part of the keys); ``rules`` gives
    the rule text for a list of paths; ``record`` writes ``cache_hit`` session events;
    ``effort`` is the run's ``review.effort`` (stored with entries, the least a hit must have)."""

    def __init__(
        self,
        cache: cache_mod.ResultCache,
        settings: Mapping[str, Any],
        files: Sequence[FileDiff],
        rules: Callable[[Sequence[str]], str],
        record: Record,
        effort: str = "medium",
    ) -> None:
        self.cache = cache
        self.settings = settings
        self.effort = effort
        self.files = list(files)
        self.rules = rules
        self.record = record
        self.run_key = ""

    @classmethod
    def for_run(
        cls, cache: cache_mod.ResultCache, cfg: Config, endpoint: Endpoint, effort: str,
        background: str, files: Sequence[FileDiff], rules: Callable[[Sequence[str]], str],
        record: Record, tool_defs: Any = None, *, guidance: str = "", scan: bool = False,
    ) -> CachePolicy:
        """The policy of a run with these settings (reads the shipped templates and tool
        definitions once, see ``store.result_settings``; ``guidance``: the prompt's guidance
        text; ``scan``: a whole-file scan, whose prompt differs)."""
        settings = cache_mod.result_settings(cfg, endpoint, background, __version__,
                                             tool_defs, guidance, scan=scan)
        return cls(cache, settings, files, rules, record, effort)

    @property
    def hits(self) -> int:
        """Entries served so far in this run."""
        return self.cache.hits

    def lookup_run(self, reviewable: Sequence[FileDiff]) -> CacheHit | None:
        """Run level: the stored result of the same reviewed files, rules, settings and changed
        paths, or None. Sets ``run_key`` for ``store``."""
        self.run_key = cache_mod.run_key(
            self.settings, self.rules([f.path for f in reviewable]), reviewable,
            [(f.status, f.path) for f in self.files])
        hit = self.cache.get_run(self.run_key, self.effort)
        if hit is None:
            return None
        from .entries import entry_to_finding  # the entry shapes: on a hit only

        self.record("cache_hit", {"level": "run", "key": self.run_key[:16],
                                  "effort": hit.effort})
        return CacheHit([entry_to_finding(e) for e in hit.findings],
                        list(hit.warnings), [(g.label, list(g.files)) for g in hit.groups])

    def grouping(
        self, files: Sequence[FileDiff], ask: Callable[[Sequence[FileDiff]], list[Group]]
    ) -> list[Group]:
        """The grouping of ``files``: the stored answer for the same file list with the same
        stats, else ``ask(files)``, whose answer is stored. Exceptions of ``ask`` propagate."""
        key = cache_mod.grouping_key(self.settings, files)
        hit = self.cache.get_grouping(key)
        if hit is not None:
            self.record("cache_hit", {"level": "grouping", "key": key[:16]})
            by_name = {f.path: f for f in files}
            return [Group(label, [by_name[p] for p in ps if p in by_name]) for label, ps in hit]
        answer = ask(files)
        self.cache.put_grouping(key, [(g.label, [f.path for f in g.files]) for g in answer])
        return answer

    def group_key(self, group: Group) -> str:
        """Group level key: the group's rules and files, and the other files' (status, path)."""
        mine = {id(f) for f in group.files}
        return cache_mod.group_key(
            self.settings, self.rules([f.path for f in group.files]), group.files,
            [(f.status, f.path) for f in self.files if id(f) not in mine])

    def lookup_group(self, group: Group, key: str) -> CacheHit | None:
        """The stored findings and warnings of ``group`` under ``key``, or None."""
        hit = self.cache.get_group(key, self.effort)
        if hit is None:
            return None
        from .entries import entry_to_finding

        self.record("cache_hit", {"level": "group", "group": group.label, "key": key[:16],
                                  "effort": hit.effort})
        return CacheHit([entry_to_finding(e) for e in hit.findings],
                        list(hit.warnings), [])

    def store(
        self,
        groups: Sequence[Group],
        outcomes: Sequence[GroupOutcome],
        findings: Sequence[Finding],
        warnings: Sequence[RunWarning],
        run_complete: bool,
    ) -> None:
        """Store each freshly and completely reviewed group (its findings and warnings are
        those on its files), and the whole run when every group is complete (reviewed or
        answered from the cache) and ``run_complete``. ``findings`` and ``warnings`` are the
        run's merged LLM findings and comment warnings."""
        for g, o in zip(groups, outcomes, strict=True):
            if not o.cache_key or o.stop not in CACHEABLE_STOPS:
                continue
            paths = {f.path for f in g.files}
            self.cache.put_group(
                o.cache_key, [f for f in findings if f.path in paths], o.stop,
                [w for w in warnings if w.file in paths], effort=self.effort)
        complete = all(o.stop in (*CACHEABLE_STOPS, StopReason.CACHE_HIT) for o in outcomes)
        if self.run_key and complete and run_complete:
            self.cache.put_run(self.run_key, findings,
                               [(g.label, [f.path for f in g.files]) for g in groups], warnings,
                               effort=self.effort)
