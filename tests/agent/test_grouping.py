"""Pure grouping rules of spec §6.1 step 2: thresholds, the grouping answer's validation,
the 10-file cap and the token-budget split. Nothing is faked: the inputs
are FileDiff values as the diff parser produces them (metadata only is needed here)."""

from __future__ import annotations

import pytest

from ocr_hook.agent.grouping import (
    BUNDLE_LABEL,
    Group,
    GroupingError,
    cap_group_size,
    deterministic_groups,
    file_list,
    parse_grouping_answer,
    split_over_budget,
    strategy,
)
from ocr_hook.diff.model import FileDiff


def fd(path: str, ins: int = 1, dels: int = 0, status: str = "modified", old: str = "") -> FileDiff:
    return FileDiff(status=status, old_path=old or path, new_path=path, insertions=ins,
                    deletions=dels, patch=f"@@ -1 +1 @@\n+{path}\n" * ins)


def labels(groups: list[Group]) -> list[tuple[str, list[str]]]:
    return [(g.label, [f.path for f in g.files]) for g in groups]


@pytest.mark.parametrize(
    ("n_files", "changed", "expected"),
    [
        (0, 0, "single"),
        (1, 5000, "single"),
        (2, 199, "bundle"),
        (3, 199, "bundle"),
        (2, 200, "per_file"),
        (3, 450, "per_file"),
        (4, 4, "llm"),
        (40, 10_000, "llm"),
    ],
)
def test_strategy_thresholds(n_files: int, changed: int, expected: str) -> None:
    assert strategy(n_files, changed) == expected


def test_three_small_files_are_one_bundle_and_three_large_ones_one_group_each() -> None:
    small = [fd("a.py", 60), fd("b.py", 60, 19), fd("c.py", 60)]  # 199 changed lines
    assert labels(deterministic_groups(small) or []) == [
        (BUNDLE_LABEL, ["a.py", "b.py", "c.py"])]
    large = [fd("a.py", 60), fd("b.py", 60, 20), fd("c.py", 60)]  # 200 changed lines
    assert labels(deterministic_groups(large) or []) == [
        ("a.py", ["a.py"]), ("b.py", ["b.py"]), ("c.py", ["c.py"])]
    assert labels(deterministic_groups([fd("only.py", 900)]) or []) == [("only.py", ["only.py"])]
    assert deterministic_groups([fd(f"f{i}.py") for i in range(4)]) is None


def test_file_list_is_metadata_only() -> None:
    files = [fd("src/a.py", 3, 1), fd("new.py", 7, status="added"),
             fd("b.py", 0, 4, status="deleted"), fd("c2.py", 1, 1, status="renamed", old="c.py")]
    assert file_list(files) == (
        "[0] MODIFIED src/a.py (+3/-1)\n"
        "[1] ADDED new.py (+7/-0)\n"
        "[2] DELETED b.py (+0/-4)\n"
        "[3] RENAMED c.py -> c2.py (+1/-1)"
    )


FILES = [fd("api/user.py"), fd("api/user_test.py"), fd("db/schema.sql"), fd("db/migrate.py"),
         fd("README.md")]


@pytest.mark.parametrize(
    "answer",
    [
        '[{"label": "user api", "files": [0, 1]}, {"label": "schema", "files": [2, 3]}]',
        '[{"label": "user api", "files": ["api/user.py", "./api/user_test.py"]},'
        ' {"label": "schema", "files": ["db/schema.sql", 3]}]',
        '<think>db and api are separate</think>\n```json\n[{"label": "user api", "files": [0, 1]},'
        ' {"label": "schema", "files": [2, 3]}]\n```',
        '{"groups": [{"label": "user api", "files": [0, 1]}, {"label": "schema",'
        ' "files": [2, 3]}]}',
        'Here you go: [{"label": "user api", "files": [0, 1]}, {"label": "schema",'
        ' "files": [2, 3]}] Hope that helps.',
    ],
)
def test_grouping_answer_shapes_are_accepted(answer: str) -> None:
    assert labels(parse_grouping_answer(answer, FILES)) == [
        ("user api", ["api/user.py", "api/user_test.py"]),
        ("schema", ["db/schema.sql", "db/migrate.py"]),
        ("README.md", ["README.md"]),  # uncovered → own group labelled with the path
    ]


def test_unknown_duplicate_and_invalid_entries_are_ignored() -> None:
    answer = """[
      {"label": "first", "files": [0, "nope.py", 99, -1, true, 0, "db/schema.sql"]},
      {"label": "", "files": [2, 1]},
      {"label": 7, "files": [3]},
      "not a group",
      {"label": "empty", "files": ["ghost.py"]},
      {"label": "no files"}
    ]"""
    assert labels(parse_grouping_answer(answer, FILES)) == [
        ("first", ["api/user.py", "db/schema.sql"]),
        ("api/user_test.py", ["api/user_test.py"]),  # empty label → first file's path
        ("db/migrate.py", ["db/migrate.py"]),  # non-string label
        ("README.md", ["README.md"]),
    ]


@pytest.mark.parametrize("answer", ["", "no json here", "[{broken", '"a string"', "42",
                                    '{"label": "x", "files": [0]}'])
def test_unusable_answers_raise(answer: str) -> None:
    with pytest.raises(GroupingError):
        parse_grouping_answer(answer, FILES)


def test_a_group_of_fourteen_files_is_split_in_order() -> None:
    files = [fd(f"m/f{i:02}.py") for i in range(14)]
    groups = cap_group_size([Group("module m", files), Group("one", [fd("x.py")])])
    assert labels(groups) == [
        ("module m (1/2)", [f"m/f{i:02}.py" for i in range(10)]),
        ("module m (2/2)", [f"m/f{i:02}.py" for i in range(10, 14)]),
        ("one", ["x.py"]),
    ]


def test_groups_over_the_token_budget_split_into_single_files() -> None:
    big = Group("big", [fd("a.py", 5), fd("b.py", 5)])
    small = Group("small", [fd("c.py"), fd("d.py")])
    single = Group("huge", [fd("e.py", 500)])

    def exceeds(files: object) -> bool:
        return sum(f.insertions for f in files) >= 10  # type: ignore[attr-defined]

    assert labels(split_over_budget([big, small, single], exceeds)) == [
        ("big (split: a.py)", ["a.py"]),
        ("big (split: b.py)", ["b.py"]),
        ("small", ["c.py", "d.py"]),
        ("huge", ["e.py"]),  # a single file is never split further
    ]


def test_group_key_is_stable_under_file_order() -> None:
    assert Group("x", [fd("b.py"), fd("a.py")]).key == "a.py,b.py"
