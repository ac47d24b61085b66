"""What a run asks git about the repository, asked as few times as possible: one ``git
rev-parse`` answers the top level, the common dir, the index and HEAD's commit and tree
(:func:`probe`); files at HEAD are read in one ``git cat-file --batch`` (:func:`head_blobs`);
inside :func:`run_scope` (one command) the answers, small blobs and work started ahead
(:func:`start_ahead`) are remembered instead of asked again. Processes run through
:mod:`git.process`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from ..errors import GitError
from .process import DEFAULT_TIMEOUT_S, run_git, run_git_full


def find_toplevel(cwd: Path | str, head_files: Sequence[str] = ()) -> Path:
    """Top of the work tree containing ``cwd``. Raises GitError when not in a repository.

    One ``git rev-parse`` answers the other questions of a run at the same time (the common
    git directory, the index path, HEAD's commit and tree: :func:`probe`); inside
    :func:`run_scope` the answers are remembered for :func:`git_common_dir`,
    :func:`git_path` ``index`` and :func:`head_ids`, and the repository paths ``head_files``
    are read at HEAD by one ``git cat-file --batch`` running alongside the probe, for
    :func:`head_blobs` (kept only when it read the HEAD tree the probe saw)."""
    scope = _scope
    paths = [p for p in dict.fromkeys(head_files) if "\n" not in p] if scope else []
    key = ("head_files", str(cwd))
    if paths:
        start_ahead(key, lambda: cat_file_batch(cwd, ["HEAD", *(f"HEAD:{p}" for p in paths)],
                                                10))
    facts = probe(cwd)
    if scope is not None:
        scope.facts[facts.top] = facts
        if paths:
            _keep_head_files(scope, facts, key, paths)
    return facts.top


def _keep_head_files(scope: _Scope, facts: RepoFacts, key: Hashable,
                     paths: Sequence[str]) -> None:
    """Remember the files read ahead by :func:`find_toplevel` when the commit they were read
    from has the tree the probe saw (HEAD cannot have moved in between in a way that matters);
    otherwise, or when the read failed, :func:`head_blobs` asks git again."""
    try:
        found, value = take_ahead(key)
    except GitError:
        return
    objs = value if found and isinstance(value, list) else None
    head = objs[0] if objs else None  # HEAD's commit object ("tree <id>\n…"), None if unborn
    tree = head[1].split(b"\n", 1)[0].removeprefix(b"tree ").decode("ascii", "replace") \
        if head else ""
    if objs is None or facts.head is None or tree != facts.head[1]:
        return
    with scope.lock:
        for p, obj in zip(paths, objs[1:], strict=True):
            scope.head_files[(facts.top, p)] = obj[1] if obj and obj[0] == "blob" else None


class RepoFacts(NamedTuple):
    """What one ``git rev-parse`` (:func:`probe`) says about the repository around a folder:
    ``top`` (work-tree top), ``common_dir`` (absolute, shared by linked worktrees), ``index``
    (absolute ``--git-path index``; ``$GIT_INDEX_FILE`` when set), ``head`` ((commit id, tree
    id), ("", "") for an unborn HEAD, None when not asked or not parsed)."""

    top: Path
    common_dir: Path | None
    index: Path | None
    head: tuple[str, str] | None


_PROBE_ARGS = ("rev-parse", "--show-toplevel", "--git-common-dir", "--git-path", "index",
               "--revs-only", "HEAD^{commit}", "HEAD^{tree}")


def probe(cwd: Path | str) -> RepoFacts:
    """:class:`RepoFacts` of the repository around ``cwd`` from one ``git rev-parse
    --show-toplevel --git-common-dir --git-path index --revs-only HEAD^{commit} HEAD^{tree}``
    (``--revs-only`` drops a HEAD that names no commit yet, so an unborn HEAD is not an error).
    Relative paths git prints are relative to ``cwd``. Output that does not have the expected
    shape (a path with a line break) leaves ``common_dir``/``index``/``head`` None: the callers
    ask git again, one question per call. Raises GitError as :func:`run_git` ("git rev-parse:
    fatal: not a git repository …") or when ``cwd`` is not inside a work tree."""
    out = run_git(cwd, *_PROBE_ARGS, timeout_s=10)
    lines = out.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    top = os.fsdecode(lines[0]) if lines else ""
    if not top:
        raise GitError("git rev-parse: not inside a work tree (bare repository?)")
    revs = [ln.decode("ascii", "replace") for ln in lines[3:]]
    hexes = all(len(r) in (40, 64) and not r.strip("0123456789abcdef") for r in revs)
    if len(lines) not in (3, 5) or not hexes:
        top = os.fsdecode(run_git(cwd, "rev-parse", "--show-toplevel", timeout_s=10).strip())
        return RepoFacts(Path(top), None, None, None)  # a path with a line break: ask apart
    base = Path(cwd)
    common, index = (Path(os.fsdecode(x)) for x in lines[1:3])
    head = (revs[0], revs[1]) if revs else ("", "")
    return RepoFacts(Path(top), common if common.is_absolute() else (base / common).resolve(),
                     index if index.is_absolute() else (base / index).resolve(), head)


def _facts(repo: Path) -> RepoFacts | None:
    scope = _scope
    return scope.facts.get(Path(repo)) if scope is not None else None


def git_path(repo: Path, name: str) -> Path:
    """``git rev-parse --git-path <name>`` as an absolute path (honours worktrees/hooksPath);
    ``index`` is remembered from :func:`find_toplevel` inside :func:`run_scope`."""
    facts = _facts(repo) if name == "index" else None
    if facts is not None and facts.index is not None:
        return facts.index
    out = os.fsdecode(run_git(repo, "rev-parse", "--git-path", name, timeout_s=10).strip())
    p = Path(out)
    return p if p.is_absolute() else repo / p


def git_common_dir(repo: Path) -> Path:
    """``git rev-parse --git-common-dir`` as an absolute path (shared by linked worktrees);
    remembered from :func:`find_toplevel` inside :func:`run_scope`."""
    facts = _facts(repo)
    if facts is not None and facts.common_dir is not None:
        return facts.common_dir
    out = os.fsdecode(run_git(repo, "rev-parse", "--git-common-dir", timeout_s=10).strip())
    p = Path(out)
    return p if p.is_absolute() else (repo / p).resolve()


def head_ids(repo: Path) -> tuple[str, str] | None:
    """(HEAD's commit id, its tree id) as :func:`find_toplevel` saw them in this
    :func:`run_scope` (("", "") for an unborn HEAD), or None when not known: the caller asks
    git. A review never moves HEAD, so within one command the answer stays true."""
    facts = _facts(repo)
    return facts.head if facts is not None else None


class _Scope:
    """What one command remembers (:func:`run_scope`)."""

    def __init__(self) -> None:
        self.facts: dict[Path, RepoFacts] = {}
        self.head_files: dict[tuple[Path, str], bytes | None] = {}
        self.blobs: dict[str, bytes] = {}
        self.blob_bytes = 0
        self.lock = threading.Lock()
        self.ahead: dict[Hashable, _Ahead] = {}


_scope: _Scope | None = None
BLOB_MEMO_BYTES = 4 << 20  # small blobs kept per command for a second reader (anchoring)
BLOB_MEMO_MAX_BLOB = 512 * 1024


@contextlib.contextmanager
def run_scope() -> Iterator[None]:
    """Remember, for the duration of one command, what git said about the repository: the
    :func:`probe` of :func:`find_toplevel`, files read at HEAD (:func:`head_blobs`) and small
    blobs read by object id (:func:`remember_blob`). A command never moves HEAD nor rewrites
    objects, so none of it goes stale inside; outside a scope nothing is remembered (a test
    that commits between two calls sees the new HEAD). Not re-entrant: an inner scope is the
    outer one."""
    global _scope
    if _scope is not None:
        yield
        return
    scope = _scope = _Scope()
    try:
        yield
    finally:
        _scope = None
        for job in scope.ahead.values():  # nothing started ahead outlives the command
            job.thread.join()


class _Ahead:
    """A call started ahead in a thread (:func:`start_ahead`): its value or its exception."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self.value: object = None
        self.error: BaseException | None = None
        self.taken = False
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)

    def _run(self, fn: Callable[[], object]) -> None:
        try:
            self.value = fn()
        except BaseException as e:  # noqa: BLE001 - handed to whoever takes the result
            self.error = e


def start_ahead(key: Hashable, fn: Callable[[], object]) -> None:
    """Inside :func:`run_scope`, start ``fn()`` in a thread now, for :func:`take_ahead` with
    the same ``key`` later: a git process that will be needed runs while this process does
    other work (two cores). Outside a scope, or when ``key`` was started already: nothing."""
    scope = _scope
    if scope is None:
        return
    with scope.lock:
        if key in scope.ahead:
            return
        job = scope.ahead[key] = _Ahead(fn)
    job.thread.start()


def take_ahead(key: Hashable) -> tuple[bool, object]:
    """(True, value) of the call started ahead under ``key`` (waiting for it to end), once;
    (False, None) when none was started in this :func:`run_scope`. Raises the call's
    exception."""
    scope = _scope
    if scope is None:
        return False, None
    with scope.lock:
        job = scope.ahead.get(key)
        if job is None or job.taken:
            return False, None
        job.taken = True
    job.thread.join()
    if job.error is not None:
        raise job.error
    return True, job.value


def remember_blob(oid: str, data: bytes) -> None:
    """Keep blob ``oid``'s content for :func:`known_blob` in this :func:`run_scope` (only
    blobs up to BLOB_MEMO_MAX_BLOB bytes, BLOB_MEMO_BYTES in all; nothing outside a scope)."""
    scope = _scope
    if scope is None or len(data) > BLOB_MEMO_MAX_BLOB:
        return
    with scope.lock:
        if oid not in scope.blobs and scope.blob_bytes + len(data) <= BLOB_MEMO_BYTES:
            scope.blobs[oid] = data
            scope.blob_bytes += len(data)


def known_blob(oid: str) -> bytes | None:
    """The content of blob ``oid`` when a reader of this :func:`run_scope` kept it, else None."""
    scope = _scope
    if scope is None or not oid:
        return None
    with scope.lock:
        return scope.blobs.get(oid)


def cat_file_batch(repo: Path | str, specs: Sequence[str],
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> list[tuple[str, bytes] | None]:
    """(type, content) of each object name in ``specs`` from one ``git cat-file --batch``
    (git-cat-file(1): ``<oid> <type> <size>\\n<content>\\n`` or ``<spec> missing\\n`` per
    input line); None for a missing or ambiguous name. Names are encoded as the file system
    does (non-UTF-8 paths keep their bytes) and must not contain a newline. Raises GitError."""
    if not specs:
        return []
    if any("\n" in s for s in specs):
        raise GitError("git cat-file: object names may not contain a newline")
    data = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_git(repo, "cat-file", "--batch", stdin=data, timeout_s=timeout_s)
    result: list[tuple[str, bytes] | None] = []
    pos = 0
    for _ in specs:
        nl = out.find(b"\n", pos)
        if nl < 0:
            raise GitError("git cat-file --batch: truncated output")
        header = out[pos:nl].split(b" ")
        pos = nl + 1
        if len(header) != 3 or not header[2].isdigit():
            result.append(None)  # "<spec> missing" / "ambiguous"
            continue
        size = int(header[2])
        result.append((header[1].decode("ascii", "replace"), out[pos : pos + size]))
        pos += size + 1
    return result


def head_blobs(repo: Path, paths: Sequence[str], prefetch: Sequence[str] = ()
               ) -> list[bytes | None]:
    """The bytes of each repository path in ``paths`` committed at HEAD (``HEAD:<path>``; a
    symlink's blob is its link text), None when HEAD has no blob there (absent, a folder, a
    submodule, an unborn HEAD). One ``git cat-file --batch`` for everything not yet known;
    inside :func:`run_scope` the answers are remembered, ``prefetch`` paths are read in the
    same process for later calls, HEAD is the commit :func:`find_toplevel` saw, and an unborn
    HEAD costs no process. Paths with a line break are read with ``rev-parse`` + ``cat-file``
    (the batch takes one name per line). Raises GitError."""
    scope = _scope
    head = head_ids(repo)
    commit = head[0] if head is not None else "HEAD"
    if head is not None and not commit:
        return [None] * len(paths)
    key = Path(repo)
    if scope is not None:
        with scope.lock:
            known = {p: scope.head_files[(key, p)] for p in [*paths, *prefetch]
                     if (key, p) in scope.head_files}
        wanted = [p for p in dict.fromkeys([*paths, *prefetch]) if p not in known]
    else:
        known, wanted = {}, list(dict.fromkeys(paths))
    odd = [p for p in wanted if "\n" in p]
    plain = [p for p in wanted if "\n" not in p]
    got: dict[str, bytes | None] = {}
    for p, obj in zip(plain, cat_file_batch(repo, [f"{commit}:{p}" for p in plain], 10),
                      strict=True):
        got[p] = obj[1] if obj is not None and obj[0] == "blob" else None
    for p in odd:
        rc, oid, _ = run_git_full(repo, "rev-parse", "--verify", "-q", "--end-of-options",
                                  f"{commit}:{p}", ok_codes=(0, 1, 128), timeout_s=10)
        [obj] = cat_file_batch(repo, [oid.decode().strip()], 10) if rc == 0 else [None]
        got[p] = obj[1] if obj is not None and obj[0] == "blob" else None
    if scope is not None:
        with scope.lock:
            scope.head_files.update(((key, p), v) for p, v in got.items())
    known.update(got)
    return [known[p] for p in paths]
