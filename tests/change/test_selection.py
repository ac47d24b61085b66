"""Selection gates 1–10 of spec §4 (pure): tables of changed files → reason, in gate order,
with the shipped built-in lists. No git, no LLM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.change import selection
from ocr_hook.change.selection import SelectionPolicy
from ocr_hook.diff.model import FileDiff, Hunk, Line


def fd(
    path: str,
    status: str = "added",
    *,
    lines: tuple[str, ...] = ("x = 1",),
    old_path: str | None = None,
    old_mode: str = "100644",
    new_mode: str = "100644",
    binary: bool = False,
    new_start: int = 1,
    head_text: str | None = None,
) -> FileDiff:
    """A changed file whose single hunk adds ``lines`` (deletes them for deletions)."""
    if status == "deleted":
        body = tuple(Line("-", t, i, None) for i, t in enumerate(lines, 1))
        hunk = Hunk(1, len(lines), 0, 0, "@@", body)
    else:
        body = tuple(Line("+", t, None, i) for i, t in enumerate(lines, new_start))
        hunk = Hunk(0, 0, new_start, len(lines), "@@", body)
    patch = "\n".join("+" + t for t in lines)
    return FileDiff(status, old_path or path, path, old_mode, new_mode, binary=binary,
                    hunks=(hunk,) if lines else (), patch=patch, head_text=head_text,
                    insertions=len(lines))


def reason(f: FileDiff, policy: SelectionPolicy | None = None) -> str:
    [d] = selection.select([f], policy or SelectionPolicy())
    assert d.reviewed is (d.reason == "")
    return d.reason


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        # 1 binary beats everything after it
        (fd("keys/.env", binary=True), "binary"),
        (fd("vendor/logo.png", binary=True), "binary"),
        # 2 submodules and symlinks pointing outside
        (fd("libs/sub", new_mode="160000", lines=("Subproject commit abc",)), "submodule"),
        (fd("link.py", new_mode="120000", lines=("../outside.py",)), "symlink_outside"),
        (fd("a/link.py", new_mode="120000", lines=("../../etc/passwd",)), "symlink_outside"),
        (fd("abs.py", new_mode="120000", lines=("/etc/passwd",)), "symlink_outside"),
        (fd("gone.py", "deleted", old_mode="120000", new_mode="000000", lines=("/etc",)),
         "symlink_outside"),
        (fd("a/link.py", new_mode="120000", lines=("../b/real.py",)), ""),
        (fd("tc.py", "type_changed", new_mode="120000", lines=("real.py",)), ""),
        # 3 secret paths, also as rename sources
        (fd(".ssh/config.py"), "secret_path"),
        (fd("home/u/.ssh/known.json"), "secret_path"),
        (fd("deploy/id_rsa"), "secret_path"),
        (fd("id_ed25519"), "secret_path"),
        (fd(".netrc"), "secret_path"),
        (fd(".npmrc"), "secret_path"),
        (fd(".pypirc"), "secret_path"),
        (fd(".env"), "secret_path"),
        (fd("app/.env.production"), "secret_path"),
        (fd(".env.example"), "unsupported_ext"),
        (fd("app/.env.sample"), "unsupported_ext"),
        (fd(".env.template"), "unsupported_ext"),
        (fd("settings.py", "renamed", old_path=".env"), "secret_path"),
        # 4 provider directories at any depth (new path only)
        (fd("vendor/github.com/x/y.go"), "provider_directory"),
        (fd("web/node_modules/left-pad/index.js"), "provider_directory"),
        (fd("target/gen.rs"), "provider_directory"),
        (fd(".idea/workspace.xml"), "provider_directory"),
        (fd(".vscode/settings.json"), "provider_directory"),
        (fd("pkg/dist/bundle.js"), "provider_directory"),
        (fd("src/__pycache__/m.py"), "provider_directory"),
        (fd(".venv/lib/m.py"), "provider_directory"),
        (fd("lib/python3/site-packages/m.py"), "provider_directory"),
        (fd("ios/Pods/AF/A.swift"), "provider_directory"),
        (fd("src/moved.py", "renamed", old_path="vendor/moved.py"), ""),
        (fd("vendored/x.go"), ""),
        (fd("src/distribution.py"), ""),
        # 7 allow-list: extensions (any case) and known file names
        (fd("README.md"), "unsupported_ext"),
        (fd("LICENSE"), "unsupported_ext"),
        (fd("yarn.lock"), "unsupported_ext"),
        (fd("Makefile"), ""),
        (fd("docker/Dockerfile.dev"), ""),
        (fd("build/CMakeLists.txt"), ""),
        (fd("APP.PY"), ""),
        (fd("infra/main.tf"), ""),
        # 8 tests, fixtures, snapshots, generated and lock files
        (fd("pkg/handler_test.go"), "default_path"),
        (fd("tests/test_api.py"), "default_path"),
        (fd("api_test.py"), "default_path"),
        (fd("web/app.spec.ts"), "default_path"),
        (fd("web/__tests__/a.js"), "default_path"),
        (fd("src/test/java/com/x/FooTest.java"), "default_path"),
        (fd("pkg/testdata/in.json"), "default_path"),
        (fd("ui/__snapshots__/a.js"), "default_path"),
        (fd("api/v1/api.pb.go"), "default_path"),
        (fd("ui/types.generated.ts"), "default_path"),
        (fd("package-lock.json"), "default_path"),
        (fd("gen.py", lines=("# @generated by codegen", "X = 1")), "default_path"),
        (fd("gen.go", lines=("// Code generated by mockgen. DO NOT EDIT.",)), "default_path"),
        (fd("gen2.go", "modified", new_start=40,
            head_text="// Code generated by stringer; DO NOT EDIT.\n\npackage x\n"),
         "default_path"),
        (fd("late.py", lines=("x = 1",) * 5 + ("# @generated",)), ""),
        (fd("mid.go", "modified", new_start=40, head_text="package x\n"), ""),
        # 9 deletions, then the reasons for paths without content changes
        (fd("old.py", "deleted"), "deleted"),
        (fd("new_name.py", "renamed", old_path="old_name.py", lines=()), "rename_only"),
        (fd("run.sh", "modified", new_mode="100755", lines=()), "mode_only"),
        (fd("empty.py", lines=()), "no_content_change"),
        (fd("copy.py", "copied", old_path="src.py", lines=()), "no_content_change"),
        (fd("app.py"), ""),
    ],
)
def test_gates_decide_in_spec_order(f: FileDiff, expected: str) -> None:
    assert reason(f) == expected


def test_user_exclude_beats_include_and_include_skips_gates_7_and_8() -> None:
    policy = SelectionPolicy(include=("docs/*.txt", "tests/"), exclude=("legacy/", "*.gen.py"))
    got = {
        f.path: reason(f, policy)
        for f in [fd("legacy/a.py"), fd("pkg/x.gen.py"), fd("docs/guide.txt"),
                  fd("tests/test_api.py"), fd("other/notes.txt"), fd("tests/old.py", "deleted"),
                  fd("tests/vendor/x.py"), fd("tests/.env")]
    }
    assert got == {
        "legacy/a.py": "user_exclude",
        "pkg/x.gen.py": "user_exclude",
        "docs/guide.txt": "",
        "tests/test_api.py": "",
        "other/notes.txt": "unsupported_ext",
        "tests/old.py": "deleted",
        "tests/vendor/x.py": "provider_directory",
        "tests/.env": "secret_path",
    }


def test_review_tests_readmits_tests_but_not_generated_files() -> None:
    policy = SelectionPolicy(review_tests=True)
    assert reason(fd("tests/test_api.py"), policy) == ""
    assert reason(fd("pkg/handler_test.go"), policy) == ""
    assert reason(fd("api/v1/api.pb.go"), policy) == "default_path"
    assert reason(fd("package-lock.json"), policy) == "default_path"


def test_too_large_counts_tokens_only_for_diffs_near_the_limit() -> None:
    calls: list[int] = []

    def count(text: str) -> int:
        calls.append(len(text))
        return len(text) // 2

    policy = SelectionPolicy(context_tokens=1000)  # limit = 800 tokens
    small = fd("small.py", lines=("x = 1",) * 10)
    near = fd("near.py", lines=("y" * 99,) * 25)  # 2,524 chars: bytes/3 ≥ 800 → counted
    huge = fd("huge.py", lines=("z" * 99,) * 40)
    got = [(d.file.path, d.reason) for d in selection.select([small, near, huge], policy, count)]
    assert got == [("small.py", ""), ("near.py", "too_large"), ("huge.py", "too_large")]
    assert calls == [len(near.patch), len(huge.patch)]
    assert [d.reason for d in selection.select([near], policy, lambda t: 800)] == [""]
    assert [d.reason for d in selection.select([huge], SelectionPolicy(context_tokens=1000))] == [
        "too_large"]


def test_symlink_outside_rules() -> None:
    assert selection.symlink_points_outside("a/b/l", "../../../x") is True
    assert selection.symlink_points_outside("a/b/l", "../../x") is False
    assert selection.symlink_points_outside("l", "C:/x") is True
    assert selection.symlink_points_outside("l", "") is True
    assert selection.symlink_points_outside("l", "./x/../y") is False


def test_glob_list_prefilter_answers_like_pathspec() -> None:
    import pathspec

    lines = [".env", ".env.*", "!.env.example", "*.pem", "vendor/", "**/src/test/**/*.kt",
             "!keep/vendor/"]
    fast = selection.GlobList(lines)
    slow = pathspec.GitIgnoreSpec.from_lines(lines)
    paths = [".env", "a/.env.local", ".env.example", "x/.env.example", "k.pem", "k.pem.txt",
             "vendor/a.go", "a/vendor/b/c.go", "keep/vendor/x.go", "src/test/a/B.kt",
             "m/src/test/B.kt", "src/main/B.kt", "envy.py", "vendored/x"]
    assert [fast.match_file(p) for p in paths] == [bool(slow.match_file(p)) for p in paths]


def test_glob_list_compiles_its_needle_regex_only_after_many_paths() -> None:
    """The first NEEDLE_LOOP_PATHS paths are tested by substring loop (no regex compiled: a
    1-file review pays nothing); later ones by the compiled alternation, with the same
    answers."""
    import pathspec

    lines = [".env", "*.pem", "vendor/", "**/src/test/**/*.kt"]
    fast = selection.GlobList(lines)
    slow = pathspec.GitIgnoreSpec.from_lines(lines)
    paths = ["a.py", "k.pem", "vendor/x.go", "src/test/a/B.kt", ".env", "envy.py"] * 20
    loop = selection.GlobList.NEEDLE_LOOP_PATHS
    answers = []
    for n, p in enumerate(paths):
        answers.append(fast.match_file(p))
        assert (fast._needle_re is None) == (n < loop)
    assert answers == [bool(slow.match_file(p)) for p in paths]


def test_reason_strings_are_the_documented_set() -> None:
    assert selection.REASONS == (
        "binary", "submodule", "symlink_outside", "symlink", "secret_path", "provider_directory",
        "user_exclude", "unsupported_ext", "default_path", "deleted", "rename_only",
        "mode_only", "no_content_change", "too_large", "over_max_files",
        "over_max_total_bytes")


@pytest.mark.parametrize(("fd", "want"), [
    (FileDiff("added", "a.py", "a.py", "000000", "100644", binary=True), "binary"),
    (FileDiff("added", "a.py", "a.py", "000000", "100644", binary=True, size_bytes=5000),
     "too_large"),
    (FileDiff("added", "vendor/a.py", "vendor/a.py", "000000", "100644", binary=True,
              size_bytes=5000), "provider_directory"),
    (FileDiff("deleted", "a.py", "a.py", "100644", "000000", binary=True, size_bytes=5000),
     "deleted"),
    (FileDiff("renamed", "a.py", "b.py", "100644", "100644"), "rename_only"),
    (FileDiff("renamed", "a.py", "b.py", "100644", "100644", insertions=1), ""),
    (FileDiff("modified", "a.py", "a.py", "100644", "100755"), "mode_only"),
    (FileDiff("added", "a.py", "a.py", "000000", "100644"), "no_content_change"),
    (FileDiff("added", "a.py", "a.py", "000000", "100644", insertions=3), ""),
    (FileDiff("added", "a.py", "a.py", "000000", "120000", insertions=1), ""),  # link text
    (FileDiff("modified", "s", "s", "160000", "160000", insertions=1), "submodule"),
], ids=["binary", "big", "big-vendored", "big-deleted", "rename", "rename-edited", "mode",
        "empty", "added", "symlink", "submodule"])
def test_metadata_reason_decides_from_status_paths_counts_and_size(
    fd: FileDiff, want: str,
) -> None:
    fd.loaded = False
    policy = selection.SelectionPolicy(max_file_bytes=1000)
    assert selection.metadata_reason(fd, policy, None, None) == want




def test_glob_needles_are_literal_parts_and_none_when_a_pattern_has_none() -> None:
    assert selection.glob_needles(["# c", "", "!keep/", "*.min.js", "**/src/test/**/*.kt",
                                   "[Tt]est_*.py", "vendor/"]) == (".min.js", "test", "est_",
                                                                   "vendor")
    assert selection.glob_needles(["*.py", "*"]) is None
    assert selection.glob_needles(["a\\*b"]) is None


PIECES = ["src", "test", "Test", "vendor", ".env", "env", "a", "x.min.js", "min", ".kt", "B",
          "keep", "__snapshots__", "id_rsa", ".pub", "node_modules", "-", "_", "."]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map("".join),
                min_size=1, max_size=4).map("/".join))
def test_glob_list_with_its_needles_answers_like_pathspec_on_any_path(path: str) -> None:
    """The literal pre-filter never changes an answer: built-in lists and a user list."""

    for lines in (*BUILTIN_LISTS, USER_LINES):
        assert GLOBS[id(lines)].match_file(path) == bool(SPECS[id(lines)].match_file(path))


def _builtin_lists() -> list[list[str]]:
    from ocr_hook.util import resources

    lists = resources.load_builtin_json("path_lists.json")
    defaults = resources.load_builtin_json("default_exclude_patterns.json")
    return [lists["secret_paths"], lists["provider_directories"],
            [p.lower() for p in defaults["tests"]],
            [p.lower() for p in defaults["generated"] + defaults["lock_files"]]]


def _specs() -> tuple[dict[int, selection.GlobList], dict[int, object]]:
    import pathspec

    globs, specs = {}, {}
    for lines in (*BUILTIN_LISTS, USER_LINES):
        globs[id(lines)] = selection.GlobList(lines)
        specs[id(lines)] = pathspec.GitIgnoreSpec.from_lines(lines)
    return globs, specs


BUILTIN_LISTS = _builtin_lists()
USER_LINES = ["src/**/Test*.kt", "!src/keep/", "*.min.*", "a/*/env"]
GLOBS, SPECS = _specs()
