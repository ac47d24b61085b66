"""Review findings: raw comments as the model filed them, anchored findings with their ids,
the merging of findings that make the same claim, and run warnings. Pure data, a leaf; the
vocabularies they use (severity, category, anchor method) are in ``vocabulary``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from .vocabulary import AnchorMethod, Category, Severity


class RawComment(NamedTuple):
    """A comment as the model filed it through ``code_comment`` (not yet anchored).

    ``line_hint`` is the optional 1-based line the model suggested; it only breaks ties.
    """

    path: str
    content: str
    existing_code: str
    suggestion_code: str
    severity: Severity
    category: Category
    line_hint: int | None = None
    group: str = ""
    source: str = "llm"  # "llm" or "secret-scan"
    # the model's word (spec §7.1.1): True the defect predates the change, False the change
    # causes it (never advisory, moved or not), None not said
    preexisting: bool | None = None
    repeats: str = ""  # the earlier finding (``E2``) the model files again (spec §12.3)


SECRET_SOURCE = "secret-scan"  # Finding.source of what secrets.diff_scan/.blobs find


class Finding(NamedTuple):
    """An anchored finding.

    ``start_line``/``end_line`` are 1-based on ``side`` ("new" = post-change file, "old" =
    pre-change file); both are 0 when the quote could not be located (``AnchorMethod.NONE``).
    ``anchor``: how it was located (an :class:`AnchorMethod`; only a cache entry can bring a
    code this version does not know, kept as its text).
    ``code`` is the text of the anchored lines as they are in the file (``\n``-joined, "" when
    unanchored or unknown): what the output shows under the finding and what a dismissal is
    keyed on (``comments.dismissals.dismiss_key``), unlike ``existing_code``, the model's own quote.
    ``preexisting``: the model's flag (``code_comment``): True the defect is older than the
    change, False the change causes it, None not said;
    ``moved_from``: set at gate time when the lines are code moved unchanged (``old/path:a–b``,
    or "" when not moved; :data:`MOVED_UNKNOWN` when moved from a place git did not pair).
    True, or a move without an explicit False, makes the finding advisory
    (:func:`advisory_reason`, spec §9); neither enters the id.
    """

    id: str
    path: str
    side: str
    start_line: int
    end_line: int
    severity: Severity
    category: Category | str  # an unknown code only from a cache entry, kept as its text
    content: str
    existing_code: str
    suggestion_code: str
    anchor: AnchorMethod | str
    ambiguous: bool = False
    source: str = "llm"
    group: str = ""  # label of the review group that filed it ("" for deterministic findings)
    code: str = ""
    preexisting: bool | None = None
    moved_from: str = ""
    repeats: str = ""  # spec §12.3: the earlier finding's label (E2), its id after since_last

    def with_lines(self, start_line: int, end_line: int) -> Finding:
        return self._replace(start_line=start_line, end_line=end_line)


MOVED_UNKNOWN = "?"  # Finding.moved_from of a moved block whose source was not paired


def advisory_reason(f: Finding) -> str:
    """Why finding ``f`` does not block (spec §9): ``"preexisting"`` (the model's flag),
    ``"moved"`` (code moved unchanged, unless the model said ``preexisting: false``: the move
    itself causes it), or "" (it may block)."""
    if f.preexisting:
        return "preexisting"
    return "moved" if f.moved_from and f.preexisting is not False else ""


def advisory_text(f: Finding) -> str:
    """One line for people saying why ``f`` is advisory ("" when it is not)."""
    reason = advisory_reason(f)
    if reason == "preexisting":
        return "advisory: pre-existing (reported by the model)"
    if reason == "moved":
        src = "" if f.moved_from == MOVED_UNKNOWN else f" from {f.moved_from}"
        return f"advisory: moved unchanged{src}"
    return ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def normalized_quote(existing_code: str) -> str:
    """The quote as it enters ids: non-blank lines, each with ``\r`` dropped, trimmed, one
    leading ``+``/``-`` diff marker dropped and inner whitespace collapsed; joined by ``\n``.
    Re-indenting or re-wrapping whitespace inside a line does not change it."""
    out = []
    for raw in existing_code.replace("\r", "").split("\n"):
        t = raw.strip()
        if t[:1] in ("+", "-"):
            t = t[1:].strip()
        if t:
            out.append(_norm(t))
    return "\n".join(out)


def finding_id(path: str, side: str, existing_code: str, content: str) -> str:
    """Stable id of a finding: 12 hex chars of SHA-256 over (path, side, normalised quote,
    normalised content). Line numbers are deliberately excluded (spec §8.3): the same finding
    keeps its id when code above it moves."""
    from hashlib import sha256  # here, not at module load: a run without findings needs none

    key = "\0".join((path, side, normalized_quote(existing_code), _norm(content)))
    return sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


_WORD = re.compile(r"[A-Za-z0-9_]+")
CLAIM_SIMILARITY = 0.8  # Jaccard of content words above which two comments make one claim


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def same_claim(a: Finding, b: Finding) -> bool:
    """Whether two findings make the same claim: identical normalised content, or the same
    category with word sets (Jaccard) at least CLAIM_SIMILARITY alike where no differing word
    is an identifier of either quote (``x may be None`` and ``y may be None`` differ)."""
    if _norm(a.content).lower() == _norm(b.content).lower():
        return True
    if a.category != b.category:
        return False
    wa, wb = _words(a.content), _words(b.content)
    if not wa or not wb:
        return False
    if len(wa & wb) / len(wa | wb) < CLAIM_SIMILARITY:
        return False
    code_words = _words(a.existing_code) | _words(b.existing_code)
    return not ((wa ^ wb) & code_words)


def _overlap(a: Finding, b: Finding) -> bool:
    """Same path and side with intersecting line ranges; unanchored (0-0) findings overlap
    only when their normalised quotes are equal and non-empty."""
    if a.path != b.path or a.side != b.side:
        return False
    if a.start_line == 0 or b.start_line == 0:
        qa = normalized_quote(a.existing_code)
        return a.start_line == b.start_line == 0 and bool(qa) and qa == normalized_quote(
            b.existing_code
        )
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def merge_same_claims(findings: Sequence[Finding]) -> list[Finding]:
    """De-duplicate findings (spec §8.3): the same id, or the same path/side with overlapping
    ranges and the same claim (``same_claim``), merge into one that keeps the highest
    severity (first wins on ties, order otherwise kept) and is flagged ``preexisting`` True
    only when both were, False when either was (:func:`_both_flags`); an unanchored finding and an
    anchored one with the same path and claim merge into the anchored one. Different claims
    on the same line are all kept."""
    kept: list[Finding] = []
    for f in findings:
        for i, k in enumerate(kept):
            both = _both_flags(k.preexisting, f.preexisting)
            if _placed_twin(k, f):  # the model filed it again with a quote that landed
                placed = k if k.start_line else f
                kept[i] = placed._replace(severity=max(k.severity, f.severity),
                                          preexisting=both, repeats=k.repeats or f.repeats)
                break
            if k.id == f.id or (_overlap(k, f) and same_claim(k, f)):
                kept[i] = (f if f.severity > k.severity else k)._replace(
                    preexisting=both, repeats=k.repeats or f.repeats)
                break
        else:
            kept.append(f)
    return kept


def _both_flags(a: bool | None, b: bool | None) -> bool | None:
    """The ``preexisting`` flag of two merged copies: False when either says the change causes
    it, True when both say it predates the change, else None (one copy not flagged: not
    advisory)."""
    if a is False or b is False:
        return False
    return True if a and b else None


def _placed_twin(a: Finding, b: Finding) -> bool:
    """One of the two is unanchored, the other anchored, on the same path, with the same
    claim: the placed one replaces the other (``code_comment`` asks for a new quote)."""
    return (a.path == b.path and (a.start_line == 0) != (b.start_line == 0)
            and same_claim(a, b))


class RunWarning(NamedTuple):
    """One run warning (JSON ``warnings[]``, SARIF tool notification, cache entry): ``type`` a
    short code (``comment_refiled``, ``subtask_error``, ``mcp``, …), ``file`` the path or group
    label it concerns ("" for the run), ``message`` one line for people."""

    type: str
    file: str
    message: str

