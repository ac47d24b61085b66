"""Since the last blocked review (spec §12.3): after a BLOCKED review of a branch, the next
review of the same kind on that branch is shown the earlier findings and reports against them.

The chain of a branch is one entry of the repository's small state file
``<git common dir>/ocr-hook/since_last.json`` (``{"version": 2, "blocked": {"<kind> <ref>":
{"session": "<id>", "open": [["<session id>", "<finding id>"], ...]}}}``, written atomically,
mode 0600; a version-1 entry, a plain session id, means all of that session's findings):
``kind`` is ``staged`` (a staged snapshot: ``git ocr review`` and the pre-commit hook) or
``range`` (``--from/--to`` ranges and pushes), ``ref`` the branch HEAD is on (``git
symbolic-ref``; a detached HEAD has no chain), for a push the one pushed ref. ``session`` is
the last blocked review, ``open`` the earlier findings still open: a review blocked by
findings sets the entry to its session, its findings plus the earlier ones it carried (on
files it did not review); a review that passes keeps the entry with only the carried findings,
and ends the chain when there are none; a range review or push that passes ends its chain
whatever is carried (what the ref holds has now passed, here or at commit time: its earlier
findings are dropped, never counted resolved; not a push cut to its newest commits by
``review.max_push_commits``), also when it had nothing left to review
because every commit was reviewed at commit time; a review that could not decide
(incomplete, failed, skipped otherwise) leaves it. The earlier findings are ``comment``
records of the sessions named; a pruned session's findings are gone (the chain ends when none
is left).

Git is asked for the branch only when the state file names a chain of this kind or the review
blocked, so a run in a repository without a blocked review costs no extra process.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from .. import git, report, util
from ..errors import OcrError
from ..findings import SECRET_SOURCE, Finding
from .request import ReviewRequest

log = logging.getLogger("ocr_hook")

STATE_FILE = "since_last.json"  # under <git common dir>/ocr-hook/
STATE_VERSION = 2
_KINDS = {"staged": "staged", "range": "range", "push": "range"}


class Chain(NamedTuple):
    """The chain a run belongs to: ``name`` (``<kind> <ref>``, "" before it was needed),
    ``session`` (the last blocked review's session id, "" when none), its open ``findings``
    and, for each, the session it was recorded in (``sources``)."""

    name: str = ""
    session: str = ""
    findings: tuple[Finding, ...] = ()
    sources: tuple[str, ...] = ()
    asked: int = 0  # the leading findings this run shows the model (``ReviewRequest.earlier``)

    @property
    def shown(self) -> tuple[Finding, ...]:
        """The findings the model is asked about; the rest wait for a later review."""
        return self.findings[:self.asked]


class Entry(NamedTuple):
    """One chain of the state file: the last blocked ``session`` and the ``open`` findings as
    (session id, finding id) pairs; ``open`` None: all findings of ``session``."""

    session: str
    open: tuple[tuple[str, str], ...] | None = None


def state_path(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/since_last.json``."""
    return common_dir / "ocr-hook" / STATE_FILE


def read_state(common_dir: Path) -> dict[str, Entry]:
    """The ``blocked`` table of the state file: chain name → Entry; {} when the file is
    missing, unreadable or of another shape (a broken file starts the chains afresh; a broken
    entry is left out)."""
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
    out: dict[str, Entry] = {}
    for k, v in table.items():
        if isinstance(v, str):  # version 1
            out[k] = Entry(v)
        elif isinstance(v, dict) and isinstance(v.get("session"), str):
            pairs = v.get("open")
            if isinstance(pairs, list):
                out[k] = Entry(v["session"], tuple(
                    (p[0], p[1]) for p in pairs if isinstance(p, list) and len(p) == 2
                    and all(isinstance(x, str) for x in p)))
    return out


def _write_state(common_dir: Path, table: dict[str, Entry]) -> None:
    # a version-1 entry (open None: every finding of its session) stays one
    blocked = {k: e.session if e.open is None else
               {"session": e.session, "open": [list(p) for p in e.open]}
               for k, e in sorted(table.items())}
    body = json.dumps({"version": STATE_VERSION, "blocked": blocked}, indent=2) + "\n"
    try:
        util.write_atomic(state_path(common_dir), body.encode("utf-8"))
    except OSError as e:  # the review's outcome stands; only the next comparison is lost
        log.warning("cannot write %s: %s", state_path(common_dir), e.strerror)


def chain_name(req: ReviewRequest) -> str:
    """``<kind> <ref>`` of this run, "" for a kind without chains (commit, merge), a detached
    HEAD or a push of several refs. A push is keyed on the ref it pushes (``range
    refs/heads/feat``, the hook's remote ref); other kinds on HEAD's branch (``git
    symbolic-ref -q HEAD``)."""
    kind = _KINDS.get(req.mode)
    if kind is None:
        return ""
    if req.mode == "push":
        refs = {r for t in req.targets for r in t.refs}
        return f"{kind} {refs.pop()}" if len(refs) == 1 else ""
    try:
        ref = git.run_git(req.repo, "symbolic-ref", "-q", "HEAD", ok_codes=(0, 1), timeout_s=10)
    except OcrError as e:  # the chain is bookkeeping: it never fails the review
        log.debug("no chain: %s", e)
        return ""
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
    entry = table.get(name)
    if entry is None:
        return req, Chain(name)
    found: list[tuple[str, Finding]] = []
    wanted = entry.open if entry.open is not None else ((entry.session, ""),)
    loaded: dict[str, dict[str, Finding]] = {}
    for sid, fid in wanted:
        if sid not in loaded:
            got = earlier_findings(common_dir, sid)
            loaded[sid] = {} if got is None else {f.id: f for f in got}
            if fid == "":  # all of them (a version-1 entry)
                found.extend((sid, f) for f in loaded[sid].values())
        if fid and fid in loaded[sid]:
            found.append((sid, loaded[sid][fid]))
    if not found:
        return req, Chain(name)
    # at most EARLIER_CAP findings the model is asked about (secret-scan ones are not shown,
    # the scanner finds them again by key); the others wait, carried, for a later review, so
    # none is resolved that no model was shown
    from ..agent import EARLIER_CAP

    asked, waiting, shown = [], [], 0
    for pair in found:
        secret = pair[1].source == SECRET_SOURCE
        (asked if secret or shown < EARLIER_CAP else waiting).append(pair)
        shown += not secret
    found = asked + waiting
    findings = tuple(f for _s, f in found)
    return req._replace(earlier=findings[:len(asked)]), Chain(
        name, entry.session, findings, tuple(s for s, _f in found), len(asked))


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


def _name_repeats(result: Any, earlier: tuple[Finding, ...]) -> None:
    """Each finding's ``repeats`` label (``E2``) as the earlier finding's id ("" for a label
    that names none or a finding on another path), so the session records say which earlier
    finding it files again."""
    def named(f: Finding) -> Finding:
        if not f.repeats:
            return f
        n = f.repeats[1:]
        ok = (f.repeats.startswith("E") and n.isdigit() and 0 < int(n) <= len(earlier)
              and earlier[int(n) - 1].path == f.path)  # another file's finding: no repeat
        return f._replace(repeats=earlier[int(n) - 1].id if ok else "")

    result.findings = [named(f) for f in result.findings]
    result.dismissed = [d._replace(finding=named(d.finding)) for d in result.dismissed]


def finish(req: ReviewRequest, common_dir: Path, session_id: str, result: Any,
           chain: Chain) -> None:
    """After the gate and the dismissals: ``result.since_last`` against the chain's earlier
    findings (``comments.compare_since`` with the files this review reviewed, those answered
    from the cache aside; none reviewed: no ``since_last``; a carried finding whose file is
    not in the reviewed snapshot is resolved, :func:`_gone_resolved`), each finding's
    ``repeats`` named by id, then the state file: this session plus the carried findings
    when the review blocked on findings; only the carried ones when it passed (none: the
    chain ends); unchanged when it could not decide."""
    if result.preview:
        return
    reviewed = {o.path for o in result.files if o.reviewed}
    carried = list(zip(chain.findings, chain.sources, strict=True))
    if chain.session and reviewed:
        from .. import comments

        cmp = comments.compare_since(chain.shown, result.findings,
                                     reviewed - _from_cache(result),
                                     [d.finding for d in result.dismissed])
        cmp = cmp._replace(carried=[*cmp.carried, *chain.findings[chain.asked:]])  # not shown
        cmp = _gone_resolved(req, result, chain, cmp)
        _name_repeats(result, chain.shown)
        kept = {id(f) for f in cmp.carried}
        result.since_last = {"session": chain.session, **cmp.ids()}
        carried = [(f, s) for f, s in carried if id(f) in kept]
    elif any(f.repeats for f in [*result.findings, *(d.finding for d in result.dismissed)]):
        _name_repeats(result, chain.shown)  # labels of no list shown: dropped
    d = result.decision
    blocked = d.blocked and d.verdict == "findings"
    ranged = _KINDS.get(req.mode) == "range"
    passed = not d.blocked and d.verdict != "incomplete" and (
        result.status == "complete"
        or (ranged and result.status == "skipped" and bool(result.input.get("reviewed_at_commit"))))
    if not (blocked or passed):
        return
    if passed and ranged and not any(t.skipped_commits for t in req.targets):
        carried = []  # the ref's content passed: the blocked episode is over
    if not blocked and not chain.name:
        return  # a pass outside any chain: nothing to end (no git call)
    name = chain.name or chain_name(req)
    if not name:
        return
    table = read_state(common_dir)
    still = tuple((s, f.id) for f, s in carried)
    if blocked:
        table[name] = Entry(session_id, tuple((session_id, f.id) for f in result.findings)
                            + still)
    elif still:
        table[name] = Entry(chain.session, still)
    elif table.pop(name, None) is None:
        return
    _write_state(common_dir, table)


_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def _gone_resolved(req: ReviewRequest, result: Any, chain: Chain, cmp: Any) -> Any:
    """``cmp`` with the carried findings whose file is absent from the reviewed snapshot (the
    staged tree, or the range's head; ``git ls-tree``) counted as resolved: the file is gone
    (deleted, or never committed and reset away), so nothing can carry it on. A staged review
    keeps a file that is still in the work tree (unstaged for this commit, it may come back).
    ``cmp`` unchanged when nothing is carried or the snapshot cannot be read."""
    if not cmp.carried:
        return cmp
    tree = str(result.input.get("snapshot_tree") or result.input.get("head") or "")
    if not _OID.fullmatch(tree):
        return cmp
    paths = sorted({f.path for f in cmp.carried})
    try:
        out = git.run_git(req.repo, "ls-tree", "-r", "-z", "--name-only", "--full-tree", tree,
                          "--", *paths, timeout_s=30)
    except OcrError as e:
        log.debug("carried findings kept: %s", e)
        return cmp
    present = set(out.decode("utf-8", "surrogateescape").split("\0"))
    gone = {id(f) for f in cmp.carried if f.path not in present
            and not (req.mode == "staged" and os.path.lexists(req.repo / f.path))}
    if not gone:
        return cmp
    resolved = {id(f) for f in cmp.resolved} | gone
    return cmp._replace(resolved=[f for f in chain.findings if id(f) in resolved],
                        carried=[f for f in cmp.carried if id(f) not in gone])


def _from_cache(result: Any) -> set[str]:
    """The reviewed paths whose answer came from the result cache (spec §10): a group hit
    (``cache_hit`` stop), or every file on a run hit (cache hits and no group run). No model
    was shown the earlier findings there, so its silence resolves nothing (carried)."""
    from ..vocabulary import StopReason

    if result.cache_hits and not result.group_reports:
        return {o.path for o in result.files}
    return {p for g in result.group_reports if StopReason.CACHE_HIT in g.stop_reasons
            for p in g.files}
