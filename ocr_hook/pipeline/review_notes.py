"""Review notes in a run (spec §3.4.1): the pre-commit hook records what it reviewed, and a
push or range review leaves out the commits whose patch and exact change have a passing note
for the same settings. The git side (the snapshot file, the notes, patch-ids, change digests)
is ``git.review_notes``.

A note is trusted when its patch-id and change digest are the commit's, its verdict is
``pass``, its settings fingerprint is this run's
(:func:`settings_fingerprint`: every setting but NOT_IN_FINGERPRINT, plus the texts the model is
given) and its effort covers this run's (``cache.entries.effort_covers``), and git has
``patch-id --verbatim``. ``review.trust_notes = false`` trusts none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import change, git
from ..errors import OcrError
from ..findings import RunWarning
from ..gate import blocks

if TYPE_CHECKING:
    from ..report import ReviewResult
    from .request import ReviewRequest

log = logging.getLogger("ocr_hook")
_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
NOTE_FINGERPRINT_FORMAT = 2  # 2: every setting by default, rule texts (spec §3.4.1)
_NO_ANSWER = "cannot change which files are reviewed, what the model is told, or the verdict"
# Configuration keys that stay out of the fingerprint, and why. Every other key (and so every
# new one) is in it: a note made under other selection, gate, rules or model settings is not
# trusted.
NOT_IN_FINGERPRINT: dict[str, str] = {
    "llm.api_key": "a credential",
    "llm.api_key_cmd": "a credential",
    "llm.timeout_s": "a bound: a review that reaches it is incomplete, never a pass",
    "llm.connect_timeout_s": "a bound: a review that reaches it is incomplete, never a pass",
    "llm.max_retries": "a failed attempt is repeated as it was",
    "llm.prompt_caching": "a provider caching hint: " + _NO_ANSWER,
    "review.effort": "stored in the note and compared as the result cache does",
    "review.concurrency": "groups are reviewed independently: " + _NO_ANSWER,
    "review.timeout_s": "a bound: a review that reaches it is incomplete, never a pass",
    "review.max_tokens_budget": "a bound: a review that reaches it is incomplete, never a pass",
    "review.max_push_commits": "bounds a pushed range, not the commit-time review",
    "review.trust_notes": "chooses whether notes are read at all",
    "cache.enabled": _NO_ANSWER,
    "cache.max_mb": _NO_ANSWER,
    "telemetry.enabled": _NO_ANSWER,
    "telemetry.content": _NO_ANSWER,
    "budget.daily_usd": "a money cap: a run over it is not reviewed, never a pass",
    "budget.monthly_usd": "a money cap: a run over it is not reviewed, never a pass",
}


def fingerprint_settings(req: ReviewRequest) -> dict[str, Any]:
    """``{section.name: value}`` of every configuration key of ``req`` but NOT_IN_FINGERPRINT
    (selection, gate, rules, model, prompt and secret settings included)."""
    out: dict[str, Any] = {}
    for section in dataclasses.fields(req.config):
        values = getattr(req.config, section.name)
        for f in dataclasses.fields(values):
            key = f"{section.name}.{f.name}"
            if key not in NOT_IN_FINGERPRINT:
                out[key] = getattr(values, f.name)
    return out


def settings_fingerprint(req: ReviewRequest) -> str:
    """SHA-256 hex of what can change which files a review reads, what the model is told or
    the verdict: the result cache's ``result_settings`` (endpoint, templates, tools,
    background, guidance, version) with its configuration digest replaced by
    :func:`fingerprint_settings`, plus the rule texts of every layer (``req.rule_sources``:
    ``--rule``, ``rules.file`` at HEAD, the user's rule.json, the built-in rules); "" without
    an endpoint (nothing was reviewed)."""
    if req.endpoint is None:
        return ""
    from .. import __version__
    from .cache.store import digest, result_settings

    settings = result_settings(req.config, req.endpoint, req.background, __version__,
                               req.tool_defs, req.guidance.block)
    settings["config"] = digest(fingerprint_settings(req))
    settings["rules"] = hashlib.sha256(repr(tuple(req.rule_sources)).encode(
        "utf-8", "replace")).hexdigest()
    settings["notes_format"] = NOTE_FINGERPRINT_FORMAT
    return digest(settings)


def record_review(req: ReviewRequest, result: ReviewResult) -> None:
    """After a pre-commit hook's review of the whole staged snapshot (no file list, no
    preview, something staged): record the snapshot's tree, its parent commit, the verdict,
    the fingerprint, the effort and the session for the post-commit hook
    (``git.record_snapshot``). A finding a dismissal took out (personal or shared) that would
    have blocked (``gate.blocks``) makes the recorded verdict ``dismissed``, never ``pass``: a
    push or CI elsewhere does not have the personal ones, and a shared one can be withdrawn
    later; at push such a commit is reviewed and a dismissal still in force applies again. A
    dismissed finding below the gate changes nothing: the commit passes without it. Best
    effort: a failure is logged at debug level, never raised."""
    if (req.stage != "pre-commit" or req.mode != "staged" or req.path_filter is not None
            or req.preview or not result.files):  # nothing staged: no commit with a patch
        return
    tree = str(result.input.get("snapshot_tree") or "")
    base = str(result.input.get("base") or "")
    fingerprint = settings_fingerprint(req)
    if not tree or not fingerprint:
        return
    verdict = result.decision.verdict
    if any(blocks(d.finding, req.gate) for d in result.dismissed):
        verdict = "dismissed"
    elif verdict == "pass" and any(not f.reviewed and f.reason not in SETTLED_EXCLUSIONS
                                   for f in result.files):
        verdict = "partial"  # a path the model did not see may become reviewable later
    try:
        git.record_snapshot(req.repo, tree, base if _OID.fullmatch(base) else "",
                            verdict, fingerprint, req.effort, result.session_id)
    except (OSError, OcrError) as e:
        log.debug("reviewed snapshot not recorded: %s", e)


# Exclusions that do not make a commit's note ``partial`` (spec §3.4.1), each because no later
# commit can turn the content left out into code the model did not see while its own diff shows
# nothing of it: deleted, mode_only, no_content_change and submodule leave no content out; the
# path, type and marker gates (secret_path, provider_directory, user_exclude, unsupported_ext,
# default_path) are in the settings fingerprint, and a later rename or marker removal that
# undoes one is reviewed whole (``change.whole``, spec §4); symlink_outside and symlink leave
# out only the link text, and a later change of it or of the link's type is in that commit's
# diff; rename_only moves content another commit wrote, and a push range limited to the
# unnoted commits' paths follows the rename to its new path (``git.follow_renames``). Not
# settled: ``binary`` (a .gitattributes change can turn a file text with no diff of the file),
# and every NOT_REVIEWED reason (the review is incomplete anyway).
_R = change.SelectionReason
SETTLED_EXCLUSIONS = frozenset({_R.DELETED, _R.MODE_ONLY, _R.NO_CONTENT_CHANGE, _R.SUBMODULE,
                                _R.SECRET_PATH, _R.PROVIDER_DIRECTORY, _R.USER_EXCLUDE,
                                _R.UNSUPPORTED_EXT, _R.DEFAULT_PATH, _R.SYMLINK_OUTSIDE,
                                _R.SYMLINK, _R.RENAME_ONLY})

NOTES_OFF_OLD_GIT = ("review notes not trusted: this git has no `git patch-id --verbatim` (git"
                     " 2.39 or later); every commit is reviewed")
NOTES_UNTRUSTED = "not trusted: settings changed since commit time"


def trusted_patches(req: ReviewRequest) -> dict[tuple[str, str], git.ReviewNote]:
    """``{(patch-id, change digest): note}`` (``ReviewNote.key``) of the notes this run
    trusts (see the module doc); {} with ``review.trust_notes = false``, no endpoint or a git
    without ``patch-id --verbatim``. Raises GitError."""
    return _notes(req)[0]


def _notes(req: ReviewRequest) -> tuple[dict[tuple[str, str], git.ReviewNote],
                                        dict[tuple[str, str], git.ReviewNote]]:
    """(trusted, passing but made under other settings or a lower effort), by
    ``ReviewNote.key``."""
    fingerprint = settings_fingerprint(req) if req.config.review.trust_notes else ""
    if not fingerprint or not git.verbatim_patch_ids():
        return {}, {}
    from .cache.entries import effort_covers

    trusted: dict[str, git.ReviewNote] = {}
    other: dict[str, git.ReviewNote] = {}
    for n in git.read_notes(req.repo):
        if n.verdict != "pass":
            continue
        if n.fingerprint == fingerprint and effort_covers(n.effort, req.effort):
            trusted[n.key] = n
        else:
            other.setdefault(n.key, n)
    return trusted, other


def notes_warning(req: ReviewRequest) -> RunWarning | None:
    """The one ``review_notes`` warning of a push or range run that trusts notes on a git
    without ``patch-id --verbatim``, else None."""
    if (req.config.review.trust_notes and req.endpoint is not None
            and not git.verbatim_patch_ids()):
        return RunWarning("review_notes", "", NOTES_OFF_OLD_GIT)
    return None


def apply_notes(req: ReviewRequest, targets: Sequence[git.Target]
                ) -> tuple[list[git.Target], list[dict[str, Any]], list[RunWarning]]:
    """``targets`` without the commits reviewed at commit time, those commits (JSON
    ``input.reviewed_at_commit``: ``{commit, noted_commit, session, ref}``, oldest first per
    range) and the run's ``review_notes`` warnings (at most one: notes not trusted on this
    git, or ``N commit(s) with a passing review note: not trusted: settings changed since
    commit time``). In a range that is one first-parent chain without merges, the leading
    run of commits with a trusted note is left out and the rest is reviewed as one range, at
    the tip's state (a later commit may fix what an earlier one broke), limited to the paths
    the commits without a trusted note change (``Target.paths``) when a noted commit lies
    among them; a range with merges is reviewed whole. In a range cut to its newest commits
    (``git.bound_push_range``) the noted commits at its base are reviewed, so the range still
    names the older commits left out. Raises GitError."""
    warning = notes_warning(req)
    trusted, other = _notes(req)
    if not trusted and not other:
        return list(targets), [], [warning] if warning else []
    out: list[git.Target] = []
    covered: list[dict[str, Any]] = []
    untrusted = 0
    for t in targets:
        rows = git.range_commits(req.repo, t.base, t.head)
        keys = git.note_keys(req.repo, [r[0] for r in rows]) if rows else {}
        notes = [trusted.get(keys.get(r[0], ("", ""))) for r in rows or ()]
        untrusted += sum(1 for r, n in zip(rows or (), notes, strict=True) if n is None
                         and keys.get(r[0], ("", "")) in other)
        if t.skipped_commits:  # cut by review.max_push_commits: the range keeps its base
            lead = next((i for i, n in enumerate(notes) if n is None), len(notes))
            notes[:lead] = [None] * lead  # so its "older commits not reviewed" is right
        if not rows or not any(notes):
            out.append(t)
            continue
        covered += [{"commit": row[0], "noted_commit": note.commit, "session": note.session,
                     "ref": ", ".join(t.refs)}
                    for row, note in zip(rows, notes, strict=True) if note is not None]
        first = next((i for i, n in enumerate(notes) if n is None), None)
        if first is None:
            continue
        part = _segment(t, rows, first, len(rows) - 1)
        if any(notes[first:]):  # noted commits among them: review only what the others change
            unnoted = [r[0] for r, n in zip(rows[first:], notes[first:], strict=True)
                       if n is None]
            later = [r[0] for r in rows[first:]]  # content an unnoted commit wrote, renamed
            paths = git.follow_renames(req.repo, later, unnoted)
            paths &= git.range_paths(req.repo, part.base, part.head)
            if not paths:  # what they changed is back as it was at the range's base
                continue
            part = part._replace(paths=tuple(sorted(paths)))
        out.append(part)
    if untrusted:
        warning = RunWarning("review_notes", "", f"{untrusted} commit(s) with a passing review"
                             f" note reviewed again: {NOTES_UNTRUSTED}")
    return out, covered, [warning] if warning else []


def _segment(t: git.Target, rows: Sequence[tuple[str, ...]], first: int,
             last: int) -> git.Target:
    """The part ``rows[first..last]`` of the range ``t`` (its refs kept; the older commits a
    bound left out stay on the part that starts at ``t``'s base)."""
    base = rows[first - 1][0] if first else t.base
    head = rows[last][0]
    return t._replace(
        base=base, base_label=base if first else t.base_label, head=head,
        head_label=t.head_label if last == len(rows) - 1 else head,
        commits=last - first + 1, skipped_commits=0 if first else t.skipped_commits,
        skipped_base_label="" if first else t.skipped_base_label)
