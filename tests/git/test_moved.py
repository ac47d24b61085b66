"""Moved-code detection (``git.moved_lines``, spec §9): real git diffs of staged trees, read
through the pinned ``--color-moved=blocks`` colours, whatever the user's colour settings."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert m.moved_source("b.py", 1, 2) == "a.py:4"  # with moved ones: no added line
    assert m.moved_source("b.py", 0, 0) is None


def test_a_reindented_block_is_not_moved_and_an_exact_one_is(repo: GitRepo) -> None:
    repo.commit({"a.py": BLOCK + "\n\nclass K:\n    pass\n", "b.py": "Z = 3\n"}, "init")
    inner = "".join("    " + line + "\n" for line in BLOCK.splitlines())
    base, head = _tree(repo, {"a.py": "class K:\n" + inner, "b.py": "Z = 3\n"})
    m = moved_lines(Path(repo.path), base, head, ["a.py"])
    assert [m.moved_source("a.py", n, n) for n in range(2, 7)] == [None] * 5  # a new scope


GUARDED = ("def handle(req, user):\n    if user.is_admin:\n        audit_log.write(req.path, user)\n"
           "        delete_everything(req.target)\n        notify_admins(req.target, user)\n")


def test_a_body_deindented_out_of_its_guard_is_not_moved(repo: GitRepo) -> None:
    repo.commit({"h.py": GUARDED}, "init")
    body = GUARDED.split("is_admin:\n")[1]
    deindented = "".join(line[4:] + "\n" for line in body.splitlines())
    base, head = _tree(repo, {"h.py": "def handle(req, user):\n    if user.is_admin:\n"
                                      "        pass\n" + deindented})
    m = moved_lines(Path(repo.path), base, head, ["h.py"])
    assert [m.moved_source("h.py", n, n) for n in (4, 5, 6)] == [None, None, None]
    assert m.new_moved == {}


def test_two_swapped_lines_are_not_moved(repo: GitRepo) -> None:
    checked = ("def drop(req):\n    require_admin_permission(req)\n"
               "    perform_dangerous_operation(req)\n    return finished_response(req)\n")
    repo.commit({"d.py": checked}, "init")
    swapped = checked.replace("    require_admin_permission(req)\n", "").replace(
        "    perform_dangerous_operation(req)\n",
        "    perform_dangerous_operation(req)\n    require_admin_permission(req)\n")
    base, head = _tree(repo, {"d.py": swapped})
    m = moved_lines(Path(repo.path), base, head, ["d.py"])
    assert swapped.splitlines()[1:3] == ["    perform_dangerous_operation(req)",
                                         "    require_admin_permission(req)"]
    assert [m.moved_source("d.py", n, n) for n in (2, 3)] == [None, None]
    assert [m.moved_source("d.py", 2, 3)] == [None]


@pytest.mark.parametrize("name", ["sp dir/b c.py", 'we"ird.py'])
def test_moved_from_names_a_path_with_spaces_or_quotes(repo: GitRepo, name: str) -> None:
    repo.commit({name: "X = 1\n\n\n" + BLOCK, "dst.py": "Z = 3\n"}, "init")
    base, head = _tree(repo, {name: "X = 1\n", "dst.py": "Z = 3\n" + BLOCK})
    m = moved_lines(Path(repo.path), base, head, [name, "dst.py"])
    assert m.moved_source("dst.py", 2, 6) == f"{name}:4\u20138"
    assert m.moved_source("dst.py", 3, 3) == f"{name}:5"
    repo.commit({name: "X = 1\n", "dst.py": "Z = 3\n" + BLOCK}, "moved")
    base, head = _tree(repo, {name: "X = 1\n" + BLOCK, "dst.py": "Z = 3\n"})  # and back
    m = moved_lines(Path(repo.path), base, head, [name, "dst.py"])
    assert m.moved_source(name, 2, 6) == "dst.py:2\u20136"


def test_unquote_c_reads_git_header_names() -> None:
    from ocr_hook.git.moved import unquote_c

    assert unquote_c(b"a/sp dir/b c.py\t") == b"a/sp dir/b c.py"
    assert unquote_c(b'"a/we\\"ird.py"') == b'a/we"ird.py'
    assert unquote_c(b'"b/t\\tab\\\\\\303\\251.py"') == "b/t\tab\\\u00e9.py".encode()
    assert unquote_c(b"b/plain.py") == b"b/plain.py"


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
