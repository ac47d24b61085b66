"""``git ocr session list [--json]``, ``git ocr session show ID [--json | --html [--output
FILE]]``, ``git ocr session serve [--port N] [--open]`` and ``git ocr session compare A B
[--json]``: the review sessions recorded in the repository (spec §12), the last in a local
viewer (``report.viewer``, spec §12.1), two of them compared (spec §12.2).

What a session holds is the model's and the repository's text: the text lines pass
``report.display_text`` (``report.format_session_list``/``format_session_record``) and the JSON
lines ``report.json_escape``, so no raw control, format or separator character reaches the
terminal (an ESC sequence, an OSC title, a bare CR, U+009B, U+202E are shown spelled out).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from .. import comments, git, report
from ..errors import OcrError, UsageError
from ..exitcodes import Exit
from ..util import display_path, display_text


def run_session_command(args: argparse.Namespace) -> int:
    """List the sessions or show one. Raises OcrError for a missing action or an unknown id."""
    repo = git.find_toplevel(Path.cwd())
    directory = report.sessions_dir(git.git_common_dir(repo))
    if getattr(args, "session_cmd", None) == "list":
        items = report.list_sessions(directory)
        if args.json:
            for s in items:
                print(report.display_json(dataclasses.asdict(s)))
        else:
            sys.stdout.write(report.format_session_list(items))
        return Exit.OK
    if getattr(args, "session_cmd", None) == "show":
        path = report.find_session(directory, args.id)
        if getattr(args, "html", False):
            return _session_page(path, args.output)
        if args.json:  # the file's lines, each the same JSON value with no raw control character
            sys.stdout.write(_json_lines(path))
        else:
            for rec in report.read_session_records(path):
                print(report.format_session_record(rec))
        return Exit.OK
    if getattr(args, "session_cmd", None) == "serve":
        return _serve(repo, directory, args.port, args.open)
    if getattr(args, "session_cmd", None) == "compare":
        return _compare(directory, args.a, args.b, args.json)
    raise OcrError("usage: git ocr session list|show ID|serve|compare A B")


def add_compare_parser(actions: Any) -> None:
    """``session compare A B [--json]`` on the ``session`` actions (spec §12.2); ``--json`` as
    its siblings ``list`` and ``show`` (``--format`` names the review output formats)."""
    sc = actions.add_parser("compare", help="findings resolved, persisting and new from A to B")
    sc.add_argument("a", metavar="A", help="the earlier session: an id (prefix), last, previous")
    sc.add_argument("b", metavar="B", help="the later session: an id (prefix), last, previous")
    sc.add_argument("--json", action="store_true", help="one JSON object")


def resolve_session(directory: Path, name: str) -> Path:
    """The session file of ``name``: ``last`` (the newest session), ``previous`` (the one
    before it), newest by the start record's time (ids sort by the second only), else an id or
    a unique prefix (``report.find_session``). Raises UsageError when there is no such
    session."""
    if name in ("last", "previous"):
        ids = [s.id for s in report.list_sessions(directory)]  # `session list`'s order
        i = 0 if name == "last" else 1
        if len(ids) <= i:
            raise UsageError(f"no {name} session (see `git ocr session list`)")
        return report.find_session(directory, ids[i])
    return report.find_session(directory, name)


def _findings_of(path: Path, kind: str = "comment") -> list[Any]:
    """The findings a session recorded as ``kind`` records (``comment``: the review's
    findings; ``dismissed``: the ones it dismissed), in their order."""
    out = (comments.finding_from_record(r) for r in report.read_session_records(path)
           if r.get("type") == kind)
    return [f for f in out if f is not None]


def _compare(directory: Path, a: str, b: str, as_json: bool) -> int:
    """Print the comparison of sessions ``a`` and ``b`` (``comments.compare_by_key``: B's
    references to A's findings, then keys; A's findings B dismissed are dismissed)."""
    pa, pb = resolve_session(directory, a), resolve_session(directory, b)
    cmp = comments.compare_by_key(_findings_of(pa), _findings_of(pb),
                                  _findings_of(pb, "dismissed"))
    if as_json:
        print(report.display_json({
            "a": pa.stem, "b": pb.stem,
            "resolved": [_entry(f) for f in cmp.resolved],
            "persisting": [{**_entry(new), "earlier_id": old.id}
                           for old, new in cmp.persisting],
            "new": [_entry(f) for f in cmp.new],
            "dismissed": [_entry(f) for f in cmp.dismissed]}))
        return Exit.OK
    lines = [f"{pa.stem} → {pb.stem}: {cmp.counts()}"]
    for title, items in (("resolved", cmp.resolved),
                         ("persisting", [new for _old, new in cmp.persisting]),
                         ("new", cmp.new), ("dismissed", list(cmp.dismissed))):
        if items:
            lines.append(f"{title}:")
            lines.extend(f"  {_line(f)}" for f in items)
    sys.stdout.write("".join(display_text(ln) + "\n" for ln in lines))
    return Exit.OK


def _entry(f: Any) -> dict[str, Any]:
    """One finding of ``compare --format json``."""
    return {"id": f.id, "path": f.path, "start_line": f.start_line, "end_line": f.end_line,
            "severity": f.severity.label, "category": str(f.category), "content": f.content}


def _line(f: Any) -> str:
    """``path:line severity content (id ID)`` of one finding in ``compare``'s text."""
    where = f"{display_path(f.path)}:{f.start_line}" if f.start_line else display_path(f.path)
    return f"{where} {f.severity.label} {' '.join(f.content.split())} (id {f.id})"


def _json_lines(path: Path) -> str:
    """The lines of session file ``path`` through ``report.json_escape`` (JSON stays the same
    value; a torn line stays as torn as it was). Raises OcrError when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise OcrError(f"cannot read session {path.name}: {e.strerror}") from e
    return "".join(report.json_escape(line) + "\n" for line in text.split("\n") if line)


def _session_page(path: Path, output: str | None) -> int:
    """``session show ID --html [--output FILE]``: the review page of a recorded session.
    Raises OcrError when the session has no result record (an older or interrupted run)."""
    out_path = report.check_output_path(output) if output else None
    found = report.session_result(report.read_session_records(path))
    if found is None:
        raise OcrError(f"session {path.stem} has no recorded result (interrupted, or written by"
                       " an older ocr-hook)")
    data, diffs, verdict = found  # normalised: a field of a wrong type counts as missing
    page = report.render_html(data, [report.diff_from_record(d) for d in diffs], verdict)
    if out_path is not None:
        report.write_output(out_path, page)
    else:
        sys.stdout.write(page)
    return Exit.OK


def add_serve_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``session serve [--port N] [--open | --no-open]`` sub-parser."""
    sv = actions.add_parser(
        "serve", help="a local viewer of the sessions (127.0.0.1, token URL)",
        description="Serve the recorded review sessions on 127.0.0.1 until Ctrl-C: the list, each"
        " session's review page with its conversation, and marks per finding (false positive:"
        " a personal dismissal, undone by accepted or `git ocr dismiss --undo ID`; accepted:"
        " only recorded). Prints the URL with its access token on stdout.")
    sv.add_argument("--port", type=int, default=0, metavar="N",
                    help="port on 127.0.0.1 (default 0: a free port)")
    sv.add_argument("--open", action=argparse.BooleanOptionalAction, default=False,
                    help="open the URL in the default browser (default: only print it)")


def _serve(repo: Path, directory: Path, port: int, open_browser: bool) -> int:
    """Serve the viewer until Ctrl-C (exit 0). Raises UsageError for a port off 0-65535 or one
    that cannot be bound."""
    from .dismiss_cmd import dismiss_finding  # only the viewer needs it

    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: give a port from 0 to 65535 (0: a free one)")
    common = git.git_common_dir(repo)

    def dismiss(finding_id: str, reason: str) -> str:
        return dismiss_finding(repo, common, finding_id, reason, shared=False)

    def undo(finding_id: str, reason: str) -> bool:  # as `git ocr dismiss --undo ID`
        items = comments.load_personal(common)
        keep = [d for d in items if not (d.finding_id == finding_id and d.reason == reason)]
        if len(keep) == len(items):
            return False
        comments.save_personal(common, keep)
        return True

    def dismissed() -> dict[str, str]:
        return {d.finding_id: d.reason for d in comments.load_personal(common)}

    try:
        viewer = report.Viewer(directory, report.marks_path(common), dismiss, port,
                               undo=undo, dismissed=dismissed)
    except OSError as e:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from e
    try:  # Ctrl-C from here on is the way to stop it: exit 0
        print(viewer.url, flush=True)
        print("serving the session viewer; Ctrl-C stops it", file=sys.stderr, flush=True)
        if open_browser:
            import webbrowser

            if not webbrowser.open(viewer.url):
                print("ocr-hook: no browser could be opened; open the URL above yourself",
                      file=sys.stderr, flush=True)
        viewer.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.server.server_close()
    return Exit.OK
