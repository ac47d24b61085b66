"""What is reviewed: the staged snapshot, a commit, or a range → a base tree and a head tree.

SPEC §3.2 (staged snapshot via ``write-tree`` on a private copy of the index), §3.3 (commit and
range modes). Every later read (tools, new-file content) uses ``Target.head``, never the work
tree.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import gitio
from .diff import FileDiff, build_file_diffs, parse_raw_numstat_z
from .errors import GitError, UsageError

# SPEC §3.1 patch flags; `-c core.quotePath=false` comes first.
DIFF_FLAGS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "-M",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--submodule=short",
)
CONTEXT_LINES = 3  # SPEC §3.1 (-U3, OCR DiffContextLines)


@dataclass(frozen=True, slots=True)
class Target:
    """A resolved review input.

    ``base``/``head`` are tree-ish object ids git can diff and read (``head`` is the snapshot
    tree in staged mode). ``base_label``/``head_label`` are what the user would recognise
    (a commit id, ``HEAD``, ``(index)``, ``(empty tree)``).
    """

    mode: str  # staged | commit | range | push
    base: str
    head: str
    base_label: str
    head_label: str
    snapshot_tree: str = ""


def empty_tree(repo: Path) -> str:
    """The empty tree id of this repository's object format (SHA-1 or SHA-256); not written."""
    return gitio.run_git(repo, "hash-object", "-t", "tree", "--stdin", timeout_s=10).decode().strip()


def _effective_index(repo: Path, environ: Mapping[str, str]) -> Path:
    env_index = environ.get("GIT_INDEX_FILE")
    if env_index:
        p = Path(env_index)
        return p if p.is_absolute() else repo / p
    return gitio.git_path(repo, "index")


def staged_snapshot(repo: Path, environ: Mapping[str, str]) -> Target:
    """Freeze the index being committed into a tree (SPEC §3.2).

    Copies ``$GIT_INDEX_FILE`` (or the repository's index) to a private temp file and runs
    ``git write-tree`` on the copy, so the user's index is never rewritten. Raises UsageError
    on unresolved merge conflicts, GitError when git fails.
    """
    index = _effective_index(repo, environ)
    head_commit = _rev_parse(repo, "HEAD^{commit}")
    base = head_commit and gitio.run_git(repo, "rev-parse", "HEAD^{tree}").decode().strip()
    if not base:
        base = empty_tree(repo)
    fd, tmp_name = tempfile.mkstemp(prefix="ocr-hook-index-")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if index.exists():
            shutil.copyfile(index, tmp)
        else:
            tmp.unlink()  # an absent index is an empty index (fresh repository)
        env = {"GIT_INDEX_FILE": str(tmp)}
        unmerged = gitio.run_git(repo, "ls-files", "-u", "-z", extra_env=env)
        if unmerged:
            paths = sorted({p.split("\t", 1)[-1] for p in gitio.zsplit(unmerged)})
            raise UsageError(
                f"unresolved merge conflicts in {', '.join(paths[:5])}"
                f"{' …' if len(paths) > 5 else ''}; resolve them before reviewing"
            )
        tree = gitio.run_git(repo, "write-tree", extra_env=env).decode().strip()
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".lock").unlink(missing_ok=True)
    return Target(
        mode="staged",
        base=base,
        head=tree,
        base_label=head_commit or "(empty tree)",
        head_label="(index)",
        snapshot_tree=tree,
    )


def _rev_parse(repo: Path, spec: str) -> str:
    rc, out, _ = gitio.run_git_full(
        repo, "rev-parse", "--verify", "-q", "--end-of-options", spec, ok_codes=(0, 1, 128)
    )
    return out.decode().strip() if rc == 0 else ""


def verify_commit(repo: Path, ref: str) -> str:
    """Resolve ``ref`` to a commit id (SPEC §3.3). Raises UsageError for refs starting with
    ``-`` or that do not name a commit."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"invalid ref {ref!r}: refs may not be empty or start with '-'")
    oid = _rev_parse(repo, f"{ref}^{{commit}}")
    if not oid:
        raise UsageError(f"unknown commit {ref!r}")
    return oid


def commit_target(repo: Path, ref: str) -> Target:
    """``--commit REF``: REF against its first parent, or the empty tree for a root commit."""
    oid = verify_commit(repo, ref)
    parent = _rev_parse(repo, f"{oid}^1")
    base = parent or empty_tree(repo)
    return Target("commit", base, oid, parent or "(empty tree)", oid)


def range_target(repo: Path, from_ref: str, to_ref: str) -> Target:
    """``--from A --to B``: merge-base(A, B)..B. Raises UsageError when there is no merge base."""
    a = verify_commit(repo, from_ref)
    b = verify_commit(repo, to_ref)
    rc, out, _ = gitio.run_git_full(repo, "merge-base", a, b, ok_codes=(0, 1))
    base = out.decode().strip()
    if rc != 0 or not base:
        raise UsageError(f"no merge base between {from_ref!r} and {to_ref!r}")
    return Target("range", base, b, base, b)


def load_diff(repo: Path, target: Target) -> list[FileDiff]:
    """Changed files of ``target`` with their hunks (SPEC §3.1 flags; user config neutralised)."""
    common = ("-c", "core.quotePath=false", "diff", *DIFF_FLAGS)
    raw = gitio.run_git(
        repo, *common, "--raw", "--numstat", "-z", "--no-abbrev", target.base, target.head, "--"
    )
    if not raw:
        return []
    patch = gitio.run_git(repo, *common, f"-U{CONTEXT_LINES}", target.base, target.head, "--")
    return build_file_diffs(parse_raw_numstat_z(raw), patch)


def read_blob(repo: Path, treeish: str, path: str, timeout_s: float = 30.0) -> bytes | None:
    """Bytes of ``<treeish>:<path>`` or None when absent. Raises GitError on other failures."""
    rc, out, err = gitio.run_git_full(
        repo, "cat-file", "blob", f"{treeish}:{path}", timeout_s=timeout_s, ok_codes=(0, 128)
    )
    if rc != 0:
        msg = err.decode("utf-8", "replace")
        if "does not exist" in msg or "Not a valid object name" in msg or "exists on disk" in msg:
            return None
        if "bad file" in msg or "not a blob" in msg.lower() or "expected blob" in msg:
            return None
        raise GitError(f"git cat-file: {msg.strip().splitlines()[0] if msg.strip() else 'failed'}")
    return out
