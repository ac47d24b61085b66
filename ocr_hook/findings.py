"""Review findings: severities, categories, raw comments from the model and anchored findings.

Pure data. Severity/category vocabularies come from SPEC §7.1 (`code_comment`).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, replace


class Severity(enum.IntEnum):
    """Finding severity; higher is worse. Names are the wire values (lower-case)."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: object) -> Severity | None:
        """Return the severity named by ``value`` (case-insensitive) or None if unknown."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                return None
        return None


CATEGORIES: tuple[str, ...] = (
    "bug",
    "security",
    "performance",
    "maintainability",
    "test",
    "style",
    "documentation",
    "other",
)


@dataclass(frozen=True, slots=True)
class RawComment:
    """A comment as the model filed it through ``code_comment`` (not yet anchored).

    ``line_hint`` is the optional 1-based line the model suggested; it only breaks ties.
    """

    path: str
    content: str
    existing_code: str
    suggestion_code: str
    severity: Severity
    category: str
    line_hint: int | None = None
    group: str = ""
    source: str = "llm"  # "llm" or "secret-scan"


@dataclass(frozen=True, slots=True)
class Finding:
    """An anchored finding.

    ``start_line``/``end_line`` are 1-based on ``side`` ("new" = post-change file, "old" =
    pre-change file); both are 0 when the quote could not be located (``anchor == "none"``).
    ``anchor`` is one of hunk_new, hunk_old, file, loose, relocated, refiled, none (SPEC §8.1).
    """

    id: str
    path: str
    side: str
    start_line: int
    end_line: int
    severity: Severity
    category: str
    content: str
    existing_code: str
    suggestion_code: str
    anchor: str
    ambiguous: bool = False
    source: str = "llm"

    def with_lines(self, start_line: int, end_line: int) -> Finding:
        return replace(self, start_line=start_line, end_line=end_line)


def _norm(text: str) -> str:
    return " ".join(text.split())


def finding_id(path: str, side: str, existing_code: str, content: str) -> str:
    """Stable id of a finding: 12 hex chars of SHA-256 over (path, side, normalised quote,
    normalised content). Line numbers are deliberately excluded (SPEC §8.3)."""
    quote = "\n".join(_norm(ln.lstrip("+-")) for ln in existing_code.splitlines() if ln.strip())
    key = "\0".join((path, side, quote, _norm(content)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def merge_same_claims(findings: list[Finding]) -> list[Finding]:
    """Drop findings with the same id, and findings on the same path/side whose line ranges
    overlap and whose normalised content is identical; keep the highest severity, first wins
    on ties. Findings with different claims on the same line are all kept (SPEC §8.3)."""
    kept: list[Finding] = []
    for f in findings:
        merged = False
        for i, k in enumerate(kept):
            same_id = k.id == f.id
            overlap = (
                k.path == f.path
                and k.side == f.side
                and f.start_line > 0
                and k.start_line > 0
                and f.start_line <= k.end_line
                and k.start_line <= f.end_line
                and _norm(k.content).lower() == _norm(f.content).lower()
            )
            if same_id or overlap:
                if f.severity > k.severity:
                    kept[i] = f
                merged = True
                break
        if not merged:
            kept.append(f)
    return kept
