"""The whole-file rule of the change set (spec §4, ``change.whole``): the old side of a file
selection keeps now is decided again from the diff alone, and a file whose old side a path, type
or marker gate kept out comes back as one added hunk of its new blob, keeping the change's
status and old path. Real: git repositories, ``load_change_set`` on their staged snapshots, the
CLI with the scripted loopback model for the secret scan."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from ocr_hook.change import changeset, selection
from ocr_hook.git import target
from tests.e2e.test_git_calls import GitLog
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

AWS_KEY = "AKIA" + "IOSFODNN7REALKEY"  # fake; assembled so scanners skip this file


def staged(repo: GitRepo, policy: selection.SelectionPolicy | None = None
           ) -> list[tuple[str, str, str, str, bool]]:
    """(path, status, old path, whole, reviewed) of each staged decision, and the whole files'
    hunks checked to be one added hunk of the staged blob."""
    cs = changeset.load_change_set(repo.path, target.staged_snapshot(repo.path, os.environ),
                                   policy or selection.SelectionPolicy())
    for f in cs.files:
        if f.whole:
            text = repo.git("show", f":{f.new_path}")
            [h] = f.hunks
            assert (h.old_start, h.old_count, h.new_start, h.new_count) == (
                0, 0, 1, len(text.splitlines()))
            assert [ln.text for ln in h.lines if ln.kind == "+"] == text.splitlines()
    return [(d.file.path, d.file.status, d.file.old_path, d.file.whole, d.reviewed)
            for d in cs.decisions]


def test_a_marker_pushed_below_the_first_lines_shown_as_context_is_reviewed_whole(
    repo: GitRepo,
) -> None:
    repo.commit({"gen.py": "# @generated\nA = 1\nB = 2\n"}, "init")
    repo.stage({"gen.py": "".join(f"x{i} = {i}\n" for i in range(5)) +
                "# @generated\nA = 1\nB = 2\n"})
    assert staged(repo) == [("gen.py", "modified", "gen.py", "default_path", True)]


def test_an_edit_below_the_first_lines_of_a_source_file_is_reviewed_by_its_diff(
    repo: GitRepo,
) -> None:
    body = "".join(f"v{i} = {i}\n" for i in range(30))
    repo.commit({"app.py": body}, "init")
    repo.stage({"app.py": body.replace("v20 = 20", "v20 = 21")})
    assert staged(repo) == [("app.py", "modified", "app.py", "", True)]


@pytest.mark.parametrize(("policy", "old", "expected"), [
    (selection.SelectionPolicy(exclude=("legacy/",)), "legacy/a.py", "user_exclude"),
    (selection.SelectionPolicy(), "build.txt", "unsupported_ext"),
    # select.include named the old path: gates 7-8 did not apply to it, so its rename is a
    # rename (nothing to review)
    (selection.SelectionPolicy(include=("build.txt",)), "build.txt", ""),
    # review_tests: a test file was reviewed, so moving it is a rename
    (selection.SelectionPolicy(review_tests=True), "tests/test_a.py", ""),
])
def test_the_old_path_is_decided_with_the_same_settings(
    repo: GitRepo, policy: selection.SelectionPolicy, old: str, expected: str,
) -> None:
    repo.commit({old: "run()\nstop()\n"}, "init")
    (repo.path / "src").mkdir()
    repo.git("mv", old, "src/a.py")
    assert staged(repo, policy) == [("src/a.py", "renamed", old, expected, bool(expected))]


def test_a_secret_in_a_test_file_renamed_to_source_is_found_by_the_scan(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"tests/test_conf.py": f'KEY = "{AWS_KEY}"\n'}, "init")
    (repo.path / "src").mkdir()
    repo.git("mv", "tests/test_conf.py", "src/conf.py")
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert [(f["path"], f["whole"]) for f in data["files"]] == [("src/conf.py", "default_path")]
    [c] = data["comments"]
    assert (rc, c["path"], c["start_line"], c["severity"]) == (1, "src/conf.py", 1, "critical")
    assert AWS_KEY not in str(llm.requests)


def test_a_rename_that_removes_the_marker_says_so(repo: GitRepo) -> None:
    body = "".join(f"v{i} = {i}\n" for i in range(12))
    repo.commit({"a.py": "# @generated\n" + body}, "init")
    repo.git("mv", "a.py", "b.py")
    repo.stage({"b.py": body})
    assert staged(repo) == [("b.py", "renamed", "a.py", "default_path", True)]
    cs = changeset.load_change_set(repo.path, target.staged_snapshot(repo.path, os.environ),
                                   selection.SelectionPolicy())
    assert [d.detail for d in cs.decisions] == [
        "reviewed whole, its generated-file marker was removed"]


def decided(repo: GitRepo) -> list[tuple[str, bool, str, str]]:
    """(path, reviewed, reason, whole) of each staged decision."""
    cs = changeset.load_change_set(repo.path, target.staged_snapshot(repo.path, os.environ),
                                   selection.SelectionPolicy())
    return [(d.file.path, d.reviewed, d.reason, d.file.whole) for d in cs.decisions]


FILLER = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(10))


@pytest.mark.parametrize(("body", "old", "new"), [
    # the first hunk starts at line 1 but shows lines 1-4 only: the head is read
    ("# a\n# b\n# c\n# d\n# @generated\nimport os\n" + FILLER, "# a\n", "# A\n"),
    # a short file: the hunk reaches its end, its lines are all there is
    ("# a\n# @generated\nA = 1\n", "# a\n", "# A\n"),
    # line 1 longer than the old 2 KiB head read, the marker on line 2; an edit at the bottom
    ("# " + "x" * 3000 + "\n# @generated\nimport os\n" + FILLER + "Z = 1\n", "Z = 1", "Z = 2"),
])
def test_a_file_that_keeps_its_marker_stays_generated(repo: GitRepo, body: str, old: str,
                                                      new: str) -> None:
    repo.commit({"lib.py": body}, "init")
    repo.stage({"lib.py": body.replace(old, new)})
    assert decided(repo) == [("lib.py", False, "default_path", "")]


def test_a_marker_past_the_first_4_kib_is_no_marker_on_either_side(repo: GitRepo) -> None:
    body = "# " + "x" * 5000 + " @generated\nimport os\n" + FILLER + "Z = 1\n"
    repo.stage({"lib.py": body})
    assert decided(repo) == [("lib.py", True, "", "")]
    repo.git("commit", "-q", "-m", "init")
    repo.stage({"lib.py": body.replace("Z = 1", "Z = 2")})
    assert decided(repo) == [("lib.py", True, "", "")]
    head = "# @generated " + "x" * 5000 + "\nimport os\n" + FILLER + "Z = 1\n"  # cut inside
    repo.stage({"lib.py": head})
    assert decided(repo) == [("lib.py", False, "default_path", "")]


def test_a_binary_file_turned_text_is_reviewed_whole_only_where_its_path_passes_the_gates(
    repo: GitRepo,
) -> None:
    repo.commit({"src/x.py": "B = '\x00'\nrun()\n", "tests/test_x.py": "B = '\x00'\nrun()\n",
                 "logo.png": b"\x89PNG\x00\x01"}, "init")
    repo.stage({"src/x.py": "B = ''\nrun()\n", "tests/test_x.py": "B = ''\nrun()\n",
                "logo.png": b"\x89PNG\x00\x02"})
    assert decided(repo) == [("logo.png", False, "binary", ""), ("src/x.py", True, "", "binary"),
                             ("tests/test_x.py", False, "binary", "")]


@pytest.mark.parametrize(("edited", "reads"), [
    ("v1 = 1", 0),  # line 2: the hunk shows lines 1-5, no blob read
    ("v0 = 0", 1),  # line 1: the hunk shows lines 1-4, the head is read (one cat-file)
    ("v3 = 3", 0),  # a 4-line file: the hunk reaches its end
])
def test_the_head_is_read_only_when_the_first_hunk_does_not_show_the_first_lines(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: str, reads: int,
) -> None:
    n = 4 if edited == "v3 = 3" else 30
    body = "".join(f"v{i} = {i}\n" for i in range(n))
    repo.commit({"app.py": body}, "init")
    repo.stage({"app.py": body.replace(edited, edited + "1")})
    gitlog = GitLog(tmp_path / "shim", monkeypatch)
    assert decided(repo) == [("app.py", True, "", "")]
    assert Counter(gitlog.commands())["cat-file --batch"] == reads


def test_an_added_or_attribute_binary_file_is_never_text_again() -> None:
    """The whole-file diff lists every file as added: none of them may ask for a whole review
    again (that recursed), nor a file binary only by a .gitattributes entry."""
    from ocr_hook.change import whole
    from ocr_hook.change.selection import Decision, SelectionPolicy, SelectionReason
    from ocr_hook.diff import FileDiff

    policy = SelectionPolicy()
    for fd in (FileDiff("added", "src/big.py", "src/big.py", binary=True),
               FileDiff("modified", "src/big.py", "src/big.py", binary=True,
                        binary_attribute="binary")):
        d = Decision(fd, False, SelectionReason.BINARY)
        assert not whole.text_again(d, {"src/big.py"}, policy, None, None)
    plain = FileDiff("modified", "src/big.py", "src/big.py", binary=True)
    assert whole.text_again(Decision(plain, False, SelectionReason.BINARY), {"src/big.py"}, policy,
                            None, None)
