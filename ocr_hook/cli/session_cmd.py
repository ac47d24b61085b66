"""``git ocr session list [--json]`` and ``git ocr session show ID [--json | --html [--output
FILE]]``: the review sessions recorded in the repository (spec §12).

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
from ..errors import OcrError
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
    raise OcrError("usage: git ocr session list|show ID")


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
