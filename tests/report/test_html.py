"""The review page (spec §11.4), checked in a real headless Chromium: a 3-file review written
with ``--format html`` shows each finding inline right under the line it is anchored to, a
dismissed one folded, model text escaped, and not one request leaves the page (a strict CSP,
no http(s) ``src``/``href``, and a loopback proxy and server that count every connection the
browser makes while it loads the page). ``git ocr session show ID --html`` renders the same
page from the session log.

Real: git, the review, HTTP to the scripted model, Chromium. Fake: the model's replies."""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ocr_hook import cli
from tests.support.browser import Listener, chromium_or_skip, dump_dom, page_requests
from tests.support.cli import cli_environ
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

APP_OLD = "import db\n\n\ndef find(name):\n    return db.run('SELECT 1')\n\n\ndef check(n):\n" \
          "    if n < 0:\n        raise ValueError(n)\n    return n\n"
APP_NEW = "import db\n\n\ndef find(name):\n" \
          "    q = \"SELECT * FROM users WHERE name = '\" + name + \"'\"\n" \
          "    return db.run(q)\n\n\ndef check(n):\n    return n\n"
UTIL_JS = "export function total(items) {\n  let sum = 0;\n" \
          "  for (let i = 0; i <= items.length; i++) {\n    sum += items[i].price;\n  }\n" \
          "  return sum;\n}\n"
CONF_PY = "TIMEOUT = 30\nRETRIES = eval(input())  # ocr-hook: ignore only used by the REPL\n"


class Rows(HTMLParser):
    """The page's table rows in document order: (attributes, text) per ``<tr>``; also every
    tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict[str, str], str]] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "tr":
            self._text = []
            self.rows.append((a, ""))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._text is not None:
            a, _ = self.rows[-1]
            self.rows[-1] = (a, "".join(self._text))
            self._text = None


def comment(path: str, quote: str, content: str, severity: str, category: str,
            suggestion: str = "") -> dict[str, Any]:
    return {"path": path, "content": content, "existing_code": quote,
            "suggestion_code": suggestion, "severity": severity, "category": category}


def test_review_page_renders_findings_inline_at_their_lines_with_no_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    chromium_or_skip()  # skips with the reason where no Chromium is installed, fails under CI
    trap = Listener()
    proxy = Listener()
    evil = (f'<img src="http://127.0.0.1:{trap.port}/leak.png">'
            f'<link rel="stylesheet" href="https://127.0.0.1:{trap.port}/x.css">'
            f"<script>fetch('http://127.0.0.1:{trap.port}/js')</script>")
    repo.commit({"app.py": APP_OLD}, "init")
    repo.stage({"app.py": APP_NEW, "util.js": UTIL_JS, "conf.py": CONF_PY})
    llm.tool_calls(("code_comment", {"comments": [
        comment("app.py", "q = \"SELECT * FROM users WHERE name = '\" + name + \"'\"",
                "SQL injection: name is concatenated. " + evil, "critical", "security",
                "q = 'SELECT * FROM users WHERE name = ?'"),
        comment("app.py", "if n < 0:\n    raise ValueError(n)",
                "The negative check was removed.", "medium", "bug"),
        comment("util.js", "for (let i = 0; i <= items.length; i++) {",
                "Off by one: reads items[items.length].", "high", "bug",
                "for (let i = 0; i < items.length; i++) {"),
        comment("conf.py", "RETRIES = eval(input())", "eval of user input", "high", "security"),
    ]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    page = tmp_path / "review.html"
    env = cli_environ(llm.env(), review_filter=False)
    rc = cli.main(["review", "--format", "html", "--output", str(page)], environ=env)
    assert rc == 1
    assert capsys.readouterr().out == ""
    html = page.read_text(encoding="utf-8")
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
            ' style-src \'unsafe-inline\'">') in html

    try:
        dom = dump_dom(page, proxy_port=proxy.port)
    finally:
        trap.close()
        proxy.close()
    assert trap.requests == [] and page_requests(proxy.requests) == []
    parsed = Rows()
    parsed.feed(dom)
    assert [t for t, _ in parsed.tags if t in ("script", "img", "link", "iframe")] == []
    assert [a for _, attrs in parsed.tags for k, a in attrs.items()
            if k in ("src", "href") and not a.startswith("#")] == []

    placed: dict[str, tuple[str, str, str, str]] = {}  # content -> (data-old, data-new, text)
    last_line: tuple[dict[str, str], str] | None = None
    for attrs, text in parsed.rows:
        if "line" in attrs.get("class", "").split():
            last_line = (attrs, text)
        elif attrs.get("class") == "finding":
            assert last_line is not None
            la, lt = last_line
            placed[text.split("id ")[-1][:12]] = (la["data-old"], la["data-new"], lt,
                                                  attrs["data-dismissed"])
    by_content = {}
    for attrs, text in parsed.rows:
        if attrs.get("class") == "finding":
            by_content[text] = placed[text.split("id ")[-1][:12]]
    got = sorted((next(k for k in ("SQL injection", "negative check", "Off by one", "eval of")
                       if k in text), old, new, code.lstrip("0123456789").rstrip(), dismissed)
                 for text, (old, new, code, dismissed) in by_content.items())
    assert got == [
        ("Off by one", "", "3", "+  for (let i = 0; i <= items.length; i++) {", "no"),
        ("SQL injection", "", "5",
         "+    q = \"SELECT * FROM users WHERE name = '\" + name + \"'\"", "no"),
        ("eval of", "", "2",
         "+RETRIES = eval(input())  # ocr-hook: ignore only used by the REPL", "yes"),
        ("negative check", "10", "", "-        raise ValueError(n)", "no"),
    ]
    assert "SQL injection: name is concatenated. &lt;img src=" in dom  # shown as text
    assert "BLOCKED: 2 findings at or above high, 1 dismissed (blocking mode)" in dom
    assert "dismissed (inline: only used by the REPL)" in dom

    # the same page from the session log
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    again = tmp_path / "again.html"
    rc = cli.main(["session", "show", sid[:15], "--html", "--output", str(again)], environ=env)
    assert rc == 0
    assert again.read_text(encoding="utf-8") == html


def test_review_page_of_a_non_utf8_file_name_is_utf8_and_the_same_from_the_session(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    (repo.path / os.fsdecode(b"caf\xe9.py")).write_text("def div(a, b):\n    return a / b\n")
    repo.git("add", "-A")
    llm.tool_calls(("code_comment", {"comments": [comment(
        "caf\\xe9.py", "    return a / b", "Division by zero.", "high", "bug")]}),
        ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    env = cli_environ(llm.env(), review_filter=False)
    page, again = tmp_path / "p.html", tmp_path / "s.html"
    assert cli.main(["review", "--format", "html", "--output", str(page)], environ=env) == 1
    html = page.read_bytes().decode("utf-8", "strict")
    assert '<article class="file" id="file-0" data-path="caf\\xe9.py">' in html
    assert 'data-finding-id="' in html and 'data-start="2" data-end="2"' in html
    [sid] = [p.stem for p in (repo.path / ".git" / "ocr-hook" / "sessions").glob("*.jsonl")]
    capsys.readouterr()
    assert cli.main(["session", "show", sid, "--html", "--output", str(again)], environ=env) == 0
    assert again.read_bytes() == page.read_bytes()


def test_review_page_shows_the_quote_of_a_location_unknown_finding_and_keeps_meta_items_whole(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    repo.commit({"app.py": APP_OLD}, "init")
    repo.stage({"app.py": APP_NEW})
    llm.tool_calls(("code_comment", {"comments": [
        comment("app.py", "cursor.execute(q % name)\n  <b>x</b>", "Formats SQL by hand.",
                "medium", "security"),
        comment("app.py", "    return db.run(q)", "Runs the query unchecked.", "low", "bug"),
    ]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    page = tmp_path / "review.html"
    env = cli_environ(llm.env(), review_filter=False)
    assert cli.main(["review", "--format", "html", "--output", str(page)], environ=env) == 0
    html = page.read_text(encoding="utf-8")
    # the location-unknown finding leads its file with the model's quote, escaped
    assert ('<div class="msg">Formats SQL by hand.</div><div>Quoted code (not found in the'
            ' file):</div><pre class="quote">cursor.execute(q % name)\n  &lt;b&gt;x&lt;/b&gt;'
            '</pre></div>') in html
    assert "app.py (location unknown)" in html
    # an anchored finding shows its lines in the diff, not the quote again
    assert html.count('<pre class="quote">') == 1
    # each metadata item keeps its label and value on one line
    assert ".meta span{margin-right:18px;white-space:nowrap}" in html
    assert "<span>files reviewed: 1</span>" in html


def test_review_page_of_an_incomplete_review_is_amber_and_says_what_was_not_reviewed(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """An unreachable model, gate.on_error = allow: exit 0, but the page's verdict box is the
    amber ``incomplete`` one (not the green pass) and the NOT REVIEWED line is under it."""
    repo.commit({"app.py": APP_OLD}, "init")
    repo.stage({"app.py": APP_NEW})
    monkeypatch.chdir(repo.path)
    page = tmp_path / "review.html"
    env = cli_environ({"OCR_LLM_URL": "http://127.0.0.1:9/v1", "OCR_LLM_MODEL": "m",
                       "OCR_LLM_TOKEN": "t", "OCR_HOOK_LLM_MAX_RETRIES": "0"},
                      review_filter=False)
    assert cli.main(["review", "--format", "html", "--output", str(page)], environ=env) == 0
    html = page.read_text(encoding="utf-8")
    assert ('<p class="verdict incomplete" id="verdict">PASS: review incomplete, let through by'
            ' gate.on_error = allow (blocking mode)</p>') in html
    assert '<p class="not-reviewed">NOT REVIEWED: ' in html
    assert 'class="verdict passed"' not in html
