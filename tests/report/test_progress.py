"""Progress and heartbeat on stderr (SPEC §11): stdout carries only the result.

The acceptance test runs one real review whose model answers after 25 s and checks that a
heartbeat line reached stderr while stdout stayed one valid JSON document. Real: git, HTTP
with latency, the heartbeat thread; fake: the model's reply.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time

import pytest

from ocr_hook import cli
from ocr_hook.report.progress import HEARTBEAT_S, Progress
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM


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
        handler.lines[0])
    assert "group b.py done (task_done); 2 finished" in handler.lines
    assert not any("a.py" in ln for ln in handler.lines)  # short reviews stay quiet


def test_start_line_names_files_groups_and_model() -> None:
    from ocr_hook.report.progress import start_line

    assert start_line({"groups": [{"label": "a"}, {"label": "b"}], "files": 3,
                       "model": "gpt-x"}) == "reviewing 3 files in 2 groups with gpt-x…"
    assert start_line({"groups": [{"label": "a"}], "files": 1, "model": ""}) == (
        "reviewing 1 file in 1 group with the model…")


def test_slow_review_prints_a_heartbeat_on_stderr_and_keeps_stdout_json(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Acceptance 4: one scripted reply with 25 s latency (runs ~25 s)."""
    repo.stage({"calc.py": "def div(a, b):\n    return a / b\n"})
    llm.tool_calls(("task_done", {"state": "DONE"}), delay_s=25)
    monkeypatch.chdir(repo.path)
    t0 = time.monotonic()
    rc = cli.main(["review", "--format", "json", "--effort", "low", "--no-cache"],
                  environ={**os.environ, **llm.env()})
    elapsed = time.monotonic() - t0
    out, err = capsys.readouterr()
    assert rc == 0
    assert elapsed >= 25
    data = json.loads(out)  # stdout is exactly one JSON document
    assert data["status"] == "complete" and data["summary"]["llm_calls"] == 1
    beats = [ln for ln in err.splitlines() if ln.startswith("ocr-hook: still reviewing: ")]
    assert beats, err
    # the start line comes first, as soon as the model is asked (issue 19)
    assert err.splitlines()[0] == "ocr-hook: reviewing 1 file in 1 group with scripted-model…"
    assert re.fullmatch(
        r"ocr-hook: still reviewing: 1[5-9]s elapsed, 0 LLM call\(s\), 0 tokens, "
        r"0 group\(s\) done", beats[0])
    assert "still reviewing" not in out
