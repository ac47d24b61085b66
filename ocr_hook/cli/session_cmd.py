"""``git ocr session list [--json]``, ``git ocr session show ID [--json | --html [--output
FILE]]`` and ``git ocr session serve [--port N] [--open]``: the review sessions recorded in
the repository (spec §12), the last in a local viewer (``report.viewer``, spec §12.1).

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

from .. import git, report
from ..errors import OcrError, UsageError
from ..exitcodes import Exit


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
    raise OcrError("usage: git ocr session list|show ID|serve")


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
    rec = next((r for r in reversed(report.read_session_records(path))
                if r.get("type") == "result"), None)
    if rec is None or not isinstance(rec.get("report"), dict):
        raise OcrError(f"session {path.stem} has no recorded result (interrupted, or written by"
                       " an older ocr-hook)")
    diffs = [report.diff_from_record(d) for d in rec.get("diffs", []) if isinstance(d, dict)]
    page = report.render_html(rec["report"], diffs, str(rec.get("verdict_line", "")))
    if out_path is not None:
        report.write_output(out_path, page)
    else:
        sys.stdout.write(page)
    return Exit.OK


def add_serve_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``session serve [--port N] [--open | --no-open]`` sub-parser."""
    sv = actions.add_parser("serve", help="a local viewer of the sessions (127.0.0.1, token URL)")
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

    try:
        viewer = report.Viewer(directory, report.marks_path(common), dismiss, port)
    except OSError as e:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from e
    try:  # Ctrl-C from here on is the way to stop it: exit 0
        print(viewer.url, flush=True)
        print("serving the session viewer; Ctrl-C stops it", file=sys.stderr, flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(viewer.url)
        viewer.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.server.server_close()
    return Exit.OK
