"""Review targets (spec §3.2–3.4) on real repositories: the staged snapshot (honouring
``GIT_INDEX_FILE`` of ``git commit -a`` and ``git commit <paths>``, with real native hooks),
commit and range modes, pushed ranges, and user git config that must change nothing. The
model is the scripted loopback server; git is real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_hook.errors import UsageError
from ocr_hook.git import target
from tests.support.gitrepo import GitRepo, home_repo
from tests.support.scripted_llm import ScriptedLLM

EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
EMPTY_TREE_SHA256 = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"


def paths(repo: GitRepo, t: target.Target) -> list[tuple[str, str]]:
    return [(f.path, f.status) for f in target.load_diff(repo.path, t)]


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}


# ---- staged snapshot ----------------------------------------------------------------------------


def test_snapshot_reads_the_index_not_the_work_tree_and_changes_nothing(repo: GitRepo) -> None:
    repo.commit({"a.py": "a = 1\n"}, "init")
    repo.stage({"a.py": "a = 2\n", "b.py": "b = 1\n"})
    repo.write({"a.py": "a = 3  # unstaged fix\n", "untracked.py": "u = 1\n"})
    repo.write({"ita.py": "i = 1\n"})
    repo.git("add", "-N", "ita.py")
    before = repo.state()
    t = target.staged_snapshot(repo.path, env_without("GIT_INDEX_FILE"))
    assert repo.state() == before
    assert (t.mode, t.base, t.base_label, t.head_label) == (
        "staged", repo.git("rev-parse", "HEAD^{tree}").strip(),
        repo.git("rev-parse", "HEAD").strip(), "(index)")
    assert t.head == t.snapshot_tree
    assert paths(repo, t) == [("a.py", "modified"), ("b.py", "added")]
    assert target.read_blob(repo.path, t.head, "a.py") == b"a = 2\n"
    assert target.read_blob(repo.path, t.head, "untracked.py") is None
    assert target.read_blob(repo.path, t.head, "ita.py") is None


def test_snapshot_with_unborn_head_diffs_against_the_sha1_empty_tree(repo: GitRepo) -> None:
    repo.stage({"first.py": "x = 1\n"})
    t = target.staged_snapshot(repo.path, env_without("GIT_INDEX_FILE"))
    assert (t.base, t.base_label) == (EMPTY_TREE_SHA1, "(empty tree)")
    assert paths(repo, t) == [("first.py", "added")]


def test_snapshot_in_sha256_repository_uses_its_empty_tree(tmp_path: Path) -> None:
    repo = home_repo(tmp_path / "r", object_format="sha256")
    repo.stage({"first.py": "x = 1\n"})
    t = target.staged_snapshot(repo.path, env_without("GIT_INDEX_FILE"))
    assert t.base == EMPTY_TREE_SHA256 and len(t.head) == 64
    assert paths(repo, t) == [("first.py", "added")]
    head = repo.commit(message="first")
    repo.stage({"second.py": "y = 2\n"})
    t2 = target.staged_snapshot(repo.path, env_without("GIT_INDEX_FILE"))
    assert t2.base_label == head and len(head) == 64
    assert paths(repo, t2) == [("second.py", "added")]


@pytest.mark.parametrize("relative", [True, False])
def test_snapshot_honours_git_index_file(repo: GitRepo, relative: bool) -> None:
    repo.commit({"a.py": "a = 1\n", "b.py": "b = 1\n"}, "init")
    repo.stage({"b.py": "b = 2\n"})  # staged in the default index only
    other = repo.path / ".git" / "other-index"
    env = {**repo.env, "GIT_INDEX_FILE": str(other)}
    repo.git("read-tree", "HEAD", env=env)
    repo.write({"a.py": "a = 2\n"})
    repo.git("add", "a.py", env=env)
    environ = dict(os.environ, GIT_INDEX_FILE=".git/other-index" if relative else str(other))
    t = target.staged_snapshot(repo.path, environ)
    assert paths(repo, t) == [("a.py", "modified")]
    assert target.staged_snapshot(repo.path, env_without("GIT_INDEX_FILE")).head != t.head


def write_hook(repo: GitRepo, name: str, body: str) -> None:
    hook = repo.path / ".git" / "hooks" / name
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)


def test_partial_commit_hook_reviews_only_the_paths_being_committed(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    """`git commit <paths>` runs the native hook with a temporary index that
    holds HEAD plus the work-tree content of <paths>; the review sees exactly that."""
    repo.commit({"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    return 1\n"}, "i")
    repo.stage({"b.py": "def b():\n    return 'STAGED_ONLY'\n"})
    repo.write({"a.py": "def a():\n    return 'COMMITTED'\n"})  # not staged: `commit a.py`
    out = tmp_path / "review.json"
    write_hook(repo, "pre-commit",
               f'exec "{sys.executable}" -m ocr_hook.cli hook pre-commit --format json '
               f'--output "{out}"')
    llm.tool_calls(("task_done", {"state": "DONE"}))
    p = subprocess.run(["git", "commit", "-q", "-m", "partial", "--", "a.py"], cwd=repo.path,
                       env={**repo.env, **llm.env()}, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert [(f["path"], f["status"], f["reviewed"]) for f in data["files"]] == [
        ("a.py", "modified", True)]
    [request] = llm.requests
    prompt = request["messages"][1]["content"]
    assert "return 'COMMITTED'" in prompt and "STAGED_ONLY" not in prompt
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == ["a.py"]
    assert repo.git("diff", "--cached", "--name-only").split() == ["b.py"]


def test_commit_all_hook_reviews_unstaged_tracked_changes_too(
    repo: GitRepo, tmp_path: Path,
) -> None:
    repo.commit({"a.py": "a = 1\n", "b.py": "b = 1\n"}, "init")
    repo.stage({"b.py": "b = 2\n"})
    repo.write({"a.py": "a = 2\n", "new.py": "untracked = 1\n"})
    out = tmp_path / "review.json"
    write_hook(repo, "pre-commit",
               f'exec "{sys.executable}" -m ocr_hook.cli hook pre-commit --format json '
               f'--output "{out}"')
    p = subprocess.run(["git", "commit", "-q", "-a", "-m", "all"], cwd=repo.path,
                       env=repo.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert [(f["path"], f["reason"]) for f in data["files"]] == [
        ("a.py", "no_endpoint"), ("b.py", "no_endpoint")]


# ---- commit and range modes ---------------------------------------------------------------------


def test_commit_mode_root_commit_diffs_against_the_empty_tree(repo: GitRepo) -> None:
    root = repo.commit({"a.py": "a = 1\n"}, "root")
    t = target.commit_target(repo.path, "HEAD")
    assert (t.mode, t.base, t.head, t.base_label) == ("commit", EMPTY_TREE_SHA1, root,
                                                     "(empty tree)")
    assert paths(repo, t) == [("a.py", "added")]


def test_commit_mode_merge_commit_uses_its_first_parent(repo: GitRepo) -> None:
    repo.commit({"base.py": "x = 0\n"}, "base")
    repo.git("checkout", "-q", "-b", "side")
    repo.commit({"side.py": "s = 1\n"}, "side")
    repo.git("checkout", "-q", "main")
    main_tip = repo.commit({"main.py": "m = 1\n"}, "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge", "side")
    t = target.commit_target(repo.path, "HEAD")
    assert t.base == main_tip
    assert paths(repo, t) == [("side.py", "added")]


def test_range_mode_diffs_from_the_merge_base(repo: GitRepo) -> None:
    fork = repo.commit({"a.py": "a = 1\n"}, "fork")
    repo.git("checkout", "-q", "-b", "topic")
    topic = repo.commit({"t.py": "t = 1\n"}, "topic")
    repo.git("checkout", "-q", "main")
    repo.commit({"m.py": "m = 1\n"}, "main moves on")
    t = target.range_target(repo.path, "main", "topic")
    assert (t.base, t.head) == (fork, topic)
    assert paths(repo, t) == [("t.py", "added")]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("--output=/tmp/x",
         "invalid ref '--output=/tmp/x': refs may not be empty or start with '-'"),
        ("", "invalid ref '': refs may not be empty or start with '-'"),
        ("no-such-branch", "unknown commit 'no-such-branch'"),
        ("HEAD^{tree}", "unknown commit 'HEAD^{tree}'"),
    ],
)
def test_bad_refs_are_refused(repo: GitRepo, ref: str, message: str) -> None:
    repo.commit({"a.py": "a = 1\n"}, "init")
    with pytest.raises(UsageError) as e:
        target.commit_target(repo.path, ref)
    assert str(e.value) == message


def test_range_without_merge_base_is_refused(repo: GitRepo) -> None:
    repo.commit({"a.py": "a = 1\n"}, "init")
    repo.git("checkout", "-q", "--orphan", "lonely")
    repo.commit({"b.py": "b = 1\n"}, "unrelated")
    with pytest.raises(UsageError, match="no merge base between 'main' and 'lonely'"):
        target.range_target(repo.path, "main", "lonely")


# ---- user configuration must change nothing -----------------------------------------------------

HOSTILE_CONFIG = {
    "diff.noprefix": "true",
    "diff.mnemonicPrefix": "true",
    "color.ui": "always",
    "color.diff": "always",
    "diff.external": "/bin/false",
    "diff.rot.textconv": "rev",
    "diff.relative": "true",
    "diff.renames": "false",
    "diff.orderFile": "order.txt",
    "diff.algorithm": "patience",
    "diff.suppressBlankEmpty": "true",
    "diff.interHunkContext": "10",
    "diff.indentHeuristic": "false",
    "diff.context": "10",
    "diff.ignoreSubmodules": "all",
    "diff.submodule": "log",
    "diff.renameLimit": "1",
    "core.quotePath": "true",
}


def test_user_diff_config_and_diff_env_change_nothing(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
) -> None:
    block = "".join(f"line {i}\n" for i in range(40))
    base = repo.commit({
        "sub/mod.py": "def f():\n    x = 1\n\n    return x\n\n" + block,
        "old.py": "".join(f"item = {i}\n" for i in range(10)),
        "ünï.py": "u = 1\n",
        ".gitattributes": "*.py diff=rot\n",
        "order.txt": "z.py\nsub/mod.py\n",
    }, "init")
    repo.git("mv", "old.py", "renamed.py")
    repo.write({
        "sub/mod.py": "def f():\n    x = 1\n    x += 1\n\n    return x\n\n"
        + block.replace("line 5\n", "line five\n").replace("line 30\n", "line thirty\n"),
        "ünï.py": "u = 2\n",
        "z.py": "z = 1\n",
    })
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{base},gitlink")
    head = repo.commit(message="change")
    t = target.Target("range", base, head, base, head)

    def snapshot() -> list[tuple[object, ...]]:
        return [(f.status, f.old_path, f.new_path, f.patch,
                 [(h.old_start, h.old_count, h.new_start, h.new_count, h.lines) for h in f.hunks])
                for f in target.load_diff(repo.path, t)]

    plain = snapshot()
    assert [row[2] for row in plain] == [
        "gitlink", "renamed.py", "sub/mod.py", "z.py", "ünï.py"]
    assert [len(row[4]) for row in plain] == [1, 0, 3, 1, 1]
    for key, value in HOSTILE_CONFIG.items():
        repo.git("config", key, value)
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=10")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/false")
    assert snapshot() == plain


# ---- pushed ranges -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"refs/heads/main {'1' * 40} refs/heads/main {'0' * 40}\n",
         [("refs/heads/main", "1" * 40, "refs/heads/main", "0" * 40)]),
        (f"(delete) {'0' * 64} refs/heads/x {'a' * 64}\n\n",
         [("(delete)", "0" * 64, "refs/heads/x", "a" * 64)]),
        (f"HEAD~1 with space {'2' * 40} refs/heads/o {'3' * 40}\r\n",
         [("HEAD~1 with space", "2" * 40, "refs/heads/o", "3" * 40)]),
        ("", []),
    ],
)
def test_pre_push_lines_split_from_the_right(text: str, expected: list[tuple[str, ...]]) -> None:
    assert [tuple(ln) for ln in target.parse_push_lines(text)] == expected


@pytest.mark.parametrize("text", ["refs/heads/main abc refs/heads/main def",
                                  "only three fields here", f"a {'1' * 39} b {'0' * 40}"])
def test_malformed_pre_push_line_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="malformed pre-push line"):
        target.parse_push_lines(text)


@pytest.mark.parametrize(
    ("oid", "zero"), [("0" * 40, True), ("0" * 64, True), ("0" * 39, False), ("0" * 41, False),
                      ("0" * 63 + "1", False), ("", False)])
def test_zero_oid_is_all_zeros_of_hash_length(oid: str, zero: bool) -> None:
    assert target.is_zero_oid(oid) is zero


def push_line(local: str, remote: str, ref: str = "refs/heads/main") -> target.PushLine:
    return target.PushLine(ref, local, ref, remote)


def test_push_ranges_for_each_kind_of_ref_update(repo: GitRepo, tmp_path: Path) -> None:
    zero = "0" * 40
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    c2 = repo.commit({"b.py": "b = 1\n"}, "c2")
    # a fake remote-tracking ref says the remote already has c1
    repo.git("update-ref", "refs/remotes/origin/main", c1)
    # new branch: only the commits no origin ref has; base = parent of the oldest new one
    assert target.push_range(repo.path, "origin", push_line(c2, zero)) == target.Target(
        "push", c1, c2, c1, c2, refs=("refs/heads/main",))
    # fast-forward of a known remote tip
    t = target.push_range(repo.path, "origin", push_line(c2, c1))
    assert (t.base, t.head) == (c1, c2)
    # force push: the remote tip c2 is rewritten by c2b; base = merge-base(c2, c2b) = c1
    repo.git("reset", "-q", "--hard", c1)
    c2b = repo.commit({"b.py": "b = 2\n"}, "c2b")
    t = target.push_range(repo.path, "origin", push_line(c2b, c2))
    assert (t.base, t.head) == (c1, c2b)
    # remote oid unknown here (someone else pushed): fall back to the new commits
    t = target.push_range(repo.path, "origin", push_line(c2b, "e" * 40))
    assert (t.base, t.head) == (c1, c2b)
    # deletion, and a push that brings nothing new
    assert target.push_range(repo.path, "origin", push_line(zero, c2)) is None
    assert target.push_range(repo.path, "origin", push_line(c1, zero)) is None
    assert target.push_range(repo.path, "origin", push_line(c1, c2b)) is None
    # root history: nothing on the remote yet → base is the empty tree
    t = target.push_range(repo.path, "elsewhere", push_line(c2b, zero))
    assert (t.base, t.base_label, t.head) == (EMPTY_TREE_SHA1, "(empty tree)", c2b)
    # a notes ref pushed as such is no code; a branch pushed to a notes name is reviewed
    notes = "refs/notes/ocr-hook"
    assert target.push_range(repo.path, "elsewhere", push_line(c2b, zero, notes)) is None
    t = target.push_range(repo.path, "elsewhere",
                          target.PushLine("refs/heads/main", c2b, notes, zero))
    assert (t.base, t.head) == (EMPTY_TREE_SHA1, c2b)


def test_identical_pushed_ranges_are_reviewed_once_with_all_refs(repo: GitRepo) -> None:
    zero = "0" * 40
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    c2 = repo.commit({"b.py": "b = 1\n"}, "c2")
    lines = [push_line(c2, c1, "refs/heads/main"), push_line(c2, c1, "refs/heads/copy"),
             push_line(zero, c1, "refs/heads/gone")]
    assert target.push_targets(repo.path, "origin", lines) == [
        target.Target("push", c1, c2, c1, c2, refs=("refs/heads/main", "refs/heads/copy"))]


def test_pre_commit_framework_range_and_root_push(repo: GitRepo) -> None:
    c1 = repo.commit({"a.py": "a = 1\n"}, "c1")
    c2 = repo.commit({"b.py": "b = 1\n"}, "c2")
    env = {"PRE_COMMIT_FROM_REF": c1, "PRE_COMMIT_TO_REF": c2,
           "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main", "PRE_COMMIT_REMOTE_NAME": "origin"}
    assert target.pre_commit_push_targets(repo.path, env) == [
        target.Target("push", c1, c2, c1, c2, refs=("refs/heads/main",))]
    root = {"PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main", "PRE_COMMIT_REMOTE_NAME": "origin",
            "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main"}
    assert target.pre_commit_push_targets(repo.path, root) == [
        target.Target("push", EMPTY_TREE_SHA1, c2, "(empty tree)", c2,
                      refs=("refs/heads/main",))]
    with pytest.raises(UsageError, match="unknown commit"):
        target.pre_commit_push_targets(repo.path, {**env, "PRE_COMMIT_FROM_REF": "f" * 40})


def test_snapshot_in_a_linked_worktree_reads_that_worktrees_index(
    repo: GitRepo, tmp_path: Path,
) -> None:
    repo.commit({"a.py": "a = 1\n"}, "init")
    wt = tmp_path / "wt"
    repo.linked_worktree(wt)
    (wt / "w.py").write_text("w = 1\n")
    subprocess.run(["git", "add", "w.py"], cwd=wt, env=repo.env, check=True)
    repo.stage({"main_only.py": "m = 1\n"})
    t = target.staged_snapshot(wt, env_without("GIT_INDEX_FILE"))
    assert [(f.path, f.status) for f in target.load_diff(wt, t)] == [("w.py", "added")]
