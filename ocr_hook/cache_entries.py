"""The stored shapes of the result cache (SPEC §10): the JSON entry files ``cache`` writes
and reads, as frozen dataclasses checked with ``shapes.check`` (exact shapes, no pydantic, so a
cache hit stays cheap: issue 18), and their conversion to findings. Only reading an entry needs
them: ``cache`` writes plain JSON (``cache.finding_to_entry``), so a review that misses the
cache and stores its result never imports this module.

An entry file is an :class:`Envelope` (format, kind, key, creation time, ocr-hook version) whose
``data`` is a :class:`RunData`, :class:`GroupData` or :class:`GroupingData`. Run and group data
carry the effort they were reviewed at (:func:`effort_covers`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .findings import Finding, Severity
from .results import RunWarning
from .shapes import check

EFFORTS = ("low", "medium", "high")  # review.effort, lowest first (SPEC §2)
_FORBID = {"extra": "forbid"}  # shapes.check: unknown keys make an entry malformed
# The shapes have no generated repr (repr=False): an entry is converted as soon as it is read
# and never printed, and a cache hit builds all six classes (issue 18: ~0.4 ms less each).


@dataclass(frozen=True, repr=False)
class FindingEntry:
    __pydantic_config__ = _FORBID

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
    code: str = ""  # the anchored lines' text (absent in entries written before it existed)


@dataclass(frozen=True, repr=False)
class GroupEntry:
    __pydantic_config__ = _FORBID

    label: str
    files: list[str]


Effort = Literal["low", "medium", "high"]


@dataclass(frozen=True, repr=False)
class RunData:
    __pydantic_config__ = _FORBID

    findings: list[FindingEntry]
    groups: list[GroupEntry]
    effort: Effort
    warnings: list[RunWarning] = field(default_factory=list)


@dataclass(frozen=True, repr=False)
class GroupData:
    __pydantic_config__ = _FORBID

    findings: list[FindingEntry]
    effort: Effort
    stop_reason: str = ""
    warnings: list[RunWarning] = field(default_factory=list)


def effort_covers(stored: str, requested: str) -> bool:
    """Whether an entry reviewed at effort ``stored`` answers a request at ``requested``: the
    same effort or a higher one (an unknown effort answers nothing)."""
    if stored not in EFFORTS or requested not in EFFORTS:
        return False
    return EFFORTS.index(stored) >= EFFORTS.index(requested)


@dataclass(frozen=True, repr=False)
class GroupingData:
    __pydantic_config__ = _FORBID

    groups: list[GroupEntry]


@dataclass(frozen=True, repr=False)
class Envelope:
    """One entry file: ``format`` is ``cache.CACHE_FORMAT``; ``data`` the kind's shape."""

    __pydantic_config__ = _FORBID

    format: Literal[2]
    kind: Literal["run", "group", "grouping"]
    key: str
    created: float
    version: str
    data: dict[str, Any]


def parse_envelope(raw: bytes) -> Envelope | None:
    """The entry file ``raw`` (canonical JSON) as an envelope, or None when it is not valid
    JSON or not of this format."""
    try:  # surrogatepass: entries keep non-UTF-8 path bytes exact (canonical_json)
        value = json.loads(raw.decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    return check(Envelope, value)


def entry_to_finding(e: FindingEntry) -> Finding:
    return Finding(
        id=e.id, path=e.path, side=e.side, start_line=e.start_line, end_line=e.end_line,
        severity=Severity[e.severity.upper()], category=e.category, content=e.content,
        existing_code=e.existing_code, suggestion_code=e.suggestion_code, anchor=e.anchor,
        ambiguous=e.ambiguous, source=e.source, code=e.code,
    )
