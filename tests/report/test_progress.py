"""Progress and heartbeat on stderr (spec §11): stdout carries only the result.

The end-to-end test runs one real review whose model is slow to answer and checks that a
heartbeat line reached stderr while stdout stayed one valid JSON document. Real: git, HTTP, the
review pipeline, the heartbeat thread; fake: the model's reply, and the heartbeat's clock and
wait (see the test's docstring).
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import re
import subprocess
import threading
import time

import pytest

from ocr_hook import report
from ocr_hook.report.progress import HEARTBEAT_S, Progress
from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import Hold, ScriptedLLM


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_heartbeat_interval_is_within_the_spec() -> None:
    assert HEARTBEAT_S <= 20


def test_progress_counts_session_records_and_beats_until_stopped() -> None:
    handler = _Lines()
    logger = logging.getLogger("ocr_hook.report.progress")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    clock = iter(range(0, 10**6, 10))  # each clock read advances 10 "seconds"
    try:
        p = Progress(interval_s=0.05, clock=lambda: float(next(clock)))
        with p:
            p.event("llm_response", {"usage": {"input": 100, "output": 20}})
            p.event("group_done", {"group": "a.py", "stop_reason": "task_done"})  # before a beat
            deadline = time.monotonic() + 5
            while not handler.lines and time.monotonic() < deadline:
                time.sleep(0.01)
            p.event("group_done", {"group": "b.py", "stop_reason": "task_done"})
        beats_after_stop = p.beats
        time.sleep(0.2)
        assert p.beats == beats_after_stop  # the thread is gone
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert re.fullmatch(
        r"still reviewing: \d+s elapsed, 1 LLM call\(s\), 120 tokens, 1 group\(s\) done",
        handler.lines[0])  # no grouping record: the number of groups is not known
    assert "group b.py done (task_done): 2 group(s) done" in handler.lines
    assert not any("a.py" in ln for ln in handler.lines)  # short reviews stay quiet


@pytest.mark.parametrize(("labels", "lines"), [
    (["a.py"], ["reviewing 1 file in 1 group with m…"]),  # one group: its result follows
    (["a.py", "b.py"], ["reviewing 2 files in 2 groups with m…",
                        "group a.py done (task_done): 1 of 2 groups done",
                        "group b.py done (max_rounds): 2 of 2 groups done"]),
])
def test_each_group_of_a_multi_group_review_is_reported_as_it_finishes(
    labels: list[str], lines: list[str], caplog: pytest.LogCaptureFixture,
) -> None:
    p = Progress(clock=lambda: 0.0)  # not started: no heartbeat thread
    with caplog.at_level(logging.INFO, logger="ocr_hook.report.progress"):
        p.event("grouping", {"groups": [{"label": lb, "files": [lb]} for lb in labels],
                             "files": len(labels), "model": "m"})
        for lb, stop in zip(labels, ["task_done", "max_rounds"][:len(labels)], strict=True):
            p.event("group_done", {"group": lb, "stop_reason": stop})
    assert caplog.messages == lines
    assert p.heartbeat_line() == (f"still reviewing: 0s elapsed, 0 LLM call(s), 0 tokens,"
                                  f" {len(labels)} of {len(labels)}"
                                  f" group{'s' if len(labels) > 1 else ''} done")


def test_start_line_names_files_groups_and_model() -> None:
    from ocr_hook.report.progress import start_line

    assert start_line({"groups": [{"label": "a"}, {"label": "b"}], "files": 3,
                       "model": "gpt-x"}) == "reviewing 3 files in 2 groups with gpt-x…"
    assert start_line({"groups": [{"label": "a"}], "files": 1, "model": ""}) == (
        "reviewing 1 file in 1 group with the model…")


class OneBeat:
    """The clock and the wait of the review's heartbeat, driven by the scripted model instead
    of time. The thread's first wait returns once the model has been asked and holds its reply,
    with the clock moved on by the whole interval: one heartbeat line, ``15s elapsed``. Its
    second wait lets the model answer and ends the heartbeat. Nothing sleeps: each step waits
    (bounded) for the one before it."""

    def __init__(self, hold: Hold) -> None:
        self.hold = hold
        self.now = 1000.0
        self.waits = 0

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits += 1
        if self.waits == 1 and self.hold.asked.wait(30):
            self.now += seconds
            return False  # due: one heartbeat line while the model holds its reply
        self.hold.release()
        return True  # the heartbeat ends; the review goes on


def test_slow_review_prints_a_heartbeat_on_stderr_and_keeps_stdout_json(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A review whose model is slow shows a heartbeat on stderr and still prints one JSON
    document on stdout.

    The review runs in this process through ``cli.main``, with the ``Progress`` the run builds
    replaced by one that has the test's clock and wait (:class:`OneBeat`) and the default
    interval, ``HEARTBEAT_S``. The model holds its reply until that heartbeat line has been
    logged. So the heartbeat is due "while the model is slow" by construction instead of after
    15 s of real time (this test once waited 25 s for a reply), and the outcome depends on no
    timing at all. The replacement is made with monkeypatch on ``ocr_hook.report.Progress``:
    the heartbeat's clock and wait are reachable from a test only, never from a setting, a flag
    or the environment; the user-visible interval stays HEARTBEAT_S, checked above."""
    repo.stage({"calc.py": "def div(a, b):\n    return a / b\n"})
    hold = Hold()
    llm.tool_calls(("task_done", {"state": "DONE"}), hold=hold)
    beat = OneBeat(hold)
    monkeypatch.setattr(report, "Progress", functools.partial(Progress, clock=beat.clock,
                                                              wait=beat.wait))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache"],
                           llm.env(), capsys)
    assert rc == 0
    assert hold.released.is_set() and beat.waits == 2  # the beat came while the model held on
    data = json.loads(out)  # stdout is exactly one JSON document
    assert data["status"] == "complete" and data["summary"]["llm_calls"] == 1
    beats = [ln for ln in err.splitlines() if ln.startswith("ocr-hook: still reviewing: ")]
    # one beat, one interval (HEARTBEAT_S) after the start on the test's clock
    assert beats == ["ocr-hook: still reviewing: 15s elapsed, 0 LLM call(s), 0 tokens,"
                     " 0 of 1 group done"], err
    # the start line comes first, as soon as the model is asked
    assert err.splitlines()[0] == "ocr-hook: reviewing 1 file in 1 group with scripted-model…"
    assert "still reviewing" not in out


def three_files(repo: GitRepo) -> list[str]:
    """Stage three new files of 70 lines each: 210 changed lines in fewer than four files, so
    one group per file (``agent.grouping.strategy``: ``per_file``), no grouping call."""
    names = ["a.py", "b.py", "c.py"]
    repo.stage({n: "".join(f"v{i} = {i}\n" for i in range(70)) for n in names})
    return names


class InTurn:
    """The clock and the wait of the review's heartbeat, driven by a model that holds each
    group's reply (``holds``, one per group, asked in group order at concurrency 1). Before each
    heartbeat line the thread waits until the next group's request has arrived and moves the
    clock on by the interval; at its next wait it lets that reply go. So the log reads: beat,
    the group it saw asked finishes, beat, the next one finishes… each line exactly where it
    belongs and every number fixed. Nothing sleeps; each step waits (bounded) for the one
    before it."""

    def __init__(self, holds: list[Hold]) -> None:
        self.holds = holds
        self.now = 1000.0
        self.waits = 0
        self.asked_in_time = True

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        if self.waits:
            self.holds[self.waits - 1].release()  # the group asked before the last beat
        self.waits += 1
        if self.waits > len(self.holds):
            return True  # every reply is on its way: the heartbeat ends
        self.asked_in_time &= self.holds[self.waits - 1].asked.wait(30)
        self.now += seconds
        return False


def test_groups_are_reported_as_they_finish_with_k_of_n(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three groups at concurrency 1, each reply held until the heartbeat after its request:
    each "group … done" line comes as its group finishes, between the heartbeats, with its
    "k of 3" — not all together at the end, after the merge. The heartbeat's clock and wait
    are the test's (:class:`InTurn`, see ``OneBeat`` above for why)."""
    names = three_files(repo)
    holds = [Hold() for _ in names]
    for h in holds:
        llm.tool_calls(("task_done", {"state": "DONE"}), hold=h)
    beat = InTurn(holds)
    monkeypatch.setattr(report, "Progress", functools.partial(Progress, clock=beat.clock,
                                                              wait=beat.wait))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache",
                            "--concurrency", "1"], llm.env(), capsys)
    assert rc == 0 and beat.asked_in_time, err
    data = json.loads(out)
    assert data["status"] == "complete" and data["summary"]["llm_calls"] == 3
    assert [g["label"] for g in data["groups"]] == names  # results stay in group order
    assert err.splitlines() == [
        "ocr-hook: reviewing 3 files in 3 groups with scripted-model…",
        "ocr-hook: still reviewing: 15s elapsed, 0 LLM call(s), 0 tokens, 0 of 3 groups done",
        "ocr-hook: group a.py done (task_done): 1 of 3 groups done",
        "ocr-hook: still reviewing: 30s elapsed, 1 LLM call(s), 120 tokens, 1 of 3 groups done",
        "ocr-hook: group b.py done (task_done): 2 of 3 groups done",
        "ocr-hook: still reviewing: 45s elapsed, 2 LLM call(s), 240 tokens, 2 of 3 groups done",
        "ocr-hook: group c.py done (task_done): 3 of 3 groups done",
    ]


def test_whole_review_prints_a_group_done_line_before_the_last_group_is_asked(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """A real ``git ocr review`` process, three groups at concurrency 1, every reply 0.2 s
    late. The second group's reply is also held: while it is, the third group's request
    cannot have been sent, and the first group's "done" line must already be on stderr (before,
    every line came after the last group, at the merge). The session log agrees: group a.py's
    ``group_done`` is written before group c.py's first ``llm_request``. Real: git, the process,
    HTTP, the pipeline's threads; fake: the model."""
    names = three_files(repo)
    hold = Hold(limit_s=60)
    for h in (None, hold, None):
        llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=0.2, hold=h)
    proc = subprocess.Popen(
        [str(GIT_OCR), "review", "--format", "json", "--effort", "low", "--no-cache",
         "--concurrency", "1"], cwd=repo.path, env=cli_environ(llm.env()),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for ln in proc.stderr:
            lines.put(ln.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    err: list[str] = []
    try:
        assert hold.asked.wait(30)  # the second group has been asked
        deadline = time.monotonic() + 20  # well before the hold gives up by itself (60 s)
        while not (first_done := any(ln.startswith("ocr-hook: group a.py done") for ln in err)):
            try:
                ln = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if ln is None:
                break
            err.append(ln)
        with llm.lock:
            asked = len(llm.requests)
        hold.release()
        assert proc.stdout is not None
        out = proc.stdout.read()
        rc = proc.wait(timeout=30)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the first group's line came while the last group was still to be asked
    assert (first_done, asked) == (True, 2), err
    while (ln := lines.get(timeout=10)) is not None:
        err.append(ln)
    assert rc == 0, err
    assert json.loads(out)["summary"]["llm_calls"] == 3
    assert [ln for ln in err if "still reviewing" not in ln] == [
        "ocr-hook: reviewing 3 files in 3 groups with scripted-model…",
        *(f"ocr-hook: group {n} done (task_done): {k} of 3 groups done"
          for k, n in enumerate(names, 1)),
    ]
    [path] = (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    order = [(r["type"], r.get("group")) for r in rows
             if r["type"] in ("group_done", "llm_request")]
    assert order == [(kind, n) for n in names for kind in ("llm_request", "group_done")]
