"""Nothing lost (spec §3.2, §10, §12): a review killed with ``kill -9`` in the middle of
a cache write leaves no torn entry and the next run is correct; a torn cache or
session file is ignored and replaced; Ctrl-C leaves no temporary index, lock or temporary cache
file; the hook entry points never change the index, work tree, refs or stash.

Real: ``git-ocr`` processes, signals, git, the cache and session files, HTTP to the scripted
loopback model. The only test hook is ``OCR_HOOK_TEST_CACHE_WRITE_PAUSE_S``
(ocr_hook/pipeline/cache/store.py), which holds every cache write between its complete temporary
file and the rename."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ocr_hook import cli
from ocr_hook.pipeline.cache.entries import parse_envelope
from ocr_hook.pipeline.cache.store import TEST_WRITE_PAUSE_ENV, cache_dir
from ocr_hook.report.session import sessions_dir
from ocr_hook.report.session_read import read_session_records
from tests.support.cli import GIT_OCR, cli_environ, run_json
from tests.support.gitrepo import GitRepo, init_bare
from tests.support.scripted_llm import ScriptedLLM

BUGGY = "def div(a, b):\n    return a / b\n"
COMMENT = {"comments": [{
    "path": "calc.py", "content": "Division by zero when b is 0.",
    "existing_code": "    return a / b", "suggestion_code": "    return a / b if b else 0",
    "severity": "high", "category": "bug",
}]}


def script_review(llm: ScriptedLLM) -> None:
    llm.tool_calls(("code_comment", COMMENT), ("task_done", {"state": "DONE"}))


def spawn(repo: GitRepo, llm: ScriptedLLM, tmpdir: Path, *args: str,
          **env: str) -> subprocess.Popen[str]:
    tmpdir.mkdir(exist_ok=True)
    full = {**repo.env, **llm.env(), "OCR_HOOK_EFFORT": "low", "OCR_HOOK_REVIEW_FILTER": "false",
            "TMPDIR": str(tmpdir), **env}
    return subprocess.Popen([str(GIT_OCR), *(args or ("review", "--format", "json"))],
                            cwd=repo.path, env=full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(predicate: Any, proc: subprocess.Popen[str], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"process ended early: {proc.communicate()}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"timed out: {proc.communicate()}")


def cache_files(repo: GitRepo) -> list[Path]:
    root = cache_dir(repo.path / ".git")
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def temp_files(repo: GitRepo) -> list[Path]:
    return [p for p in cache_files(repo) if p.name.startswith(".tmp-")]


def whole_entry(path: Path) -> bool:
    """True when ``path`` holds a complete cache entry (a writer may still be filling it)."""
    try:
        return parse_envelope(path.read_bytes()) is not None
    except OSError:
        return False


def finding_spots(data: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    return [(c["path"], c["start_line"], c["end_line"], c["severity"]) for c in data["comments"]]


# -- kill -9 during a cache write ------------------------------------------------------------


def test_review_killed_mid_cache_write_is_followed_by_a_correct_run(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    before = repo.state()
    script_review(llm)
    proc = spawn(repo, llm, tmp_path / "tmp", **{TEST_WRITE_PAUSE_ENV: "30"})
    # the first entry is written in full (the writer pauses before its rename), not renamed;
    # the temporary file exists from mkstemp on, so wait until its content is whole
    [tmp] = wait_for(lambda: [p for p in temp_files(repo) if whole_entry(p)], proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert [p for p in cache_files(repo) if p.suffix == ".json"] == []  # no entry, torn or whole
    assert len(llm.requests) == 1
    # make it worse: a torn entry at the real path (a non-atomic writer, a crashed disk)
    whole = tmp.read_bytes()
    entry = parse_envelope(whole)
    assert entry is not None
    torn = cache_dir(repo.path / ".git") / entry.kind / f"{entry.key}.json"
    torn.write_bytes(whole[: len(whole) // 2])

    # the next run ignores the leftovers, reviews again, answers correctly and repairs the cache
    script_review(llm)
    monkeypatch.chdir(repo.path)
    rc, data, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1
    assert data["status"] == "complete" and data["summary"]["cache_hits"] == 0
    assert finding_spots(data) == [("calc.py", 2, 2, "high")]
    assert len(llm.requests) == 2
    assert getattr(parse_envelope(torn.read_bytes()), "key", None) == entry.key  # replaced, whole
    # ... and the run after that is a cache hit with the same result
    rc, again, _ = run_json(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                            review_filter=False)
    assert rc == 1 and len(llm.requests) == 2
    assert again["summary"]["cache_hits"] == 1
    assert finding_spots(again) == finding_spots(data)
    # the killed run's session log is readable: every line it finished is intact
    assert cli.main(["session", "list"], environ=cli_environ()) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4  # header + 3 runs
    assert repo.state() == before


def test_torn_session_line_is_skipped_by_list_and_show(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    directory = sessions_dir(repo.path / ".git")
    directory.mkdir(parents=True)
    path = directory / "20250101-000000-abcdef.jsonl"
    path.write_text('{"type": "start", "ts": 1, "mode": "staged", "stage": "review"}\n'
                    '{"type": "llm_request", "ts": 2, "gro', encoding="utf-8")
    assert [r["type"] for r in read_session_records(path)] == ["start"]
    monkeypatch.chdir(repo.path)
    assert cli.main(["session", "list"], environ=cli_environ()) == 0
    assert "20250101-000000-abcdef" in capsys.readouterr().out
    assert cli.main(["session", "show", "20250101-000000-abcdef"], environ=cli_environ()) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


# -- Ctrl-C ------------------------------------------------------------------------------------


def _no_leftovers(repo: GitRepo, tmpdir: Path) -> None:
    assert sorted(os.listdir(tmpdir)) == []  # no private index copy (ocr-hook-index-*)
    assert not (repo.path / ".git" / "index.lock").exists()
    assert temp_files(repo) == []


def test_ctrl_c_during_an_llm_call_leaves_no_temp_index_or_lock(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    before = repo.state()
    llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=20)
    tmpdir = tmp_path / "tmp"
    proc = spawn(repo, llm, tmpdir, "hook", "pre-commit")
    wait_for(lambda: llm.requests, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert out == "" and "Traceback" not in err
    assert err.splitlines()[-1] == "ocr-hook: interrupted"
    _no_leftovers(repo, tmpdir)
    assert repo.state() == before


def test_ctrl_c_during_a_cache_write_removes_the_temporary_file(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"calc.py": BUGGY})
    script_review(llm)
    tmpdir = tmp_path / "tmp"
    proc = spawn(repo, llm, tmpdir, **{TEST_WRITE_PAUSE_ENV: "30"})
    wait_for(lambda: temp_files(repo), proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    _no_leftovers(repo, tmpdir)
    assert cache_files(repo) == []


# -- the hook entry points are read-only ---------------------------------------------------------


def test_pre_commit_hook_with_a_temporary_index_changes_nothing(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n", "calc.py": "def div(a, b):\n    return 0\n"}, "init")
    repo.write({"calc.py": BUGGY, "untracked.txt": "x\n"})
    # `git commit -a` reviews a temporary index (GIT_INDEX_FILE) holding the work-tree edit
    commit_index = tmp_path / "next-index.lock"
    shutil.copyfile(repo.path / ".git" / "index", commit_index)
    repo.git("add", "calc.py", env={**repo.env, "GIT_INDEX_FILE": str(commit_index)})
    index_bytes = commit_index.read_bytes()
    before = repo.state()
    script_review(llm)
    monkeypatch.chdir(repo.path)
    rc = cli.main(["hook", "pre-commit"], environ=cli_environ(
        {**llm.env(), "GIT_INDEX_FILE": str(commit_index)}, review_filter=False))
    assert rc == 1, capsys.readouterr().err
    assert '<file path="calc.py"' in llm.requests[0]["messages"][1]["content"]
    assert commit_index.read_bytes() == index_bytes
    assert repo.state() == before


def test_pre_push_hook_changes_nothing(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    remote = tmp_path / "remote.git"
    init_bare(remote, repo.env)
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "origin", "main")
    old = repo.git("rev-parse", "HEAD").strip()
    new = repo.commit({"calc.py": BUGGY}, "add calc")
    repo.write({"calc.py": "def div(a, b):\n    return a // b\n"})  # unstaged edit
    repo.stage({"other.py": "y = 2\n"})  # staged, not committed
    repo.git("stash", "push", "-q", "--", "calc.py")
    before = repo.state()
    script_review(llm)
    tmpdir = tmp_path / "tmp"
    proc = spawn(repo, llm, tmpdir, "hook", "pre-push", "origin", str(remote))
    _, err = proc.communicate(f"refs/heads/main {new} refs/heads/main {old}\n", timeout=60)
    assert proc.returncode == 1, err
    assert '<file path="calc.py"' in llm.requests[0]["messages"][1]["content"]
    assert "other.py" not in json.dumps(llm.requests)
    assert repo.state() == before
    _no_leftovers(repo, tmpdir)
