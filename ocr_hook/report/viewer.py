"""The local session viewer of ``git ocr session serve`` (spec §12.1).

A ``http.server.ThreadingHTTPServer`` bound to 127.0.0.1 (port 0: a free port the system
picks) that reads the session logs as they are (``session_read``; no database, no copy) and
serves three things:

- ``GET /?t=TOKEN``: the recorded sessions, newest first, each a link;
- ``GET /session/<id>?t=TOKEN``: one session, the review page of ``report.html`` (the diff
  with its findings inline) with a mark form in each finding's box, then the conversation as
  the log recorded it (prompts, responses, tool calls and results; the log holds them already
  redacted);
- ``POST /mark?t=TOKEN`` (a form: ``session``, ``id``, ``mark``; the full id of a finding of
  that session, else 400 and nothing written): "false positive" stores a dismissal through the
  ``dismiss`` function it is given (``git ocr dismiss ID --reason 'false positive'``),
  "accepted" removes that dismissal again through ``undo`` (as ``git ocr dismiss --undo ID``)
  and records the mark; both marks are kept in ``marks.json`` next to the sessions directory
  (:func:`marks_path`; a corrupt or newer file is refused with 409, never overwritten); answers
  303 back to the finding. The label in a finding's box follows the dismissal store
  (``dismissed``), the marks file only for "accepted".

Any other method gets 405 with the same headers; an unexpected error a 500 page of one line
(logged once on stderr), never an empty reply.

Who may use it: every request must carry the random token of this server
(``secrets.token_urlsafe``, compared in constant time) and a ``Host`` of ``127.0.0.1:<port>``
or ``localhost:<port>`` (a DNS-rebinding page on another name is refused); a POST with an
``Origin`` must come from that origin (or say ``null``, as a page without referrer does).
Anything else gets 403. The pages are inert: no script, inline CSS only, every text from a
session HTML-escaped with its control characters spelled out, and :data:`CSP` sent as a header
on every answer (the review page also carries its own meta CSP), so the browser fetches
nothing from any host, this one included, beyond the links and the form.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Mapping
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..errors import OcrError
from ..util import display_text, write_atomic
from .display import utf8_safe
from .html import STYLE, _e, diff_from_record, render_html  # _e: the page's one escaping
from .session_read import find_session, list_sessions, read_session_records, session_result

CSP = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none';"
       " frame-ancestors 'none'")
MARKS = {"accepted": "accepted", "false-positive": "false positive"}  # form value -> words
DISMISS_REASON = "false positive"  # the reason of a dismissal made by the viewer
MARKS_VERSION = 1
MAX_FORM_BYTES = 4096
_FINDING_ID = re.compile(r"[0-9a-f]{4,64}")
VIEWER_STYLE = """
nav{max-width:1200px;margin:0 auto;padding:8px 24px}
form.mark{margin:8px 0 0;display:flex;gap:8px;align-items:center}
form.mark button{font:inherit;font-size:12px;padding:2px 10px;border-radius:6px;
border:1px solid #d0d7de;background:#f6f8fa;cursor:pointer}
.marked{font-weight:600;color:#116329}.marked.fp{color:#57606a}
.conv .rec{border-top:1px solid #d0d7de;padding:6px 12px}
.conv .kind{font-weight:600;margin-right:8px}.conv pre{white-space:pre-wrap;margin:4px 0;
font-size:12px;background:#f6f8fa;border-radius:4px;padding:6px 8px}
.sessions td,.sessions th{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left}
.note{color:#57606a;font-size:13px;margin:4px 0}
"""
MARKS_NOTE = ("Marks: <b>false positive</b> stores a personal dismissal (your next reviews skip"
              " the finding; undo it with <code>git ocr dismiss --undo ID</code> or the"
              " <b>accepted</b> button); <b>accepted</b> only records that the finding is right.")

Dismiss = Callable[[str, str], str]  # (finding id, reason) -> what was done; raises OcrError
Undo = Callable[[str, str], bool]  # (finding id, reason) -> whether a dismissal was removed
Dismissed = Callable[[], Mapping[str, str]]  # finding id -> reason of its personal dismissal


class MarksFileError(OcrError):
    """The marks file exists but is not one this version writes (invalid JSON, another
    format or a newer ``version``): the mark is refused (409) rather than the file
    overwritten."""


def marks_path(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/marks.json``: the viewer's marks, personal like the
    personal dismissals."""
    return common_dir / "ocr-hook" / "marks.json"


def load_marks(path: Path) -> dict[str, dict[str, str]]:
    """Finding id -> ``{"mark", "session", "date"}`` from the marks file (format: ``{"version":
    1, "marks": {id: {...}}}``); a missing or unreadable file is no marks."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    marks = data.get("marks") if isinstance(data, dict) else None
    if not isinstance(marks, dict):
        return {}
    return {str(k): {str(a): str(b) for a, b in v.items()}
            for k, v in marks.items() if isinstance(v, dict)}


def _marks_to_update(path: Path) -> dict[str, dict[str, str]]:
    """The marks of an existing file before it is rewritten ({} when there is none). Raises
    MarksFileError for a file that is not valid JSON of this format and version."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise MarksFileError(f"cannot read {path}: {e}; mark not stored") from e
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("marks"), dict):
        raise MarksFileError(f"{path} is not a marks file of ocr-hook; mark not stored (move"
                             " the file away to start again)")
    if data.get("version") != MARKS_VERSION:
        raise MarksFileError(f"{path} has version {data.get('version')!r}, this ocr-hook writes"
                             f" {MARKS_VERSION}; mark not stored")
    return load_marks(path)


def save_mark(path: Path, finding_id: str, mark: str, session_id: str,
              undone: bool = False) -> None:
    """Set the mark of ``finding_id`` (a key of :data:`MARKS`) in the marks file, written
    atomically (mode 0600); ``undone``: the accepted mark removed a false-positive dismissal
    (kept as ``"undone": "false positive"``). Raises MarksFileError for an existing file that
    is not one this version writes, OSError when it cannot be written."""
    marks = _marks_to_update(path)
    marks[finding_id] = {"mark": mark, "session": session_id,
                         "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if undone:
        marks[finding_id]["undone"] = DISMISS_REASON
    body = json.dumps({"version": MARKS_VERSION, "marks": dict(sorted(marks.items()))},
                      ensure_ascii=False, indent=2) + "\n"
    write_atomic(path, body.encode("utf-8"))


class Viewer:
    """The viewer's server, bound to 127.0.0.1:``port`` (0: a free port) on creation.

    ``directory``: the sessions directory; ``marks_file``: see :func:`marks_path`; ``dismiss``:
    stores a dismissal of a finding id with a reason and returns a line saying so (raises
    OcrError); ``undo``: removes the personal dismissal of a finding id made with that reason,
    True when there was one; ``dismissed``: the personal dismissals, finding id -> reason.
    Raises OSError when the port cannot be bound."""

    def __init__(self, directory: Path, marks_file: Path, dismiss: Dismiss, port: int = 0,
                 token: str | None = None, *, undo: Undo | None = None,
                 dismissed: Dismissed | None = None) -> None:
        self.directory = directory
        self.marks_file = marks_file
        self.dismiss = dismiss
        self.undo: Undo = undo or (lambda fid, reason: False)
        self.dismissed: Dismissed = dismissed or dict
        self.token = token or secrets.token_urlsafe(24)
        self._lock = threading.Lock()  # one mark at a time: the files are read-modify-written
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.viewer = self  # type: ignore[attr-defined]
        self.port = int(self.server.server_address[1])

    @property
    def url(self) -> str:
        """The address to open: ``http://127.0.0.1:<port>/?t=<token>``."""
        return f"http://127.0.0.1:{self.port}/?t={self.token}"

    def serve_forever(self) -> None:
        """Answer requests until :meth:`close` (or KeyboardInterrupt in this thread)."""
        self.server.serve_forever(poll_interval=0.2)

    def close(self) -> None:
        """Stop serving (from another thread) and release the port."""
        self.server.shutdown()
        self.server.server_close()

    def link(self, path: str) -> str:
        """``path`` with this server's token, HTML-escaped for an attribute."""
        return escape(f"{path}?t={self.token}", quote=True)

    def mark(self, form: Mapping[str, str]) -> str:
        """Apply a POSTed mark; returns the session id to go back to. Raises OcrError for a bad
        form (not the full id of a finding of that session) or a dismissal that fails,
        MarksFileError for a marks file this version does not write."""
        sid, fid, mark = form.get("session", ""), form.get("id", ""), form.get("mark", "")
        if mark not in MARKS or not _FINDING_ID.fullmatch(fid):
            raise OcrError("a mark needs a finding id and a mark (accepted or false-positive)")
        path = find_session(self.directory, sid)  # an existing session, or UsageError
        if path.stem != sid:
            raise OcrError(f"give the full session id, not {sid!r}")
        found = session_result(read_session_records(path))
        ids = {c["id"] for c in (found[0]["comments"] + found[0]["dismissed"])} if found else ()
        if fid not in ids:
            raise OcrError(f"no finding {fid!r} in session {sid} (give its full id)")
        with self._lock:
            _marks_to_update(self.marks_file)  # refused before any dismissal is touched
            undone = False
            if mark == "false-positive":
                self.dismiss(fid, DISMISS_REASON)
            else:
                undone = self.undo(fid, DISMISS_REASON)
            try:
                save_mark(self.marks_file, fid, mark, sid, undone)
            except OSError as e:
                raise OcrError(f"cannot write {self.marks_file}: {e.strerror}") from e
        return sid


class _Handler(BaseHTTPRequestHandler):
    server_version = "ocr-hook-viewer"
    sys_version = ""

    @property
    def viewer(self) -> Viewer:
        return self.server.viewer  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        """Quiet: stdout holds only the URL, and a request line is not worth a terminal line."""

    def _allowed(self) -> bool:
        port = self.viewer.port
        if self.headers.get("Host", "") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            return False
        given = parse_qs(urlsplit(self.path).query).get("t", [""])[0]
        return secrets.compare_digest(given.encode(), self.viewer.token.encode())

    def _send(self, status: int, body: str, location: str | None = None,
              with_body: bool = True) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cache-Control", "no-store")
        if status == 405:
            self.send_header("Allow", "GET, POST")
        if location is not None:
            self.send_header("Location", location)
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def _guarded(self, answer: Callable[[], None]) -> None:
        """Run ``answer``; an unexpected error is logged once on stderr and answered with a 500
        page of one line (never an empty reply)."""
        try:
            answer()
        except Exception as e:  # noqa: BLE001 (the server must answer whatever went wrong)
            line = f"internal error: {type(e).__name__}: {e}"
            print(f"ocr-hook: viewer: {self.command} {urlsplit(self.path).path}: "
                  + display_text(utf8_safe(line)), file=sys.stderr, flush=True)
            self._send(500, _shell("internal error", f"<p>{_e(line)}</p>"))

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._guarded(self._get)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self._guarded(self._post)

    def _not_allowed(self) -> None:
        """405 for HEAD, PUT, DELETE, OPTIONS, PATCH: the same headers, no body for HEAD."""
        self._send(405, _shell("method not allowed", "<p>method not allowed: GET or POST</p>"),
                   with_body=self.command != "HEAD")

    do_HEAD = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = _not_allowed  # noqa: N815

    def _get(self) -> None:
        if not self._allowed():
            self._send(403, _shell("forbidden", "<p>forbidden: open the URL that"
                                   " <code>git ocr session serve</code> printed</p>"))
            return
        path = urlsplit(self.path).path
        try:
            if path == "/":
                self._send(200, _list_page(self.viewer))
            elif path.startswith("/session/") and path.count("/") == 2:
                sid = unquote(path.rsplit("/", 1)[1], errors="surrogateescape")
                self._send(200, session_page(self.viewer, sid))
            else:
                self._send(404, _shell("not found", "<p>not found</p>", self.viewer))
        except OcrError as e:
            self._send(404, _shell("not found", f"<p>{_e(e)}</p>", self.viewer))

    def _post(self) -> None:
        origin = self.headers.get("Origin")
        # the pages send no referrer, so the browser's form POST says Origin "null"
        own = ("null", f"http://127.0.0.1:{self.viewer.port}",
               f"http://localhost:{self.viewer.port}")
        if not self._allowed() or (origin is not None and origin not in own):
            self._send(403, _shell("forbidden", "<p>forbidden</p>"))
            return
        if urlsplit(self.path).path != "/mark":
            self._send(404, _shell("not found", "<p>not found</p>", self.viewer))
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FORM_BYTES:
            self._send(400, _shell("bad request", "<p>bad form</p>", self.viewer))
            return
        raw = self.rfile.read(length).decode("utf-8", "replace")
        form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
        try:
            sid = self.viewer.mark(form)
        except OcrError as e:
            status = 409 if isinstance(e, MarksFileError) else 400
            self._send(status, _shell("mark not stored", f"<p>mark not stored: {_e(e)}</p>",
                                      self.viewer))
            return
        where = f"/session/{quote(sid, safe='')}?t={self.viewer.token}#finding-{form['id']}"
        self._send(303, _shell("marked", f'<p><a href="{escape(where)}">back</a></p>'), where)


def _shell(title: str, body: str, viewer: Viewer | None = None) -> str:
    """A small page of the viewer: ``body`` is trusted HTML; with ``viewer``, a link to the
    list."""
    nav = f'<nav><a href="{viewer.link("/")}">all sessions</a></nav>' if viewer else ""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="referrer" content="no-referrer">'
            f"<title>{_e(title)}</title><style>{STYLE}{VIEWER_STYLE}</style></head><body>"
            f"{nav}<section>{body}</section></body></html>\n")


def _list_page(viewer: Viewer) -> str:
    """The sessions, newest first, each linking to its page."""
    rows = []
    for s in list_sessions(viewer.directory):
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.started)) \
            if s.started else ""
        # a file name that is not UTF-8 (a surrogate escape): quoted as its bytes
        href = viewer.link(f"/session/{quote(s.id.encode('utf-8', 'surrogateescape'), safe='')}")
        cells = (started, s.stage_label, s.model, s.status, s.verdict, s.findings,
                 s.llm_calls)
        rows.append(f'<tr><td><a href="{href}">{_e(s.id)}</a></td>'
                    + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("id", "started", "stage", "model", "status",
                                             "verdict", "findings", "LLM calls"))
    table = (f'<table class="sessions" id="sessions"><tr>{head}</tr>{"".join(rows)}</table>'
             if rows else "<p>No sessions recorded in this repository yet.</p>")
    return _shell("ocr-hook sessions", f"<h1>ocr-hook sessions</h1>{table}")


def session_page(viewer: Viewer, session_id: str) -> str:
    """One session's page: the review page with marks, then the conversation. Raises OcrError
    (UsageError) for an unknown or ambiguous id."""
    path = find_session(viewer.directory, session_id)
    records = read_session_records(path)
    sid = path.stem
    nav = (f'<nav><a href="{viewer.link("/")}">all sessions</a> · session {_e(sid)}'
           ' · <a href="#conversation">conversation</a>'
           f'<p class="note" id="marks-note">{MARKS_NOTE}</p></nav>')
    after = f"<style>{VIEWER_STYLE}</style>{_conversation(records)}"
    found = session_result(records)  # normalised: a field of a wrong type counts as missing
    if found is None:
        return _shell(f"session {sid}", f"<h1>session {_e(sid)}</h1><p>No recorded result"
                      " (an interrupted run, or one written by an older ocr-hook).</p>"
                      + after, viewer)
    data, diffs, verdict = found
    marks = load_marks(viewer.marks_file)
    try:
        dismissed = viewer.dismissed()
    except OcrError as e:  # an invalid dismissal file: the page still shows, and says so
        dismissed = {}
        nav = nav.replace("</nav>", f'<p class="note">no dismissal shown: {_e(e)}</p></nav>')

    def box_extra(c: Mapping[str, Any], _: bool) -> str:
        fid = str(c.get("id", ""))
        if not _FINDING_ID.fullmatch(fid):
            return ""
        label = _mark_label(marks.get(fid, {}), dismissed.get(fid))
        buttons = "".join(f'<button type="submit" name="mark" value="{v}">{w}</button>'
                          for v, w in MARKS.items())
        return (f'<form class="mark" method="post" action="{viewer.link("/mark")}">'
                f'<input type="hidden" name="session" value="{_e(sid)}">'
                f'<input type="hidden" name="id" value="{fid}">{label}{buttons}</form>')

    return render_html(data, [diff_from_record(d) for d in diffs], verdict,
                       box_extra=box_extra, before=nav, after=after)


def _mark_label(mark: Mapping[str, str], dismissal: str | None) -> str:
    """The label of a finding's box: its personal dismissal as the store has it now (the
    viewer's own: "marked: false positive (dismissed)"), else an "accepted" mark."""
    if dismissal is not None:
        words = ("marked: false positive (dismissed)" if dismissal == DISMISS_REASON
                 else f"dismissed for you: {dismissal}")
        return f'<span class="marked fp">{_e(words)}</span>'
    if mark.get("mark") == "accepted":
        undone = " (its false-positive dismissal undone)" if mark.get("undone") else ""
        return f'<span class="marked">marked: accepted{undone}</span>'
    return ""


def _conversation(records: list[dict[str, Any]]) -> str:
    """The session's records in order as the log holds them; the result record (the page
    above) and the comment records (the findings above) are left out."""
    out = ['<section id="conversation" class="conv"><h2>Conversation</h2><article>']
    for rec in records:
        kind = str(rec.get("type", "?"))
        if kind in ("result", "comment", "dismissed"):
            continue
        out.append(f'<div class="rec {_e(kind)}">{_record(kind, rec)}</div>')
    out.append("</article></section>")
    return "".join(out)


def _record(kind: str, rec: Mapping[str, Any]) -> str:
    """One record: prompts, replies and tool calls in full, the others as their JSON."""
    head = f'<span class="kind">{_e(kind)}</span>'
    group = f"[{_e(rec.get('group', ''))}] " if rec.get("group") else ""
    if kind == "llm_request" and isinstance(rec.get("prompt"), list):
        msgs = "".join(f"<div><b>{_e(m.get('role', ''))}</b><pre>{_e(m.get('content', ''))}"
                       "</pre></div>" for m in rec["prompt"] if isinstance(m, dict))
        return (f"{head}{group}round {_e(rec.get('round', ''))}, {_e(rec.get('messages', ''))}"
                f" message(s)<details open><summary>prompt</summary>{msgs}</details>")
    if kind == "llm_response":
        calls = rec.get("calls") if isinstance(rec.get("calls"), list) else []
        shown = "".join(f"<pre>→ {_e(c.get('name', ''))} {_e(c.get('arguments', ''))}</pre>"
                        for c in calls if isinstance(c, dict))
        text = f"<pre>{_e(rec.get('content'))}</pre>" if rec.get("content") else ""
        return (f"{head}{group}{_e(rec.get('task', ''))} round {_e(rec.get('round', ''))},"
                f" finish {_e(rec.get('finish_reason', ''))}{text}{shown}")
    if kind == "tool_call":
        ok = "ok" if rec.get("ok") else "error"
        return (f"{head}{group}{_e(rec.get('tool', ''))} → {ok}"
                f"<pre>{_e(rec.get('arguments', ''))}</pre><pre>{_e(rec.get('result', ''))}</pre>")
    rest = {k: v for k, v in rec.items() if k not in ("type", "ts")}
    return f"{head}<code>{_e(json.dumps(rest, ensure_ascii=False, default=str))}</code>"
