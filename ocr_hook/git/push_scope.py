"""A bounded, stated scope for pushed ranges (spec §3.4).

A first push to an empty remote, or a new branch of an imported history, would otherwise
review the whole history against the empty tree. :func:`bound_push_range` counts the commits
of a pushed range and, past ``review.max_push_commits``, moves the base up so that only the
newest commits are reviewed: the cut follows the first-parent chain from the pushed tip (the
newest N first-parent commits, with whatever they merged), and the commits left out are counted
and named (``Target.skipped_commits`` from ``skipped_base_label`` to the new base). Runs git
through :mod:`git.process`.
"""

from __future__ import annotations

from pathlib import Path

from . import process
from .target import EMPTY_TREE_LABEL, Target, empty_tree


def _count(repo: Path, head: str, base: str, empty: str) -> int:
    """Commits reachable from ``head`` and not from ``base`` (all of them for the empty
    tree)."""
    args = ["rev-list", "--count", head]
    if base != empty:
        args += ["--not", base]
    return int(process.run_git(repo, *args).decode().strip() or 0)


def bound_push_range(repo: Path, t: Target, max_commits: int) -> Target:
    """``t`` with ``commits`` counted and, when there are more than ``max_commits``, its base
    moved to the first parent of the ``max_commits``-th newest first-parent commit of the
    range (the commits below it are reported, not reviewed). A range whose first-parent chain
    reaches a root commit within the limit keeps the empty tree base. Raises GitError."""
    empty = empty_tree(repo)
    total = _count(repo, t.head, t.base, empty)
    if total <= max_commits:
        return t._replace(commits=total)
    args = ["rev-list", "--first-parent", f"--max-count={max_commits}", t.head]
    if t.base != empty:
        args += ["--not", t.base]
    newest = process.run_git(repo, *args).decode().split()
    if len(newest) < max_commits:  # the first-parent chain is short: nothing to cut
        return t._replace(commits=total)
    rc, out, _ = process.run_git_full(repo, "rev-parse", "--verify", "-q", "--end-of-options",
                                    f"{newest[-1]}^1", ok_codes=(0, 1, 128))
    new_base = out.decode().strip() if rc == 0 else ""
    if not new_base or new_base == t.base:  # the cut reaches the root or the old base
        return t._replace(commits=total)
    kept = _count(repo, t.head, new_base, empty)
    return t._replace(
        base=new_base, base_label=new_base, commits=kept, skipped_commits=total - kept,
        skipped_base_label=t.base_label or EMPTY_TREE_LABEL)
