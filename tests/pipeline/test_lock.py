"""One review per input at a time (spec §10.1): a second run on the same staged snapshot waits
for the first and answers from its cached result; the wait is bounded.

Real: two ``git ocr hook pre-commit`` processes (in a repository and its linked worktree), git,
``fcntl.flock``, the cache on disk, HTTP to the scripted loopback model. Fake: the model's
replies (the first one slow).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_hook.pipeline import lock
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM


def test_a_second_run_on_the_same_snapshot_waits_and_answers_from_the_first(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    wt = tmp_path / "wt"  # a linked worktree shares the lock and the cache (common dir)
    repo.linked_worktree(wt)
    for cwd in (repo.path, wt):
        (cwd / "a.py").write_text("A = 1\n")
        subprocess.run(["git", "add", "a.py"], cwd=cwd, env=repo.env, check=True)
    llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=3.0)
    env = {**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false")}
    cmd = [sys.executable, "-m", "ocr_hook.cli", "hook", "pre-commit", "--format", "json"]
    procs = [subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for cwd in (repo.path, wt)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    first, second = sorted((json.loads(out) for out, _ in outs),
                           key=lambda d: -d["summary"]["llm_calls"])
    assert len(llm.requests) == 1
    assert (first["summary"]["llm_calls"], first["summary"]["cache_hits"]) == (1, 0)
    assert (second["summary"]["llm_calls"], second["summary"]["cache_hits"]) == (0, 1)
    assert (first["status"], second["status"]) == ("complete", "complete")
    assert [w["type"] for w in second["warnings"]] == ["lock_wait"]
    waited = [err for _, err in outs if "waited" in err]
    assert len(waited) == 1 and "for another review of the same changes to finish" in waited[0]


def test_the_wait_for_the_lock_is_bounded(tmp_path: Path) -> None:
    key = lock.lock_key("base", "head")
    locks = tmp_path / "locks"
    with lock.held(locks, key, 1.0) as waited_s:
        assert waited_s < 1.0
        with pytest.raises(lock.LockTimeout) as e, lock.held(locks, key, 0.2):
            pass
    assert str(e.value) == ("another ocr-hook review of the same changes was still running"
                            " after 0s of waiting")
    with lock.held(locks, key, 0.2):  # released when the first block ended
        pass
    assert [p.name for p in locks.iterdir()] == [f"{key[:2]}.lock"]
