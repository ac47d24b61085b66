"""The local session viewer, ``git ocr session serve`` (spec §12.1), as a real process.

A real review (the scripted model files findings whose text tries to load from a loopback trap)
records a session; ``git ocr session serve`` prints its token URL; headless Chromium loads the
list and the session page (a proxy catches any request to another host, the trap any to
another loopback port); a real mouse click on "false positive" (DevTools protocol,
``tests.support.cdp``) submits the page's form and writes the personal dismissal that ``git ocr
dismiss --list`` and the review's dismissal loader see ("accepted" is POSTed with the form's
fields and writes none); requests without the token, with a wrong ``Host`` or
from another origin get 403; Ctrl-C ends the server with exit 0 and no traceback.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from ocr_hook import cli, comments
from ocr_hook.report import Viewer
from tests.support.browser import Listener, chromium_or_skip, dump_dom, page_requests
from tests.support.cdp import Browser
from tests.support.cli import GIT_OCR, cli_environ, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

APP_OLD = "import db\n\n\ndef find(name):\n    return db.run('SELECT 1')\n"
APP_NEW = ("import db\n\n\ndef find(name):\n"
           "    q = \"SELECT * FROM users WHERE name = '\" + name + \"'\"\n"
           "    return db.run(q)\n")
QUOTE = "q = \"SELECT * FROM users WHERE name = '\" + name + \"'\""


class Forms(HTMLParser):
    """The mark forms of a page: per form its action, method, hidden fields and buttons; also
    every tag with its attributes and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, object]] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "method": a.get("method", ""),
                               "hidden": {}, "buttons": []})
        elif tag == "input" and a.get("type") == "hidden" and self.forms:
            self.forms[-1]["hidden"][a["name"]] = a.get("value", "")  # type: ignore[index]
        elif tag == "button" and self.forms:
            self.forms[-1]["buttons"].append((a.get("name", ""), a.get("value", "")))  # type: ignore[attr-defined]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(dom: str) -> Forms:
    f = Forms()
    f.feed(dom)
    return f


@pytest.fixture
def reviewed(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[tuple[GitRepo, dict[str, str], Listener]]:
    """A blocked review of a staged SQL injection whose finding text tries to load from a
    loopback trap; yields the repository, the environment and the trap."""
    trap = Listener()
    evil = (f'<img src="http://127.0.0.1:{trap.port}/leak.png">'
            f"<script>fetch('http://127.0.0.1:{trap.port}/js')</script>")
    repo.commit({"app.py": APP_OLD}, "init")
    repo.stage({"app.py": APP_NEW})
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app.py", "existing_code": QUOTE, "severity": "critical",
        "category": "security", "content": "SQL injection: name is concatenated. " + evil,
        "suggestion_code": "q = 'SELECT * FROM users WHERE name = ?'"}]}),
        ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    env = cli_environ(llm.env(), review_filter=False)
    assert cli.main(["review"], environ=env) == 1
    yield repo, env, trap
    trap.close()


@pytest.fixture
def server(reviewed: tuple[GitRepo, dict[str, str], Listener]
           ) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``git ocr session serve`` running in the reviewed repository; yields it and its URL."""
    repo, env, _ = reviewed
    proc = subprocess.Popen([str(GIT_OCR), "session", "serve"], cwd=repo.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def request(url: str, method: str = "GET", body: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request to the viewer (Host taken from ``url`` unless ``headers`` set one)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=10)
    target = u.path + (f"?{u.query}" if u.query else "")
    conn.request(method, target, body=body, headers=headers or {})
    resp = conn.getresponse()
    out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode()
    conn.close()
    return out


def test_viewer_shows_the_session_in_chromium_and_a_false_positive_mark_dismisses(
    reviewed: tuple[GitRepo, dict[str, str], Listener],
    server: tuple[subprocess.Popen[str], str], capsys: pytest.CaptureFixture[str],
) -> None:
    chromium_or_skip()
    repo, env, trap = reviewed
    proc, url = server
    u = urlsplit(url)
    assert u.scheme == "http" and u.hostname == "127.0.0.1" and u.path == "/"
    token = u.query.removeprefix("t=")
    assert len(token) >= 32
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    proxy = Listener()
    try:
        listing = parsed(dump_dom(url, proxy_port=proxy.port, proxy_loopback=False))
        page_url = f"http://127.0.0.1:{u.port}/session/{sid}?t={token}"
        assert ("a", {"href": f"/session/{sid}?t={token}"}) in listing.tags
        dom = dump_dom(page_url, proxy_port=proxy.port, proxy_loopback=False)
    finally:
        proxy.close()
    assert page_requests(proxy.requests) == [] and trap.requests == []
    page = parsed(dom)
    text = "".join(page.text)
    assert [t for t, _ in page.tags if t in ("script", "img", "link", "iframe")] == []
    assert "SQL injection: name is concatenated. <img src=" in text  # shown as text
    assert "BLOCKED" in text and "app.py:5" in text
    # the diff with the finding inline under its line (the review page's markup)
    [row] = [a for t, a in page.tags if t == "tr" and a.get("class") == "finding"]
    assert row["data-start"] == "5" and row["data-end"] == "5"
    fid = row["data-finding-id"]
    # the conversation: the prompt as recorded, the model's tool call, the tool result
    assert 'id="conversation"' in dom
    assert "Conversation" in text and "llm_request" in text and "prompt" in text
    assert "→ code_comment" in text and "tool_call" in text and "task_done" in text
    assert "+    q = \"SELECT * FROM users WHERE name = '\" + name + \"'\"" in text  # the prompt

    # the mark form as Chromium parsed it, submitted as the browser submits a form
    [form] = page.forms
    assert form["method"] == "post" and form["action"] == f"/mark?t={token}"
    assert form["hidden"] == {"session": sid, "id": fid}
    assert form["buttons"] == [("mark", "accepted"), ("mark", "false-positive")]
    body = urlencode({**form["hidden"], "mark": "false-positive"})  # type: ignore[dict-item]
    origin = f"http://127.0.0.1:{u.port}"
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": origin}
    # without the token, or from another origin: refused, nothing written
    assert request(origin + "/mark", "POST", body, headers)[0] == 403
    assert request(origin + form["action"], "POST", body,  # type: ignore[operator]
                   {**headers, "Origin": "http://evil.example"})[0] == 403
    assert not (repo.path / ".git" / "ocr-hook" / "dismissed.json").exists()

    # the real click: Chromium submits the form, follows the 303 back to the finding
    proxy = Listener()
    try:
        with Browser(proxy_port=proxy.port) as browser:
            browser.navigate(page_url)
            browser.click(f"#finding-{fid} button[value=false-positive]")
            browser.wait_event("Page.loadEventFired")
            assert browser.evaluate("location.href") == f"{page_url}#finding-{fid}", \
                browser.evaluate("document.body.innerText")
            shown = browser.evaluate(f"document.querySelector('#finding-{fid}').innerText")
    finally:
        proxy.close()
    assert page_requests(proxy.requests) == [] and trap.requests == []
    assert "marked: false positive (dismissed)" in shown

    stored = json.loads((repo.path / ".git" / "ocr-hook" / "dismissed.json").read_text())
    [entry] = stored["dismissed"]
    assert entry["finding_id"] == fid and entry["reason"] == "false positive"
    assert entry["path"] == "app.py" and entry["category"] == "security"
    assert entry["code"] == "    " + QUOTE and len(entry["key"]) == 64  # the anchored line
    [d] = comments.load_personal(repo.path / ".git")
    assert d.key == entry["key"] and d.reason == "false positive"
    rc, out, _ = run_cli(["dismiss", "--list", "--json"], env, capsys)
    assert rc == 0
    [listed] = [json.loads(line) for line in out.splitlines()]
    assert (listed["finding_id"], listed["reason"], listed["scope"]) == (
        fid, "false positive", "personal")
    marks = json.loads((repo.path / ".git" / "ocr-hook" / "marks.json").read_text())
    assert marks["version"] == 1 and marks["marks"][fid]["mark"] == "false-positive"
    assert marks["marks"][fid]["session"] == sid
    # the next review no longer blocks on the finding
    assert cli.main(["review"], environ=env) == 0

    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()


def test_viewer_refuses_requests_without_the_token_or_with_another_host(
    reviewed: tuple[GitRepo, dict[str, str], Listener],
    server: tuple[subprocess.Popen[str], str],
) -> None:
    repo, _, _ = reviewed
    proc, url = server
    u = urlsplit(url)
    token = u.query.removeprefix("t=")
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    base = f"http://127.0.0.1:{u.port}"
    status, head, body = request(url)
    assert status == 200 and "ocr-hook sessions" in body and sid in body
    assert head["content-security-policy"].startswith("default-src 'none'; style-src")
    assert head["referrer-policy"] == "no-referrer"
    assert request(f"http://localhost:{u.port}/?t={token}")[0] == 200
    for target in ("/", f"/session/{sid}", "/?t=", f"/?t={token[:-1]}x",
                   f"/session/{sid}?t=wrong", "/favicon.ico"):
        status, _, body = request(base + target)
        assert status == 403, target
        assert sid not in body and "SQL" not in body
    # a DNS-rebinding page: the right token but its own name in Host
    assert request(url, headers={"Host": f"attacker.example:{u.port}"})[0] == 403
    assert request(url, headers={"Host": "127.0.0.1"})[0] == 403
    # an unknown session, an unknown path: 404 with the token
    assert request(f"{base}/session/nosuch?t={token}")[0] == 404
    assert request(f"{base}/other?t={token}")[0] == 404
    # a bad mark: 400, nothing written
    bad = urlencode({"session": sid, "id": "zz", "mark": "false-positive"})
    assert request(f"{base}/mark?t={token}", "POST", bad,
                   {"Content-Type": "application/x-www-form-urlencoded"})[0] == 400
    ok = urlencode({"session": sid, "id": "0000abcd", "mark": "false-positive"})
    status, _, body = request(f"{base}/mark?t={token}", "POST", ok,
                              {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 400 and "no finding &#x27;0000abcd&#x27;" in body
    assert not (repo.path / ".git" / "ocr-hook" / "dismissed.json").exists()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0


def test_accepted_mark_is_kept_in_the_marks_file_and_writes_no_dismissal(
    reviewed: tuple[GitRepo, dict[str, str], Listener],
    server: tuple[subprocess.Popen[str], str],
) -> None:
    repo, _, _ = reviewed
    _, url = server
    u = urlsplit(url)
    token = u.query.removeprefix("t=")
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    page = parsed(request(f"http://127.0.0.1:{u.port}/session/{sid[:15]}?t={token}")[2])
    [form] = page.forms
    body = urlencode({**form["hidden"], "mark": "accepted"})  # type: ignore[dict-item]
    status, _, _ = request(f"http://127.0.0.1:{u.port}{form['action']}", "POST", body,
                           {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 303
    fid = form["hidden"]["id"]  # type: ignore[index]
    marks = json.loads((repo.path / ".git" / "ocr-hook" / "marks.json").read_text())
    assert marks["marks"][fid]["mark"] == "accepted"
    assert not (repo.path / ".git" / "ocr-hook" / "dismissed.json").exists()
    again = request(f"http://127.0.0.1:{u.port}/session/{sid}?t={token}")[2]
    assert '<span class="marked">marked: accepted</span>' in again


def test_serve_rejects_a_port_off_the_range(repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["session", "serve", "--port", "70000"], {}, capsys)
    assert rc == 2 and out == ""
    assert "--port 70000: give a port from 0 to 65535" in err


def test_viewer_module_is_not_imported_by_parsing() -> None:
    """The viewer (http.server) is loaded only when ``session serve`` runs, not to parse."""
    from tests.support.cli import run_python
    p = run_python(["-c", "import sys\nfrom ocr_hook.cli import parser\n"
                    "parser.parse(['session', 'serve', '--port', '0'])\n"
                    "print('ocr_hook.report.viewer' in sys.modules,"
                    " 'http.server' in sys.modules)"])
    assert p.stdout.strip() == "False False"


def test_serve_on_a_port_in_use_is_a_usage_error(repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo.path)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        rc, out, err = run_cli(["session", "serve", "--port", str(port)], {}, capsys)
    finally:
        busy.close()
    assert rc == 2 and out == ""
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in err


def test_conversation_of_a_hand_written_session_is_escaped_and_shown_without_a_result(
    tmp_path: Path,
) -> None:
    """A session file anyone with write access to .git could write: markup and control
    characters in the prompt, the reply and a tool result are shown as text; no result record:
    the conversation alone."""
    directory = tmp_path / "sessions"
    directory.mkdir()
    records = [
        {"type": "start", "ts": 1764000000, "stage": "pre-commit", "model": "m<b>x</b>"},
        {"type": "llm_request", "group": "g1", "task": "main", "round": 1, "messages": 2,
         "prompt": [{"role": "system", "content": "review <script>alert(1)</script>"},
                    {"role": "user", "content": "diff\n+x = 1\u202e"}]},
        {"type": "llm_response", "group": "g1", "task": "main", "round": 1,
         "content": "thinking \x1b[2J", "calls": [{"name": "file_read",
                                                   "arguments": "{\"path\": \"<a.py>\"}"}],
         "finish_reason": "tool_calls"},
        {"type": "tool_call", "group": "g1", "tool": "file_read", "ok": True,
         "arguments": "{\"path\": \"a.py\"}", "result": "1 | <img src=x>"},
    ]
    (directory / "20261203-120000-abcdef.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records) + "{torn", encoding="utf-8")
    viewer = Viewer(directory, tmp_path / "marks.json", lambda fid, reason: "")
    thread = threading.Thread(target=viewer.serve_forever, daemon=True)
    thread.start()
    try:
        status, _, listing = request(viewer.url)
        assert status == 200
        assert (f'<a href="/session/20261203-120000-abcdef?t={viewer.token}">'
                "20261203-120000-abcdef</a>") in listing
        assert "m&lt;b&gt;x&lt;/b&gt;" in listing
        status, _, page = request(
            f"http://127.0.0.1:{viewer.port}/session/20261203-12?t={viewer.token}")
    finally:
        viewer.close()
    assert status == 200
    assert "No recorded result" in page and 'id="conversation"' in page
    assert "<pre>review &lt;script&gt;alert(1)&lt;/script&gt;</pre>" in page
    assert "<pre>diff\n+x = 1\\u202e</pre>" in page  # a bidi override spelled out
    assert "<pre>thinking \\u001b[2J</pre>" in page
    assert "<pre>→ file_read {&quot;path&quot;: &quot;&lt;a.py&gt;&quot;}</pre>" in page
    assert "<pre>1 | &lt;img src=x&gt;</pre>" in page
    assert "<script" not in page and "<img" not in page
    assert "\u202e" not in page and "\x1b" not in page
