"""Small helpers shared by the command modules: stdout lines, the log formatter of stderr,
hook words and the repository around the working directory.

Terminal safety: every text of the repository or the model a command prints passes
``util.display_text`` / ``util.display_path`` (``report.display_json`` for ``--json``), and
every log line on stderr passes :func:`log_formatter`'s formatter, so an error message naming
a hostile file, setting or reply carries no raw control, format or separator character.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import GitError
from ..util import TYPE_CHECKING

if TYPE_CHECKING:
    import logging
    from typing import Any

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


def log_formatter(fmt: str) -> logging.Formatter:
    """A ``logging.Formatter`` for ``fmt`` whose message passes ``util.display_text`` (one
    line, every non-printable character spelled out) and whose traceback (``-v``) keeps only
    its newlines. logging and the escaping load here, when the first command needs them."""
    import logging

    from ..util import display_text

    class EscapingFormatter(logging.Formatter):
        def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
            return display_text(super().formatMessage(record))

        def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
            return display_text(super().formatException(ei), keep="\n")

        def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
            return display_text(super().formatStack(stack_info), keep="\n")

    return EscapingFormatter(fmt)


def repo_or_none() -> Path | None:
    """The top level of the repository around the working directory, or None outside one."""
    from .. import git  # not at import: `git ocr -h` loads no stage package

    try:
        return git.find_toplevel(Path.cwd())
    except GitError:
        return None
