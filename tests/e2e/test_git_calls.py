"""The git processes of a run (start-up): one ``rev-parse`` answers the run's
questions about the repository, one ``cat-file --batch`` reads the files the settings, rules and
dismissals need at HEAD, a staged snapshot that matches HEAD is not diffed, and a blob the change
set read is not read again to anchor a comment. Pinned as exact command lists, with the cases
that make the answers differ: an unborn HEAD, a linked worktree, a hook's ``GIT_INDEX_FILE``, a
subdirectory as working directory, and commits between two runs of one process.

Real: git behind a logging ``git`` script first on PATH, ``cli.main`` in this process, the
scripted loopback model.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from ocr_hook.change.guidance import GUIDANCE_FILES
from ocr_hook.change.rule_sources import OCR_RULE_FILE, REPO_CONFIG_FILE, SHARED_DISMISSALS
from ocr_hook.comments.dismissals import SHARED_FILE
from ocr_hook.config.load import HEAD_FILES
from ocr_hook.config.models import REPO_FILE
from ocr_hook.git import indexcopy, repository, target
from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

PROBE = ("rev-parse --show-toplevel --git-common-dir --git-path index --revs-only HEAD^{commit}"
         " HEAD^{tree}")
BODY = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(8))


class GitLog:
    """A ``git`` script first on PATH that appends its arguments (one line per process) to a
    log, then runs the real git."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        real = shutil.which("git")
        assert real is not None
        folder.mkdir()
        self.log = folder / "log"
        script = folder / "git"
        script.write_text(f'#!/bin/sh\nprintf "%s\\t%s\\n" "$*" "$GIT_INDEX_FILE" >> "{self.log}"\n'
                          f'exec "{real}" "$@"\n')
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        self.clear()

    def clear(self) -> None:
        self.log.write_text("")

    def commands(self) -> list[str]:
        """Each process as its subcommand and, for rev-parse/cat-file, its arguments."""
        out = []
        for line in self.log.read_text().splitlines():
            words = line.split("\t")[0].split(" ")
            while words[0] == "-c":  # `-c key=value` pins before the subcommand
                words = words[2:]
            sub = words[0]
            out.append(" ".join(words) if sub in ("rev-parse", "cat-file") else sub)
        return out

    def index_files(self, sub: str) -> list[str]:
        """``$GIT_INDEX_FILE`` of each process running subcommand ``sub``."""
        return [line.split("\t")[1] for line in self.log.read_text().splitlines()
                if line.split("\t")[0].split(" ")[0] == sub]


@pytest.fixture
def gitlog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitLog:
    return GitLog(tmp_path / "shim", monkeypatch)


def test_nothing_to_review_runs_three_git_processes(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": BODY, ".ocr-hook.toml": "[gate]\nfail_on = \"low\"\n"}, "init")
    index = (repo.path / ".git" / "index").read_bytes()
    monkeypatch.chdir(repo.path)
    gitlog.clear()
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert (rc, data["files"], data["gate"]["fail_on"], llm.requests) == (0, [], "low", []), err
    # the probe, with .ocr-hook.toml and the rule and dismissal files read alongside; the
    # snapshot (started ahead), equal to HEAD's tree, so no diff
    assert Counter(gitlog.commands()) == Counter([PROBE, "cat-file --batch", "write-tree"])
    assert (repo.path / ".git" / "index").read_bytes() == index


def one_file_change(repo: GitRepo, llm: ScriptedLLM, **also: str) -> None:
    """app.py (and ``also``) committed, then line 30 edited and staged (the first hunk starts
    below line 1, so the change set reads the blob's head for generated-file markers); the
    model files one comment on it and finishes in one reply (one request: the review filter is
    opt-in)."""
    repo.commit({"app.py": BODY, **also}, "init")
    repo.stage({"app.py": BODY.replace("return x + 7", "return x - 7")})
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app.py", "existing_code": "return x - 7", "severity": "low",
        "category": "other", "content": "Subtracts instead of adding."}]}),
        ("task_done", {"state": "DONE"}))


def test_one_file_review_runs_six_git_processes_and_a_cache_hit_the_same(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    one_file_change(repo, llm, **{SHARED_FILE: "not json\n"})
    monkeypatch.chdir(repo.path)
    gitlog.clear()
    args = ["review", "--format", "json", "--effort", "low"]
    rc, data, err = run_json(args, llm.env(), capsys)
    [c] = data["comments"]
    assert (rc, c["path"], c["start_line"], data["summary"]["llm_calls"]) == (0, "app.py", 30, 1)
    # the shared dismissal file was read at HEAD (its error is the proof) without a process
    assert [w["type"] for w in data["warnings"]] == ["dismissals"], data["warnings"]
    expected = Counter({PROBE: 1, "cat-file --batch": 2, "write-tree": 1, "diff": 2})
    # the dismissal file came with the settings, the anchoring read from the change set's blob
    assert Counter(gitlog.commands()) == expected, gitlog.commands()
    gitlog.clear()
    rc, data, err = run_json(args, llm.env(), capsys)
    assert (rc, data["summary"]["cache_hits"], len(llm.requests)) == (0, 1, 1), err
    assert Counter(gitlog.commands()) == expected


def test_unborn_head_reads_files_once_and_diffs_against_the_empty_tree(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert (rc, data["files"]) == (0, []), err
    # the files read alongside the probe are absent: nothing is read again
    assert Counter(gitlog.commands()) == Counter([PROBE, "cat-file --batch", "hash-object",
                                                  "write-tree"])
    repo.stage({"app.py": "x = 1\n"})
    gitlog.clear()
    rc, data, err = run_json(["review", "--preview", "--format", "json"], llm.env(), capsys)
    assert (rc, [(f["path"], f["status"]) for f in data["files"]]) == (0, [("app.py", "added")])
    assert Counter(gitlog.commands()) == Counter({PROBE: 1, "cat-file --batch": 1,
                                                  "hash-object": 1, "write-tree": 1, "diff": 2})


def test_linked_worktree_probe_matches_gits_separate_answers(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": BODY}, "init")
    wt = tmp_path / "wt"
    repo.linked_worktree(wt)
    (wt / "sub").mkdir()
    facts = repository.probe(wt / "sub")
    assert facts.top == wt
    assert facts.common_dir == (repo.path / ".git").resolve()
    assert facts.index == (repo.path / ".git" / "worktrees" / "wt" / "index").resolve()
    assert facts.head == (repo.git("rev-parse", "HEAD").strip(),
                          repo.git("rev-parse", "HEAD^{tree}").strip())
    with repository.run_scope():
        assert repository.find_toplevel(wt / "sub") == wt
        gitlog.clear()
        assert (repository.git_common_dir(wt), repository.git_path(wt, "index"), repository.head_ids(wt)) == (
            facts.common_dir, facts.index, facts.head)
        assert gitlog.commands() == []  # remembered from the probe
    (wt / "app.py").write_text(BODY.replace("return x + 3", "return x - 3"))
    repo.git("-C", str(wt), "add", "app.py")
    monkeypatch.chdir(wt / "sub")
    gitlog.clear()
    rc, data, err = run_json(["review", "--preview", "--format", "json"], llm.env(), capsys)
    assert (rc, [(f["path"], f["will_review"]) for f in data["files"]]) == (0, [("app.py", True)])
    assert Counter(gitlog.commands()) == Counter({PROBE: 1, "cat-file --batch": 2,
                                                  "write-tree": 1, "diff": 2})
    assert repo.git("diff", "--cached", "--name-only") == ""  # the main index untouched


def test_hook_index_file_is_the_snapshot_and_subdirectory_paths_resolve(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``git commit -a`` runs the hook with ``GIT_INDEX_FILE`` naming a temporary index: that
    index is reviewed, not the repository's (which stays empty of the change here)."""
    repo.commit({"app.py": BODY, "pkg/mod.py": "y = 2\n"}, "init")
    alt = repo.path / ".git" / "next-index.lock"
    shutil.copyfile(repo.path / ".git" / "index", alt)
    (repo.path / "pkg" / "mod.py").write_text("y = 3\n")
    repo.git("add", "pkg/mod.py", env={**repo.env, "GIT_INDEX_FILE": str(alt)})
    sub = repo.path / "pkg"
    facts = repository.probe(sub)
    assert (facts.top, facts.common_dir, facts.index) == (
        repo.path, (repo.path / ".git").resolve(), (repo.path / ".git" / "index").resolve())
    monkeypatch.chdir(sub)
    monkeypatch.setenv("GIT_INDEX_FILE", str(alt))
    gitlog.clear()
    rc, data, err = run_json(["review", "--preview", "--format", "json"], llm.env(), capsys)
    assert (rc, [(f["path"], f["status"]) for f in data["files"]]) == (0, [("pkg/mod.py",
                                                                            "modified")]), err
    assert Counter(gitlog.commands()) == Counter({PROBE: 1, "cat-file --batch": 1,
                                                  "write-tree": 1, "diff": 2})
    monkeypatch.delenv("GIT_INDEX_FILE")
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
    assert (rc, data["files"]) == (0, [])  # the repository's own index holds no change


def test_nothing_is_remembered_between_runs_or_outside_a_run(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = repo.commit({"app.py": BODY}, "init")
    monkeypatch.chdir(repo.path)
    assert run_json(["review", "--format", "json"], llm.env(), capsys)[1]["files"] == []
    assert repository.head_ids(repo.path) is None  # the run's scope is over
    second = repo.commit({"app.py": BODY + "z = 1\n", ".ocr-hook.toml": "[gate]\nmode = "
                          "\"advisory\"\n"}, "two")
    assert first != second
    repo.stage({"app.py": BODY + "z = 2\n"})
    rc, data, err = run_json(["review", "--preview", "--format", "json"], llm.env(), capsys)
    assert (rc, data["gate"]["mode"]) == (0, "advisory"), err  # the new HEAD's settings
    assert target.staged_snapshot(repo.path, os.environ).base_label == second
    repository.find_toplevel(repo.path)  # outside a scope: remembers nothing
    third = repo.commit({"app.py": BODY + "z = 2\n"}, "three")
    snap = target.staged_snapshot(repo.path, os.environ)
    assert (snap.base_label, snap.base == snap.head) == (third, True)


def test_head_blobs_reads_every_kind_of_path_in_one_process(
    repo: GitRepo, gitlog: GitLog,
) -> None:
    odd = os.fsdecode(b"caf\xe9.txt")
    (repo.path / "dir").mkdir()
    (repo.path / odd).write_bytes(b"latin\n")
    (repo.path / "line\nbreak.txt").write_bytes(b"nl\n")
    (repo.path / "dir" / "a.txt").write_bytes(b"a\n")
    os.symlink("dir/a.txt", repo.path / "link")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "files")
    gitlog.clear()
    paths = [odd, "dir", "missing.txt", "link", "dir/a.txt"]
    assert repository.head_blobs(repo.path, paths) == [b"latin\n", None, None, b"dir/a.txt", b"a\n"]
    assert gitlog.commands() == ["cat-file --batch"]
    assert repository.head_blobs(repo.path, ["line\nbreak.txt"]) == [b"nl\n"]
    with repository.run_scope():
        repository.find_toplevel(repo.path)
        gitlog.clear()
        assert repository.head_blobs(repo.path, ["dir/a.txt"], prefetch=["link"]) == [b"a\n"]
        assert repository.head_blobs(repo.path, ["link", "dir/a.txt"]) == [b"dir/a.txt", b"a\n"]
        assert gitlog.commands() == ["cat-file --batch"]  # the second call asked nothing


def test_head_files_read_with_the_settings_are_the_ones_the_review_reads() -> None:
    assert HEAD_FILES == (".ocr-hook.toml", OCR_RULE_FILE, SHARED_FILE, *GUIDANCE_FILES)
    assert (REPO_CONFIG_FILE, SHARED_DISMISSALS) == (REPO_FILE, SHARED_FILE)


def test_outside_a_work_tree_the_error_line_is_gits(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": BODY}, "init")
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    rc, _, err = run_cli(["review"], {}, capsys)
    assert (rc, err.strip().splitlines()) == (2, [
        "ocr-hook: git rev-parse: fatal: not a git repository (or any of the parent"
        " directories): .git (exit 128)"])
    monkeypatch.chdir(repo.path / ".git")
    rc, _, err = run_cli(["review"], {}, capsys)
    assert (rc, err.strip().splitlines()) == (2, [
        "ocr-hook: git rev-parse: fatal: this operation must be run in a work tree (exit 128)"])


def test_the_private_index_copy_is_made_in_memory_and_removed(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """write-tree runs on a copy of the index in ``$XDG_RUNTIME_DIR`` (a memory folder on
    systemd machines), else ``/dev/shm``, else the temporary folder; the copy is gone after."""
    repo.commit({"app.py": BODY}, "init")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"],
                             {**llm.env(), "XDG_RUNTIME_DIR": str(run_dir)}, capsys)
    [copy] = gitlog.index_files("write-tree")
    assert (rc, Path(copy).parent, list(run_dir.iterdir())) == (0, run_dir, []), err
    assert Path(copy).name.startswith("ocr-hook-index-")
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "missing")}
    assert indexcopy.scratch_dirs(env) == [
        *(["/dev/shm"] if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else []),
        None]
    assert indexcopy.scratch_dirs({"XDG_RUNTIME_DIR": "relative/run"})[-1] is None


def test_work_started_ahead_gives_its_value_or_error_once_and_ends_with_the_run() -> None:
    calls: list[str] = []

    def slow(value: str) -> str:
        time.sleep(0.05)
        calls.append(value)
        return value

    def broken() -> str:
        raise ValueError("no index")

    repository.start_ahead("a", lambda: slow("outside"))  # outside a run: nothing starts
    assert (repository.take_ahead("a"), calls) == ((False, None), [])
    with repository.run_scope():
        repository.start_ahead("a", lambda: slow("one"))
        repository.start_ahead("a", lambda: slow("two"))  # the same key again: not started
        repository.start_ahead("b", broken)
        repository.start_ahead("c", lambda: slow("never taken"))
        assert repository.take_ahead("a") == (True, "one")
        assert repository.take_ahead("a") == (False, None)  # once
        with pytest.raises(ValueError, match="no index"):
            repository.take_ahead("b")
    assert sorted(calls) == ["never taken", "one"]  # the scope waited for "c"


def test_a_settings_error_wins_over_the_snapshot_started_ahead(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The snapshot runs ahead, but errors come in the order they always did: the settings
    first; and no private index copy is left behind by a run that stopped early."""
    repo.commit({"app.py": BODY}, "init")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.chdir(repo.path)
    env = {**llm.env(), "XDG_RUNTIME_DIR": str(run_dir), "GIT_INDEX_FILE": "missing-index"}
    rc, _, err = run_cli(["review"], {**env, "OCR_HOOK_GATE_MODE": "sometimes"}, capsys)
    assert (rc, err.splitlines()[0].split(" in ")[0]) == (2, "ocr-hook: invalid gate.mode = 'sometimes'")
    rc, _, err = run_cli(["review"], env, capsys)
    assert (rc, err.strip()) == (2, "ocr-hook: GIT_INDEX_FILE='missing-index': no such index file")
    assert list(run_dir.iterdir()) == []


def test_files_read_alongside_the_probe_serve_the_settings_without_another_process(
    repo: GitRepo, gitlog: GitLog, tmp_path: Path,
) -> None:
    repo.commit({".ocr-hook.toml": "[gate]\nmode = \"advisory\"\n", "sub/x.txt": "x\n"}, "init")
    with repository.run_scope():
        assert repository.find_toplevel(repo.path / "sub", head_files=[".ocr-hook.toml", "nope"]) \
            == repo.path
        assert Counter(gitlog.commands()) == Counter([PROBE, "cat-file --batch"])
        assert repository.head_blobs(repo.path, [".ocr-hook.toml", "nope"]) == [
            b"[gate]\nmode = \"advisory\"\n", None]
        assert len(gitlog.commands()) == 2  # no process for the second read
    unborn = GitRepo(tmp_path / "unborn", repo.env)
    gitlog.clear()
    with repository.run_scope():
        repository.find_toplevel(unborn.path, head_files=[".ocr-hook.toml"])
        assert repository.head_blobs(unborn.path, [".ocr-hook.toml"]) == [None]
    assert Counter(gitlog.commands()) == Counter([PROBE, "cat-file --batch"])


def test_an_index_git_cannot_write_is_one_error_from_one_write_tree(
    repo: GitRepo, llm: ScriptedLLM, gitlog: GitLog, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": BODY}, "init")
    missing = "1" * 40  # an index entry whose blob does not exist: write-tree refuses it
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{missing},ghost.py")
    monkeypatch.chdir(repo.path)
    gitlog.clear()
    rc, _, err = run_cli(["review", "--format", "json"], llm.env(), capsys)
    assert rc == 2 and llm.requests == []
    [line] = err.splitlines()
    assert line.startswith("ocr-hook: git write-tree") and missing in line, err
    commands = gitlog.commands()
    assert commands.count("write-tree") == 1  # its error is kept, not asked for again
    assert commands.count("ls-files") == 1  # no unmerged entry: not a conflict
