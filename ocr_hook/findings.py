"""Review findings and the vocabularies every package shares about a review: severities,
categories, anchor methods and stop reasons (one enum each, its words for people beside it);
raw comments from the model, anchored findings and run warnings.

Pure data, a leaf: ``report.result`` is imported on every run, the cheapest ones included, and
reads the stop reasons that ``agent`` and ``pipeline`` set, so they are defined here rather than
in ``agent``. Severity/category vocabularies come from spec §7.1 (`code_comment`), the anchor
methods from spec §8.1, the stop reasons from spec §6.2.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from typing_extensions import Self


class Vocabulary(str, enum.Enum):
    """Base of the closed sets of codes that leave the process as text (JSON, SARIF, session
    and cache files). A member is a ``str`` equal to its value, and ``str()`` and ``format()``
    give the value, as ``enum.StrEnum`` (Python 3.11) does, so output that carries a member is
    the same as with its text. ``words``: what the member means, for people; each member is
    declared as ``NAME = "value", "words"``. (No method may take a name ``str`` has: a member
    is a string wherever it goes.)"""

    words: str

    def __new__(cls, value: str, words: str = "") -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.words = words
        return member

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @classmethod
    def lookup(cls, value: Any) -> Self | None:
        """The member whose value is ``value`` (a member or its text), or None: for codes read
        from outside (a cache entry, a model's arguments), where an unknown one is possible."""
        try:
            return cls(value)
        except ValueError:
            return None


class Severity(enum.IntEnum):
    """Finding severity; higher is worse (an IntEnum: severities are compared). The lower-case
    names are both the wire values and the words (``label``); ``config/tools.json`` offers them
    to the model, ``gate.fail_on`` names one."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        """The wire value and the word: ``critical``, ``high``, ``medium``, ``low``."""
        return self.name.lower()

    @classmethod
    def labels(cls) -> str:
        """Every label, most severe first, comma-separated (``critical, high, medium, low``)."""
        return ", ".join(s.label for s in sorted(cls, reverse=True))

    @classmethod
    def parse(cls, value: object) -> Severity | None:
        """Return the severity named by ``value`` (case-insensitive) or None if unknown."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                return None
        return None


class Category(Vocabulary):
    """What kind of problem a finding is (spec §7.1 ``code_comment``; ``config/tools.json``
    offers the same list to the model). ``words``: the kind in words (the SARIF rule's short
    description)."""

    BUG = "bug", "Correctness defect"
    SECURITY = "security", "Security issue"
    PERFORMANCE = "performance", "Performance problem"
    MAINTAINABILITY = "maintainability", "Maintainability problem"
    TEST = "test", "Test problem"
    STYLE = "style", "Style issue"
    DOCUMENTATION = "documentation", "Documentation problem"
    OTHER = "other", "Other finding"


class AnchorMethod(Vocabulary):
    """How a finding was pinned to its lines (spec §8.1): the tiers of ``comments.anchor`` in
    order, the later placements, or ``none`` (unanchored, lines 0)."""

    HUNK_NEW = "hunk_new", "in the diff, new side"
    HUNK_OLD = "hunk_old", "in the diff, old side"
    FILE = "file", "unchanged code outside the diff"
    LOOSE = "loose", "matched with whitespace ignored, or part of one line"
    RELOCATED = "relocated", "placed by the re-location call"
    REFILED = "refiled", "found in another changed file"
    NONE = "none", "location unknown"


class StopReason(Vocabulary):
    """Why a group's review ended, or never started (spec §6.2, §8.3): the tool loop's stops
    (``agent.loop``, ``task_done`` … ``group_tokens``), what a group's run adds
    (``pipeline.group``, ``pipeline.llm_stage``: a prompt too large for the context, an
    internal error, a cache hit, a later effort round cut short) and what stops the whole run
    (no endpoint, the run lock). ``report.result`` says which leave a group unreviewed.

    ``words``: the stop for people (the NOT REVIEWED line, the group's warning); ``brief``: the
    short form a not-reviewed file is listed with, None where the list shows the code."""

    brief: str | None

    def __new__(cls, value: str, words: str, brief: str | None = None) -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.words = words
        member.brief = brief
        return member

    TASK_DONE = "task_done", "the model finished the review"
    TASK_FAILED = ("task_failed", "the model gave up on the review (task_done FAILED)",
                   "the model gave up")
    MAX_ROUNDS = ("max_rounds", "the model reached the tool-round limit without finishing"
                  " (review.max_tool_rounds, --max-tools)")
    NO_TOOL_CALLS = ("no_tool_calls", "the model made no tool calls (3 replies in a row without"
                     " one; check the model and server with `git ocr llm test`)",
                     "the model made no tool calls")
    EMPTY_ROUNDS = ("empty_rounds", "the model's tool calls failed 3 rounds in a row",
                    "the model's tool calls kept failing")
    COMPRESSION_FAILED = ("compression_failed", "context compression could not make the"
                          " conversation fit (llm.context_tokens)")
    BUDGET = "budget", "the token budget was used up", "token budget used up"
    TIMEOUT = "timeout", "the review's time limit was reached", "time limit reached"
    CANCELLED = "cancelled", "the review was cancelled", "cancelled"
    LLM_ERROR = "llm_error", "the LLM request failed", "LLM request failed"
    OUTPUT_LIMIT = ("output_limit", "the model's reply stopped at the output limit"
                    " (llm.max_output_tokens)")
    TOO_MANY_TOOL_CALLS = ("too_many_tool_calls",
                           "the model asked for too many tool calls in one reply")
    TOOL_ARGS_TOO_LARGE = "tool_args_too_large", "the model sent oversized tool-call arguments"
    GROUP_TOKENS = "group_tokens", "the group used up its token cap (review.max_group_tokens)"
    TOKEN_THRESHOLD_EXCEEDED = ("token_threshold_exceeded",
                                "the change is too large for the model's context",
                                "too large for the model's context")
    ERROR = "error", "internal error", "internal error"
    CACHE_HIT = "cache_hit", "answered from the result cache"
    ROUND_INCOMPLETE = ("round_incomplete", "a later effort round was cut short (the first"
                        " round's review stands)")
    NO_ENDPOINT = "no_endpoint", "no LLM endpoint configured", "no LLM endpoint configured"
    LOCKED = "locked", "another review of the same changes held the run lock too long"


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

    def with_lines(self, start_line: int, end_line: int) -> Finding:
        return self._replace(start_line=start_line, end_line=end_line)


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
    severity (first wins on ties, order otherwise kept); an unanchored finding and an
    anchored one with the same path and claim merge into the anchored one. Different claims
    on the same line are all kept."""
    kept: list[Finding] = []
    for f in findings:
        for i, k in enumerate(kept):
            if _placed_twin(k, f):  # the model filed it again with a quote that landed
                placed = k if k.start_line else f
                kept[i] = placed._replace(severity=max(k.severity, f.severity))
                break
            if k.id == f.id or (_overlap(k, f) and same_claim(k, f)):
                if f.severity > k.severity:
                    kept[i] = f
                break
        else:
            kept.append(f)
    return kept


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

