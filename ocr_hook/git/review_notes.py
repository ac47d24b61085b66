"""Review notes (spec §3.4.1): the git side of "reviewed at commit time".

Three pieces, all through :mod:`git.process`:

- the **reviewed snapshot**: the pre-commit hook's review of the staged snapshot, as a small
  JSON file ``$(git rev-parse --git-path ocr-hook-reviewed.json)`` (per worktree, written
  atomically): ``{"tree", "parent", "verdict", "fingerprint", "effort", "session"}``;
- the **note**: after git made the commit, the ``post-commit`` hook (:func:`note_new_commit`)
  matches the new commit's tree and first parent to that snapshot and attaches a note to the
  commit on ``refs/notes/ocr-hook`` (``git notes --ref=ocr-hook add -f``) holding the commit's
  patch-id and the review's verdict, settings fingerprint, effort and session id;
- the **lookup**: notes are keyed on the patch, not on the commit id: :func:`read_notes` reads
  every note of the local ref and of every fetched copy (``refs/notes/remotes/*/ocr-hook``) and
  :func:`patch_ids` computes ``git patch-id --verbatim`` of commits (whitespace counts: ``rm -rf
  /tmp/x`` and ``rm -rf / tmp/x`` differ), so a message-only ``--amend``, a cherry-pick or a
  rebase that leaves a commit's diff alone still finds the record of the commit it was made
  from. A git without ``--verbatim`` (before 2.39) gets no patch-ids: no note is written or
  trusted. A patch-id drops hunk line numbers and keeps three context lines, so the same lines
  added at another place of the same file share it: a note also holds the commit's
  :func:`change_digests` (every changed path with its old/new mode and blob id), and a lookup
  matches both (:func:`note_keys`). A message-only ``--amend`` keeps both; a cherry-pick or
  rebase onto other code changes the blob ids, so it is reviewed again.

A note is a convenience, not a proof: anyone who can write the ref can write a note.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from .. import util
from . import process, repository

NOTES_REF = "refs/notes/ocr-hook"
NOTES_REMOTES = "refs/notes/remotes/"  # fetched copies: refs/notes/remotes/<remote>/ocr-hook
NOTE_HEADER = "ocr-hook review v3"  # v1 (``--stable``), v2 (no change digest) are ignored
STATE_FILE = "ocr-hook-reviewed.json"  # under the worktree's git dir (git rev-parse --git-path)
_FIELDS = ("patch-id", "change", "verdict", "fingerprint", "effort", "session")


class ReviewNote(NamedTuple):
    """One note of ``refs/notes/ocr-hook``: the commit it is attached to, the patch-id of that
    commit (``git patch-id --verbatim``, hex), the verdict (``pass``/``findings``/``incomplete``,
    spec §9), the settings fingerprint (SHA-256 hex of the result cache's settings, spec §10),
    the effort reviewed at, and the session id of the review; ``change`` is the commit's
    :func:`change_digests` entry (SHA-256 hex)."""

    commit: str
    patch_id: str
    verdict: str
    fingerprint: str
    effort: str
    session: str
    change: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """(patch-id, change digest): what a commit must match (:func:`note_keys`)."""
        return (self.patch_id, self.change)


def format_note(note: ReviewNote) -> str:
    """The note's text: ``NOTE_HEADER`` then one ``key: value`` line per field (readable in
    ``git log --notes=ocr-hook``)."""
    values = (note.patch_id, note.change, note.verdict, note.fingerprint, note.effort, note.session)
    lines = [f"{k}: {v}" for k, v in zip(_FIELDS, values, strict=True)]
    return "\n".join([NOTE_HEADER, *lines]) + "\n"


def parse_note(commit: str, text: str) -> ReviewNote | None:
    """The note :func:`format_note` wrote, or None for any other text (a note written by hand
    or by another tool is ignored, never an error). Line order does not matter, so a note
    merged with ``git notes merge -s cat_sort_uniq`` still reads; a field with two different
    values (two clones' notes of one commit, concatenated) makes the note None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if NOTE_HEADER not in lines:
        return None
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        if not sep or line == NOTE_HEADER:
            continue
        if fields.setdefault(key.strip(), value.strip()) != value.strip():
            return None
    if not all(fields.get(k) for k in ("patch-id", "change", "verdict", "fingerprint")):
        return None
    return ReviewNote(commit, fields["patch-id"], fields["verdict"], fields["fingerprint"],
                      fields.get("effort", ""), fields.get("session", ""), fields["change"])


def notes_refs(repo: Path) -> list[str]:
    """The notes refs a lookup reads: ``refs/notes/ocr-hook`` and every fetched copy
    ``refs/notes/remotes/<remote>/ocr-hook`` (README: sharing notes). Raises GitError."""
    out = process.run_git(repo, "for-each-ref", "--format=%(refname)", NOTES_REMOTES,
                          timeout_s=30).decode()
    fetched = [r for r in out.splitlines() if r.endswith("/ocr-hook")]
    return [NOTES_REF, *fetched]


def read_notes(repo: Path) -> list[ReviewNote]:
    """Every review note on the refs of :func:`notes_refs` (``git notes list`` per ref, then
    one ``cat-file --batch`` for their blobs); [] when none exists. Raises GitError."""
    pairs: list[list[str]] = []
    for ref in notes_refs(repo):
        rc, out, _ = process.run_git_full(repo, "notes", f"--ref={ref}", "list",
                                          ok_codes=(0, 1, 128))
        if rc == 0:
            pairs += [p for p in (line.split() for line in out.decode().splitlines())
                      if len(p) == 2]
    if not pairs:
        return []
    blobs = repository.cat_file_batch(repo, [blob for blob, _ in pairs], 60.0)
    notes = []
    for (_, commit), obj in zip(pairs, blobs, strict=True):
        if obj is not None and obj[0] == "blob":
            note = parse_note(commit, obj[1].decode("utf-8", "replace"))
            if note is not None:
                notes.append(note)
    return notes


def patch_ids(repo: Path, commits: Sequence[str]) -> dict[str, str]:
    """``{commit: patch-id}`` of ``commits`` (full ids): the diff of each against its parent
    (``git diff-tree --stdin -p --root --binary``, no renames, external diffs or textconv, so
    two machines get the same patch) hashed by ``git patch-id --verbatim`` (whitespace kept).
    A merge commit and a commit that changes nothing have no patch-id and are left out; {} on
    a git without ``--verbatim`` (:func:`verbatim_patch_ids`). Raises GitError."""
    if not commits or not verbatim_patch_ids():
        return {}
    diff = process.run_git(
        repo, "diff-tree", "--stdin", "-p", "-r", "--root", "--binary", "--no-renames",
        "--no-color", "--no-ext-diff", "--no-textconv", "--full-index",
        stdin=("\n".join(commits) + "\n").encode(), timeout_s=120)
    if not diff.strip():
        return {}
    out = process.run_git(repo, "patch-id", "--verbatim", stdin=diff, timeout_s=120)
    ids = {}
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 2:
            ids[parts[1]] = parts[0]
    return ids


def _raw_changes(repo: Path, *args: str, stdin: bytes | None = None
                 ) -> dict[str, list[tuple[bytes, bytes]]]:
    """``{commit: [(raw meta, path)]}`` of ``git diff-tree -r -z --full-index --no-renames
    --root <args>`` (``--stdin``: one entry per commit; two trees: under "")."""
    out = process.run_git(repo, "diff-tree", "-r", "-z", "--full-index", "--no-renames",
                          "--root", *args, stdin=stdin, timeout_s=120)
    raw: dict[str, list[tuple[bytes, bytes]]] = {}
    tokens = iter(out.split(b"\0"))
    current = ""
    for tok in tokens:
        if tok.startswith(b":"):
            raw.setdefault(current, []).append((tok, next(tokens, b"")))
        elif tok.strip():
            current = tok.strip().decode()
    return raw


def change_digests(repo: Path, commits: Sequence[str]) -> dict[str, str]:
    """``{commit: SHA-256 hex}`` of each commit's exact change against its parent: the raw
    lines of ``git diff-tree --stdin -r -z --full-index --no-renames --root`` (old/new mode,
    old/new blob id, status and path of every changed file). Equal for a message-only amend
    (same tree and parent), different for the same lines added at another place or on top of
    other code. A commit that changes nothing is left out. Raises GitError."""
    if not commits:
        return {}
    raw = _raw_changes(repo, "--stdin", stdin=("\n".join(commits) + "\n").encode())
    return {c: hashlib.sha256(b"\n".join(m + b"\t" + p for m, p in rows)).hexdigest()
            for c, rows in raw.items() if c and rows}


def follow_renames(repo: Path, commits: Sequence[str], unnoted: Sequence[str]) -> set[str]:
    """Every path the ``unnoted`` commits (some of ``commits``, oldest first) change, both
    sides of a rename, plus every path a later one of ``commits`` renames one of those to, in
    turn: where content written under a path went next. One ``git diff-tree --stdin -M
    -l1000`` (renames paired as target.DIFF_FLAGS pairs them, as the reviews did). Raises
    GitError."""
    if not commits or not unnoted:
        return set()
    raw = process.run_git(repo, "diff-tree", "--stdin", "-r", "-z", "--root", "-M", "-l1000",
                          "--name-status", stdin=("\n".join(commits) + "\n").encode(),
                          timeout_s=120)
    tokens = iter(raw.split(b"\0"))
    changes: dict[str, list[tuple[str, ...]]] = {}  # commit -> (path,) or (old, new) per entry
    current = ""
    for tok in tokens:
        status = tok.decode("ascii", "replace").strip()
        if status[:1] == "R":
            pair = (next(tokens, b""), next(tokens, b""))
            changes.setdefault(current, []).append(
                tuple(p.decode("utf-8", "surrogateescape") for p in pair))
        elif len(status) == 1 and status in "AMDTUX":
            changes.setdefault(current, []).append(
                (next(tokens, b"").decode("utf-8", "surrogateescape"),))
        elif status:
            current = status
    wanted, out = set(unnoted), set()
    for c in commits:
        for entry in changes.get(c, ()):
            if c in wanted:
                out.update(entry)
            elif len(entry) == 2 and entry[0] in out:
                out.add(entry[1])
    return out


def range_paths(repo: Path, base: str, head: str) -> set[str]:
    """Every path that differs between ``base`` and ``head`` (tree-ish ids; no rename
    detection). Raises GitError."""
    raw = _raw_changes(repo, base, head)
    return {p.decode("utf-8", "surrogateescape") for rows in raw.values() for _, p in rows}


def note_keys(repo: Path, commits: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``{commit: (patch-id, change digest)}`` (:func:`patch_ids`, :func:`change_digests`):
    the key a trusted note must have (``ReviewNote.key``); commits without a patch-id are
    left out. Raises GitError."""
    ids = patch_ids(repo, commits)
    changes = change_digests(repo, list(ids)) if ids else {}
    return {c: (pid, changes[c]) for c, pid in ids.items() if c in changes}


@functools.lru_cache(maxsize=1)
def verbatim_patch_ids() -> bool:
    """Whether this git has ``git patch-id --verbatim`` (git 2.39; its ``-h`` usage names
    it), asked once per process. Without it review notes are neither written nor trusted:
    ``--stable`` ignores whitespace, which can change what code does."""
    rc, out, err = process.run_git_full(".", "patch-id", "-h", ok_codes=(0, 129))
    return b"--verbatim" in out + err


def range_commits(repo: Path, base: str, head: str) -> list[tuple[str, ...]] | None:
    """The commits of ``base..head`` oldest first, each as ``(commit, parent…)``, when they
    form one first-parent chain without merges from ``base`` (the empty tree: from a root
    commit); None otherwise (a range with merges is reviewed whole). Raises GitError."""
    from .target import empty_tree

    empty = empty_tree(repo)
    args = ["rev-list", "--reverse", "--parents", head]
    if base != empty:
        args += ["--not", base]
    rows = [tuple(line.split()) for line in
            process.run_git(repo, *args, timeout_s=60).decode().splitlines() if line.strip()]
    prev = "" if base == empty else base
    for row in rows:
        parents = row[1:]
        if len(parents) > 1 or (parents[0] if parents else "") != prev:
            return None
        prev = row[0]
    return rows


def state_path(repo: Path) -> Path:
    """Where the pre-commit hook records the reviewed snapshot (per worktree)."""
    return repository.git_path(repo, STATE_FILE)


def record_snapshot(repo: Path, tree: str, parent: str, verdict: str, fingerprint: str,
                    effort: str, session: str) -> None:
    """Record the pre-commit review of snapshot ``tree`` on top of commit ``parent`` ("" for an
    unborn branch) for the post-commit hook; atomic. Raises OSError or GitError."""
    data = {"tree": tree, "parent": parent, "verdict": verdict, "fingerprint": fingerprint,
            "effort": effort, "session": session}
    util.write_atomic(state_path(repo), json.dumps(data, sort_keys=True).encode())


def note_new_commit(repo: Path) -> ReviewNote | None:
    """The post-commit hook: take the recorded snapshot (the file is removed: one commit per
    review) and, when HEAD's tree and first parent are the reviewed ones, attach the review
    note to HEAD. Returns the note written, or None (no snapshot, or another commit was
    made). Raises GitError or OSError (the hook reports them and exits 0)."""
    path = state_path(repo)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    os.unlink(path)
    try:
        state = json.loads(raw)
        tree, parent = str(state["tree"]), str(state["parent"])
    except (ValueError, KeyError, TypeError):
        return None
    row = process.run_git(repo, "log", "-1", "--format=%H %T %P", "HEAD", timeout_s=10)
    commit, head_tree, *parents = row.decode().split()
    if head_tree != tree or (parents[0] if parents else "") != parent or len(parents) > 1:
        return None
    key = note_keys(repo, [commit]).get(commit)
    if not key:
        return None
    note = ReviewNote(commit, key[0], str(state.get("verdict", "")),
                      str(state.get("fingerprint", "")), str(state.get("effort", "")),
                      str(state.get("session", "")), key[1])
    process.run_git(repo, "notes", f"--ref={NOTES_REF}", "add", "-f", "-m",
                    format_note(note).rstrip("\n"), commit, timeout_s=30)
    return note


def has_commits(repo: Path) -> bool:
    """Whether HEAD names a commit (False on an unborn branch). Raises GitError."""
    rc, out, _ = process.run_git_full(repo, "rev-parse", "-q", "--verify", "HEAD^{commit}",
                                      ok_codes=(0, 1, 128))
    return rc == 0 and bool(out.strip())


def unpushed_commits(repo: Path, limit: int) -> tuple[str, list[tuple[str, str]]]:
    """(what they are compared with, the commits oldest first as (id, subject)) of the current
    branch that are not on its upstream (``@{upstream}``), or, without an upstream, not on any
    remote-tracking ref: the newest ``limit`` of them. Raises GitError (e.g. no commit
    yet)."""
    rc, out, _ = process.run_git_full(
        repo, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}",
        ok_codes=(0, 1, 128))
    upstream = out.decode().strip() if rc == 0 else ""
    args = ["log", "--reverse", f"--max-count={limit}", "--format=%H %s", "HEAD", "--not"]
    args += [upstream] if upstream else ["--remotes"]
    rows = process.run_git(repo, *args, timeout_s=60).decode().splitlines()
    return upstream or "any remote-tracking ref", [
        (c, s) for c, _, s in (r.partition(" ") for r in rows) if c]
