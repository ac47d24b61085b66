"""The stored shapes of the result cache (spec §10): the JSON entry files
``pipeline.cache.store`` writes and reads, as NamedTuples checked with ``util.check_shape``
(exact shapes, no pydantic, so a cache hit stays cheap), and their conversion to findings. Only
reading an entry needs them: ``store`` writes plain JSON (``store.finding_to_entry``), so a
review that misses the cache and stores its result never imports this module.

An entry file is an :class:`Envelope` (format, kind, key, creation time, ocr-hook version) whose
``data`` is a :class:`RunData` (kinds run and delegated), :class:`GroupData` or
:class:`GroupingData`. Run and group data
carry the effort they were reviewed at (:func:`effort_covers`).
"""

from __future__ import annotations

import json
from typing import Any, Literal, NamedTuple

from ...findings import Finding, RunWarning
from ...util import check_shape
from ...vocabulary import AnchorMethod, Category, Severity

EFFORTS = ("low", "medium", "high")  # review.effort, lowest first (spec §2)
# The shapes are NamedTuples, immutable values read from a file (``util.check_shape`` reads
# them like dataclasses). Unknown keys make an entry malformed (``util.check_shape`` refuses
# them for every NamedTuple).


class FindingEntry(NamedTuple):
    id: str
    path: str
    side: Literal["new", "old"]
    start_line: int
    end_line: int
    severity: Literal["critical", "high", "medium", "low"]
    category: str
    content: str
    existing_code: str
    suggestion_code: str
    anchor: str
    ambiguous: bool = False
    source: str = "llm"
    code: str = ""  # the anchored lines' text ("" when unknown)
    preexisting: bool = False  # the model's flag (spec §7.1.1); moved code is found at gate time


class GroupEntry(NamedTuple):
    label: str
    files: list[str]


Effort = Literal["low", "medium", "high"]


class RunData(NamedTuple):
    findings: list[FindingEntry]
    groups: list[GroupEntry]
    effort: Effort
    warnings: tuple[RunWarning, ...] = ()


class GroupData(NamedTuple):
    findings: list[FindingEntry]
    effort: Effort
    stop_reason: str = ""
    warnings: tuple[RunWarning, ...] = ()


def effort_covers(stored: str, requested: str) -> bool:
    """Whether an entry reviewed at effort ``stored`` answers a request at ``requested``: the
    same effort or a higher one (an unknown effort answers nothing)."""
    if stored not in EFFORTS or requested not in EFFORTS:
        return False
    return EFFORTS.index(stored) >= EFFORTS.index(requested)


class GroupingData(NamedTuple):
    groups: list[GroupEntry]


class Envelope(NamedTuple):
    """One entry file: ``format`` is ``store.CACHE_FORMAT``; ``data`` the kind's shape."""

    format: Literal[4]  # store.CACHE_FORMAT
    kind: Literal["run", "group", "grouping", "delegated"]
    key: str
    created: float
    version: str
    data: dict[str, Any]


def parse_envelope(raw: bytes) -> Envelope | None:
    """The entry file ``raw`` (canonical JSON) as an envelope, or None when it is not valid
    JSON or not of this format."""
    try:  # surrogatepass: entries keep non-UTF-8 path bytes exact (store.canonical_json)
        value = json.loads(raw.decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    return check_shape(Envelope, value)


def entry_to_finding(e: FindingEntry) -> Finding:
    """The finding of a stored entry; a code this version does not know is kept as its text."""
    return Finding(
        id=e.id, path=e.path, side=e.side, start_line=e.start_line, end_line=e.end_line,
        severity=Severity[e.severity.upper()], category=Category.lookup(e.category) or e.category,
        content=e.content,
        existing_code=e.existing_code, suggestion_code=e.suggestion_code,
        anchor=AnchorMethod.lookup(e.anchor) or e.anchor,
        ambiguous=e.ambiguous, source=e.source, code=e.code, preexisting=e.preexisting,
    )
