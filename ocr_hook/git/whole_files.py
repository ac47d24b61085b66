"""The target of ``git ocr scan`` (spec §3.9): whole files at HEAD, or as staged, reviewed as if
every line were added.

A scan is a change whose base is the reviewed tree with the scanned files taken out, so
``git diff BASE HEAD`` shows each scanned file as one added hunk ``@@ -0,0 +1,N @@`` of its blob
and nothing else. Every later stage (selection, the secret scan and redaction, grouping, the
tools reading ``Target.head``, anchoring on added lines, the gate, the result cache keyed by blob
ids) then works on it unchanged. The base tree is written from a private index (``indexcopy``):
the user's index, work tree and refs are never touched; ``write-tree`` only adds tree objects,
as the staged snapshot's does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import GitError, UsageError
from . import process, repository
from .indexcopy import private_copy
from .target import Target, _rev_parse, _write_tree, staged_snapshot

SCAN_BASE_LABEL = "(whole files)"  # JSON input.base of a scan: no earlier version is compared


def scan_target(repo: Path, cwd: Path, pathspecs: Sequence[str], environ: Mapping[str, str],
                *, staged: bool = False) -> Target:
    """The ``scan`` target of the tracked files ``pathspecs`` name (git pathspecs relative to
    ``cwd``, a folder inside the work tree ``repo``), or of every tracked file when
    ``pathspecs`` is empty: at HEAD (``head`` the HEAD commit), or with ``staged`` as staged
    (``head`` the snapshot tree of :func:`git.staged_snapshot`, so ``GIT_INDEX_FILE`` and
    conflicts are handled as for a review). ``base`` is that tree without the scanned files.

    Raises UsageError naming the first pathspec that matches no tracked file (at HEAD, or in
    the index with ``staged``) or lies outside the repository, and when HEAD has no commit
    (without ``staged``); GitError when git fails."""
    if staged:
        snap = staged_snapshot(repo, environ)
        head, label, tree = snap.head, snap.head_label, snap.snapshot_tree
    else:
        head = _rev_parse(repo, "HEAD^{commit}")
        if not head:
            raise UsageError("HEAD has no commit yet, so no file is tracked at HEAD;"
                             " scan the staged files with --staged")
        label, tree = head, ""
    # a name no file has: private_copy gives a fresh path, filled by read-tree
    tmp = private_copy(repository.git_path(repo, "ocr-hook-scan-no-index"), environ)
    env = {"GIT_INDEX_FILE": str(tmp)}
    try:
        process.run_git(repo, "read-tree", head, extra_env=env)
        paths = _tracked(repo, cwd, pathspecs, env, "in the index" if staged else "at HEAD")
        process.run_git(repo, "update-index", "--force-remove", "-z", "--stdin",
                        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths), extra_env=env)
        base = _write_tree(repo, env)
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".lock").unlink(missing_ok=True)
    return Target(mode="scan", base=base, head=head, base_label=SCAN_BASE_LABEL,
                  head_label=label, snapshot_tree=tree)


def _tracked(repo: Path, cwd: Path, pathspecs: Sequence[str], env: Mapping[str, str],
             where: str) -> list[str]:
    """Top-relative paths of the entries of the index in ``env`` that ``pathspecs`` match
    (``git ls-files`` run in ``cwd``, so the pathspecs read as the user typed them), every
    entry of the repository for none. One ``ls-files`` per pathspec, so the one that matches
    nothing is named."""
    seen: dict[str, None] = {}
    for spec in pathspecs or (None,):
        args = ["ls-files", "-z", "--full-name", "--"] + ([spec] if spec is not None else [])
        rc, out, err = process.run_git_full(cwd if spec is not None else repo, *args,
                                            extra_env=env, ok_codes=(0, 128))
        if rc == 128:
            if b"outside repository" in err:
                raise UsageError(f"{spec}: outside the repository")
            raise GitError.from_process(["git", "ls-files"], rc, err)
        found = process.zsplit(out)
        if spec is not None and not found:
            raise UsageError(f"{spec}: not a tracked file {where}"
                             + (" (git add it and scan with --staged)" if where == "at HEAD"
                                else " (git add it first)"))
        seen.update(dict.fromkeys(found))
    return list(seen)


__all__ = ["SCAN_BASE_LABEL", "scan_target"]
