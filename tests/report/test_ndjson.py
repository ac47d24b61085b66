"""``--format ndjson`` (spec §11.6): the event lines of :mod:`ocr_hook.report.ndjson`, exact.

Real: the writer and the live stream over real text streams, ``cli.main`` on a real git
repository for a preview and a run with nothing to review. The review with a model is in
tests/e2e/test_ndjson_stream.py.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from ocr_hook.findings import RunWarning
from ocr_hook.report import EVENT_SCHEMA, EventStream, live_writer, to_json
from ocr_hook.report.ndjson import utc_now, write_ndjson
from tests.report.test_formats import sample_result
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo

TS = "2026-12-02T16:00:00.000Z"


def lines_of(text: str) -> list[dict[str, Any]]:
    assert text.endswith("\n")
    return [json.loads(ln) for ln in text.split("\n")[:-1]]


def test_the_stream_of_a_finished_result_is_start_findings_warnings_verdict() -> None:
    result = sample_result()
    result.warnings = [RunWarning("comment_refiled", "app.py", "moved\u2028to line 2")]
    out = io.StringIO()
    EventStream(out, clock=lambda: TS).finish(result)
    text = out.getvalue()
    assert "\u2028" not in text  # a line splitter sees exactly one event per line
    events = lines_of(text)
    data = to_json(result)
    head = {"schema": "ocr-hook.event/1", "ts": TS}
    assert events == [
        {**head, "type": "start", "files": 1,
         "groups": [{"label": "app.py", "files": ["app.py"]}], "model": "m", "preview": False},
        {**head, "type": "finding", "comment": data["comments"][0]},
        {**head, "type": "finding", "comment": data["comments"][1]},
        {**head, "type": "warning", "warning": {"type": "comment_refiled", "file": "app.py",
                                                "message": "moved\u2028to line 2"}},
        {**head, "type": "verdict", "verdict": "findings", "status": "partial",
         "gate": {"mode": "blocking", "fail_on": "high", "blocking": True},
         "summary": data["summary"], "incomplete_reasons": data["incomplete_reasons"],
         "session_id": "s1", "preview": False},
    ]
    assert EVENT_SCHEMA == "ocr-hook.event/1"


def test_live_events_come_from_the_session_records_and_the_end_follows() -> None:
    result = sample_result()
    out = io.StringIO()
    stream = EventStream(out, clock=lambda: TS)
    stream.event("start", {"mode": "staged"})  # not an event of the stream
    stream.event("grouping", {"groups": [{"label": "app.py", "files": ["app.py"]},
                                         {"label": "b.py", "files": ["b.py"]}],
                              "files": 2, "model": "m"})
    stream.event("group_start", {"group": "b.py", "files": ["b.py"]})
    stream.event("llm_response", {"usage": {"input": 1}})
    stream.event("group_done", {"group": "b.py", "stop_reason": "task_done", "reason": "",
                                "round_stop_reasons": ["task_done"], "compressions": 0})
    assert len(out.getvalue().splitlines()) == 3  # written at once, not at the end
    stream.event("group_done", {"group": "app.py", "stop_reason": "timeout",
                                "reason": "timeout"})  # cancelled before it started
    stream.finish(result)
    events = lines_of(out.getvalue())
    assert [(e["type"], e.get("group")) for e in events] == [
        ("start", None), ("group_started", "b.py"), ("group_done", "b.py"),
        ("group_done", "app.py"), ("finding", None), ("finding", None), ("verdict", None)]
    assert events[0]["files"] == 2 and events[0]["model"] == "m"  # the live start, not twice
    assert events[1] == {"schema": EVENT_SCHEMA, "type": "group_started", "ts": TS,
                         "group": "b.py", "files": ["b.py"]}
    assert events[2] == {"schema": EVENT_SCHEMA, "type": "group_done", "ts": TS,
                         "group": "b.py", "stop_reason": "task_done", "reason": "",
                         "done": 1, "total": 2}
    assert (events[3]["done"], events[3]["total"], events[3]["reason"]) == (2, 2, "timeout")


class _Gone(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, s: str) -> int:
        self.writes += 1
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_goes_away_stops_the_stream_and_the_end_raises_its_error() -> None:
    out = _Gone()
    stream = EventStream(out, clock=lambda: TS)
    stream.event("grouping", {"groups": [], "files": 0, "model": "m"})  # never raises
    stream.event("group_start", {"group": "a", "files": []})
    assert out.writes == 1  # nothing more after the first failed write
    with pytest.raises(BrokenPipeError):
        stream.finish(sample_result())
    assert out.writes == 1


def test_a_path_that_is_not_utf8_is_escaped_with_its_bytes_in_base64() -> None:
    result = sample_result()
    result.findings[1] = result.findings[1]._replace(path="caf\udce9.py")  # byte 0xE9
    out = io.StringIO()
    write_ndjson(result, out, {})
    out.getvalue().encode("utf-8")  # strict UTF-8
    comment = lines_of(out.getvalue())[2]["comment"]
    assert (comment["path"], comment["path_bytes_b64"]) == ("caf\\xe9.py", "Y2Fm6S5weQ==")


def test_the_registry_gives_a_live_writer_only_to_ndjson() -> None:
    out = io.StringIO()
    assert isinstance(live_writer("ndjson", out), EventStream)
    assert live_writer("json", out) is None
    ts = utc_now()
    assert len(ts) == 24 and ts[10] == "T" and ts.endswith("Z") and ts[19] == "."


def test_a_preview_and_nothing_to_review_end_with_their_verdict_line(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "ndjson"], {}, capsys)
    events = lines_of(out)
    assert rc == 0, err
    assert [e["type"] for e in events] == ["start", "verdict"]
    assert {k: events[0][k] for k in ("files", "groups", "preview")} == {
        "files": 0, "groups": [], "preview": False}
    assert (events[1]["verdict"], events[1]["status"]) == ("pass", "skipped")
    repo.stage({"app.py": "x = 1\n", "package-lock.json": "{}\n"})
    rc, out, err = run_cli(["review", "--preview", "--format", "ndjson"], {}, capsys)
    events = lines_of(out)
    assert rc == 0, err
    assert [e["type"] for e in events] == ["start", "verdict"]
    assert {k: events[0][k] for k in ("files", "groups", "preview", "will_review")} == {
        "files": 1, "groups": [], "preview": True, "will_review": ["app.py"]}
    data = json.loads(run_cli(["review", "--preview", "--format", "json"], {}, capsys)[1])
    verdict = events[1]
    assert {k: verdict[k] for k in ("verdict", "status", "gate", "incomplete_reasons")} == {
        k: data[k] for k in ("verdict", "status", "gate", "incomplete_reasons")}
    assert verdict["preview"] is True
