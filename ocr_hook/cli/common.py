"""Small helpers shared by the command modules: one-line user text and stdout lines."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import GitError

HOOK_WORDS = {  # hook stage -> (what it gates, the hook id in .pre-commit-hooks.yaml)
    "pre-commit": ("commit", "ocr-review"),
    "pre-merge-commit": ("merge", "ocr-review-merge"),
    "pre-push": ("push", "ocr-review-push"),
}


def hook_words(stage: str) -> tuple[str, str]:
    """(``commit``/``merge``/``push``, hook id) of a hook stage; ``commit`` for anything else."""
    return HOOK_WORDS.get(stage, HOOK_WORDS["pre-commit"])


def say(text: object = "") -> None:
    """One line of command output on stdout (stdout carries the command's result alone)."""
    sys.stdout.write(f"{text}\n")


def repo_or_none() -> Path | None:
    """The top level of the repository around the working directory, or None outside one."""
    from .. import git  # not at import: `git ocr -h` loads no stage package

    try:
        return git.find_toplevel(Path.cwd())
    except GitError:
        return None
