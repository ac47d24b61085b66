"""Deleted files that the reviewed snapshot still refers to.

A deleted file is normally listed and not reviewed (spec §4 gate 9), but deleting a module that
other code still imports breaks those users. :func:`find_users` looks for the names by which
code refers to each deleted file (:func:`reference_names`) in the snapshot with one ``git grep``
and keeps the lines that read like a reference (:data:`REFERENCE_WORDS`: ``import``,
``require``, ``#include``, ``use`` …). A deleted file with users is reviewed: its diff, with
the users quoted in the prompt (``agent.prompts``).

I/O: one ``git grep -z -n -w -F -I`` over the snapshot tree through :mod:`git.process`.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import git
from ..diff import FileDiff

log = logging.getLogger(__name__)

USERS_MAX = 5  # user lines quoted per deleted file
# Deleted files searched for users per run (ours): one `git grep -w -F` with thousands of names
# over a large tree takes seconds, and a change that deletes hundreds of files is a removal the
# reviewer cannot weigh file by file anyway.
SEARCH_MAX_FILES = 200
USER_LINE_CHARS = 200  # a quoted user line is cut here
MIN_NAME_CHARS = 3  # shorter names ("a", "io") would match too much to mean anything
# Words that start a reference to another file in common languages: Python/JS/TS/Go/Java/
# Kotlin/Scala import, Python from, JS/Ruby/Lua require(_relative), C/C++ #include, Rust
# mod/use, PHP use/include/require_once, C# using, shell source, CSS/Sass @import/@use.
REFERENCE_WORDS = re.compile(
    r"\b(?:import|from|require|require_relative|require_once|include|include_once|use|using"
    r"|mod|source|load|extends)\b"
)
# Base names that stand for their folder (Python packages, JS/TS index files, Rust modules).
FOLDER_STEMS = frozenset({"__init__", "index", "mod", "main", "lib"})


def reference_names(path: str) -> tuple[str, ...]:
    """Names other code uses for the file at ``path`` (a repository path with ``/``): the base
    name without its extension (``pkg/util/helpers.py`` → ``helpers``), or the folder's name
    for ``__init__``/``index``/``mod``/``main``/``lib`` files (``pkg/util/__init__.py`` →
    ``util``). Names shorter than MIN_NAME_CHARS are dropped. Pure."""
    stem = posixpath.basename(path).split(".", 1)[0]
    if stem in FOLDER_STEMS:
        stem = posixpath.basename(posixpath.dirname(path))
    return (stem,) if len(stem) >= MIN_NAME_CHARS else ()


def find_users(
    repo: Path, tree: str, deleted: Sequence[FileDiff]
) -> dict[str, tuple[str, ...]]:
    """Deleted path → up to USERS_MAX lines of the snapshot ``tree`` that refer to it, each as
    ``<path>:<line>: <text>`` (text stripped, cut at USER_LINE_CHARS), the best evidence first
    (:func:`_strong`), then git's order. A line refers to a deleted file when it holds one of
    its :func:`reference_names` as a whole word and a REFERENCE_WORDS word. Deleted paths
    without such lines are absent. Raises GitError."""
    return _users_of(repo, tree, [f.path for f in deleted])


def _users_of(repo: Path, tree: str, deleted: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """:func:`find_users` for the deleted paths ``deleted``. Each path's lines depend on its
    own names only, so searching more paths at once gives each the same lines."""
    names: dict[str, list[str]] = {}
    for path in deleted:
        for name in reference_names(path):
            names.setdefault(name, []).append(path)
    if not names:
        return {}
    args = ["-c", "grep.column=false", "grep", "-z", "-n", "-w", "-F", "-I", "--no-color",
            "--full-name"]
    for name in sorted(names):
        args += ["-e", name]
    _rc, out, _ = git.run_git_full(repo, *args, tree, "--", ok_codes=(0, 1))
    # names made of word characters are looked up per word of a line; the rest (``my-mod``)
    # are searched for one by one (few): a line costs its words, not the number of names
    odd = [n for n in names if not _WORD.fullmatch(n)]
    found: dict[str, tuple[list[str], list[str]]] = {}  # owner -> (strong, weak) lines
    prefix = (tree + ":").encode()
    gone = set(deleted)
    for record in out.split(b"\n"):
        parts = record.split(b"\0", 2)
        if len(parts) != 3 or not parts[0].startswith(prefix):
            continue
        path = os.fsdecode(parts[0][len(prefix):])
        text = git.decode_text(parts[2]).strip()
        if path in gone or not REFERENCE_WORDS.search(text):
            continue
        for name in _names_in(text, names, odd):
            for owner in names[name]:
                strong, weak = found.setdefault(owner, ([], []))
                kept = strong if _strong(owner, path, text) else weak
                if len(kept) < USERS_MAX:
                    kept.append(f"{path}:{parts[1].decode()}: {text[:USER_LINE_CHARS]}")
    return {k: tuple([*strong, *weak][:USERS_MAX]) for k, (strong, weak) in found.items()}


_WORD = re.compile(r"\w+")


def _names_in(text: str, names: Mapping[str, object], odd: Sequence[str]) -> list[str]:
    r"""The names of ``names`` that ``text`` holds as whole words (``(?<!\w)name(?!\w)``),
    sorted (each name's owners keep their own lists, so the order between names is free)."""
    words = set(_WORD.findall(text))
    hits = {n for n in words if n in names}
    hits.update(n for n in odd
                if n in text and re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text))
    return sorted(hits)


def _strong(deleted: str, user: str, text: str) -> bool:
    """Whether a reference line is good evidence: the user sits in the deleted file's folder
    (``from . import x``, ``./x``, ``mod x;``), or the line also names that folder
    (``from pkg.util import helpers``, ``../util/helpers``). Weaker matches (a file of the same
    name elsewhere) are kept but listed after these."""
    folder = posixpath.dirname(deleted)
    if posixpath.dirname(user) == folder:
        return True
    parent = posixpath.basename(folder)
    return bool(parent) and re.search(rf"(?<!\w){re.escape(parent)}(?!\w)", text) is not None


def _searched(deleted: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (tree, path) pairs of deleted files that are searched: the first SEARCH_MAX_FILES
    in path order."""
    if len(deleted) <= SEARCH_MAX_FILES:
        return list(deleted)
    return sorted(deleted, key=lambda tp: tp[1])[:SEARCH_MAX_FILES]


def _search(repo: Path, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(tree, path) → users of each pair with users, one ``git grep`` per tree."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for tree in dict.fromkeys(t for t, _p in pairs):
        users = _users_of(repo, tree, [p for t, p in pairs if t == tree])
        found.update(((tree, path), lines) for path, lines in users.items())
    return found


class EarlySearch:
    """The users of likely deleted files, searched in a thread while the caller goes on
    deciding the other gates (git reads the snapshot's blobs on another core).
    ``likely``: (snapshot tree, deleted path) pairs, a guess made before the gates are known;
    :func:`mark_referenced` uses the result when it covers the files finally searched."""

    def __init__(self, repo: Path, likely: Sequence[tuple[str, str]]) -> None:
        from concurrent.futures import ThreadPoolExecutor  # only a change that deletes files

        pairs = _searched(likely)
        self.pairs = frozenset(pairs)
        pool = ThreadPoolExecutor(max_workers=1)
        self.future = pool.submit(_search, repo, pairs)
        pool.shutdown(wait=False)


def mark_referenced(
    repo: Path, deleted: Sequence[tuple[str, FileDiff]], early: EarlySearch | None = None
) -> bool:
    """Set ``FileDiff.referenced_by`` on each deleted file (paired with the snapshot tree of
    its range) from :func:`find_users`; True when any file has users. Past SEARCH_MAX_FILES
    deleted files only the first ones in path order are searched (a warning says so); the rest
    keep no users and stay excluded as deleted. ``early``: a search started before, used
    when it covers every searched file (its GitError is raised then). Raises GitError."""
    if len(deleted) > SEARCH_MAX_FILES:
        log.warning("%d files deleted: only the first %d (path order) were searched for code that "
                    "still uses them", len(deleted), SEARCH_MAX_FILES)
    pairs = _searched([(t, f.path) for t, f in deleted])
    if early is not None and early.pairs.issuperset(pairs):
        found = early.future.result()
    else:
        found = _search(repo, pairs)
    wanted = set(pairs)
    marked = False
    for tree, f in deleted:
        if (tree, f.path) in wanted:
            f.referenced_by = found.get((tree, f.path), ())
            marked = marked or bool(f.referenced_by)
    return marked
