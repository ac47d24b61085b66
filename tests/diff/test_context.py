"""The scope context of spec §3.5 (``diff.context``) on diffs made by real git in temporary
repositories: which lines a hunk gains, the bounds, and hunks that merge once they grow.

Every widened file is checked against both sides' real text (:func:`check_hunks`): each shown
line is that line of its file, counts match the headers, no new-side line is shown twice, and
every line of git's hunks is still there."""

from __future__ import annotations

from ocr_hook.diff.context import (
    FILE_CONTEXT_MAX_LINES,
    SCOPE_CONTEXT_MAX_LINES,
    WINDOW_MAX_LINES,
    widen_file,
    widened_hunks,
)
from ocr_hook.diff.model import FileDiff, render_numbered
from tests.support.gitrepo import GitRepo
from tests.support.samples import staged


def widen(repo: GitRepo, path: str, old: str, new: str) -> tuple[FileDiff, int]:
    """Commit ``old``, stage ``new``; the staged diff of ``path`` widened from the snapshot's
    lines, checked against both texts, and the lines added."""
    by_path, lines, _ = staged(repo, {path: old}, {path: new})
    fd = by_path[path]
    new_lines = lines(path)
    assert new_lines is not None
    added = widen_file(fd, new_lines)
    check_hunks(fd, old, new)
    return fd, added


def check_hunks(fd: FileDiff, old: str, new: str) -> None:
    old_lines, new_lines = old.split("\n"), new.split("\n")
    seen: set[int] = set()
    prev_end = 0
    for h in fd.hunks:
        assert h.old_count == sum(1 for ln in h.lines if ln.kind != "+"), h.header
        assert h.new_count == sum(1 for ln in h.lines if ln.kind != "-"), h.header
        assert h.new_start > prev_end
        prev_end = h.new_start + h.new_count - 1
        for ln in h.lines:
            if ln.new_line is not None:
                assert new_lines[ln.new_line - 1] == ln.text
                assert ln.new_line not in seen
                seen.add(ln.new_line)
            if ln.old_line is not None:
                assert old_lines[ln.old_line - 1] == ln.text
    shown = {ln for h in fd.hunks for ln in h.lines}
    assert all(ln in shown for h in fd.git_hunks or () for ln in h.lines)


def numbered(fd: FileDiff) -> list[str]:
    return render_numbered(fd).splitlines()


def body(n: int, indent: str = "    ", tag: str = "v") -> str:
    return "".join(f"{indent}{tag}{i} = {i}\n" for i in range(n))


def test_a_small_python_function_is_shown_whole_from_its_header(repo: GitRepo) -> None:
    old = ("import os\n\n\nclass Shop:\n    @staticmethod\n    def total(items):\n"
           "        if not items:\n            return 0\n" + body(6, "        ")
           + "        return sum(items)\n\n    def name(self):\n        return 'x'\n")
    new = old.replace("return sum(items)", "return sum(items) + 1")
    fd, added = widen(repo, "shop.py", old, new)
    assert added == 7
    assert numbered(fd) == [
        "@@ -5,14 +5,14 @@ class Shop:",  # git's function context: class Shop is not shown
        " 5      @staticmethod",
        " 6      def total(items):",
        " 7          if not items:",
        " 8              return 0",
        " 9          v0 = 0",
        "10          v1 = 1",
        "11          v2 = 2",
        "12          v3 = 3",
        "13          v4 = 4",
        "14          v5 = 5",
        "   -        return sum(items)",
        "15 +        return sum(items) + 1",
        "16  ",
        "17      def name(self):",
        "18          return 'x'",
    ]
    assert [(h.new_start, h.new_count) for h in fd.git_hunks or ()] == [(12, 7)]


def test_two_hunks_in_one_function_merge_into_one_without_repeating_a_line(
    repo: GitRepo,
) -> None:
    old = "import os\n\n\ndef f(x):\n" + body(20) + "    return x\n\n\ndef g():\n    pass\n"
    new = old.replace("    v3 = 3\n", "").replace("    v15 = 15\n", "    v15 = 16\n    w = 0\n")
    fd, added = widen(repo, "m.py", old, new)
    assert [(h.old_start, h.old_count, h.new_start, h.new_count)
            for h in fd.git_hunks or ()] == [(5, 7, 5, 6), (17, 7, 16, 8)]
    [h] = fd.hunks
    assert (h.old_start, h.old_count, h.new_start, h.new_count) == (4, 22, 4, 22)
    assert h.header == "@@ -4,22 +4,22 @@"
    assert added == 22 - 6 - 8
    assert [ln.new_line for ln in h.lines if ln.new_line] == list(range(4, 26))
    assert [(ln.kind, ln.old_line, ln.new_line) for ln in h.lines if ln.kind != " "] == [
        ("-", 8, None), ("-", 20, None), ("+", None, 19), ("+", None, 20)]


def test_a_large_function_shows_its_header_and_a_bounded_window(repo: GitRepo) -> None:
    old = "def big(x):\n    if x:\n" + body(100, "        ") + "    return x\n"
    new = old.replace("v70 = 70", "v70 = 71")
    fd, added = widen(repo, "big.py", old, new)
    assert added == WINDOW_MAX_LINES
    first, window = fd.hunks
    assert numbered(fd)[:3] == ["@@ -1,2 +1,2 @@", " 1  def big(x):", " 2      if x:"]
    # git's 70..76, 21 lines above and 7 below: with the 2 header lines, 30
    assert window.header == "@@ -49,35 +49,35 @@ def big(x):"
    below = [ln.new_line for ln in window.lines if ln.new_line and ln.new_line > 76]
    assert below == list(range(77, 77 + WINDOW_MAX_LINES // 4))


def test_in_a_large_function_the_block_around_the_change_is_shown_whole(
    repo: GitRepo,
) -> None:
    old = ("def big(x, y):\n" + body(40) + "    if (x and\n            y):\n"
           "        a = 1\n        b = 2\n        c = 3\n        d = 4\n        e = 5\n"
           "    else:\n        a = 0\n" + body(40, "    ", "w") + "    return x\n")
    for changed, shown, added_lines in (("e", (42, 51), 1 + 3), ("b", (42, 50), 1 + 2)):
        new = old.replace(f"        {changed} = ", f"        {changed} = 1 + ")
        fd, added = widen(repo, f"blk_{changed}.py", old, new)
        assert numbered(fd)[:2] == ["@@ -1 +1 @@", " 1  def big(x, y):"]
        window = fd.hunks[1]
        # the if statement from its first line through its else branch (git's hunk of the
        # change of e holds lines 45-51, of b 42-48)
        assert (window.new_start, window.new_start + window.new_count - 1) == shown
        assert window.lines[0].text == "    if (x and"
        assert added == added_lines


def test_a_brace_function_ends_on_its_closing_brace(repo: GitRepo) -> None:
    old = ("import x from 'y';\n\nexport function handler(req, res) {\n  if (!req.user) {\n"
           "    return res.status(401).end();\n  }\n" + body(6, "  ", "const c")
           + "  res.send(1);\n}\n\nfunction other() {\n  return 2;\n}\n")
    new = old.replace("const c1 = 1", "const c1 = 2")
    fd, added = widen(repo, "h.js", old, new)
    assert added == 5  # git's hunk holds lines 5-11
    lines = numbered(fd)
    assert lines[:3] == ["@@ -3,12 +3,12 @@", " 3  export function handler(req, res) {",
                         " 4    if (!req.user) {"]
    assert lines[-2:] == ["13    res.send(1);", "14  }"]  # not the blank line and other()


def test_c_function_with_a_label_reaches_its_header(repo: GitRepo) -> None:
    old = ("#include <x.h>\n\nint\nfoo(int a,\n    int b)\n{\n\tint r = 0;\n"
           + body(8, "\t", "r") + "\tif (a)\n\t\tgoto out;\n\tr = a + b;\nout:\n\treturn r;\n}\n")
    new = old.replace("\treturn r;", "\treturn r + 1;")
    fd, _ = widen(repo, "x.c", old, new)
    assert numbered(fd)[:2] == ["@@ -4,18 +4,18 @@", " 4  foo(int a,"]
    assert numbered(fd)[-1] == "21  }"


def test_yaml_keys_above_a_change_are_shown(repo: GitRepo) -> None:
    old = ("on: push\njobs:\n  build:\n    steps:\n      - name: test\n        run: make\n"
           "        env:\n          A: 1\n          B: 2\n          C: 3\n          D: 4\n"
           "  lint:\n    runs-on: ubuntu\n")
    new = old.replace("D: 4", "D: 5")
    fd, _ = widen(repo, "ci.yml", old, new)
    assert numbered(fd)[1:4] == [" 2  jobs:", " 3    build:", " 4      steps:"]


def test_a_top_level_change_keeps_git_hunks(repo: GitRepo) -> None:
    old = "import os\n\n\n" + body(10, "", "x") + "\n\ndef f():\n    return 1\n"
    new = old.replace("x5 = 5", "x5 = 6")
    fd, added = widen(repo, "t.py", old, new)
    assert (added, fd.git_hunks) == (0, None)


def test_a_large_hunk_gets_only_the_headers_of_its_scope(repo: GitRepo) -> None:
    old = "class A:\n" + body(40) + "    def f(self):\n        return 1\n"
    new = old.replace("    def f(self):\n", "".join(f"    def m{i}(self):\n        return {i}\n"
                                                   for i in range(15)) + "    def f(self):\n")
    fd, added = widen(repo, "a.py", old, new)
    assert added == 1
    assert numbered(fd)[:2] == ["@@ -1 +1 @@", " 1  class A:"]


def test_a_file_gains_at_most_its_bound(repo: GitRepo) -> None:
    funcs = [f"def f{i}(x):\n    if x:\n        return {i}\n" + body(30) + "    return x\n\n\n"
             for i in range(12)]
    old = "".join(funcs)
    new = old.replace("    v20 = 20\n", "    v20 = 21\n")
    fd, added = widen(repo, "many.py", old, new)
    assert len(fd.git_hunks or ()) == 12
    assert FILE_CONTEXT_MAX_LINES - SCOPE_CONTEXT_MAX_LINES < added <= FILE_CONTEXT_MAX_LINES
    assert fd.hunks[0].lines[0].text == "def f0(x):"
    assert fd.hunks[-1].header.startswith("@@ -")  # later hunks as git printed them
    assert fd.hunks[-1] == (fd.git_hunks or ())[-1]


def test_hunks_that_disagree_with_the_lines_are_left_alone(repo: GitRepo) -> None:
    old = "def f(x):\n" + body(12) + "    return x\n"
    new = old.replace("v9 = 9", "v9 = 10")
    by_path, lines, _ = staged(repo, {"f.py": old}, {"f.py": new})
    fd = by_path["f.py"]
    other = (lines("f.py") or []).copy()
    other[8] = "    v8 = [REDACTED:x]"  # a context line of git's hunk
    assert widened_hunks(fd.hunks, other) is None
    assert widened_hunks(fd.hunks, lines("f.py") or []) is not None


def test_prose_files_keep_git_hunks(repo: GitRepo) -> None:
    old = "Title\n=====\n\n.. note::\n\n" + body(20, "   ", "line ") + "\nEnd\n"
    new = old.replace("line 12 = 12", "line 12 = 13")
    fd, added = widen(repo, "README.rst", old, new)
    assert (added, fd.git_hunks) == (0, None)
    fd, added = widen(repo, "notes.py", old, new)  # the same text as code: the note block
    assert added > 0
