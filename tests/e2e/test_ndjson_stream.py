"""``--format ndjson`` on a real review (spec §11.6): a ``git ocr review`` process over three
groups streams its events as they happen, every line parses, the types come in the exact
order, and the verdict, findings and warnings equal those of ``--format json`` on the same
input. Also through ``--output FILE`` and a pre-commit hook.

Real: git, the ``git-ocr`` process, HTTP, the pipeline's threads. Fake: the model (the loopback
:class:`ScriptedLLM`, each reply matched to its group by the group's file content).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import Hold, ScriptedLLM, openai_tool_calls

FLAGS = ["--effort", "low", "--no-cache", "--concurrency", "1"]
NAMES = ["a.py", "b.py", "c.py"]
WORDS = {"a.py": "alpha", "b.py": "beta", "c.py": "gamma"}


def stage_three(repo: GitRepo) -> None:
    """Three new files of 70 lines each, ``<word>_<i> = <i>``: one group per file
    (``per_file`` grouping, no grouping call), each told apart by its word."""
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({n: "".join(f"{w}_{i} = {i}\n" for i in range(70)) for n, w in WORDS.items()})


def comment(path: str, quote: str, severity: str, content: str) -> dict[str, Any]:
    return {"path": path, "content": content, "existing_code": quote, "severity": severity,
            "category": "bug", "suggestion_code": ""}


def script(llm: ScriptedLLM, hold: Hold | None = None) -> None:
    """One review's replies: a.py files a high finding and one on README.md (outside the
    change: a ``comment_outside_change`` warning), b.py none (its reply held by ``hold``),
    c.py a low finding."""
    llm.reply(openai_tool_calls(("code_comment", {"comments": [
        comment("a.py", "alpha_3 = 3", "high", "alpha_3 shadows the loop variable."),
        comment("README.md", "hello", "low", "Say more than hello.")]})), match="alpha_")
    llm.reply(openai_tool_calls(("task_done", {"state": "DONE"})), match="alpha_")
    llm.reply(openai_tool_calls(("task_done", {"state": "DONE"})), match="beta_", hold=hold,
              delay_s=0.1)
    llm.reply(openai_tool_calls(("code_comment", {"comments": [
        comment("c.py", "gamma_7 = 7", "low", "gamma_7 is never read.")]})), match="gamma_")
    llm.reply(openai_tool_calls(("task_done", {"state": "DONE"})), match="gamma_")


def parse(text: str) -> list[dict[str, Any]]:
    assert text.endswith("\n")
    return [json.loads(ln) for ln in text.split("\n")[:-1]]


EXPECTED_TYPES = ["start", *(t for _ in NAMES for t in ("group_started", "group_done")),
                  "finding", "finding", "warning", "verdict"]


def check_against_json(events: list[dict[str, Any]], data: dict[str, Any]) -> None:
    """The ndjson events of a review equal the JSON object of the same review."""
    assert [e["type"] for e in events] == EXPECTED_TYPES
    assert {e["schema"] for e in events} == {"ocr-hook.event/1"}
    stamps = [e["ts"] for e in events]
    assert stamps == sorted(stamps) and all(len(t) == 24 and t.endswith("Z") for t in stamps)
    start = events[0]
    assert (start["files"], start["groups"], start["model"]) == (
        3, data["groups"], "scripted-model")
    groups = events[1:7]
    assert [(e["type"], e["group"]) for e in groups] == [
        (t, n) for n in NAMES for t in ("group_started", "group_done")]
    assert [(e["stop_reason"], e["reason"], e["done"], e["total"]) for e in groups[1::2]] == [
        ("task_done", "", k, 3) for k in (1, 2, 3)]
    assert [e["files"] for e in groups[0::2]] == [[n] for n in NAMES]
    assert [e["comment"] for e in events if e["type"] == "finding"] == data["comments"]
    assert [(c["path"], c["start_line"], c["severity"]) for c in data["comments"]] == [
        ("a.py", 4, "high"), ("c.py", 8, "low")]
    assert [e["warning"] for e in events if e["type"] == "warning"] == data["warnings"]
    assert [w["type"] for w in data["warnings"]] == ["comment_outside_change"]
    verdict = events[-1]
    same = ("verdict", "status", "gate", "incomplete_reasons")
    assert {k: verdict[k] for k in same} == {k: data[k] for k in same}
    assert (verdict["verdict"], verdict["status"]) == ("findings", "complete")
    summary = {k: v for k, v in verdict["summary"].items() if k != "elapsed_ms"}
    assert summary == {k: v for k, v in data["summary"].items() if k != "elapsed_ms"}
    assert summary["llm_calls"] == 5 and summary["comments"] == 2


def json_review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
                capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    script(llm)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", *FLAGS], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_events_stream_as_they_happen_and_match_the_json_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """While b.py's reply is held, c.py cannot have been asked: a.py's ``group_done`` line
    must already be on stdout by then."""
    stage_three(repo)
    data = json_review(repo, llm, monkeypatch, capsys)
    asked_before = len(llm.requests)
    hold = Hold(limit_s=60)
    script(llm, hold)
    env = cli_environ(llm.env(), review_filter=False)
    env.pop("PYTHONUNBUFFERED", None)  # stdout is a pipe, block-buffered: the stream flushes
    proc = subprocess.Popen(
        [str(GIT_OCR), "review", "--format", "ndjson", *FLAGS], cwd=repo.path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for ln in proc.stdout:
            lines.put(ln)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        assert hold.asked.wait(30)  # b.py has been asked; c.py cannot be yet
        deadline = time.monotonic() + 20
        while not any('"type":"group_done","ts"' in ln and '"group":"a.py"' in ln
                      for ln in seen):
            ln = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert ln is not None
            seen.append(ln)
        with llm.lock:
            asked = len(llm.requests) - asked_before
        hold.release()
        while (ln := lines.get(timeout=30)) is not None:
            seen.append(ln)
        rc = proc.wait(timeout=30)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert asked == 3, err  # a.py's two requests and b.py's: c.py still to come
    assert rc == 1, err
    check_against_json(parse("".join(seen)), data)


def test_output_file_and_a_pre_commit_hook_get_the_same_events(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    stage_three(repo)
    data = json_review(repo, llm, monkeypatch, capsys)
    dest = tmp_path / "events.ndjson"
    script(llm)
    rc, out, err = run_cli(["review", "--format", "ndjson", "--output", str(dest), *FLAGS],
                           llm.env(), capsys, review_filter=False)
    assert (rc, out) == (1, ""), err
    check_against_json(parse(dest.read_text("utf-8")), data)
    script(llm)
    rc, out, err = run_cli(["hook", "pre-commit", "--format", "ndjson", *FLAGS], llm.env(),
                           capsys, review_filter=False)
    assert rc == 1, err
    check_against_json(parse(out), data)


def test_a_result_served_from_the_cache_streams_start_findings_and_verdict(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The second run of the same input is a whole-run cache hit: no group ran, so no group
    lines; the start comes at the end with the cached groups, the findings and warning are
    the first run's, and the verdict counts the hit."""
    stage_three(repo)
    script(llm)
    monkeypatch.chdir(repo.path)
    flags = ["review", "--format", "ndjson", "--effort", "low", "--concurrency", "1"]
    rc, out, err = run_cli(flags, llm.env(), capsys, review_filter=False)
    first = parse(out)
    assert rc == 1 and [e["type"] for e in first] == EXPECTED_TYPES, err
    asked = len(llm.requests)
    rc, out, err = run_cli(flags, llm.env(), capsys, review_filter=False)
    events = parse(out)
    assert rc == 1, err
    assert len(llm.requests) == asked  # no model call
    assert [e["type"] for e in events] == ["start", "finding", "finding", "warning", "verdict"]
    assert (events[0]["files"], events[0]["groups"]) == (3, first[0]["groups"])
    assert [e["comment"] for e in events[1:3]] == [e["comment"] for e in first[7:9]]
    assert events[3]["warning"] == first[9]["warning"]  # the cached comments' warning
    assert (events[-1]["verdict"], events[-1]["summary"]["cache_hits"]) == ("findings", 1)


def test_a_reader_that_goes_away_after_the_first_line_leaves_the_gate_exit_code(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """``git ocr review --format ndjson | head -1``: the reader closes the pipe after the
    start line, while b.py's reply is held; the review finishes and exits with the gate's 1,
    and says nothing about the pipe on stderr."""
    stage_three(repo)
    hold = Hold(limit_s=60)
    script(llm, hold)
    env = cli_environ(llm.env(), review_filter=False)
    env.pop("PYTHONUNBUFFERED", None)
    proc = subprocess.Popen(
        [str(GIT_OCR), "review", "--format", "ndjson", *FLAGS], cwd=repo.path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        proc.stdout.close()
        assert hold.asked.wait(30)
        hold.release()
        rc = proc.wait(timeout=60)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert first["type"] == "start"
    assert rc == 1, err
    assert "Traceback" not in err and "Broken pipe" not in err and "stdout" not in err, err
    assert "blocking findings: 1 at or above high" in err
