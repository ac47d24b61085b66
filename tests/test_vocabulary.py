"""The code vocabularies (docs/architecture.md: one enum per vocabulary, its wording beside it).

Each enum's values are wire strings: they are in the JSON and SARIF output, the session log and
the cache entries, so they are pinned here exactly. Every member carries its words for people,
and a member is written as its value wherever text is made of it (``str``, ``format``, JSON).

Real: the enums and the shipped data. No git, no model.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest

from ocr_hook import util
from ocr_hook.change import SelectionReason
from ocr_hook.vocabulary import AnchorMethod, Category, Severity, StopReason, Vocabulary

VOCABULARIES: list[type[Vocabulary]] = [AnchorMethod, Category, StopReason,
                                         SelectionReason]


def code_comment_schema() -> dict[str, Any]:
    """The item schema of ``code_comment``'s ``comments`` in the shipped ``tools.json``."""
    tools = util.load_builtin_json("tools.json")["tools"]
    tool = next(t for t in tools if t["name"] == "code_comment")
    return tool["definition"]["parameters"]["properties"]["comments"]["items"]["properties"]


def test_anchor_methods_are_the_documented_codes() -> None:
    assert [m.value for m in AnchorMethod] == [
        "hunk_new", "hunk_old", "file", "loose", "relocated", "refiled", "none"]


def test_severity_labels_are_what_the_model_config_cache_and_flags_use() -> None:
    import typing

    from ocr_hook.cli.parser import build_parser
    from ocr_hook.config.models import GateConfig
    from ocr_hook.pipeline.cache.entries import FindingEntry

    labels = ["critical", "high", "medium", "low"]
    assert [(s.label, int(s)) for s in sorted(Severity, reverse=True)] == [
        ("critical", 4), ("high", 3), ("medium", 2), ("low", 1)]
    assert Severity.labels() == "critical, high, medium, low"
    assert code_comment_schema()["severity"]["enum"] == labels
    assert list(typing.get_args(typing.get_type_hints(GateConfig)["fail_on"])) == labels
    assert list(typing.get_args(typing.get_type_hints(FindingEntry)["severity"])) == labels
    review = build_parser()._subparsers._group_actions[0].choices["review"]  # type: ignore
    [fail_on] = [a for a in review._actions if "--fail-on" in a.option_strings]
    assert list(fail_on.choices) == labels  # literal there: `git ocr -h` imports no findings


def test_categories_are_the_codes_code_comment_offers() -> None:
    values = ["bug", "security", "performance", "maintainability", "test", "style",
              "documentation", "other"]
    assert [m.value for m in Category] == values
    assert code_comment_schema()["category"]["enum"] == values  # the data the model is shown


def test_stop_reasons_are_the_codes_of_the_session_log_and_the_files_list() -> None:
    assert [m.value for m in StopReason] == [
        "task_done", "task_failed", "max_rounds", "no_tool_calls", "empty_rounds",
        "compression_failed", "budget", "timeout", "cancelled", "llm_error", "output_limit",
        "too_many_tool_calls", "tool_args_too_large", "group_tokens",  # the tool loop's
        "token_threshold_exceeded", "error", "cache_hit", "round_incomplete",
        "comments_capped",  # a group's run
        "no_endpoint", "locked", "spend_cap"]  # the whole run's (spend_cap: also a loop's)


def test_which_stops_leave_a_group_unreviewed_or_cached() -> None:
    from ocr_hook.report.result import CACHEABLE_STOPS, CAP_STOPS, INCOMPLETE_STOPS

    assert CAP_STOPS == {"max_rounds", "group_tokens", "too_many_tool_calls",
                         "tool_args_too_large", "comments_capped"}
    assert INCOMPLETE_STOPS == CAP_STOPS | {
        "llm_error", "budget", "spend_cap", "timeout", "cancelled", "task_failed",
        "no_tool_calls", "empty_rounds", "token_threshold_exceeded", "error", "output_limit"}
    assert CACHEABLE_STOPS == ("task_done",)
    assert all(type(s) is StopReason for s in (*INCOMPLETE_STOPS, *CACHEABLE_STOPS))


def test_a_not_reviewed_file_is_listed_with_the_stops_brief_words_or_its_code() -> None:
    briefs = {m.value: m.brief for m in StopReason if m.brief is not None}
    assert briefs == {
        "task_failed": "the model gave up", "no_tool_calls": "the model made no tool calls",
        "empty_rounds": "the model's tool calls kept failing", "budget": "token budget used up",
        "timeout": "time limit reached", "cancelled": "cancelled",
        "llm_error": "LLM request failed",
        "token_threshold_exceeded": "too large for the model's context",
        "error": "internal error", "comments_capped": "too many comments",
        "no_endpoint": "no LLM endpoint configured", "spend_cap": "money cap reached"}


def test_an_error_that_ends_a_loop_becomes_a_member() -> None:
    from ocr_hook.agent import stop_reason_for
    from ocr_hook.errors import BudgetExhausted, DeadlineExceeded, LlmError

    stops = [stop_reason_for(e) for e in (BudgetExhausted("b"), DeadlineExceeded("d"),
                                          LlmError("x", kind="auth"))]
    assert stops == [StopReason.BUDGET, StopReason.TIMEOUT, StopReason.LLM_ERROR]
    assert all(type(s) is StopReason for s in stops)


def test_selection_reasons_are_the_codes_of_the_files_list_in_gate_order() -> None:
    from ocr_hook.change import BOUND_REASONS

    assert [m.value for m in SelectionReason] == [
        "binary", "submodule", "symlink_outside", "symlink", "secret_path", "provider_directory",
        "user_exclude", "unsupported_ext", "default_path", "deleted", "rename_only",
        "mode_only", "no_content_change", "too_large", "over_max_files", "over_max_total_bytes"]
    assert BOUND_REASONS == {"over_max_files", "over_max_total_bytes"}


def test_a_files_reason_in_words_whichever_vocabulary_it_comes_from() -> None:
    from ocr_hook.change import reason_words

    assert reason_words("a.py", SelectionReason.SECRET_PATH) == "may hold secrets"
    assert reason_words("a.py", "rename_only") == "renamed, content unchanged"
    assert reason_words("dist/app.min.js", "provider_directory") == "generated/minified"
    assert reason_words("build/x.o", "provider_directory") == "build output"
    assert reason_words("tests/test_a.py", "default_path") == "test file"
    assert reason_words("a.py", "no_endpoint") == "no LLM endpoint configured"
    assert reason_words("a.py", StopReason.TIMEOUT) == "time limit reached"
    assert reason_words("a.py", "max_rounds") == "max_rounds"  # no brief words: the code
    assert reason_words("a.py", "sideways") == "sideways"


def test_selection_hands_out_members() -> None:
    from ocr_hook.change import SelectionPolicy
    from ocr_hook.change.selection import select
    from ocr_hook.diff import FileDiff

    files = [FileDiff("added", "a.png", "a.png", "000000", "100644", binary=True),
             FileDiff("renamed", "b.py", "c.py", "100644", "100644")]
    decisions = select(files, SelectionPolicy())
    assert [d.reason for d in decisions] == [SelectionReason.BINARY, SelectionReason.RENAME_ONLY]
    assert all(type(d.reason) is SelectionReason for d in decisions)


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_every_member_has_its_words(vocabulary: type[Vocabulary]) -> None:
    for member in vocabulary:
        assert isinstance(member.words, str) and member.words.strip(), member
        assert member.words == member.words.strip() and "\n" not in member.words


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_a_member_is_written_as_its_value(vocabulary: type[Vocabulary]) -> None:
    for member in vocabulary:
        value = member.value
        assert isinstance(member, str) and member == value and hash(member) == hash(value)
        assert str(member) == f"{member}" == format(member) == value
        assert "%s" % member == value  # noqa: UP031 - logging formats its arguments so
        assert f"{member:>30}" == f"{value:>30}"
        assert json.dumps(member) == json.dumps(value)
        assert json.dumps({member: [member]}, indent=1) == json.dumps({value: [value]}, indent=1)
        assert vocabulary(value) is member and vocabulary.lookup(value) is member


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_an_unknown_code_is_found_as_none(vocabulary: type[Vocabulary]) -> None:
    for value in ("", "not-a-code", None, 3, ["hunk_new"]):
        assert vocabulary.lookup(value) is None
    with pytest.raises(ValueError):
        vocabulary("not-a-code")


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_a_member_keeps_every_str_method(vocabulary: type[Vocabulary]) -> None:
    """A member goes wherever a string does: no name of the enum may hide one of ``str``'s
    (a ``find`` classmethod would break ``member.find(":")``)."""
    own = {n for cls in vocabulary.__mro__[:vocabulary.__mro__.index(str)]
           for n in vars(cls) if not n.startswith("_")} - set(vocabulary.__members__)
    assert own & set(dir(str)) == set()
    member = next(iter(vocabulary))
    assert member.find(member.value[1:]) == 1 and member.upper() == member.value.upper()


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_values_are_unique_lower_case_codes(vocabulary: type[Vocabulary]) -> None:
    values = [m.value for m in vocabulary]
    assert len(set(values)) == len(values) == len(vocabulary.__members__)  # no aliases
    assert all(v == v.lower() and " " not in v for v in values)
    assert issubclass(vocabulary, str) and issubclass(vocabulary, enum.Enum)


def test_a_cache_entry_brings_its_codes_as_members_or_unknown_ones_as_text() -> None:
    from ocr_hook.pipeline.cache.entries import FindingEntry, entry_to_finding

    def entry(anchor: str) -> FindingEntry:
        return FindingEntry("0" * 12, "a.py", "new", 1, 1, "high", "bug", "c", "x", "", anchor)

    known, unknown = entry_to_finding(entry("file")), entry_to_finding(entry("sideways"))
    assert (known.anchor, known.category) == (AnchorMethod.FILE, Category.BUG)
    assert type(known.anchor) is AnchorMethod and type(known.category) is Category
    assert unknown.anchor == "sideways"  # kept, as it always was
    other = entry_to_finding(entry("file")._replace(category="typos"))
    assert type(other.category) is str and other.category == "typos"


def test_a_models_category_becomes_a_member_and_an_unknown_one_other() -> None:
    from ocr_hook.tools.builtin.code_comment import parse_comments

    comments, notes = parse_comments({"comments": [
        {"path": "a.py", "content": "c", "category": " Security "},
        {"path": "a.py", "content": "c", "category": "typo"}]})
    assert [c.category for c in comments] == [Category.SECURITY, Category.OTHER]
    assert all(type(c.category) is Category for c in comments)
    assert notes == ["comment 1: unknown severity None recorded as low (allowed: critical, high,"
                     " medium, low)", "comment 2: unknown severity None recorded as low"
                     " (allowed: critical, high, medium, low)",
                     "comment 2: unknown category 'typo' recorded as other"]
