"""Moved-code detection (``git.moved_lines``, spec §9): real git diffs of staged trees, read
through the pinned ``--color-moved=blocks`` colours, whatever the user's colour settings."""

from __future__ import annotations

from pathlib import Path

from ocr_hook.git import moved_lines
from tests.support.gitrepo import GitRepo

BLOCK = ("def scale(values, factor):\n    out = []\n    for v in values:\n"
         "        out.append(v * factor)\n    return out\n")


def _tree(repo: GitRepo, files: dict[str, str]) -> tuple[str, str]:
    repo.stage(files)
    head = repo.git("rev-parse", "HEAD").strip()
    return head, repo.git("write-tree").strip()


def test_a_block_moved_to_another_file_is_moved_with_its_source(repo: GitRepo) -> None:
    repo.commit({"a.py": "X = 1\n\n\n" + BLOCK + "\n\nY = 2\n", "b.py": "Z = 3\n"}, "init")
    base, head = _tree(repo, {"a.py": "X = 1\n\n\nY = 2\n", "b.py": "Z = 3\n" + BLOCK})
    m = moved_lines(Path(repo.path), base, head, ["a.py", "b.py"])
    assert m.moved_source("b.py", 2, 6) == "a.py:4\u20138"
    assert m.moved_source("b.py", 4, 5) == "a.py:6\u20137"
    assert m.moved_source("b.py", 1, 1) is None  # an unchanged line alone is not moved
    assert m.moved_source("b.py", 1, 2) == "a.py:4\u20134"  # with moved ones: no added line
    assert m.moved_source("b.py", 0, 0) is None


def test_a_reindented_block_is_moved_and_a_changed_line_in_it_is_not(repo: GitRepo) -> None:
    repo.commit({"a.py": BLOCK + "\n\nclass K:\n    pass\n"}, "init")
    inner = "".join("    " + line + "\n" for line in BLOCK.splitlines())
    changed = inner.replace("v * factor", "v * factor + 1")
    base, head = _tree(repo, {"a.py": "class K:\n" + changed})
    m = moved_lines(Path(repo.path), base, head, ["a.py"])
    assert m.moved_source("a.py", 2, 4) == "a.py:1\u20133"  # indented one level deeper
    assert m.moved_source("a.py", 5, 5) is None  # the changed line
    assert m.moved_source("a.py", 4, 6) is None  # a range holding it


def test_user_colour_settings_change_nothing(repo: GitRepo) -> None:
    repo.commit({"a.py": "X = 1\n\n\n" + BLOCK, "b.py": "Z = 3\n"}, "init")
    for key, value in (("color.diff.newMoved", "green"), ("color.diff.new", "magenta"),
                       ("diff.colorMoved", "plain"), ("color.ui", "never")):
        repo.git("config", key, value)
    base, head = _tree(repo, {"a.py": "X = 1\n", "b.py": "Z = 3\n" + BLOCK})
    m = moved_lines(Path(repo.path), base, head, ["a.py", "b.py"])
    assert m.moved_source("b.py", 2, 6) == "a.py:4\u20138"


def test_new_code_and_a_short_move_are_not_moved(repo: GitRepo) -> None:
    repo.commit({"a.py": "x = 1\ny = 2\n"}, "init")
    base, head = _tree(repo, {"a.py": "y = 2\nx = 1\n" + BLOCK})
    m = moved_lines(Path(repo.path), base, head, ["a.py"])
    assert m.moved_source("a.py", 2, 2) is None  # under 20 alphanumeric characters
    assert m.moved_source("a.py", 3, 7) is None  # added, never removed
