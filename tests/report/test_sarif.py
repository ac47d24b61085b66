"""Where SARIF shows a finding on deleted lines: the new-side line where they were removed."""

from __future__ import annotations

from ocr_hook.diff import FileDiff
from ocr_hook.diff.model import Hunk, Line
from ocr_hook.report.sarif import removed_at


def diff(*hunks: Hunk) -> FileDiff:
    return FileDiff("modified", "a.py", "a.py", hunks=list(hunks))


def test_a_deleted_line_is_shown_at_the_next_line_of_the_new_version() -> None:
    h = Hunk(3, 4, 3, 3, "@@ -3,4 +3,3 @@", (
        Line(" ", "a", 3, 3), Line("-", "b", 4, None), Line("+", "B", None, 4),
        Line(" ", "c", 5, 5)))
    assert removed_at(diff(h), 4) == 4


def test_lines_deleted_at_the_end_of_a_file_are_shown_at_its_last_line() -> None:
    h = Hunk(8, 3, 8, 1, "@@ -8,3 +8 @@", (
        Line(" ", "x", 8, 8), Line("-", "y", 9, None), Line("-", "z", 10, None)))
    assert (removed_at(diff(h), 9), removed_at(diff(h), 10)) == (8, 8)


def test_a_file_emptied_is_shown_at_line_1_and_an_unknown_line_at_none() -> None:
    h = Hunk(1, 2, 0, 0, "@@ -1,2 +0,0 @@", (Line("-", "p", 1, None), Line("-", "q", 2, None)))
    assert removed_at(diff(h), 2) == 1
    assert removed_at(diff(h), 7) is None and removed_at(None, 2) is None


def test_an_old_context_line_is_shown_at_its_own_new_line() -> None:
    h = Hunk(3, 2, 5, 2, "@@ -3,2 +5,2 @@", (Line(" ", "a", 3, 5), Line(" ", "b", 4, 6)))
    assert removed_at(diff(h), 4) == 6
