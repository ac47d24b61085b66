"""The git wrapper (spec §3.1): list arguments, bytes out, git's stderr in errors, timeouts, the
process limiter and the environment rules. Real git processes in temporary repositories."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from ocr_hook.errors import GitError
from ocr_hook.git import process, repository
from tests.support.gitrepo import GitRepo


def test_stdout_is_returned_as_bytes_and_arguments_are_never_split(repo: GitRepo) -> None:
    repo.commit({"a b.py": "x = 1\n"}, "init")
    out = process.run_git(repo.path, "ls-files", "-z", "--", "a b.py")
    assert out == b"a b.py\0"
    assert process.zsplit(out) == ["a b.py"]


def test_failure_names_the_subcommand_and_carries_gits_first_stderr_line(repo: GitRepo) -> None:
    with pytest.raises(GitError) as e:
        process.run_git(repo.path, "-c", "core.quotePath=false", "rev-parse", "--verify",
                      "no-such-ref")
    assert str(e.value) == "git rev-parse: fatal: Needed a single revision (exit 128)"


def test_accepted_exit_codes_return_code_and_streams(repo: GitRepo) -> None:
    rc, out, err = process.run_git_full(repo.path, "rev-parse", "--verify", "-q", "nope",
                                      ok_codes=(0, 1))
    assert (rc, out, err) == (1, b"", b"")


def test_timeout_is_a_git_error(repo: GitRepo) -> None:
    with pytest.raises(GitError) as e:
        process.run_git(repo.path, "-c", "alias.nap=!sleep 3", "nap", timeout_s=0.3)
    assert str(e.value) == "git nap: timed out after 0.3s"


def test_missing_directory_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"^git status: cannot run git: "):
        process.run_git(tmp_path / "missing", "status")


def test_same_repo_calls_inherit_git_index_file_and_foreign_env_drops_it(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo.commit({"a.py": "a\n"}, "init")
    other = repo.path / ".git" / "other-index"
    repo.git("read-tree", "--empty", env={**repo.env, "GIT_INDEX_FILE": str(other)})
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    assert process.run_git(repo.path, "ls-files") == b""
    assert process.run_git(repo.path, "ls-files", env=process.foreign_env(os.environ)) == b"a.py\n"
    assert "GIT_INDEX_FILE" not in process.foreign_env({"GIT_INDEX_FILE": "x", "GIT_DIR": "y",
                                                     "PATH": "/bin"})
    assert process.foreign_env({"GIT_DIR": "y", "PATH": "/bin", "GIT_EXEC_PATH": "/g"}) == {
        "PATH": "/bin", "GIT_EXEC_PATH": "/g"}


def test_read_commands_do_not_take_optional_locks(repo: GitRepo) -> None:
    repo.commit({"a.py": "a\n"}, "init")
    index = repo.path / ".git" / "index"
    before = index.read_bytes()
    later = time.time() + 100  # a stat change: `git status` would normally rewrite the index
    os.utime(repo.path / "a.py", (later, later))
    process.run_git(repo.path, "status", "--porcelain")
    assert index.read_bytes() == before


def test_diff_output_variables_are_dropped(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    base = repo.commit({"a.py": "".join(f"{i}\n" for i in range(20))}, "init")
    head = repo.commit({"a.py": "".join(f"{i}\n" for i in range(19)) + "x\n"}, "edit")
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=10")
    out = process.run_git(repo.path, "diff", "-U1", base, head).decode()
    assert "@@ -19,2 +19,2 @@" in out


def test_at_most_16_git_processes_run_at_once(repo: GitRepo, tmp_path: Path) -> None:
    """40 threads each start a git process that registers itself in a folder, counts the
    registered processes, waits and unregisters; the highest count seen is the concurrency."""
    live = tmp_path / "live"
    live.mkdir()
    seen = tmp_path / "seen"
    seen.mkdir()
    alias = ("!f() { touch \"$1/$$\"; ls \"$1\" | wc -l > \"$2/$$\"; sleep 0.2; "
             "rm \"$1/$$\"; }; f")
    errors: list[BaseException] = []

    def one() -> None:
        try:
            process.run_git(repo.path, "-c", f"alias.probe={alias}", "probe", str(live), str(seen))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    counts = [int(p.read_text()) for p in seen.iterdir()]
    assert len(counts) == 40
    assert 2 <= max(counts) <= process.MAX_GIT_PROCS == 16


def test_toplevel_from_a_subdirectory_and_outside_a_repository(
    repo: GitRepo, tmp_path: Path,
) -> None:
    sub = repo.path / "pkg" / "inner"
    sub.mkdir(parents=True)
    assert repository.find_toplevel(sub) == repo.path
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(GitError, match=r"^git rev-parse: fatal: not a git repository"):
        repository.find_toplevel(outside)


def test_decode_text_is_utf8_with_replacement_never_the_locale() -> None:
    assert process.decode_text("ünï\n".encode()) == "ünï\n"
    assert process.decode_text(b"caf\xe9") == "caf\ufffd"
