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


def tree_without(repo: Path, treeish: str, paths: Sequence[str],
                 environ: Mapping[str, str]) -> str:
    """The id of the tree of ``treeish`` (a tree or commit id) with the entries ``paths``
    (top-relative; absent ones are passed over) taken out: the base against which ``git diff
    <tree> <treeish>`` shows each of ``paths`` as one added hunk of its whole blob (spec §4,
    files reviewed whole: ``change.whole``). Written from a private index (``private_copy``):
    the user's index, work tree and refs are not touched; ``write-tree`` only adds tree
    objects. Three git processes. Raises GitError, OSError (no folder for the index)."""
    tmp = private_copy(repository.git_path(repo, "ocr-hook-whole-no-index"), environ)
    env = {"GIT_INDEX_FILE": str(tmp)}
    try:
        process.run_git(repo, "read-tree", treeish, extra_env=env)
        process.run_git(repo, "update-index", "--force-remove", "-z", "--stdin",
                        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths), extra_env=env)
        return _write_tree(repo, env)
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".lock").unlink(missing_ok=True)


def _tracked(repo: Path, cwd: Path, pathspecs: Sequence[str], env: Mapping[str, str],
             where: str) -> list[str]:
    """Top-relative paths of the entries of the index in ``env`` that ``pathspecs`` match
    together (one ``git ls-files --error-unmatch`` run in ``cwd``, so the pathspecs read as the
    user typed them and exclude magic such as ``:!x`` takes out of what the others match),
    every entry of the repository for none. Only when that fails is each positive pathspec
    asked alone, to name the one that matches nothing (or lies outside the repository)."""
    if not pathspecs:
        return process.zsplit(process.run_git(repo, "ls-files", "-z", "--full-name",
                                               extra_env=env))
    rc, out, err = _ls_files(cwd, pathspecs, env, "--error-unmatch")
    if rc == 0 and process.zsplit(out):
        return process.zsplit(out)
    if rc == 0:
        raise UsageError(f"{' '.join(pathspecs)}: the pathspecs together match no tracked file"
                         f" {where}")
    for spec in pathspecs:
        if not _excludes(spec):
            one_rc, one_out, one_err = _ls_files(cwd, [spec], env)
            if one_rc == 128 and b"outside repository" in one_err:
                raise UsageError(f"{spec}: outside the repository")
            if one_rc == 0 and not process.zsplit(one_out):
                raise UsageError(_unmatched(repo, cwd, spec, where))
    raise GitError.from_process(["git", "ls-files"], rc, err)


def _ls_files(cwd: Path, specs: Sequence[str], env: Mapping[str, str],
              *flags: str) -> tuple[int, bytes, bytes]:
    """``git ls-files -z --full-name [flags] -- specs`` in ``cwd``: (exit code, out, err); 1
    (``--error-unmatch``) and 128 (a bad pathspec) are returned, not raised."""
    return process.run_git_full(cwd, "ls-files", "-z", "--full-name", *flags, "--", *specs,
                                extra_env=env, ok_codes=(0, 1, 128))


def _excludes(spec: str) -> bool:
    """Whether ``spec`` is an exclude pathspec (``:!x``, ``:^x``, ``:(exclude)x``)."""
    return spec.startswith((":!", ":^")) or (spec.startswith(":(") and "exclude" in
                                              spec[2:spec.find(")")].split(","))


def _unmatched(repo: Path, cwd: Path, spec: str, where: str) -> str:
    """The message for a pathspec that matches no tracked file: from a subfolder, it says the
    path reads relative to it and names the path looked up (``src/src/main.py``)."""
    hint = (" (git add it and scan with --staged)" if where == "at HEAD"
            else " (git add it first)")
    here = os.path.relpath(cwd, repo)
    if spec.startswith(":") or here == ".":
        return f"{spec}: not a tracked file {where}{hint}"
    looked = Path(os.path.normpath(os.path.join(here, spec))).as_posix()
    return (f"{spec}: not a tracked file {where}: paths are relative to the current folder"
            f" {here}/, so this is {looked}{hint}")


__all__ = ["SCAN_BASE_LABEL", "scan_target", "tree_without"]
