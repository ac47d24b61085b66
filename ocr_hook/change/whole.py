"""Files reviewed whole (spec §4, the whole-file rule): a changed file that selection keeps
now but whose old side a deliberate gate would have kept out is reviewed as an added file, every
line of its new blob an added line.

Such a file's own diff shows only what the change did to it, while the model never saw the rest:
a pure rename ``tests/test_x.py -> src/x.py`` (``rename_only``: nothing at all), a move out of
``vendor/``, a rename to a source extension, the removal of an ``@generated`` line. So the old
side is decided again from what the change set already holds, without a git call: the old path
through the path gates (:data:`WHOLE_GATES`), and the old lines the diff shows among the old
file's first ``GENERATED_SCAN_LINES`` lines through the generated-file marker test. Only when
some file's old side was kept out is a second diff run, as ``git ocr scan`` builds one
(``git.tree_without``, spec §3.9): against the head tree without those files, so the diff holds
exactly them, each as one added hunk, decided and secret-scanned like any other file.

Also reviewed whole (spec §4): a binary diff whose new blob is text (:func:`text_again`), a
rename into ``select.include`` from a generated file outside it (:func:`old_marked`: the one
bounded read of old blobs, only then), and a rename or copy away from a secret path.

Out of reach, reviewed by their diffs: a marker the change pushed below the first lines
without showing it (lines inserted above a marker beyond the diff's context), code a changed
``select.exclude``/``include`` newly selects without an edit, a link to an excluded target.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypeVar

from .. import git, secrets
from ..diff import FileDiff
from ..errors import GitError
from ..findings import Finding
from . import selection
from .selection import SelectionReason


class _Loaded(Protocol):
    """What :func:`review_whole` reads and fills of a ``changeset.ChangeSet``."""

    files: list[FileDiff]
    decisions: list[selection.Decision]
    findings: list[Finding]
    probes: list[selection.Decision]
    text_now: set[str]


ChangeSetT = TypeVar("ChangeSetT", bound=_Loaded)

_R = SelectionReason
# the deliberate path, type and marker gates (spec §4 gates 3-8) whose undoing is reviewed whole
WHOLE_GATES = frozenset({_R.SECRET_PATH, _R.PROVIDER_DIRECTORY, _R.USER_EXCLUDE,
                         _R.UNSUPPORTED_EXT, _R.DEFAULT_PATH})
_NO_HUNKS = frozenset({_R.RENAME_ONLY, _R.NO_CONTENT_CHANGE})  # selected, nothing to show


def old_side_reason(d: selection.Decision, policy: selection.SelectionPolicy,
                    user_ex: selection.GlobList | None,
                    user_in: selection.GlobList | None) -> tuple[str, bool]:
    """(the reason in :data:`WHOLE_GATES` that kept the old side of a file selection keeps now
    (reviewed, or a rename or copy without hunks) out, whether a marker decided it), or
    ("", False): the old path of a rename or copy through gates 3-8, then a generated-file
    marker on an old line (removed or context) among the old file's first
    ``selection.GENERATED_SCAN_LINES`` lines, unless ``select.include`` names the old path
    (gate 6 skips gate 8). A rename or copy ``secret_path`` kept out only for its old path
    (its new path passes gates 3-8) gives ``secret_path``. Pure: no git."""
    f = d.file
    if d.reason == _R.SECRET_PATH and f.status in ("renamed", "copied") and not f.whole:
        # from a secret path: its new path alone through the gates (the content is scanned and
        # redacted as any reviewed file's; the rename's own diff is never shown)
        probe = FileDiff("added", f.new_path, f.new_path, f.new_mode, f.new_mode)
        passes = selection.path_reason(probe, policy, user_ex, user_in) in (
            "", *selection.NO_CONTENT_REASONS)
        return (_R.SECRET_PATH, False) if passes else ("", False)
    if f.whole or f.status not in ("renamed", "copied", "modified") or not (
            d.reviewed or d.reason in _NO_HUNKS):
        return "", False
    if f.old_path != f.new_path:
        probe = FileDiff("modified", f.old_path, f.old_path, f.old_mode, f.old_mode)
        reason = selection.path_reason(probe, policy, user_ex, user_in)
        if reason in WHOLE_GATES:
            return reason, False
    if user_in is not None and user_in.match_file(f.old_path):
        return "", False
    top: list[tuple[int, str]] = []
    for h in f.hunks:  # in order: only the first ones can hold the old first lines
        if h.old_start > selection.GENERATED_SCAN_LINES:
            break
        top += [(ln.old_line, ln.text) for ln in h.lines if ln.kind != "+"
                and ln.old_line is not None and ln.old_line <= selection.GENERATED_SCAN_LINES]
    lines = [text for _, text in top]
    if top and top[0][0] == 1:  # the old file's beginning: bounded as the new side's is
        lines = selection.marker_head("\n".join(lines))
    return (_R.DEFAULT_PATH, True) if lines and selection.looks_generated(lines) else ("", False)


def text_again(d: selection.Decision, text_now: set[str], policy: selection.SelectionPolicy,
               user_ex: selection.GlobList | None, user_in: selection.GlobList | None) -> bool:
    """Whether ``d`` is a file git calls binary whose new blob is text (``text_now``: its old
    blob was binary, e.g. a NUL byte removed) and whose paths pass gates 3-8: its diff shows
    nothing, so it is reviewed whole (reason ``binary``). Not an added file (whole already:
    every file of the whole-file diff is one) nor one binary only by a ``.gitattributes``
    entry (its old blob may be text too). Pure: no git."""
    if (d.reason != _R.BINARY or d.file.new_path not in text_now
            or d.file.status in ("deleted", "added") or d.file.binary_attribute):
        return False
    probe = replace(d.file, binary=False, hunks=())
    return selection.path_reason(probe, policy, user_ex, user_in) in (
        "", *selection.NO_CONTENT_REASONS)


def include_names_new_only(d: selection.Decision, user_in: selection.GlobList | None) -> bool:
    """Whether ``d`` is a rename or copy selection keeps (reviewed, or without hunks) whose new
    path ``select.include`` names but whose old path it does not: gate 8 (the marker test) was
    skipped on the new side but applied to the old one, whose first lines the diff may not
    show (:func:`old_marked` reads them). Pure: no git."""
    f = d.file
    return (user_in is not None and f.status in ("renamed", "copied") and not f.whole
            and bool(f.old_oid) and (d.reviewed or d.reason in _NO_HUNKS)
            and user_in.match_file(f.new_path) and not user_in.match_file(f.old_path))


def old_marked(repo: Path, files: list[FileDiff]) -> list[bool]:
    """For each file, whether its OLD blob's first lines (``selection.marker_head``, within
    ``git.GENERATED_SCAN_BYTES``) carry a generated-file marker: one ``git cat-file --batch``
    for all, each blob read only that far (``secrets.read_heads``). Raises GitError."""
    heads = secrets.read_heads(repo, [f.old_oid for f in files], git.GENERATED_SCAN_BYTES)
    return [h is not None and selection.looks_generated(selection.marker_head(
        git.decode_text(h))) for h in heads]


WHOLE_DETAIL = "reviewed whole, "  # how the detail of a file reviewed whole starts


def whole_detail(old_path: str, reason: str, marker: bool) -> str:
    """Why a file is reviewed whole, in words (``files[].detail``): ``reviewed whole, its old
    path was left out: <reason in words>`` or ``… its generated-file marker was removed``."""
    if marker:
        return WHOLE_DETAIL + "its generated-file marker was removed"
    if reason == _R.BINARY:
        return WHOLE_DETAIL + "its old content was binary"
    return WHOLE_DETAIL + f"its old path was left out: {selection.reason_words(old_path, reason)}"


def review_whole(repo: Path, target: git.Target, cs: ChangeSetT,
                 policy: selection.SelectionPolicy,
                 globs: tuple[selection.GlobList | None, selection.GlobList | None],
                 load: Callable[[git.Target], ChangeSetT]) -> ChangeSetT:
    """``cs`` with each file whose old side was kept out (:func:`old_side_reason`,
    :func:`text_again`, :func:`old_marked`) replaced
    by its whole version: ``load`` (``load_change_set`` with the same settings) of ``target``
    against ``git.tree_without(target.head, those paths)``, each entry keeping the change's
    status, old path, old mode and blob and carrying ``FileDiff.whole`` (when the whole file is
    still selected) and a detail; its findings and probes are added. ``cs`` itself (no git call)
    when there is no such file. Raises GitError."""
    found = {i: why for i, d in enumerate(cs.decisions)
             if (why := old_side_reason(d, policy, *globs))[0]}
    found.update((i, (_R.BINARY, False)) for i, d in enumerate(cs.decisions)
                 if text_again(d, cs.text_now, policy, *globs))
    maybe = [i for i, d in enumerate(cs.decisions)
             if i not in found and include_names_new_only(d, globs[1])]
    if maybe:  # rare: select.include names a rename's new path only
        found.update((i, (_R.DEFAULT_PATH, False)) for i, marked in zip(
            maybe, old_marked(repo, [cs.files[i] for i in maybe]), strict=True) if marked)
    if not found:
        return cs
    paths = [cs.files[i].new_path for i in found]
    try:
        base = git.tree_without(repo, target.head, paths, os.environ)
    except OSError as e:
        raise GitError(f"no private index for the files reviewed whole: {e}") from e
    sub = load(target._replace(base=base, paths=None))
    by_path = {d.file.new_path: d for d in sub.decisions}
    for i, (why, marker) in found.items():
        old = cs.files[i]
        d = by_path.get(old.new_path)
        if d is None:  # never kept as the diff alone: that would pass it unseen
            raise GitError(f"the whole-file diff does not list {old.new_path!r}")
        keep = d.selected
        fd = replace(d.file, status=old.status, old_path=old.old_path, old_mode=old.old_mode,
                     old_oid=old.old_oid, similarity=old.similarity, whole=why if keep else "")
        detail = whole_detail(old.old_path, why, marker)
        cs.files[i] = fd
        cs.decisions[i] = d._replace(file=fd, detail="; ".join(
            x for x in (detail if keep else "", d.detail) if x))
    cs.findings += sub.findings
    cs.probes += sub.probes
    return cs
