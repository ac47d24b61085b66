"""Since the last blocked review (spec §12.3): after a BLOCKED review of a branch, the next
review of the same kind on that branch is shown the earlier findings and reports against them.

The chain of a branch is one entry of the repository's small state file
``<git common dir>/ocr-hook/since_last.json`` (``{"version": 1, "blocked": {"<kind>
<ref>": "<session id>"}}``, written atomically, mode 0600): ``kind`` is ``staged`` (a staged
snapshot: ``git ocr review`` and the pre-commit hook) or ``range`` (``--from/--to`` ranges and
pushes), ``ref`` the branch HEAD is on (``git symbolic-ref``; a detached HEAD has no chain). A
review blocked by findings sets the entry to its session; a review that passes ends the chain
(the entry is removed); a review that could not decide (incomplete, failed, skipped) leaves it.
The earlier findings are the ``comment`` records of that session (§12); a pruned session ends
the chain too.

Git is asked for the branch only when the state file names a chain of this kind or the review
blocked, so a run in a repository without a blocked review costs no extra process.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, NamedTuple

from .. import git, report, util
from ..errors import OcrError
from ..findings import Finding, normalized_quote
from .request import ReviewRequest

log = logging.getLogger("ocr_hook")

STATE_FILE = "since_last.json"  # under <git common dir>/ocr-hook/
STATE_VERSION = 1
_KINDS = {"staged": "staged", "range": "range", "push": "range"}


class Chain(NamedTuple):
    """The chain a run belongs to: ``name`` (``<kind> <ref>``, "" before it was needed),
    ``session`` (the last blocked review's session id, "" when none) and its ``findings``."""

    name: str = ""
    session: str = ""
    findings: tuple[Finding, ...] = ()


def state_path(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/since_last.json``."""
    return common_dir / "ocr-hook" / STATE_FILE


def read_state(common_dir: Path) -> dict[str, str]:
    """The ``blocked`` table of the state file: chain name → session id; {} when the file is
    missing, unreadable or of another shape (a broken file starts the chains afresh)."""
    raw = util.read_if_present(state_path(common_dir))
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    table = data.get("blocked") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, str)}


def _write_state(common_dir: Path, table: dict[str, str]) -> None:
    body = json.dumps({"version": STATE_VERSION, "blocked": dict(sorted(table.items()))},
                      indent=2) + "\n"
    try:
        util.write_atomic(state_path(common_dir), body.encode("utf-8"))
    except OSError as e:  # the review's outcome stands; only the next comparison is lost
        log.warning("cannot write %s: %s", state_path(common_dir), e.strerror)


def chain_name(req: ReviewRequest) -> str:
    """``<kind> <ref>`` of this run, "" for a kind without chains (commit, merge) or a
    detached HEAD. Runs ``git symbolic-ref -q HEAD``."""
    kind = _KINDS.get(req.mode)
    if kind is None:
        return ""
    ref = git.run_git(req.repo, "symbolic-ref", "-q", "HEAD", ok_codes=(0, 1), timeout_s=10)
    name = ref.decode("utf-8", "surrogateescape").strip()
    return f"{kind} {name}" if name else ""


def begin(req: ReviewRequest, common_dir: Path) -> tuple[ReviewRequest, Chain]:
    """The run's chain and ``req`` with the earlier findings (``ReviewRequest.earlier``) when
    this branch's last review of this kind blocked; ``req`` unchanged otherwise."""
    kind = _KINDS.get(req.mode)
    table = read_state(common_dir) if kind and not req.preview else {}
    if not any(k.startswith(f"{kind} ") for k in table):
        return req, Chain()
    name = chain_name(req)
    sid = table.get(name, "")
    if not sid:
        return req, Chain(name)
    findings = earlier_findings(common_dir, sid)
    if findings is None:
        return req, Chain(name)
    return req._replace(earlier=findings), Chain(name, sid, findings)


def earlier_findings(common_dir: Path, session_id: str) -> tuple[Finding, ...] | None:
    """The findings (``comment`` records) of session ``session_id``; None when the session is
    gone (pruned) or its id is not a plain file name."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    path = report.sessions_dir(common_dir) / f"{session_id}.jsonl"
    if not path.is_file():
        return None
    from .. import comments

    try:
        records = report.read_session_records(path)
    except OcrError:
        return None
    out = (comments.finding_from_record(r) for r in records if r.get("type") == "comment")
    return tuple(f for f in out if f is not None)


def finish(req: ReviewRequest, common_dir: Path, session_id: str, result: Any,
           chain: Chain) -> None:
    """After the gate and the dismissals: ``result.since_last`` against the chain's earlier
    review (``comments.compare_since``, the code looked up in the reviewed snapshot), then the
    state file: this session when the review blocked on findings, the chain ended when it
    passed, unchanged when it could not decide (and for a run with nothing to review, which
    gets no ``since_last``)."""
    if result.preview:
        return
    if chain.session and result.status != "skipped":  # nothing reviewed: nothing to compare
        from .. import comments

        cmp = comments.compare_since(chain.findings, result.findings,
                                     _code_lookup(req.repo, result, chain.findings))
        result.since_last = {"session": chain.session, **cmp.ids()}
    d = result.decision
    blocked = d.blocked and d.verdict == "findings"
    passed = not d.blocked and d.verdict != "incomplete" and result.status == "complete"
    if not (blocked or passed):
        return
    if not blocked and not chain.name:
        return  # a pass outside any chain: nothing to end (no git call)
    name = chain.name or chain_name(req)
    if not name:
        return
    table = read_state(common_dir)
    if blocked:
        table[name] = session_id
    elif table.pop(name, None) is None:
        return
    _write_state(common_dir, table)


def _code_lookup(repo: Path, result: Any, earlier: tuple[Finding, ...]) -> Any:
    """``still_there(finding)`` for ``comments.compare_since``: whether the finding's anchored
    code (normalised as in ids and keys) is still a run of whole lines of its file in the
    reviewed snapshot (the staged tree, else the head commit). The files are read in one
    ``git cat-file --batch`` on first use; an unreadable file counts as gone."""
    tree = result.input.get("snapshot_tree") or result.input.get("head") or ""
    texts: dict[str, str] = {}

    def load() -> None:
        paths = sorted({f.path for f in earlier if f.code and "\n" not in f.path})
        specs = [f"{tree}:{p}" for p in paths]
        try:
            objs = git.read_objects(repo, specs) if tree and specs else []
        except OcrError:  # the snapshot cannot be read: every earlier finding counts as gone
            objs = []
        for p, obj in zip(paths, objs, strict=False):
            if obj is not None and obj[0] == "blob":
                texts[p] = "\n" + normalized_quote(obj[1].decode("utf-8", "replace")) + "\n"

    def still_there(f: Finding) -> bool:
        if not texts:
            load()
            texts.setdefault("", "")  # loaded
        code = normalized_quote(f.code)
        return bool(code) and f"\n{code}\n" in texts.get(f.path, "")

    return still_there
