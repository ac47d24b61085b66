"""``git ocr dismiss``: record that a finding is not a problem, list and undo.

``git ocr dismiss ID [--reason TEXT] [--shared]`` looks the finding up by its id (a unique
prefix of at least ID_MIN_CHARS characters) in this repository's review sessions, newest first
(every review, cache hits included, records its findings with their dismissal key), and
stores the key with the reason, the git identity and the date: in the personal file under the
git directory, or with ``--shared`` in ``.ocr-hook-dismissed.json`` in the work tree, to be
committed (reviews read it from HEAD). ``--list`` shows both; ``--undo ID`` removes a dismissal
by its own id, the id of the finding it was made from, or the id of a finding it dismissed.

Sessions and the shared file are repository data and hold the model's text: every field printed
passes ``util.display_text`` (paths ``util.display_path``), ``--list --json`` passes
``report.display_json``, so no raw control, format or separator character reaches the terminal.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import comments, git, report
from ..errors import UsageError
from ..exitcodes import Exit
from ..findings import SECRET_SOURCE
from ..util import display_path, display_text
from ..vocabulary import Severity

ID_MIN_CHARS = 4
_ID = re.compile(r"[0-9a-f]+")
FINDING_RECORDS = ("comment", "dismissed")  # session record types that carry a finding


def run_dismiss_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``dismiss``; returns the exit code. Raises UsageError for a bad or unknown id, a
    secret finding, or an unreadable/unwritable store."""
    repo = git.find_toplevel(Path.cwd())
    common = git.git_common_dir(repo)
    if args.list:
        if args.id or args.undo:
            raise UsageError("--list takes no ID")
        return _list(repo, common, args.json)
    if args.undo:
        if args.id:
            raise UsageError("give the ID once: git ocr dismiss --undo ID")
        return _undo(repo, common, _check_id(args.undo), args.shared)
    if not args.id:
        raise UsageError("usage: git ocr dismiss ID [--reason TEXT] [--shared] | --list |"
                         " --undo ID")
    return _dismiss(repo, common, _check_id(args.id), args.reason or "", args.shared)


def _check_id(raw: str) -> str:
    value = raw.strip().lower()
    if len(value) < ID_MIN_CHARS or not _ID.fullmatch(value):
        raise UsageError(f"invalid id {display_text(raw)!r}: give the id shown with the finding"
                         f" (hex, at least {ID_MIN_CHARS} characters)")
    return value


def find_finding(common: Path, prefix: str) -> dict[str, Any]:
    """The newest session record of a finding whose id starts with ``prefix``. Raises
    UsageError when no session has one, or the newest session that has one has several."""
    directory = report.sessions_dir(common)
    try:
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.name, reverse=True)
    except OSError:
        files = []
    for path in files:
        try:
            records = report.read_session_records(path)
        except UsageError:
            continue
        found: dict[str, dict[str, Any]] = {}
        for rec in records:
            fid = str(rec.get("id", ""))
            if rec.get("type") in FINDING_RECORDS and fid.startswith(prefix):
                found.setdefault(fid, rec)
        if len(found) > 1:
            raise UsageError(f"id {prefix!r} is ambiguous: {', '.join(sorted(found)[:5])};"
                             " give more characters")
        if found:
            return next(iter(found.values()))
    raise UsageError(f"no finding {prefix!r} in the recent reviews of this repository (ids are"
                     " shown with each finding; `git ocr session list` lists the reviews)")


def _where(rec: Mapping[str, Any]) -> str:
    """``path:line [severity · category]`` of a finding record, for a terminal."""
    return display_text(f"{display_path(str(rec.get('path', '')))}:{rec.get('start_line')}"
                        f" [{rec.get('severity')} · {rec.get('category')}]")


def _dismiss(repo: Path, common: Path, prefix: str, reason: str, shared: bool) -> int:
    print(dismiss_finding(repo, common, prefix, reason, shared))
    return Exit.OK


def dismiss_finding(repo: Path, common: Path, prefix: str, reason: str, shared: bool) -> str:
    """Store the dismissal of the finding whose id starts with ``prefix`` (the newest session
    record, :func:`find_finding`) with ``reason``: personal, or in the work-tree shared file.
    Returns the line telling what was done (for a terminal). Used by ``git ocr dismiss ID``
    and the session viewer's "false positive" mark. Raises UsageError for an unknown or
    ambiguous id, a secret finding, a record without a dismissal key or an unwritable store."""
    rec = find_finding(common, prefix)
    where = _where(rec)
    shown_id = display_text(str(rec.get("id", "")))
    if rec.get("source") == SECRET_SOURCE:
        raise UsageError(f"{shown_id} ({where}) is a secret finding; secrets keep their own"
                         " allow rules: put `ocr-hook: allow-secret` on its line or list the value"
                         " in security.allow_secrets")
    key = str(rec.get("key", ""))
    if len(key) != 64:
        raise UsageError(f"{shown_id} was recorded by an older ocr-hook without a dismissal"
                         " key; review again and use the new id")
    if rec.get("type") == "dismissed" and rec.get("by") == "inline":
        return f"{shown_id} is already dismissed by `{comments.IGNORE_MARKER}` on its line"
    d = comments.Dismissal(
        key=key, path=str(rec.get("path", "")), category=str(rec.get("category", "")),
        code=str(rec.get("code", "")), reason=reason, author=comments.git_author(repo),
        date=comments.now_iso(), finding_id=str(rec.get("id", "")),
        message=" ".join(str(rec.get("content", "")).split())[:200],
        scope="shared" if shared else "personal")
    if shared:
        items = comments.load_shared_worktree(repo)
        path = comments.save_shared(repo, [*[x for x in items if x.key != key], d])
        return (f"dismissed {shown_id} ({where}) in {display_path(path.name)}; commit that file:"
                " it applies to reviews from the next commit on")
    items = comments.load_personal(common)
    path = comments.save_personal(common, [*[x for x in items if x.key != key], d])
    return f"dismissed {shown_id} ({where}) for you ({display_path(str(path))})"


def _undo(repo: Path, common: Path, prefix: str, shared: bool) -> int:
    personal = [] if shared else comments.load_personal(common)
    team = comments.load_shared_worktree(repo)
    keys = {d.key for d in [*personal, *team]
            if d.id.startswith(prefix) or d.finding_id.startswith(prefix)}
    if not keys:
        try:
            keys = {str(find_finding(common, prefix).get("key", ""))}
        except UsageError:
            keys = set()
    removed = [d for d in [*personal, *team] if d.key in keys]
    if not removed:
        raise UsageError(f"no dismissal {prefix!r} (see `git ocr dismiss --list`)")
    if len({d.key for d in removed}) > 1:
        raise UsageError(f"id {prefix!r} matches several dismissals: "
                         + display_text(", ".join(sorted({d.id for d in removed}))))
    if any(d.scope == "personal" for d in removed):
        comments.save_personal(common, [d for d in personal if d.key not in keys])
    if any(d.scope == "shared" for d in removed):
        comments.save_shared(repo, [d for d in team if d.key not in keys])
    for d in removed:
        note = "; commit .ocr-hook-dismissed.json" if d.scope == "shared" else ""
        print(display_text(f"undone: {d.id} {display_path(d.path)} [{d.category}] ({d.scope})")
              + note)
    return Exit.OK


def finding_severities(common: Path) -> dict[str, Severity]:
    """Finding id -> severity of every finding the review sessions recorded (the newest session
    wins). Unreadable sessions are left out."""
    out: dict[str, Severity] = {}
    try:
        files = sorted(report.sessions_dir(common).glob("*.jsonl"), key=lambda p: p.name)
    except OSError:
        files = []
    for path in files:  # oldest first: a newer record of the same id overwrites
        try:
            records = report.read_session_records(path)
        except UsageError:
            continue
        for rec in records:
            severity = Severity.parse(rec.get("severity"))
            if rec.get("type") in FINDING_RECORDS and severity is not None:
                out[str(rec.get("id", ""))] = severity
    return out


def list_order(items: list[comments.Dismissal], common: Path) -> list[comments.Dismissal]:
    """The dismissals most severe first (the severity of the finding each was made from, as the
    sessions recorded it; unknown last), then as stored: personal, then shared."""
    if len(items) < 2:
        return items
    severities = finding_severities(common)
    return sorted(items, key=lambda d: -int(severities.get(d.finding_id, 0)))


def _list(repo: Path, common: Path, as_json: bool) -> int:
    items = list_order([*comments.load_personal(common), *comments.load_shared_worktree(repo)],
                       common)
    if as_json:
        for d in items:
            print(report.display_json({
                "id": d.id, "scope": d.scope, "path": d.path, "category": d.category,
                "reason": d.reason, "author": d.author, "date": d.date,
                "finding_id": d.finding_id, "message": d.message, "code": d.code, "key": d.key}))
        return Exit.OK
    if not items:
        print("no dismissals")
        return Exit.OK
    for d in items:  # the finding id the user saw first (when recorded), then the key
        first = next((ln.strip() for ln in d.code.split("\n") if ln.strip()), "")
        print(display_text(f"{d.finding_id or d.id}  {d.scope:<8}  {display_path(d.path)}"
                           f" [{d.category}]  {d.date}  {d.author}"))
        print(f"    key:     {display_text(d.id)}")
        if first:
            print(f"    code:    {display_text(first[:100])}")
        print(f"    finding: {display_text(d.message[:100])}")
        if d.reason:
            print(f"    reason:  {display_text(d.reason)}")
    sys.stdout.flush()
    return Exit.OK
