"""Caps on what a hostile model can make a review do (spec §6.5): the response body size, the
tool calls per reply, one call's argument size, the tool rounds and the tokens per group. Each
one ends the group as incomplete (not PASS, not cached) after a bounded number of requests;
and a review killed in the middle of a cache write leaves no temporary file behind after the
next run. Real: git repositories, ``cli.main`` and the ``git-ocr`` console script in a
subprocess (its peak RSS measured with ``getrusage`` of a wrapper's children), the scripted
loopback model, which records every request."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.agent.loop import TOOL_ARGS_MAX_CHARS, TOOL_CALLS_PER_TURN_MAX
from ocr_hook.llm.http import RESPONSE_MAX_BYTES
from ocr_hook.pipeline.cache.store import TEST_WRITE_PAUSE_ENV, cache_dir
from tests.support.cli import GIT_OCR, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import Reply, ScriptedLLM, openai_tool_calls

APP = {"app.py": "def div(a, b):\n    return a / b\n"}
FIND = ("file_find", {"query_name": "app"})
RSS_LIMIT_KB = 200 * 1024  # spec §15's memory bar


def review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], *args: str,
           **env: str) -> tuple[int, dict[str, Any], str]:
    monkeypatch.chdir(repo.path)
    return run_json(["review", "--format", "json", "--effort", "low", "--no-filter", *args],
                    llm.env(**env), capsys)


def cached(repo: GitRepo) -> list[Path]:
    return sorted(p for p in cache_dir(repo.path / ".git").rglob("*") if p.is_file())


def assert_incomplete(data: dict[str, Any], reason: str) -> None:
    assert (data["status"], data["verdict"]) == ("failed", "incomplete")
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("app.py", False, reason)]


def test_a_50_mb_response_stays_under_200_mb_and_leaves_the_group_incomplete(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.stage(APP)
    body = (b'{"choices":[{"index":0,"message":{"role":"assistant","content":"'
            + b"A" * (50 * 1024 * 1024) + b'"},"finish_reason":"stop"}]}')
    llm.reply(body, headers={"connection": "close"})  # no length: read until the cap
    # a fresh wrapper process whose only child is the review: its children's peak RSS is the
    # review's (git's short-lived children are far smaller)
    wrapper = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.returncode)\n"
        "sys.stdout.write(p.stdout)\n"
        "sys.stderr.write(p.stderr)\n"
    )
    env = {**repo.env, **llm.env(), "OCR_HOOK_REVIEW_FILTER": "false"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, str(GIT_OCR), "review", "--format",
                           "json", "--effort", "low"], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    rss_kb, rc, out = proc.stdout.split("\n", 2)
    assert int(rss_kb) < RSS_LIMIT_KB, f"peak RSS {int(rss_kb) // 1024} MB"
    assert int(rc) == 0, proc.stderr  # gate.on_error = allow
    data = json.loads(out)
    assert_incomplete(data, "llm_error")
    mib = RESPONSE_MAX_BYTES // (1024 * 1024)
    assert f"LLM response larger than {mib} MiB" in proc.stderr
    assert len(llm.requests) == 1  # not retried: the same request gets the same answer
    assert cached(repo) == []
    assert elapsed < 60


def test_more_tool_calls_in_one_reply_than_the_cap_run_none_of_them(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage(APP)
    llm.reply(openai_tool_calls(*[FIND] * 1000))
    rc, data, err = review(repo, llm, monkeypatch, capsys)
    assert rc == 0
    assert_incomplete(data, "too_many_tool_calls")
    assert len(llm.requests) == 1
    assert (f"the model asked for 1000 tool calls in one reply (at most"
            f" {TOOL_CALLS_PER_TURN_MAX}); none was run") in err
    assert cached(repo) == []
    # at the cap itself, the calls run and the review goes on
    llm.reply(openai_tool_calls(*[FIND] * TOOL_CALLS_PER_TURN_MAX))
    _, data, _ = review(repo, llm, monkeypatch, capsys)
    assert data["status"] == "complete" and len(llm.requests) == 3
    assert sum(m["role"] == "tool" for m in llm.requests[2]["messages"]) == 50


def test_oversized_tool_call_arguments_are_not_run_or_sent_back(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage(APP)
    huge = {"query_name": "x" * (1024 * 1024)}  # 1 MB of arguments (the reply is under 8 MiB)
    llm.reply(openai_tool_calls(("file_find", huge)))
    rc, data, err = review(repo, llm, monkeypatch, capsys)
    assert rc == 0
    assert_incomplete(data, "tool_args_too_large")
    assert len(llm.requests) == 1  # no second request carrying the megabyte back
    assert f"to 'file_find' (at most {TOOL_ARGS_MAX_CHARS}); not run" in err
    assert cached(repo) == []


def test_a_model_looping_on_tools_hits_the_round_cap_and_is_not_cached(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage(APP)
    llm.default = Reply(openai_tool_calls(FIND))  # every reply: one more file_find, for ever
    rc, data, err = review(repo, llm, monkeypatch, capsys, "--max-tools", "4")
    assert rc == 0
    assert_incomplete(data, "max_rounds")
    assert len(llm.requests) == 5  # 4 rounds and the grace round
    assert "NOT REVIEWED: the model reached the tool-round limit without finishing" in err
    assert cached(repo) == []
    review(repo, llm, monkeypatch, capsys, "--max-tools", "4")
    assert len(llm.requests) == 10  # reviewed again, not answered from a cache


def test_the_group_token_cap_stops_the_loop(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage(APP)
    llm.default = Reply(openai_tool_calls(FIND))  # each reply reports 120 tokens
    rc, data, err = review(repo, llm, monkeypatch, capsys,
                           OCR_HOOK_REVIEW_MAX_GROUP_TOKENS="300")
    assert rc == 0
    assert_incomplete(data, "group_tokens")
    assert len(llm.requests) == 3  # 360 tokens ≥ 300 after the third reply
    assert "the group used 360 tokens, over its cap of 300 (review.max_group_tokens)" in err
    assert cached(repo) == []


def test_a_cache_write_killed_with_sigkill_leaves_no_temp_file_after_the_next_run(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage(APP)
    env = {**repo.env, **llm.env(), "OCR_HOOK_REVIEW_FILTER": "false",
           TEST_WRITE_PAUSE_ENV: "30"}  # every cache write stops before its rename
    proc = subprocess.Popen([str(GIT_OCR), "review", "--effort", "low"], cwd=repo.path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root = cache_dir(repo.path / ".git")
    try:
        deadline = time.monotonic() + 30
        while not list(root.rglob("*.part")) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    [part] = list(root.rglob("*.part"))
    assert part.name.startswith(f".tmp-{proc.pid}-")
    rc, data, _ = review(repo, llm, monkeypatch, capsys)
    assert rc == 0 and data["status"] == "complete"
    assert not part.exists()
    assert [p for p in cached(repo) if p.suffix != ".json"] == []
