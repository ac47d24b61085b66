"""The vocabularies every package shares about a review, one enum each with its words for people
beside it: severities, categories, anchor methods and stop reasons.

A leaf: ``report.result`` is imported on every run, the cheapest ones included, and reads the stop
reasons that ``agent`` and ``pipeline`` set, so they are defined here rather than in ``agent``.
Severities and categories come from spec §7.1 (``code_comment``), the anchor methods from spec §8.1,
the stop reasons from spec §6.2. The file reasons of selection are ``change.SelectionReason``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

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
    (no endpoint, the run lock, a money cap). ``report.result`` says which leave a group unreviewed.

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
    COMMENTS_CAPPED = ("comments_capped", "the model filed more comments than one group may"
                       " hold; the later ones were not filed", "too many comments")
    NO_ENDPOINT = "no_endpoint", "no LLM endpoint configured", "no LLM endpoint configured"
    LOCKED = "locked", "another review of the same changes held the run lock too long"
    SPEND_CAP = ("spend_cap", "the run would pass a money cap (budget.daily_usd,"
                 " budget.monthly_usd)", "money cap reached")
