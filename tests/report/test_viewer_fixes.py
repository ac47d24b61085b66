"""The session viewer (spec §12.1) with session files a user or another tool may leave: wrong
types in the ``result`` record, a name that is not UTF-8, control characters in findings, a
FIFO, marks of ids that match no finding, a corrupt marks file, other HTTP methods; and what
the marks do to the personal dismissal store, through a real ``git ocr session serve``.

Real: the viewer's HTTP server on loopback, http.client, the session files on disk, git, the
review and the scripted model (loopback) for the end-to-end marks.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from ocr_hook import cli
from ocr_hook.report import Viewer, list_sessions, render_html
from ocr_hook.report.session_read import normalise_report
from ocr_hook.report.viewer import MARKS_NOTE
from tests.report.test_viewer import parsed, request, reviewed, server  # noqa: F401 (fixtures)
from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo

SID = "20261203-120000-abcdef"
FID = "0123456789abcdef"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def result_record(**changes: Any) -> dict[str, Any]:
    """A ``result`` record as a review writes it: one finding on line 2 of a.py, its diff."""
    report: dict[str, Any] = {
        "status": "ok", "verdict": "blocked", "session_id": SID,
        "gate": {"mode": "blocking", "fail_on": "high", "blocking": True},
        "input": {"mode": "staged", "base": "HEAD", "head": "index"},
        "llm": {"model": "m1"},
        "summary": {"files_reviewed": 1, "comments": 1, "llm_calls": 2, "elapsed_ms": 1500},
        "comments": [{"id": FID, "path": "a.py", "side": "new", "start_line": 2,
                      "end_line": 2, "severity": "high", "category": "bug",
                      "content": "Off by one.", "existing_code": "y = 2",
                      "suggestion_code": "y = 1"}],
        "files": [{"path": "a.py", "status": "modified", "reviewed": True, "reason": ""}],
        "dismissed": [],
    }
    diff = {"status": "modified", "old_path": "a.py", "new_path": "a.py", "insertions": 1,
            "deletions": 0, "hunks": [[1, 1, 1, 2, "@@ -1 +1,2 @@",
                                       [[" ", "x = 1", 1, 1], ["+", "y = 2", None, 2]]]]}
    rec: dict[str, Any] = {"type": "result", "ts": 1764763200, "report": report,
                           "diffs": [diff], "verdict_line": "BLOCKED: 1 high finding"}
    for dotted, value in changes.items():  # "report.summary" = value
        *parents, last = dotted.split(".")
        target = rec
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return rec


def write_session(directory: Path, result: dict[str, Any] | None, name: str = SID) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    recs = [{"type": "start", "ts": 1764763200, "stage": "pre-commit", "model": "m1"},
            *([result] if result else []),
            {"type": "end", "status": "ok", "verdict": "blocked", "findings": 1, "llm_calls": 2}]
    path = directory / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in recs),
                    encoding="utf-8")
    return path


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[Viewer]:
    v = Viewer(tmp_path / "sessions", tmp_path / "marks.json", lambda fid, reason: "")
    threading.Thread(target=v.serve_forever, daemon=True).start()
    yield v
    v.close()


def get(v: Viewer, path: str) -> tuple[int, dict[str, str], str]:
    return request(f"http://127.0.0.1:{v.port}{path}?t={v.token}")


def post_mark(v: Viewer, **form: str) -> tuple[int, dict[str, str], str]:
    return request(f"http://127.0.0.1:{v.port}/mark?t={v.token}", "POST", urlencode(form), FORM)


BAD_FIELDS = [
    {"report.comments.0.severity": {}}, {"report.summary": None}, {"report.files": "abc"},
    {"report.gate": "x"}, {"report.input": 5}, {"report.llm": []},
    {"report.comments": {"a": 1}}, {"diffs.0.hunks": [[1, 2]]},
    {"diffs.0.hunks.0.0": float("nan")}, {"report.dismissed": [5, {"id": {}, "start_line": "x"}]},
    {"report.comments.0.start_line": "2", "report.comments.0.id": 7},
    {"diffs.0.hunks.0.5": [["?", "z", 1, 1], [" ", 5, 1, 1]], "diffs.0.insertions": "1"},
]


@pytest.mark.parametrize("changes", BAD_FIELDS, ids=[",".join(c) for c in BAD_FIELDS])
def test_a_result_record_with_wrongly_typed_fields_renders_them_as_missing(
    viewer: Viewer, changes: dict[str, Any], repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_session(viewer.directory, result_record(**changes))
    status, _, page = get(viewer, f"/session/{SID}")
    assert status == 200, page
    assert 'id="verdict">BLOCKED: 1 high finding</p>' in page
    assert 'id="conversation"' in page
    # `git ocr session show ID --html` reads the record the same way
    sessions = repo.path / ".git" / "ocr-hook" / "sessions"
    write_session(sessions, result_record(**changes))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["session", "show", SID, "--html"], {}, capsys)
    assert (rc, err) == (0, "")
    assert out.startswith("<!DOCTYPE html>") and "internal error" not in out


def test_wrong_types_count_as_missing_with_their_defaults() -> None:
    data = normalise_report(result_record(**{
        "report.summary": None, "report.gate": "x", "report.input": 5, "report.llm": [],
        "report.comments.0.severity": {}, "report.comments.0.end_line": float("nan"),
        "report.files": "abc"})["report"])
    assert data["summary"]["files_reviewed"] == 0 and data["summary"]["elapsed_ms"] == 0
    assert data["gate"] == {"mode": "", "fail_on": "", "blocking": False}
    assert data["input"] == {"mode": "", "base": "", "head": ""}
    assert data["llm"] == {"model": ""} and data["files"] == []
    [c] = data["comments"]
    assert (c["severity"], c["start_line"], c["end_line"], c["id"]) == ("", 2, 0, FID)


def test_an_unexpected_error_is_a_500_page_of_one_line_logged_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("store exploded")

    v = Viewer(tmp_path / "sessions", tmp_path / "marks.json", lambda fid, reason: "",
               dismissed=broken)
    write_session(v.directory, result_record())
    threading.Thread(target=v.serve_forever, daemon=True).start()
    try:
        status, head, page = get(v, f"/session/{SID}")
    finally:
        v.close()
    assert status == 500 and head["cache-control"] == "no-store"
    assert "<p>internal error: RuntimeError: store exploded</p>" in page
    err = capsys.readouterr().err
    assert err == (f"ocr-hook: viewer: GET /session/{SID}: internal error: RuntimeError:"
                   " store exploded\n")


def test_a_session_file_name_that_is_not_utf8_is_listed_and_opens(viewer: Viewer) -> None:
    write_session(viewer.directory, result_record())
    raw = os.fsencode(viewer.directory) + b"/n\xffu.jsonl"
    with open(raw, "wb") as fh:
        fh.write((viewer.directory / f"{SID}.jsonl").read_bytes())
    status, _, listing = get(viewer, "/")
    assert status == 200
    assert f'<a href="/session/n%FFu?t={viewer.token}">n\\xffu</a>' in listing
    status, _, page = get(viewer, "/session/n%FFu")
    assert status == 200 and "BLOCKED: 1 high finding" in page


def test_control_and_bidi_characters_are_spelled_out_on_the_review_pages(viewer: Viewer) -> None:
    evil = "a\u202eb\x07c\u2028d"
    write_session(viewer.directory, result_record(**{
        "report.comments.0.content": evil, "report.comments.0.suggestion_code": evil,
        "report.comments.0.category": evil}))
    status, _, page = get(viewer, f"/session/{SID}")
    spelled = "a\\u202eb\\u0007c\\u2028d"
    assert status == 200
    assert f'<div class="msg">{spelled}</div>' in page
    assert f'<pre class="sugg">{spelled}</pre>' in page
    assert f"[{spelled}] {spelled}</li>" in page  # the findings index
    assert not any(ch in page for ch in "\u202e\x07\u2028")
    # the static `--format html` page: the same writer
    static = render_html(normalise_report(result_record(
        **{"report.comments.0.content": evil})["report"]), [], "BLOCKED")
    assert f'<div class="msg">{spelled}</div>' in static and "\u202e" not in static


def test_the_summary_line_wraps_between_items(viewer: Viewer) -> None:
    write_session(viewer.directory, result_record())
    page = get(viewer, f"/session/{SID}")[2]
    assert ('<p class="meta"><span>gate: blocking, fail on high</span> <span>status: ok</span>'
            ' <span>input: staged HEAD..index</span> <span>model: m1</span>') in page


def test_a_mark_needs_the_full_id_of_a_finding_of_that_session(viewer: Viewer) -> None:
    write_session(viewer.directory, result_record())
    write_session(viewer.directory, None, "20261203-130000-fedcba")
    cases = [
        ({"session": SID, "id": "ffffffffffffffff", "mark": "accepted"},
         f"no finding &#x27;ffffffffffffffff&#x27; in session {SID}"),
        ({"session": SID, "id": FID[:8], "mark": "accepted"},
         f"no finding &#x27;{FID[:8]}&#x27; in session {SID}"),
        ({"session": "20261203-130000-fedcba", "id": FID, "mark": "accepted"},
         "no finding &#x27;0123456789abcdef&#x27; in session 20261203-130000-fedcba"),
        ({"session": SID[:15], "id": FID, "mark": "false-positive"},
         "give the full session id, not &#x27;20261203-120000&#x27;"),
    ]
    for form, message in cases:
        status, _, body = post_mark(viewer, **form)
        assert (status, message in body) == (400, True), (form, body)
    assert not viewer.marks_file.exists()
    status, head, _ = post_mark(viewer, session=SID, id=FID, mark="accepted")
    assert status == 303 and head["location"].endswith(f"#finding-{FID}")
    assert json.loads(viewer.marks_file.read_text())["marks"][FID]["mark"] == "accepted"


@pytest.mark.parametrize("content", ["{not json", '{"version": 2, "marks": {}}', "[]"])
def test_a_corrupt_or_newer_marks_file_is_refused_not_overwritten(
    tmp_path: Path, content: str,
) -> None:
    dismissed: list[str] = []
    v = Viewer(tmp_path / "sessions", tmp_path / "marks.json",
               lambda fid, reason: dismissed.append(fid) or "")  # type: ignore[func-returns-value]
    write_session(v.directory, result_record())
    v.marks_file.write_text(content, encoding="utf-8")
    threading.Thread(target=v.serve_forever, daemon=True).start()
    try:
        status, _, body = post_mark(v, session=SID, id=FID, mark="false-positive")
    finally:
        v.close()
    assert status == 409 and f"mark not stored: {v.marks_file}" in body
    assert body.count("<p>") == 1
    assert v.marks_file.read_text(encoding="utf-8") == content and dismissed == []


def test_other_methods_get_405_with_the_same_headers(viewer: Viewer) -> None:
    for method in ("HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"):
        status, head, body = request(f"http://127.0.0.1:{viewer.port}/?t={viewer.token}",
                                     method)
        assert status == 405, method
        assert head["allow"] == "GET, POST" and head["cache-control"] == "no-store"
        assert head["content-security-policy"].startswith("default-src 'none'")
        assert (body == "") == (method == "HEAD")


def test_a_fifo_in_the_sessions_folder_is_skipped(viewer: Viewer, repo: GitRepo) -> None:
    write_session(viewer.directory, result_record())
    os.mkfifo(viewer.directory / "20990202-000000-f1f0f1.jsonl")
    assert [s.id for s in list_sessions(viewer.directory)] == [SID]
    status, _, listing = get(viewer, "/")
    assert status == 200 and "20990202" not in listing
    assert get(viewer, "/session/20990202-000000-f1f0f1")[0] == 404
    sessions = repo.path / ".git" / "ocr-hook" / "sessions"
    write_session(sessions, result_record())
    os.mkfifo(sessions / "20990202-000000-f1f0f1.jsonl")
    # listed without it; the prefix "20" names one session (the FIFO is no session)
    for args, shown in ((["session", "list"], SID), (["session", "show", "20"], "BLOCKED: 1")):
        p = subprocess.run([str(GIT_OCR), *args], cwd=repo.path, env=cli_environ(),
                           capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stderr) == (0, "")
        assert shown in p.stdout and "20990202" not in p.stdout


def test_the_page_explains_the_marks_and_the_help_names_serve(
    viewer: Viewer, capsys: pytest.CaptureFixture[str],
) -> None:
    write_session(viewer.directory, result_record())
    page = get(viewer, f"/session/{SID}")[2]
    assert f'<p class="note" id="marks-note">{MARKS_NOTE}</p>' in page
    assert "<code>git ocr dismiss --undo ID</code>" in MARKS_NOTE
    rc, out, _ = run_cli(["session", "serve", "-h"], {}, capsys)
    assert rc == 0
    assert "Serve the recorded review sessions on 127.0.0.1 until Ctrl-C" in " ".join(out.split())
    rc, out, _ = run_cli(["-h"], {}, capsys)
    assert rc == 0
    assert "list, show, compare review sessions or serve them in a local viewer" in " ".join(
        out.split())


def test_open_without_a_browser_says_so(repo: GitRepo) -> None:
    env = {k: v for k, v in cli_environ().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["BROWSER"] = "/nonexistent/browser"
    proc = subprocess.Popen([str(GIT_OCR), "session", "serve", "--open"], cwd=repo.path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        assert proc.stderr.readline() == "serving the session viewer; Ctrl-C stops it\n"
        assert proc.stderr.readline() == ("ocr-hook: no browser could be opened; open the URL"
                                          " above yourself\n")
    finally:
        proc.kill()
        proc.wait()


def test_marks_follow_the_dismissal_store_and_accepted_undoes_a_false_positive(
    reviewed: tuple[GitRepo, dict[str, str], Any],  # noqa: F811
    server: tuple[subprocess.Popen[str], str],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, env, _ = reviewed
    _, url = server
    u = urlsplit(url)
    base, token = f"http://127.0.0.1:{u.port}", u.query.removeprefix("t=")
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    [form] = parsed(request(f"{base}/session/{sid}?t={token}")[2]).forms
    fid = form["hidden"]["id"]  # type: ignore[index]
    store = repo.path / ".git" / "ocr-hook" / "dismissed.json"

    def mark(value: str) -> str:
        body = urlencode({**form["hidden"], "mark": value})  # type: ignore[dict-item]
        assert request(f"{base}/mark?t={token}", "POST", body, FORM)[0] == 303
        box = request(f"{base}/session/{sid}?t={token}")[2]
        return box[box.index(f'id="finding-{fid}"'):].split("</form>")[0]

    assert '<span class="marked fp">marked: false positive (dismissed)</span>' in mark(
        "false-positive")
    # undone on the command line: the page follows the store, not the marks file
    rc, out, _ = run_cli(["dismiss", "--undo", fid], env, capsys)
    assert rc == 0 and out.startswith("undone: ")
    box = request(f"{base}/session/{sid}?t={token}")[2]
    assert "marked:" not in box[box.index(f'id="finding-{fid}"'):].split("</form>")[0]
    # false positive, then accepted: the dismissal is removed again and the page says so
    mark("false-positive")
    assert len(json.loads(store.read_text())["dismissed"]) == 1
    assert ('<span class="marked">marked: accepted (its false-positive dismissal undone)'
            "</span>") in mark("accepted")
    assert json.loads(store.read_text())["dismissed"] == []
    marks = json.loads((repo.path / ".git" / "ocr-hook" / "marks.json").read_text())
    assert marks["marks"][fid]["mark"] == "accepted"
    assert marks["marks"][fid]["undone"] == "false positive"
    assert cli.main(["review"], environ=env) == 1  # the next review blocks on it again


def test_the_session_list_reads_the_start_and_the_tail_with_the_same_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``session list`` (and the viewer's list) read a finished session's first line and its
    last 64 KiB; the summary is the one every record gives, also when the tail starts right at
    a line, inside one, or the file has no end record or an end without counts."""
    from ocr_hook.report import session_read

    big = {"type": "llm_request", "ts": 1.0, "prompt": [{"role": "user",
                                                         "content": "x" * 200_000}]}
    start = {"type": "start", "ts": 1764763200, "stage": "pre-push", "model": "m2"}
    end = {"type": "end", "ts": 2.0, "status": "ok", "verdict": "passed", "findings": 3,
           "llm_calls": 7, "elapsed_ms": 2500}
    shapes = {
        "20261203-100000-aaaaaa": [start, big, {"type": "llm_response"}, end],
        "20261203-100001-aaaaab": [start, big, {"type": "llm_response"}, {"type": "comment"}],
        "20261203-100002-aaaaac": [start, big, {"type": "llm_response"},
                                   {**end, "findings": "3", "llm_calls": None}],
        "20261203-100003-aaaaad": [start, {"type": "llm_response"}, end],
        "20261203-100004-aaaaae": [{"type": "note"}, start, big, end],
    }
    d = tmp_path / "sessions"
    d.mkdir()
    for sid, recs in shapes.items():
        (d / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    full = [session_read.summarize(p.stem, session_read.read_session_records(p))
            for p in session_read.session_files(d)]
    assert list_sessions(d) == full
    assert [(s.id[-1], s.findings, s.llm_calls) for s in full] == [
        ("e", 3, 7), ("d", 3, 7), ("c", 0, 1), ("b", 1, 1), ("a", 3, 7)]
    # the quick read for the finished sessions; the others fall back to every record
    quick = {sid[-1]: session_read._summarize_quickly(d / f"{sid}.jsonl") is not None
             for sid in shapes}
    assert quick == {"a": True, "b": False, "c": False, "d": True, "e": False}
    last_line = len(json.dumps(end)) + 1
    for tail in (last_line, last_line + 1, last_line - 1):
        monkeypatch.setattr(session_read, "TAIL_BYTES", tail)
        assert list_sessions(d) == full, tail


def test_the_summary_line_wraps_at_1200_px_in_chromium(viewer: Viewer) -> None:
    """No horizontal scrollbar at 1200 px: the items of the line under the verdict wrap."""
    from tests.support.browser import Listener, chromium_or_skip
    from tests.support.cdp import Browser

    chromium_or_skip()
    write_session(viewer.directory, result_record(**{
        "report.llm": {"model": "vendor/a-rather-long-model-name-for-a-review-2026-12-01"},
        "report.input": {"mode": "range", "base": "0123456789abcdef0123456789abcdef01234567",
                         "head": "fedcba9876543210fedcba9876543210fedcba98"}}))
    proxy = Listener()
    try:
        with Browser(proxy_port=proxy.port) as browser:
            browser.call("Emulation.setDeviceMetricsOverride", session=True, width=1200,
                         height=900, deviceScaleFactor=1, mobile=False)
            browser.navigate(f"http://127.0.0.1:{viewer.port}/session/{SID}?t={viewer.token}")
            sizes = browser.evaluate("[document.documentElement.scrollWidth,"
                                     " document.documentElement.clientWidth,"
                                     " document.querySelector('.meta').offsetHeight]")
    finally:
        proxy.close()
    scroll, width, height = sizes
    assert scroll == width  # nothing wider than the window (its vertical scrollbar aside)
    assert height > 30  # more than one line of 14 px text


def test_an_unreadable_dismissal_store_is_named_on_the_page(tmp_path: Path) -> None:
    from ocr_hook.errors import UsageError

    def broken() -> dict[str, str]:
        raise UsageError("dismissed.json: invalid JSON: Expecting value")

    v = Viewer(tmp_path / "sessions", tmp_path / "marks.json", lambda fid, reason: "",
               dismissed=broken)
    write_session(v.directory, result_record())
    threading.Thread(target=v.serve_forever, daemon=True).start()
    try:
        status, _, page = get(v, f"/session/{SID}")
    finally:
        v.close()
    assert status == 200 and "BLOCKED: 1 high finding" in page
    assert ('<p class="note">no dismissal shown: dismissed.json: invalid JSON: Expecting value'
            "</p></nav>") in page
