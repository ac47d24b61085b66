"""What is reviewed: the staged snapshot, a commit, a range or pushed refs → base and head trees.

spec §3.2 (staged snapshot via ``write-tree`` on a private copy of the index), §3.3 (commit and
range modes), §3.4 (pushed ranges: native pre-push stdin lines and the pre-commit framework's
``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF``). Every later read (tools, new-file content)
uses ``Target.head``, never the work tree. The pre-push line parser is pure; everything else
runs git through :mod:`git.process`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from ..diff import FileDiff, build_file_diffs, parse_raw_numstat_z, split_raw_and_patch
from ..errors import GitError, UsageError
from . import attributes, process, repository
from .indexcopy import private_copy

# spec §3.1 patch flags, plus pins for every user setting measured to change git's output on
# git 2.39: diff.orderFile (-O/dev/null), diff.interHunkContext, diff.algorithm,
# diff.indentHeuristic, diff.renameLimit (-l1000 = git's built-in default), diff.ignoreSubmodules
# (a hidden gitlink change would drop out of the coverage list). diff.noprefix,
# diff.mnemonicPrefix, colour, external diff, textconv, diff.relative and diff.renames are
# overridden by the flags spec §3.1 names.
DIFF_FLAGS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "-M",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--submodule=short",
    "--ignore-submodules=none",
    "-O/dev/null",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "-l1000",
)
# `-c` settings that must come before the subcommand: unquoted non-ASCII names, and context
# lines printed as " " even when the user set diff.suppressBlankEmpty.
CONFIG_PINS = ("-c", "core.quotePath=false", "-c", "diff.suppressBlankEmpty=false")
CONTEXT_LINES = 3  # spec §3.1 (-U3, OCR DiffContextLines)
GENERATED_SCAN_BYTES = 4096  # spec §4 gate 8: the marker test reads no further into a file
EMPTY_TREE_LABEL = "(empty tree)"
_OID_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


class Target(NamedTuple):
    """A resolved review input.

    ``base``/``head`` are object ids git can diff and read (``head`` is the snapshot tree in
    staged mode, a commit id otherwise; ``base`` may be the empty tree). ``base_label`` and
    ``head_label`` are what the user would recognise (a commit id, ``(index)``,
    ``(empty tree)``). ``refs`` are the remote refs a pushed range updates (push mode; several
    when identical ranges were merged). Push mode also counts ``commits`` (in base..head) and,
    when the range was cut to its newest commits (``push_scope``), ``skipped_commits`` older
    ones from ``skipped_base_label`` up to ``base`` that are not reviewed. ``paths``: when not
    None, only these changed paths of ``base..head`` are reviewed (a pushed range that holds
    commits reviewed at commit time, spec §3.4.1; each is a changed path of the range).
    """

    mode: str  # staged | merge | commit | range | push
    base: str
    head: str
    base_label: str
    head_label: str
    snapshot_tree: str = ""
    refs: tuple[str, ...] = ()
    commits: int = 0
    skipped_commits: int = 0
    skipped_base_label: str = ""
    paths: tuple[str, ...] | None = None


class PushLine(NamedTuple):
    """One line of a native pre-push hook's stdin (githooks(5))."""

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str


def empty_tree(repo: Path) -> str:
    """The empty tree id of this repository's object format (SHA-1 ``4b825dc6…`` or SHA-256
    ``6ef19b41…``), computed by ``git hash-object -t tree --stdin`` without writing it; git
    knows it as a built-in object either way."""
    out = process.run_git(repo, "hash-object", "-t", "tree", "--stdin", timeout_s=10)
    return out.decode().strip()


def _effective_index(repo: Path, environ: Mapping[str, str]) -> Path:
    """``$GIT_INDEX_FILE`` (relative values are relative to the work-tree top, where git runs
    hooks and we run git), else the repository's index (``git rev-parse --git-path index``,
    which follows linked worktrees)."""
    env_index = environ.get("GIT_INDEX_FILE")
    if env_index:
        p = Path(env_index)
        return p if p.is_absolute() else repo / p
    return repository.git_path(repo, "index")


def _snapshot_key(repo: Path, environ: Mapping[str, str]) -> tuple[str, ...]:
    return ("staged_snapshot", str(repo), environ.get("GIT_INDEX_FILE", ""),
            environ.get("XDG_RUNTIME_DIR", ""))


def snapshot_ahead(repo: Path, environ: Mapping[str, str]) -> None:
    """Start :func:`staged_snapshot` now in a thread (``repository.start_ahead``, inside a
    ``repository.run_scope`` only), so ``write-tree`` runs while the settings and rules load; the
    later :func:`staged_snapshot` with the same arguments takes its result or its error."""
    repository.start_ahead(_snapshot_key(repo, environ), lambda: _staged_snapshot(repo, environ))


def staged_snapshot(repo: Path, environ: Mapping[str, str]) -> Target:
    """Freeze the index being committed into a tree (spec §3.2), or take the snapshot started
    ahead (:func:`snapshot_ahead`) for the same repository and environment.

    Copies ``$GIT_INDEX_FILE`` (``git commit -a``: ``.git/index.lock``; ``git commit <paths>``:
    ``.git/next-index-<pid>.lock``) or the repository's index to a private temp file (in memory
    where possible: ``indexcopy.scratch_dirs``) and runs
    ``git write-tree`` on the copy, so the user's index is never rewritten. Intent-to-add
    entries are left out by ``write-tree``, as ``git commit`` leaves them out. The base is
    ``HEAD^{tree}``, or the empty tree of the repository's object format when HEAD is unborn.
    Raises UsageError on unresolved merge conflicts or a ``$GIT_INDEX_FILE`` that names no file,
    GitError when git fails.
    """
    found, ahead = repository.take_ahead(_snapshot_key(repo, environ))
    if found:
        assert isinstance(ahead, Target)
        return ahead
    return _staged_snapshot(repo, environ)


def _staged_snapshot(repo: Path, environ: Mapping[str, str]) -> Target:
    index = _effective_index(repo, environ)
    if environ.get("GIT_INDEX_FILE") and not index.is_file():
        # git names an index that is not there: reviewing "nothing staged" would pass a commit
        # no one reviewed; only the repository's own index may be absent (a fresh repository)
        raise UsageError(f"GIT_INDEX_FILE={environ['GIT_INDEX_FILE']!r}: no such index file")
    head_commit, base = repository.head_ids(repo) or _head_ids(repo)
    base = base or empty_tree(repo)
    tmp = private_copy(index, environ)
    try:
        env = {"GIT_INDEX_FILE": str(tmp)}
        tree = _write_tree(repo, env)
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".lock").unlink(missing_ok=True)
    return Target(
        mode="staged",
        base=base,
        head=tree,
        base_label=head_commit or EMPTY_TREE_LABEL,
        head_label="(index)",
        snapshot_tree=tree,
    )


def _head_ids(repo: Path) -> tuple[str, str]:
    """(HEAD's commit id, its tree id), ("", "") when HEAD is unborn: ``rev-parse`` when
    ``repository.head_ids`` does not know them from this command's probe."""
    commit = _rev_parse(repo, "HEAD^{commit}")
    return (commit, _rev_parse(repo, f"{commit}^{{tree}}")) if commit else ("", "")


def _write_tree(repo: Path, env: Mapping[str, str]) -> str:
    """``git write-tree`` of the index named in ``env`` → tree id. git refuses an index with
    unmerged entries; only then are they listed (``ls-files --unmerged``), so a clean index
    costs one git call. Raises UsageError naming the conflicted paths, or GitError."""
    rc, out, err = process.run_git_full(repo, "write-tree", extra_env=env, ok_codes=(0, 1, 128))
    if rc == 0:
        return out.decode().strip()
    unmerged = process.run_git(repo, "ls-files", "--unmerged", "-z", extra_env=env)
    if unmerged:
        paths = sorted({p.split("\t", 1)[-1] for p in process.zsplit(unmerged)})
        raise UsageError(
            f"unresolved merge conflicts in {', '.join(paths[:5])}"
            f"{' …' if len(paths) > 5 else ''}; resolve them before reviewing"
        )
    raise GitError.from_process(["git", "write-tree"], rc, err)


def merge_snapshot(repo: Path, environ: Mapping[str, str]) -> Target:
    """The staged snapshot of a merge about to be committed (git's ``pre-merge-commit`` hook):
    the index holds the merge result and HEAD is the first parent, so HEAD..snapshot is what
    the merge brings into the first parent. Mode ``merge``; the head label names the merged
    commits: MERGE_HEAD, or, since git (2.39) writes MERGE_HEAD only after this hook, the
    names in ``GIT_REFLOG_ACTION=merge <name>…`` that ``git merge`` exports to its hooks
    (plain ``(index)`` when neither resolves). Raises as :func:`staged_snapshot`."""
    snap = staged_snapshot(repo, environ)
    merged = [m for m in [_rev_parse(repo, "MERGE_HEAD^{commit}")] if m]
    action = environ.get("GIT_REFLOG_ACTION", "").split()
    if not merged and action[:1] == ["merge"]:
        merged = [m for name in action[1:] if not name.startswith("-")
                  and (m := _rev_parse(repo, f"{name}^{{commit}}"))]
    label = f"(merge of {', '.join(merged)})" if merged else snap.head_label
    return snap._replace(mode="merge", head_label=label)


def _rev_parse(repo: Path, spec: str) -> str:
    """``git rev-parse --verify -q --end-of-options <spec>`` → full id, or "" when unknown."""
    rc, out, _ = process.run_git_full(
        repo, "rev-parse", "--verify", "-q", "--end-of-options", spec, ok_codes=(0, 1, 128)
    )
    return out.decode().strip() if rc == 0 else ""


def verify_commit(repo: Path, ref: str) -> str:
    """Resolve ``ref`` to a commit id with ``rev-parse --verify --end-of-options REF^{commit}``
    (spec §3.3). Raises UsageError for empty refs, refs starting with ``-`` and refs that do
    not name a commit."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"invalid ref {ref!r}: refs may not be empty or start with '-'")
    oid = _rev_parse(repo, f"{ref}^{{commit}}")
    if not oid:
        raise UsageError(f"unknown commit {ref!r}")
    return oid


def _first_parent(repo: Path, oid: str) -> str:
    return _rev_parse(repo, f"{oid}^1")


def _merge_base(repo: Path, a: str, b: str) -> str:
    """``git merge-base A B`` (best common ancestor) or "" when the histories are unrelated."""
    rc, out, _ = process.run_git_full(repo, "merge-base", "--end-of-options", a, b, ok_codes=(0, 1))
    return out.decode().split()[0] if rc == 0 and out.strip() else ""


def commit_target(repo: Path, ref: str) -> Target:
    """``--commit REF``: REF against its first parent (merge commits too, as ``git show
    --diff-merges=first-parent``), or the empty tree for a root commit."""
    oid = verify_commit(repo, ref)
    parent = _first_parent(repo, oid)
    base = parent or empty_tree(repo)
    return Target("commit", base, oid, parent or EMPTY_TREE_LABEL, oid)


def range_target(repo: Path, from_ref: str, to_ref: str) -> Target:
    """``--from A --to B``: merge-base(A, B)..B. Raises UsageError when there is no merge base."""
    a = verify_commit(repo, from_ref)
    b = verify_commit(repo, to_ref)
    base = _merge_base(repo, a, b)
    if not base:
        raise UsageError(f"no merge base between {from_ref!r} and {to_ref!r}")
    return Target("range", base, b, base, b)


# ---- pushed ranges (spec §3.4) ----------------------------------------------------------------


def is_zero_oid(oid: str) -> bool:
    """git's "all zeroes" object name: 40 (SHA-1) or 64 (SHA-256) ``0`` characters."""
    return len(oid) in (40, 64) and set(oid) == {"0"}


def parse_push_lines(text: str) -> list[PushLine]:
    """Parse a pre-push hook's stdin: ``<local ref> SP <local oid> SP <remote ref> SP <remote
    oid>`` per line (githooks(5)). Each line is split from the right, at most 3 times, because
    a local ref given as typed on the command line may contain spaces. Blank lines are
    skipped. Raises UsageError on a line that does not have this shape."""
    out: list[PushLine] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        parts = raw.rsplit(None, 3)
        if len(parts) != 4 or not (_OID_RE.match(parts[1]) and _OID_RE.match(parts[3])):
            raise UsageError(f"malformed pre-push line {raw[:120]!r}")
        out.append(PushLine(*parts))
    return out


def _new_commits_range(repo: Path, remote: str, local: str) -> tuple[str, str] | None:
    """(base, base label) for commits of ``local`` that no ref of ``remote`` has: the parent
    of the oldest one (``rev-list --topo-order --reverse``), or the empty tree when it is a
    root commit. None when there are no new commits."""
    args = ["rev-list", "--topo-order", "--reverse", local, "--not"]
    args.append(f"--remotes={remote}" if remote else "--remotes")
    out = process.run_git(repo, *args)
    oldest = out.split(b"\n", 1)[0].decode().strip()
    if not oldest:
        return None
    parent = _first_parent(repo, oldest)
    if parent:
        return parent, parent
    return empty_tree(repo), EMPTY_TREE_LABEL


def push_range(repo: Path, remote: str, line: PushLine) -> Target | None:
    """The range one pushed ref brings to ``remote`` (spec §3.4), or None when there is nothing
    to review.

    - local oid zero: a deletion → None;
    - remote oid known locally: merge-base(remote, local)..local (covers fast-forwards and
      force pushes; None when local is already contained in the remote tip);
    - remote oid zero (new ref), unknown here (not fetched), or unrelated to local: the new
      commits ``rev-list <local> --not --remotes=<remote>``; none → None; base = parent of the
      oldest new commit, or the empty tree for a root commit.
    - a notes ref pushed to a notes ref (``refs/notes/*`` on both sides, e.g.
      ``refs/notes/ocr-hook``): notes, not code → None.
    Raises UsageError when the local oid is not a commit here.
    """
    notes = line.local_ref.startswith("refs/notes/") and line.remote_ref.startswith("refs/notes/")
    if is_zero_oid(line.local_oid) or notes:
        return None
    local = verify_commit(repo, line.local_oid)
    refs = (line.remote_ref,)
    if not is_zero_oid(line.remote_oid):
        remote_commit = _rev_parse(repo, f"{line.remote_oid}^{{commit}}")
        if remote_commit:
            base = _merge_base(repo, remote_commit, local)
            if base == local:
                return None
            if base:
                return Target("push", base, local, base, local, refs=refs)
    found = _new_commits_range(repo, remote, local)
    if found is None:
        return None
    base, label = found
    return Target("push", base, local, label, local, refs=refs)


def dedupe_targets(targets: Sequence[Target]) -> list[Target]:
    """Merge identical (base, head) ranges, keeping the first one's place and all refs."""
    merged: dict[tuple[str, str], Target] = {}
    for t in targets:
        key = (t.base, t.head)
        if key in merged:
            old = merged[key]
            merged[key] = old._replace(
                refs=old.refs + tuple(r for r in t.refs if r not in old.refs))
        else:
            merged[key] = t
    return list(merged.values())


def push_targets(repo: Path, remote: str, lines: Sequence[PushLine]) -> list[Target]:
    """Every range of a native pre-push invocation (all stdin lines), deduplicated."""
    found = [t for ln in lines if (t := push_range(repo, remote, ln)) is not None]
    return dedupe_targets(found)


def pre_commit_push_targets(repo: Path, environ: Mapping[str, str]) -> list[Target]:
    """The range of a pre-push run under the pre-commit framework (spec §3.4).

    pre-commit sets ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` (remote tip or parent of the
    oldest new commit, and the local tip) for the first ref it pushes → merge-base(FROM,
    TO)..TO (FROM...TO). When FROM and TO share no history the new commits are found as for a
    native hook, with ``PRE_COMMIT_REMOTE_NAME``. When both are absent (a push of a root
    history) the pushed tip, ``PRE_COMMIT_LOCAL_BRANCH`` or else HEAD, is reviewed against the
    empty tree. Raises UsageError when a given ref is not a commit here.
    """
    from_ref = environ.get("PRE_COMMIT_FROM_REF", "")
    to_ref = environ.get("PRE_COMMIT_TO_REF", "")
    remote_ref = environ.get("PRE_COMMIT_REMOTE_BRANCH", "")
    if remote_ref.startswith("refs/notes/") and environ.get(
            "PRE_COMMIT_LOCAL_BRANCH", "").startswith("refs/notes/"):  # notes (as push_range)
        return []
    refs = (remote_ref,) if remote_ref else ()
    if from_ref and to_ref:
        base_commit = verify_commit(repo, from_ref)
        head = verify_commit(repo, to_ref)
        base = _merge_base(repo, base_commit, head)
        if base == head:
            return []
        if base:
            return [Target("push", base, head, base, head, refs=refs)]
        found = _new_commits_range(repo, environ.get("PRE_COMMIT_REMOTE_NAME", ""), head)
        if found is None:
            return []
        return [Target("push", found[0], head, found[1], head, refs=refs)]
    tip = verify_commit(repo, environ.get("PRE_COMMIT_LOCAL_BRANCH", "") or "HEAD")
    return [Target("push", empty_tree(repo), tip, EMPTY_TREE_LABEL, tip, refs=refs)]


# ---- changed files and blobs -------------------------------------------------------------------


def diff_command(target: Target, *extra: str) -> list[str]:
    """git arguments of the diff of ``target`` with the pinned flags, then ``extra``."""
    return [*CONFIG_PINS, "diff", *DIFF_FLAGS, *extra, target.base, target.head, "--"]


def load_diff(repo: Path, target: Target) -> list[FileDiff]:
    """Changed files of ``target`` with their hunks (spec §3.1 flags; user config neutralised),
    every file's patch read and parsed. A review loads through
    ``change.changeset.load_change_set`` instead, which reads only what its decisions need;
    this whole-diff loader serves tools and benchmarks that want every hunk.

    One ``git diff --raw --numstat -p -z`` call gives both the path list (the NUL-delimited
    records) and the patch (one diffcore run, so both agree on renames and order). For files
    whose first hunk starts below line 1, the first bytes of the new blob are read (one
    ``cat-file --batch``) into ``FileDiff.head_text`` so generated-file markers can be seen
    (spec §4 gate 8). Files git called binary only because of ``.gitattributes`` are diffed
    again as text (:mod:`git.attributes`). Raises GitError / DiffParseError.
    """
    args = diff_command(target, "--raw", "--numstat", "-p", "-z", "--no-abbrev",
                        f"-U{CONTEXT_LINES}")
    out = process.run_git(repo, *args)
    if not out:
        return []
    raw, patch = split_raw_and_patch(out)
    files = build_file_diffs(parse_raw_numstat_z(raw), patch)
    forced = attributes.text_marked_binary(repo, files, read_objects)
    if forced:
        files = rediff_as_text(repo, target, files, forced)
    need = [
        f
        for f in files
        if f.hunks
        and f.hunks[0].new_start > 1
        and f.status != "deleted"
        and not (f.binary or f.submodule or f.symlink)
    ]
    if need:
        blobs = read_objects(repo, [f.new_oid for f in need])
        for f, blob in zip(need, blobs, strict=True):
            if blob is not None and blob[0] == "blob":
                f.head_text = process.decode_text(blob[1][:GENERATED_SCAN_BYTES])
    return files


def rediff_as_text(
    repo: Path, target: Target, files: Sequence[FileDiff],
    forced: Sequence[tuple[FileDiff, str]],
) -> list[FileDiff]:
    """``files`` with each forced file (binary by attribute, text by content) replaced by its
    ``git diff --text`` entry (``change.changeset`` passes only the forced files), the attribute in
    ``FileDiff.binary_attribute``. Both paths of a rename are passed (literal pathspecs), so
    git pairs them as before; an entry git lists differently, or still binary, is kept as it
    was."""
    paths = sorted({p for f, _a in forced for p in (f.old_path, f.new_path) if p})
    args = diff_command(target, "--text", "--raw", "--numstat", "-p", "-z", "--no-abbrev",
                        f"-U{CONTEXT_LINES}")
    raw, patch = split_raw_and_patch(process.run_git(repo, "--literal-pathspecs", *args, *paths))
    redone = {(f.status, f.old_path, f.new_path): f
              for f in build_file_diffs(parse_raw_numstat_z(raw), patch, as_text=True)}
    wanted = {id(f): attr for f, attr in forced}
    out: list[FileDiff] = []
    for f in files:
        text = redone.get((f.status, f.old_path, f.new_path)) if id(f) in wanted else None
        if text is None or text.binary:
            out.append(f)
            continue
        text.binary_attribute = wanted[id(f)]
        out.append(text)
    return out


def read_objects(
    repo: Path, specs: Sequence[str], timeout_s: float = 60.0
) -> list[tuple[str, bytes] | None]:
    """(type, content) of each object name in ``specs`` via one ``git cat-file --batch``
    (output ``<oid> <type> <size>\\n<content>\\n`` or ``<spec> missing\\n`` per input line);
    None for missing objects. Specs must not contain a newline. Raises GitError."""
    return repository.cat_file_batch(repo, specs, timeout_s)


def read_blob(repo: Path, treeish: str, path: str, timeout_s: float = 30.0) -> bytes | None:
    """Bytes of the blob ``<treeish>:<path>`` (a symlink's blob is its link text), or None when
    the path is absent or not a blob (a directory, a submodule). Raises GitError on other
    failures."""
    if "\n" in path:
        oid = _rev_parse(repo, f"{treeish}:{path}")
        if not oid:
            return None
        spec = oid
    else:
        spec = f"{treeish}:{path}"
    [obj] = read_objects(repo, [spec], timeout_s=timeout_s)
    if obj is None or obj[0] != "blob":
        return None
    return obj[1]
