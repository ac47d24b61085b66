"""The context tools (spec §7.1) on real repositories: exact outputs for normal, truncated,
empty and error cases, reads from the staged snapshot (never the work tree), confinement.

Real: git repositories, ``write-tree`` snapshots, ``git grep``/``ls-tree``/``cat-file``.
Fake: nothing (the model's arguments are literal dicts).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocr_hook.git import target
from ocr_hook.tools.builtin.code_search import code_search
from ocr_hook.tools.builtin.file_find import file_find
from ocr_hook.tools.builtin.file_read import file_read
from ocr_hook.tools.builtin.file_read_diff import file_read_diff
from ocr_hook.tools.snapshot import SnapshotView, confine
from tests.support.gitrepo import GitRepo

APP = "a = 1\nb = 2\nc = 3\n"
APP_PATCH = (
    "diff --git a/app.py b/app.py\nnew file mode 100644\n--- /dev/null\n+++ b/app.py\n"
    "@@ -0,0 +1,3 @@\n+a = 1\n+b = 2\n+c = 3"
)
NOT_FOUND = (
    'Error: file not found: "{}". Use file_find to locate the exact path, then retry file_read.'
)


def staged_view(repo: GitRepo) -> SnapshotView:
    t = target.staged_snapshot(repo.path, os.environ)
    return SnapshotView(repo.path, t.head, target.load_diff(repo.path, t))


@pytest.fixture
def view(repo: GitRepo) -> SnapshotView:
    """README.md and src/util.py committed; app.py staged; an unstaged edit of app.py and an
    untracked notes.txt in the work tree."""
    repo.commit({"README.md": "hello\n", "src/util.py": "def helper():\n    return 1\n"}, "init")
    repo.stage({"app.py": APP})
    repo.write({"app.py": "a = 1\nb = 999\nc = 3\nUNSTAGED_LINE\n", "notes.txt": "untracked\n"})
    return staged_view(repo)


# -- file_read -----------------------------------------------------------------------------


def test_file_read_whole_file(view: SnapshotView) -> None:
    r = file_read(view, {"file_path": "app.py"})
    assert r.text == (
        "File: app.py (Total lines: 3)\nIS_TRUNCATED: false\nLINE_RANGE: 1-3\n"
        "1|a = 1\n2|b = 2\n3|c = 3"
    )
    assert not r.is_error


def test_file_read_line_range_and_clamped_end(view: SnapshotView) -> None:
    assert file_read(view, {"file_path": "app.py", "start_line": 2, "end_line": 2}).text == (
        "File: app.py (Total lines: 3)\nIS_TRUNCATED: false\nLINE_RANGE: 2-2\n2|b = 2"
    )
    assert file_read(view, {"file_path": "./app.py", "start_line": "2", "end_line": 99}).text == (
        "File: app.py (Total lines: 3)\nIS_TRUNCATED: false\nLINE_RANGE: 2-3\n2|b = 2\n3|c = 3"
    )


def test_file_read_truncates_at_500_lines(repo: GitRepo) -> None:
    repo.stage({"big.py": "".join(f"x{n}\n" for n in range(1, 601))})
    v = staged_view(repo)
    r = file_read(v, {"file_path": "big.py"})
    lines = r.text.split("\n")
    assert lines[:3] == [
        "File: big.py (Total lines: 600)",
        "IS_TRUNCATED: true",
        "LINE_RANGE: 1-500",
    ]
    assert lines[3] == "1|x1" and lines[502] == "500|x500"
    assert lines[503:] == [
        "",
        "Note: Results truncated to 500 lines. Please narrow your line range.",
    ]
    tail = file_read(v, {"file_path": "big.py", "start_line": 450, "end_line": 1200})
    assert tail.text.split("\n")[:3] == [
        "File: big.py (Total lines: 600)",
        "IS_TRUNCATED: false",
        "LINE_RANGE: 450-600",
    ]
    assert tail.text.endswith("\n600|x600")


def test_file_read_caps_output_at_128_kib(repo: GitRepo) -> None:
    repo.stage({"wide.txt": ("y" * 1000 + "\n") * 300})
    r = file_read(staged_view(repo), {"file_path": "wide.txt"})
    lines = r.text.split("\n")
    # rows "n|" + 1000 chars + newline: 9×1003 + 90×1004 + 31×1005 = 130542 ≤ 131072 < +1005
    assert lines[:3] == [
        "File: wide.txt (Total lines: 300)",
        "IS_TRUNCATED: true",
        "LINE_RANGE: 1-130",
    ]
    assert lines[132] == "130|" + "y" * 1000
    assert lines[133:] == [
        "",
        "Note: Results truncated to 131072 bytes (through line 130). Please narrow your line"
        " range.",
    ]


def test_file_read_cuts_a_very_long_line(repo: GitRepo) -> None:
    repo.stage({"min.js": "z" * 5000 + "\n"})
    r = file_read(staged_view(repo), {"file_path": "min.js"})
    assert r.text.split("\n")[3] == "1|" + "z" * 2000 + " … [line truncated]"


def test_file_read_empty_file_and_crlf(repo: GitRepo) -> None:
    repo.stage({"empty.txt": "", "dos.txt": "x\r\ny\r\n"})
    v = staged_view(repo)
    assert file_read(v, {"file_path": "empty.txt"}).text == (
        "File: empty.txt (Total lines: 0)\nIS_TRUNCATED: false\nLINE_RANGE: 0-0"
    )
    assert file_read(v, {"file_path": "dos.txt"}).text == (
        "File: dos.txt (Total lines: 2)\nIS_TRUNCATED: false\nLINE_RANGE: 1-2\n1|x\n2|y"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "Error: file_path is required"),
        ({"file_path": "  "}, "Error: file_path is required"),
        ({"file_path": "missing.py"}, NOT_FOUND.format("missing.py")),
        ({"file_path": "src"}, NOT_FOUND.format("src")),
        (
            {"file_path": "app.py", "start_line": 3, "end_line": 2},
            "Error: invalid line range: start_line 3 is greater than end_line 2",
        ),
        (
            {"file_path": "app.py", "start_line": 7},
            'Error: file "app.py" has only 3 lines, requested range 7-end',
        ),
        (
            {"file_path": "app.py", "start_line": 7, "end_line": 9},
            'Error: file "app.py" has only 3 lines, requested range 7-9',
        ),
        (
            {"file_path": "app.py", "start_line": "two"},
            "Error: start_line must be an integer, got 'two'",
        ),
        ({"file_path": "app.py", "end_line": 2.5}, "Error: end_line must be an integer, got 2.5"),
    ],
)
def test_file_read_errors(view: SnapshotView, args: dict, expected: str) -> None:
    r = file_read(view, args)
    assert (r.text, r.is_error) == (expected, True)


def test_file_read_refuses_binary_files(repo: GitRepo) -> None:
    repo.stage({"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00rest"})
    r = file_read(staged_view(repo), {"file_path": "logo.png"})
    assert r.text == 'Error: file "logo.png" is binary; file_read shows text files only'


# -- confinement ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "a/../../outside.txt",
        "src/../app.py",
        "..",
        "/etc/passwd",
        "C:/Windows/win.ini",
        "..\\outside.txt",
    ],
)
def test_confine_rejects_escapes(path: str) -> None:
    assert confine(path) is None


def test_confine_normalises_inside_paths() -> None:
    assert [confine(p) for p in ("./src//util.py", "src\\util.py", " app.py ")] == [
        "src/util.py",
        "src/util.py",
        "app.py",
    ]


def test_file_read_never_returns_outside_content(repo: GitRepo, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET\n")
    repo.commit({"README.md": "hello\n"}, "init")
    os.symlink("/etc/passwd", repo.path / "passwd_link")
    os.symlink("/etc", repo.path / "etc_dir")
    os.symlink(str(tmp_path / "outside.txt"), repo.path / "outside_link")
    repo.git("add", "passwd_link", "etc_dir", "outside_link")
    v = staged_view(repo)
    outside = (
        'Error: file_path "{}" is outside the repository; use a repository-relative path without ..'
    )
    for p in (
        "../outside.txt",
        "src/../../outside.txt",
        str(tmp_path / "outside.txt"),
        "/etc/passwd",
        str(repo.path / "README.md"),
    ):
        assert file_read(v, {"file_path": p}).text == outside.format(p)
    assert file_read(v, {"file_path": "passwd_link"}).text == (
        "File: passwd_link (Total lines: 1)\nIS_TRUNCATED: false\nLINE_RANGE: 1-1\n1|/etc/passwd"
    )
    assert file_read(v, {"file_path": "outside_link"}).text.endswith(f"\n1|{tmp_path}/outside.txt")
    assert file_read(v, {"file_path": "etc_dir/passwd"}).text == NOT_FOUND.format("etc_dir/passwd")
    assert file_read(v, {"file_path": "etc_dir/hostname"}).text == NOT_FOUND.format(
        "etc_dir/hostname"
    )
    everything = [file_read(v, {"file_path": p}).text for p in ("passwd_link", "etc_dir/passwd")]
    everything.append(code_search(v, {"search_text": "root"}).text)
    everything.append(code_search(v, {"search_text": "OUTSIDE-SECRET"}).text)
    assert not any("root:" in t or "OUTSIDE-SECRET" in t for t in everything)


def test_secret_paths_are_never_returned(repo: GitRepo) -> None:
    repo.stage({".env": "API_TOKEN=s3cr3t-value\n", "app.py": "token = 's3cr3t-value'\n"})
    v = staged_view(repo)
    r = file_read(v, {"file_path": ".env"})
    assert r.text == (
        'Error: ".env" is on the secret-path list (keys, .env, credentials); its content is'
        " never shared"
    )
    assert code_search(v, {"search_text": "s3cr3t"}).text == (
        "File: app.py\nMatch lines: 1\n1|token = 's3cr3t-value'"
    )
    assert file_read_diff(v, {"path_array": [".env"]}).text == (
        "Error: diff not found for the requested paths"
    )


# -- the snapshot, not the work tree ------------------------------------------------------


def test_unstaged_edit_and_untracked_file_are_invisible_to_all_tools(view: SnapshotView) -> None:
    assert file_read(view, {"file_path": "app.py"}).text.endswith("\n2|b = 2\n3|c = 3")
    assert code_search(view, {"search_text": "999"}).text == "No matches found"
    assert code_search(view, {"search_text": "UNSTAGED_LINE"}).text == "No matches found"
    assert code_search(view, {"search_text": "untracked"}).text == "No matches found"
    assert file_find(view, {"query_name": "notes"}).text == (
        "No file name or path contains 'notes'.")
    assert file_read(view, {"file_path": "notes.txt"}).text == NOT_FOUND.format("notes.txt")
    assert (
        file_read_diff(view, {"path_array": ["app.py"]}).text
        == f"==== FILE: app.py ====\n{APP_PATCH}"
    )


def test_commit_target_reads_that_commit(repo: GitRepo) -> None:
    first = repo.commit({"app.py": "version = 1\n"}, "one")
    repo.commit({"app.py": "version = 2\n"}, "two")
    t = target.commit_target(repo.path, first)
    v = SnapshotView(repo.path, t.head, target.load_diff(repo.path, t))
    assert file_read(v, {"file_path": "app.py"}).text.endswith("\n1|version = 1")
    assert code_search(v, {"search_text": "version"}).text == (
        "File: app.py\nMatch lines: 1\n1|version = 1"
    )


# -- file_read_diff ------------------------------------------------------------------------


def test_file_read_diff_known_unknown_and_empty(view: SnapshotView) -> None:
    expected = f"==== FILE: app.py ====\n{APP_PATCH}"
    assert file_read_diff(view, {"path_array": ["nope.py", "app.py", "./app.py"]}).text == expected
    assert file_read_diff(view, {"path_array": "app.py"}).text == expected
    r = file_read_diff(view, {"path_array": ["nope.py", "README.md"]})
    assert (r.text, r.is_error) == ("Error: diff not found for the requested paths", True)
    for empty in ([], [""], None):
        r = file_read_diff(view, {"path_array": empty})
        assert (r.text, r.is_error) == ("Error: no files found", True)


def test_file_read_diff_truncates_at_500_lines(repo: GitRepo) -> None:
    repo.stage(
        {
            "a.py": "".join(f"a{n}\n" for n in range(300)),
            "b.py": "".join(f"b{n}\n" for n in range(300)),
        }
    )
    r = file_read_diff(staged_view(repo), {"path_array": ["a.py", "b.py"]})
    lines = r.text.split("\n")
    # each file: a FILE line, 5 patch header lines and 300 added lines = 306; both: 612
    assert lines[0] == "IS_TRUNCATED: true"
    assert lines[1] == "==== FILE: a.py ===="
    assert lines[500] == "+b187"
    assert lines[501:] == [
        "",
        "Note: Results truncated to 500 of 612 diff lines. Request fewer"
        " paths per call, or use file_read for the rest of a file.",
    ]


# -- file_find -----------------------------------------------------------------------------


def test_file_find_basename_then_full_path(view: SnapshotView) -> None:
    assert file_find(view, {"query_name": "util"}).text == "src/util.py"
    assert file_find(view, {"query_name": "UTIL.PY"}).text == "src/util.py"
    assert file_find(view, {"query_name": "src/u"}).text == "src/util.py"
    assert file_find(view, {"query_name": "src\\util"}).text == "src/util.py"
    assert file_find(view, {"query_name": ".py"}).text == "app.py\nsrc/util.py"


def test_file_find_case_sensitive_and_not_found(view: SnapshotView) -> None:
    r = file_find(view, {"query_name": "UTIL", "case_sensitive": True})
    assert (r.text, r.is_error) == ("No file name or path contains 'UTIL' (case-sensitive).", False)
    r = file_find(view, {"query_name": " src\\zzz "})
    assert (r.text, r.is_error) == ("No file name or path contains 'src/zzz'.", False)
    for q in ("", "   ", None):
        r = file_find(view, {"query_name": q})
        assert (r.text, r.is_error) == ("Error: query_name is blank", True)


def test_file_find_caps_at_100_paths(repo: GitRepo) -> None:
    repo.stage({f"mod/f{n:03}.py": "x = 1\n" for n in range(120)})
    r = file_find(staged_view(repo), {"query_name": "f"})
    lines = r.text.split("\n")
    assert len(lines) == 101 and lines[0] == "mod/f000.py" and lines[99] == "mod/f099.py"
    assert lines[100] == (
        "Note: showing the first 100 of 120 matching files; use a more specific query_name."
    )


# -- code_search ---------------------------------------------------------------------------


def test_code_search_groups_by_file(view: SnapshotView) -> None:
    assert code_search(view, {"search_text": "return"}).text == (
        "File: src/util.py\nMatch lines: 1\n1-def helper():\n2|    return 1"
    )
    assert code_search(view, {"search_text": "1"}).text == (
        "File: app.py\nMatch lines: 1\n1|a = 1\n2-b = 2\n\n"
        "File: src/util.py\nMatch lines: 1\n1-def helper():\n2|    return 1"
    )


def test_code_search_pathspecs_and_exclude(view: SnapshotView) -> None:
    assert code_search(view, {"search_text": "1", "file_patterns": ["src/*"]}).text == (
        "File: src/util.py\nMatch lines: 1\n1-def helper():\n2|    return 1"
    )
    assert code_search(
        view, {"search_text": "1", "file_patterns": ["*.py", ":(exclude)src/*"]}
    ).text == ("File: app.py\nMatch lines: 1\n1|a = 1\n2-b = 2")
    assert code_search(view, {"search_text": "1", "file_patterns": [":!app.py"]}).text == (
        "File: src/util.py\nMatch lines: 1\n1-def helper():\n2|    return 1"
    )


@pytest.fixture
def tree(repo: GitRepo) -> SnapshotView:
    """``hit`` at the top, one and two directories down, and in tests/ and docs."""
    repo.stage({"a.py": "hit\n", "pkg/helpers.py": "hit\n", "pkg/sub/deep.py": "hit\n",
                "pkg/README.md": "hit\n", "tests/test_a.py": "hit\n"})
    return staged_view(repo)


def found(view: SnapshotView, *patterns: str) -> list[str] | str:
    r = code_search(view, {"search_text": "hit", "file_patterns": list(patterns)})
    return [ln[6:] for ln in r.text.split("\n") if ln.startswith("File: ")] or r.text


def test_code_search_patterns_match_like_gitignore_lines(tree: SnapshotView) -> None:
    everything = ["a.py", "pkg/README.md", "pkg/helpers.py", "pkg/sub/deep.py", "tests/test_a.py"]
    assert found(tree) == everything
    # ** spans zero or more directories: pkg/helpers.py is one level down (the false "no
    # matches" of plain pathspecs, where pkg/**/*.py needs a directory under pkg)
    assert found(tree, "pkg/**/*.py") == ["pkg/helpers.py", "pkg/sub/deep.py"]
    assert found(tree, "*.py") == ["a.py", "pkg/helpers.py", "pkg/sub/deep.py", "tests/test_a.py"]
    assert found(tree, "deep.py") == ["pkg/sub/deep.py"]
    assert found(tree, "pkg/**") == found(tree, "pkg") == found(tree, "pkg/") == [
        "pkg/README.md", "pkg/helpers.py", "pkg/sub/deep.py"]
    assert found(tree, "pkg/*") == ["pkg/README.md", "pkg/helpers.py", "pkg/sub/deep.py"]
    assert found(tree, "pkg/*.py") == ["pkg/helpers.py"]
    assert found(tree, "sub/") == ["pkg/sub/deep.py"]
    assert found(tree, "./pkg/*.md") == ["pkg/README.md"]
    assert found(tree, ":(icase)PKG/*.PY") == ["pkg/helpers.py"]
    assert found(tree, ":(glob)*.py") == ["a.py"]  # its own glob magic: as git reads it
    assert found(tree, "src/**") == "No matches found"


def test_code_search_exclude_patterns(tree: SnapshotView) -> None:
    kept = ["a.py", "pkg/README.md", "pkg/helpers.py", "pkg/sub/deep.py"]
    for ex in (":(exclude)tests/*", ":!tests/**", ":^tests/", ":(exclude)test_*.py"):
        assert found(tree, ex) == kept, ex
    assert found(tree, "*.py", ":(exclude)pkg/**") == ["a.py", "tests/test_a.py"]
    assert found(tree, "pkg", ":!*.md") == ["pkg/helpers.py", "pkg/sub/deep.py"]


def test_code_search_case_and_regexp(view: SnapshotView) -> None:
    assert code_search(view, {"search_text": "DEF HELPER"}).text.endswith(
        "1|def helper():\n2-    return 1")
    assert code_search(view, {"search_text": "DEF HELPER", "case_sensitive": True}).text == (
        "No matches found"
    )
    assert code_search(view, {"search_text": "[abc] = [23]"}).text == "No matches found"
    assert code_search(view, {"search_text": r"[bc] = \d", "use_perl_regexp": True}).text == (
        "File: app.py\nMatch lines: 2\n1-a = 1\n2|b = 2\n3|c = 3"
    )


def test_code_search_shows_one_line_of_context_around_each_match(repo: GitRepo) -> None:
    repo.stage({"x[1]*.py": "a\nfoo\nb\nc\nd\nfoo\nfoo\ne\nf\n"})  # pathspec magic in name
    assert code_search(staged_view(repo), {"search_text": "foo"}).text == (
        "File: x[1]*.py\nMatch lines: 3\n1-a\n2|foo\n3-b\n5-d\n6|foo\n7|foo\n8-e")


def test_code_search_text_and_pathspecs_cannot_be_options(repo: GitRepo) -> None:
    repo.stage({"cli.sh": "ls --cached -v\n"})
    v = staged_view(repo)
    assert (
        code_search(v, {"search_text": "--cached"}).text
        == "File: cli.sh\nMatch lines: 1\n1|ls --cached -v"
    )
    assert (
        code_search(v, {"search_text": "-v"}).text
        == "File: cli.sh\nMatch lines: 1\n1|ls --cached -v"
    )
    assert code_search(v, {"search_text": "ls", "file_patterns": ["--cached"]}).text == (
        "No matches found"
    )


def test_code_search_caps_matches_per_file(repo: GitRepo) -> None:
    repo.stage({"many.py": "hit = 1\n" * 150})
    r = code_search(staged_view(repo), {"search_text": "hit"})
    lines = r.text.split("\n")
    assert lines[:3] == ["File: many.py", "Match lines: 100", "1|hit = 1"]
    assert lines[101] == "100|hit = 1"
    assert lines[102:] == [
        "Note: more than 100 matches in this file; only the first 100 are shown. Narrow"
        " search_text or file_patterns.",
        "",
        "Note: more than 30 matches, so no context lines; file_read shows the lines around"
        " one.",
    ]


def test_code_search_caps_total_output_and_long_lines(repo: GitRepo) -> None:
    wide = "hit" + "w" * 1200 + "\n"
    repo.stage({"a.txt": wide * 100, "b.txt": wide * 100})
    r = code_search(staged_view(repo), {"search_text": "hit"})
    blocks = r.text.split("\n\n")
    assert blocks[0] == (
        "Note: output truncated to 131072 bytes: more files match than the 1 shown. Narrow"
        " file_patterns to see the rest."
    )
    rows = blocks[1].split("\n")
    assert rows[:2] == ["File: a.txt", "Match lines: 100"]
    assert rows[2] == "1|hit" + "w" * 997 + " … [line truncated]"
    assert len(blocks) == 3 and blocks[2].startswith("Note: more than 30 matches, so no context")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"search_text": "  "}, "Error: search_text is blank"),
        ({}, "Error: search_text is blank"),
        (
            {"search_text": "x", "file_patterns": ["../etc/*"]},
            "Error: file_patterns must not contain ..",
        ),
        (
            {"search_text": "x", "file_patterns": [":(exclude)../x"]},
            "Error: file_patterns must not contain ..",
        ),
        (
            {"search_text": "x", "file_patterns": ["/etc"]},
            "Error: file_patterns must be repository-relative",
        ),
        *[({"search_text": "x", "file_patterns": [p]},
            f"Error: unsupported pathspec magic in {p!r}; file_patterns are globs matched like"
            " .gitignore lines ('src/**/*.py', '*.py', ':(exclude)tests/**')")
          for p in (":(top)x", ":/x", ":(attr:x)*", ":(prefix:0)x", ":(exclude")],
        (
            {"search_text": "x", "file_patterns": [":(exclude)/etc"]},
            "Error: file_patterns must be repository-relative",
        ),
        (
            {"search_text": "x", "file_patterns": [3]},
            "Error: file_patterns must be an array of strings",
        ),
        (
            {"search_text": "a(", "use_perl_regexp": True},
            "Error: invalid search: -e option, 'a(': missing closing parenthesis",
        ),
    ],
)
def test_code_search_errors(view: SnapshotView, args: dict, expected: str) -> None:
    r = code_search(view, args)
    assert (r.text, r.is_error) == (expected, True)


def test_paths_copied_as_the_prompt_shows_them_are_read(repo: GitRepo) -> None:
    repo.commit({"a&b.py": "x = 1\n"}, "base")
    repo.stage({"a&b.py": "x = 2\n"})
    v = staged_view(repo)
    assert file_read(v, {"file_path": "a&amp;b.py"}).text.startswith("File: a&b.py (Total lines: 1)")
    assert file_read_diff(v, {"path_array": ["a&amp;b.py"]}).text.startswith("==== FILE: a&b.py")
