"""Result cache by diff hash (spec §10).

Location: ``<git common dir>/ocr-hook/cache/`` (shared by linked worktrees, never committed).
Four kinds of entries, each a JSON file ``<kind>/<key>.json``:

- ``run``: the whole run (findings, groups, warnings) → an unchanged staged snapshot returns the
  previous result with zero LLM calls;
- ``group``: one group's anchored findings → when one file of ten changes only its group is
  reviewed again;
- ``grouping``: the grouping answer (labels and paths), keyed by the file list and its stats;
- ``delegated``: a run's result from ``git ocr delegate submit`` (``pipeline.delegated``), keyed
  by content, rules and version only: a hook without an endpoint answers from it.

Keys are SHA-256 of canonical JSON (sorted keys, no whitespace, UTF-8) of everything that can
change a request or its answer: tool version, prompt template texts, rule texts, tool
definitions, every field of the resolved endpoint and every configuration key but those
NOT_IN_KEY lists (each with the reason it cannot change a stored result), and the content
(each file's patch without its ``index`` line, plus blob ids and modes). So a new setting is
part of the keys until it is listed there with its reason; tests/pipeline/cache/
test_key_settings.py changes each setting in turn and checks the keys follow. Settings that only
change the verdict or how long a run may take (gate, concurrency, timeouts, budget) are not part
of the key: only complete results are stored, and the gate is applied after a hit.

Effort is not part of the key either: ``run`` and ``group`` entries store the effort they were
reviewed at, and a lookup accepts an entry of the requested effort or a higher one
(``entries.EFFORTS`` order), so a ``git ocr review`` (medium) answers the pre-commit hook (low)
on the same snapshot; a lower-effort entry never answers a higher-effort request. The entry
shapes live in ``pipeline.cache.entries``.

Writes are atomic (``util.write_atomic``), so two concurrent runs each leave complete
entries (last rename wins); a reader that races a prune simply misses. Entries are pruned to
``cache.max_mb``, least recently used first (a hit refreshes the entry's mtime). The cache is
best-effort: any I/O or format problem is a miss, never a failed review. Entries are checked
against the NamedTuples of ``pipeline.cache.entries`` with ``util.check_shape`` (exact shapes, no
pydantic: a cache hit must cost less than importing it); anything else is a malformed entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ... import util

if TYPE_CHECKING:  # the entry shapes are imported with the first entry read or written
    from ...config import Config
    from ...diff import FileDiff
    from ...findings import Finding, RunWarning
    from ...llm import Endpoint
    from .entries import GroupData, RunData

log = logging.getLogger(__name__)

CACHE_FORMAT = 4  # bump when the entry layout or key recipe changes: entries store the
#                  effort and each finding's anchored code (dismissals key on it); keys take
#                  every setting not in NOT_IN_KEY
KINDS = ("run", "group", "grouping", "delegated")  # delegated: RunData (pipeline.delegated)
# Test-only: seconds every cache write sleeps between its complete temporary file and the rename,
# so a test can kill a review exactly mid-write. Never set it otherwise.
TEST_WRITE_PAUSE_ENV = "OCR_HOOK_TEST_CACHE_WRITE_PAUSE_S"


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8 (non-ASCII kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8", "surrogatepass")


def digest(value: Any) -> str:
    """SHA-256 hex digest of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def cache_dir(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/cache`` (spec §10)."""
    return common_dir / "ocr-hook" / "cache"


# ---- keys ----------------------------------------------------------------------------------


def file_fingerprint(fd: FileDiff) -> dict[str, Any]:
    """What of one changed file can change a review: paths, status, modes, blob ids and the
    patch text (already without its ``index`` line)."""
    return {
        "path": fd.path,
        "old_path": fd.old_path,
        "status": fd.status,
        "modes": [fd.old_mode, fd.new_mode],
        "blobs": [fd.old_oid, fd.new_oid],
        "patch": fd.patch,
    }


def _read_optional(path: str) -> str:
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(unreadable: {path})"


def finding_to_entry(f: Finding) -> dict[str, Any]:
    """A finding as the JSON object of a stored entry (``entries.FindingEntry``)."""
    return {
        "id": f.id, "path": f.path, "side": f.side, "start_line": f.start_line,
        "end_line": f.end_line, "severity": f.severity.label, "category": f.category,
        "content": f.content, "existing_code": f.existing_code,
        "suggestion_code": f.suggestion_code, "anchor": f.anchor, "ambiguous": f.ambiguous,
        "source": f.source, "code": f.code,
        **({"preexisting": f.preexisting} if f.preexisting is not None else {}),  # absent: None
    }


def warning_to_entry(w: RunWarning) -> dict[str, str]:
    """A run warning as the JSON object of a stored entry."""
    return {"type": w.type, "file": w.file, "message": w.message}


_ONLY_COMPLETE = "a bound: a run or group that reaches it is incomplete, and is never stored"
_SELECTION = "chooses the files reviewed: their content and every changed path are in the keys"
# Configuration keys (``section.name``) that cannot change a stored result, and why. Every
# other key enters the cache keys (``result_settings``); a new key is in them until it is
# listed here. The API key never enters a key, not even as a digest; settings that may hold a
# credential but change requests (``llm.extra_headers``) enter only through the SHA-256 key.
_CACHE_HINT = "a caching hint to the provider (cache_control, prompt_cache_key): the same prompt"
NOT_IN_KEY: dict[str, str] = {
    "llm.api_key": "a credential: who pays for a request does not change its answer",
    "llm.api_key_cmd": "a credential: who pays for a request does not change its answer",
    "llm.timeout_s": _ONLY_COMPLETE,
    "llm.connect_timeout_s": _ONLY_COMPLETE,
    "llm.max_retries": "a failed attempt is repeated as it was; only complete results stay",
    "llm.prompt_caching": _CACHE_HINT,
    "review.effort": "stored with each entry, which answers its effort and lower ones",
    "review.concurrency": "groups are reviewed independently and merged in group order",
    "review.timeout_s": _ONLY_COMPLETE,
    "review.max_tokens_budget": _ONLY_COMPLETE,
    "review.max_group_tokens": _ONLY_COMPLETE,
    "review.max_push_commits": _SELECTION,
    "review.trust_notes": "chooses the commits reviewed; each reviewed file is in the keys",
    "review.background": "its text is in the keys (``background``)",
    "review.background_file": "its text is in the keys (``background``)",
    "select.include": _SELECTION,
    "select.exclude": _SELECTION,
    "select.review_tests": _SELECTION,
    "select.max_file_bytes": _SELECTION,
    "select.max_files": _SELECTION,
    "select.max_total_bytes": _SELECTION,
    "rules.file": "the rule text of the reviewed files is in the keys",
    "rules.guidance": "the guidance text is in the keys (``guidance``)",
    "gate.mode": "the verdict, decided after a hit",
    "gate.fail_on": "the verdict, decided after a hit",
    "gate.on_error": "the verdict, decided after a hit",
    "gate.block_preexisting": "the verdict, decided after a hit",
    "cache.enabled": "whether the cache is used at all, not what a request holds",
    "cache.max_mb": "how large the cache may grow, not what a request holds",
    "security.allow_secrets": "allowed values are redacted before any request all the same",
    "security.max_scan_bytes": "bounds the secret scan of files no request carries",
    "budget.daily_usd": _ONLY_COMPLETE,  # a run over a cap stores nothing
    "budget.monthly_usd": _ONLY_COMPLETE,
    "telemetry.enabled": "what the run reports to a trace collector, not what a request holds",
    "telemetry.content": "what the run reports to a trace collector, not what a request holds",
}
# Endpoint fields that cannot change a stored result (the rest are in the keys): the same
# reasons as their configuration keys.
ENDPOINT_NOT_IN_KEY = frozenset({"api_key", "timeout_s", "connect_timeout_s", "max_retries",
                                 "prompt_caching", "prompt_cache_key"})


def config_settings(cfg: Config) -> dict[str, Any]:
    """``{section.name: value}`` of every configuration key not in NOT_IN_KEY (Config's
    sections are dataclasses of dataclasses)."""
    out: dict[str, Any] = {}
    for section in dataclasses.fields(cfg):
        values = getattr(cfg, section.name)
        for f in dataclasses.fields(values):
            key = f"{section.name}.{f.name}"
            if key not in NOT_IN_KEY:
                out[key] = getattr(values, f.name)
    return out


def result_settings(
    cfg: Config, endpoint: Endpoint, background: str, version: str,
    tool_defs: Mapping[str, Any] | None = None, guidance: str = "", *, scan: bool = False,
) -> dict[str, Any]:
    """Every setting besides content, rules and effort that can change a request or its
    answer (effort is stored in the entries, see the module doc): the configuration but
    NOT_IN_KEY (:func:`config_settings`) and the resolved endpoint but ENDPOINT_NOT_IN_KEY
    (provider presets add URLs, headers and body fields), both as digests (header values and
    MCP server environments may hold secrets).

    Reads the built-in prompt templates and tool definitions (package data); their texts
    enter as SHA-256 digests, and so do ``tool_defs`` (the definitions after ``tools.file``,
    as the run uses them: a repository's tools file comes from HEAD, never from disk) or,
    without them, the text of ``tools.file`` on disk. ``guidance`` is the prompt's
    ``<project_guidance>`` text (``change.Guidance.block``: the guidance files at HEAD).
    ``scan`` (``git ocr scan``, whose prompt says it is a whole-file scan) adds ``"scan": True``;
    a review's keys have no such entry, so they stay as they were.
    """
    templates = {
        name: hashlib.sha256(util.read_builtin_text(f"templates/{name}").encode()).hexdigest()
        for name in util.list_builtin_dir("templates")
        if name.endswith(".md")
    }
    tools = {  # tools.file and mcp.servers themselves are in config_settings
        "builtin": hashlib.sha256(util.read_builtin_text("tools.json").encode()).hexdigest(),
        "file_text": digest(repr(sorted(tool_defs.items()))) if tool_defs is not None
        else hashlib.sha256(_read_optional(cfg.tools.file).encode()).hexdigest(),
    }
    shaping = {k: v for k, v in endpoint._asdict().items() if k not in ENDPOINT_NOT_IN_KEY}
    settings: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "version": version,
        "templates": templates,
        "tools": tools,
        "config": digest(config_settings(cfg)),
        "endpoint": digest(shaping),
        "background": hashlib.sha256(background.encode("utf-8", "replace")).hexdigest(),
        "guidance": hashlib.sha256(guidance.encode("utf-8", "replace")).hexdigest(),
    }
    if scan:
        settings["scan"] = True
    return settings


def run_key(
    settings: Mapping[str, Any], rules_text: str, files: Sequence[FileDiff],
    changed_paths: Iterable[tuple[str, str]],
) -> str:
    """Key of a whole run: settings, the rules of all reviewed files, the reviewed files'
    fingerprints, and every changed (status, path) (the "other files" list of the prompts)."""
    return digest({
        "kind": "run",
        "settings": settings,
        "rules": hashlib.sha256(rules_text.encode("utf-8", "replace")).hexdigest(),
        "files": [file_fingerprint(f) for f in files],
        "changed": sorted(changed_paths),
    })


def group_key(
    settings: Mapping[str, Any], rules_text: str, files: Sequence[FileDiff],
    other_paths: Iterable[tuple[str, str]],
) -> str:
    """Key of one group: settings, the group's rule text, its files' fingerprints and the
    (status, path) of the other changed files. Other files' content is not part of it, so an
    edit elsewhere does not invalidate this group."""
    return digest({
        "kind": "group",
        "settings": settings,
        "rules": hashlib.sha256(rules_text.encode("utf-8", "replace")).hexdigest(),
        "files": [file_fingerprint(f) for f in files],
        "others": sorted(other_paths),
    })


def grouping_key(settings: Mapping[str, Any], files: Sequence[FileDiff]) -> str:
    """Key of the grouping answer: the model settings and the file list with its stats (the
    grouping prompt sees metadata only, spec §6.1)."""
    return digest({
        "kind": "grouping",
        "settings": settings,
        "files": [[f.status, f.path, f.insertions, f.deletions] for f in files],
    })


# ---- the store -----------------------------------------------------------------------------


class CacheStats(NamedTuple):
    """Counts and sizes of the cache directory (``git ocr cache stats``)."""

    path: Path
    entries: dict[str, int]
    total_bytes: int
    max_bytes: int
    oldest: float | None  # mtime (epoch seconds) of the least recently used entry
    newest: float | None


class _EntryFile(NamedTuple):
    path: Path
    size: int
    mtime: float


def _test_write_pause() -> Any:
    """The TEST_WRITE_PAUSE_ENV hook for ``util.write_atomic`` (None when unset)."""
    try:
        pause_s = float(os.environ.get(TEST_WRITE_PAUSE_ENV, "") or 0)
    except ValueError:
        return None
    return (lambda _tmp: time.sleep(pause_s)) if pause_s > 0 else None


class ResultCache:
    """Thread-safe handle on one cache directory. ``hits`` counts entries served in this run."""

    def __init__(self, root: Path, max_bytes: int, version: str = "") -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.version = version
        self._lock = threading.Lock()
        self.hits = 0
        self.writes = 0

    @classmethod
    def for_repo(cls, common_dir: Path, max_mb: int, version: str = "") -> ResultCache:
        return cls(cache_dir(common_dir), max_mb * 1024 * 1024, version)

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / f"{key}.json"

    def _get(self, kind: str, key: str) -> dict[str, Any] | None:
        path = self._path(kind, key)
        raw = util.read_if_present(path)
        if raw is None:
            return None
        from .entries import parse_envelope  # the entry shapes: only to read an entry

        env = parse_envelope(raw)
        if env is None:
            log.debug("cache: dropping malformed entry %s", path)
            self._unlink(path)
            return None
        if env.kind != kind or env.key != key:
            return None
        try:
            os.utime(path)  # least recently used goes first when pruning
        except OSError:
            pass
        return env.data

    def _put(self, kind: str, key: str, data: Mapping[str, Any]) -> None:
        env = {"format": CACHE_FORMAT, "kind": kind, "key": key, "created": time.time(),
               "version": self.version, "data": dict(data)}
        try:
            util.write_atomic(self._path(kind, key), canonical_json(env),
                                   before_replace=_test_write_pause())
        except OSError as e:
            log.debug("cache: cannot write %s entry: %s", kind, e)
            return
        with self._lock:
            self.writes += 1

    def _hit(self) -> None:
        with self._lock:
            self.hits += 1

    # run level
    def get_run(self, key: str, effort: str, kind: str = "run") -> RunData | None:
        """The run entry (``kind`` run or delegated) under ``key`` if it was reviewed at
        ``effort`` or higher."""
        data = self._get(kind, key)
        if data is None:
            return None
        from .entries import RunData, effort_covers

        run = util.check_shape(RunData, data)
        if run is None:
            return None
        if not effort_covers(run.effort, effort):
            return None
        self._hit()
        return run

    def put_run(
        self,
        key: str,
        findings: Sequence[Finding],
        groups: Sequence[tuple[str, list[str]]],
        warnings: Sequence[RunWarning] = (),
        *,
        effort: str,
        kind: str = "run",
    ) -> None:
        self._put(kind, key, {
            "findings": [finding_to_entry(f) for f in findings],
            "groups": [{"label": label, "files": list(paths)} for label, paths in groups],
            "warnings": [warning_to_entry(w) for w in warnings],
            "effort": effort,
        })

    # group level
    def get_group(self, key: str, effort: str) -> GroupData | None:
        """The group entry under ``key`` if it was reviewed at ``effort`` or higher."""
        data = self._get("group", key)
        if data is None:
            return None
        from .entries import GroupData, effort_covers

        group = util.check_shape(GroupData, data)
        if group is None:
            return None
        if not effort_covers(group.effort, effort):
            return None
        self._hit()
        return group

    def put_group(self, key: str, findings: Sequence[Finding], stop_reason: str = "",
                  warnings: Sequence[RunWarning] = (), *, effort: str) -> None:
        self._put("group", key, {
            "findings": [finding_to_entry(f) for f in findings],
            "stop_reason": stop_reason,
            "warnings": [warning_to_entry(w) for w in warnings],
            "effort": effort,
        })

    # grouping answer
    def get_grouping(self, key: str) -> list[tuple[str, list[str]]] | None:
        data = self._get("grouping", key)
        if data is None:
            return None
        from .entries import GroupingData

        grouping = util.check_shape(GroupingData, data)
        if grouping is None:
            return None
        self._hit()
        return [(g.label, list(g.files)) for g in grouping.groups]

    def put_grouping(self, key: str, groups: Sequence[tuple[str, Sequence[str]]]) -> None:
        self._put("grouping", key, {
            "groups": [{"label": label, "files": list(paths)} for label, paths in groups]
        })

    # maintenance
    def _entries(self) -> list[_EntryFile]:
        out: list[_EntryFile] = []
        for kind in KINDS:
            try:
                it = os.scandir(self.root / kind)
            except OSError:
                continue
            with it:
                for de in it:
                    if not de.name.endswith(".json") or de.name.startswith(util.TEMP_PREFIX):
                        continue
                    try:
                        st = de.stat()
                    except OSError:
                        continue
                    out.append(_EntryFile(Path(de.path), st.st_size, st.st_mtime))
        return out

    def stats(self) -> CacheStats:
        entries = self._entries()
        counts = {k: 0 for k in KINDS}
        for e in entries:
            counts[e.path.parent.name] += 1
        mtimes = [e.mtime for e in entries]
        return CacheStats(self.root, counts, sum(e.size for e in entries), self.max_bytes,
                          min(mtimes) if mtimes else None, max(mtimes) if mtimes else None)

    def sweep_temps(self) -> int:
        """Delete temporary files of writers that died (``util.sweep_stale_temps``: a
        ``kill -9`` during a write); returns how many were removed."""
        return sum(util.sweep_stale_temps(self.root / kind) for kind in KINDS)

    def prune(self, max_bytes: int | None = None) -> tuple[int, int]:
        """Delete least recently used entries until the total is ≤ ``max_bytes`` (default: the
        configured cap), plus temporary files of writers that died (:meth:`sweep_temps`).
        Returns (files removed, bytes freed)."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        removed = self.sweep_temps()
        freed = 0
        entries = sorted(self._entries(), key=lambda e: (e.mtime, e.path.name))
        total = sum(e.size for e in entries)
        for e in entries:
            if total <= cap:
                break
            if self._unlink(e.path):
                removed += 1
                freed += e.size
            total -= e.size
        return removed, freed

    def clear(self) -> int:
        """Delete every entry and every leftover temporary file; returns how many entries were
        removed."""
        self.sweep_temps()
        return sum(1 for e in self._entries() if self._unlink(e.path))

    @staticmethod
    def _unlink(path: Path) -> bool:
        try:
            path.unlink()
            return True
        except OSError:
            return False
