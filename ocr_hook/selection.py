"""Deterministic file selection (SPEC §4): FileDiff[] + policy → reviewed or excluded(reason).

Gates run in SPEC order; the first that matches decides. Pure: no git, no LLM, no env.
Globs use gitignore semantics through pathspec; built-in lists live in ``config/*.json``.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pathspec

from . import resources
from .diff import FileDiff

TOO_LARGE_FRACTION = 0.8  # SPEC §4 gate 10: a file's diff alone > 80 % of the context budget
GENERATED_MARKERS = ("@generated", "do not edit")  # "Code generated … DO NOT EDIT" (Go convention)


@dataclass(frozen=True, slots=True)
class SelectionPolicy:
    """What the user configured: globs are gitignore-style (``select.*`` and ``--exclude``)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    review_tests: bool = False
    context_tokens: int = 200_000


@dataclass(frozen=True, slots=True)
class Decision:
    """Outcome for one changed path: ``reason`` is "" when the file will be reviewed."""

    file: FileDiff
    reviewed: bool
    reason: str


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(lines))


@functools.cache
def _builtin() -> tuple[pathspec.GitIgnoreSpec, pathspec.GitIgnoreSpec, pathspec.GitIgnoreSpec,
                        pathspec.GitIgnoreSpec, frozenset[str], frozenset[str], tuple[str, ...]]:
    lists = resources.load_json("path_lists.json")
    defaults = resources.load_json("default_exclude_patterns.json")
    types = resources.load_json("supported_file_types.json")
    secret = _spec(lists["secret_paths"])
    provider = _spec(lists["provider_directories"])
    tests = _spec([p.lower() for p in defaults["tests"]])
    generated = _spec([p.lower() for p in defaults["generated"] + defaults["lock_files"]])
    return (
        secret,
        provider,
        tests,
        generated,
        frozenset(e.lower() for e in types["extensions"]),
        frozenset(types["file_names"]),
        tuple(types["file_name_prefixes"]),
    )


def is_supported(path: str) -> bool:
    """True when the extension or file name is in ``config/supported_file_types.json``."""
    _, _, _, _, exts, names, prefixes = _builtin()
    base = posixpath.basename(path)
    if base in names or base.startswith(prefixes):
        return True
    _, ext = posixpath.splitext(base)
    if not ext and base.startswith("."):
        ext = base  # ".env", ".bashrc"
    return bool(ext) and ext.lower() in exts


def symlink_points_outside(link_path: str, target: str) -> bool:
    """True when a symlink at ``link_path`` (repo-relative) with text ``target`` escapes the
    repository: absolute targets or ``..`` walks above the top."""
    if not target or target.startswith("/") or (len(target) > 1 and target[1] == ":"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    return joined == ".." or joined.startswith("../")


def _link_text(fd: FileDiff) -> str:
    for h in fd.hunks:
        for ln in h.lines:
            if ln.kind == "+":
                return ln.text
    return ""


def _looks_generated(fd: FileDiff) -> bool:
    for h in fd.hunks:
        if h.new_start > 1:
            return False
        head = [ln.text.lower() for ln in h.lines if ln.new_line is not None and ln.new_line <= 5]
        return any(m in t for t in head for m in GENERATED_MARKERS[:1]) or any(
            "code generated" in t and "do not edit" in t for t in head
        )
    return False


def select(
    files: Sequence[FileDiff],
    policy: SelectionPolicy,
    count_tokens: Callable[[str], int] | None = None,
) -> list[Decision]:
    """Decide every changed file, in input order (SPEC §4 gates 1–10).

    ``count_tokens`` (text → tokens) is only called for diffs large enough to approach the
    too_large threshold (bytes/3 ≥ threshold), so small reviews never load a BPE table.
    """
    secret, provider, tests, generated, _, _, _ = _builtin()
    user_ex = _spec(policy.exclude) if policy.exclude else None
    user_in = _spec(policy.include) if policy.include else None
    limit = int(policy.context_tokens * TOO_LARGE_FRACTION)
    out: list[Decision] = []
    for fd in files:
        reason = _reason(fd, policy, secret, provider, tests, generated, user_ex, user_in)
        if not reason and limit > 0 and len(fd.patch) // 3 >= limit:
            tokens = count_tokens(fd.patch) if count_tokens else len(fd.patch.encode()) // 3
            if tokens > limit:
                reason = "too_large"
        out.append(Decision(fd, not reason, reason))
    return out


def _reason(
    fd: FileDiff,
    policy: SelectionPolicy,
    secret: pathspec.GitIgnoreSpec,
    provider: pathspec.GitIgnoreSpec,
    tests: pathspec.GitIgnoreSpec,
    generated: pathspec.GitIgnoreSpec,
    user_ex: pathspec.GitIgnoreSpec | None,
    user_in: pathspec.GitIgnoreSpec | None,
) -> str:
    path = fd.path
    paths = {fd.old_path, fd.new_path}
    if fd.binary:
        return "binary"
    if fd.submodule:
        return "submodule"
    if fd.symlink and symlink_points_outside(fd.new_path, _link_text(fd)):
        return "symlink_outside"
    if any(secret.match_file(p) for p in paths):
        return "secret_path"
    if any(provider.match_file(p) for p in paths):
        return "provider_directory"
    if user_ex is not None and user_ex.match_file(path):
        return "user_exclude"
    included = user_in is not None and user_in.match_file(path)
    if not included:
        if not is_supported(path):
            return "unsupported_ext"
        low = path.lower()
        if not policy.review_tests and tests.match_file(low):
            return "default_path"
        if generated.match_file(low) or _looks_generated(fd):
            return "default_path"
    if fd.status == "deleted":
        return "deleted"
    if fd.status in ("renamed", "copied") and not fd.hunks:
        return "rename_only"
    if fd.mode_only:
        return "mode_only"
    if not fd.hunks:
        return "no_content_change"
    return ""
