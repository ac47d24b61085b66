"""A Perl-regexp ``code_search`` that git could not finish, done again so that its answer depends
only on the lines the model may see (spec §14.2).

git stops a ``-P`` search with exit 128 when PCRE hits its match or depth limit on some line
(``fatal: pcre2_jit_match failed with error code -47: match limit exceeded``). Whether that
happens on a line that holds a secret depends on the hidden characters, so a pattern that
backtracks without end only when a guess is right (``"ghp_[a-m](?:(?:\\w+)+)+[^"\\w]``) would
answer the guess with an error. :class:`Retry` searches again: the files in batches of
SEARCH_RETRY_BATCH, a failing batch halved until each failing file is alone, and in a failing
file its lines halved the same way (``SnapshotView.grep_lines``) until each failing line is
alone. A failing line the model is never shown for a Perl regexp (one that holds a secret: the
``shown`` test of ``code_search``) is left out of the search; a failing line that is shown anyway
makes the search the error it is, since the redacted text fails the same way. git matches a
Perl regexp line by line, so leaving a line out changes nothing on the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .. import git
from .registry import ToolResult
from .snapshot import SnapshotView

SEARCH_RETRY_BATCH = 256  # files per git grep when a Perl regexp failed on some line (ours)
SEARCH_RETRY_MAX_RUNS = 512  # git runs to find the lines it failed on, at most (ours)
SEARCH_RETRY_FILE_MAX_BYTES = 64 * 1024 * 1024  # a failing file is read up to this (ours)
# git's message when PCRE stops on a line (match or depth limit): a failure of the search,
# not of the pattern, whose compile errors read "<where>, '<pattern>': <what>"
MATCH_FAILED = b"failed with error code"

# (file name, 1-based line number, all the file's lines) -> whether the line is shown
Shown = Callable[[str, int, list[str]], bool]


def literal(path: bytes) -> str:
    """A pathspec naming exactly ``path`` (as git wrote it)."""
    return ":(literal)" + os.fsdecode(path)


def invalid(err: bytes) -> ToolResult:
    """``Error: invalid search: <git's first message line>``."""
    msg = [m for m in err.decode("utf-8", "replace").splitlines() if m.strip()]
    first = msg[0].removeprefix("fatal: ") if msg else "git grep failed"
    return ToolResult.error(f"Error: invalid search: {first}")


class Retry:
    """The search of Perl regexp ``text`` again, around the lines git failed on (the module
    docstring); ``limit`` records per file as the first search (None: all). At most
    SEARCH_RETRY_MAX_RUNS git runs and failing files up to SEARCH_RETRY_FILE_MAX_BYTES, else
    the answer is git's error."""

    def __init__(self, view: SnapshotView, text: str, ignore_case: bool, limit: int | None,
                 shown: Shown) -> None:
        self.view, self.text, self.ignore_case, self.limit = view, text, ignore_case, limit
        self.shown = shown
        self.runs = 0

    def records(self, paths: Sequence[bytes]) -> bytes | ToolResult:
        """The git grep records of the search over ``paths`` (as git wrote them, in its
        order), or the error result. Raises GitError."""
        out: list[bytes] = []
        pending = [list(paths[i:i + SEARCH_RETRY_BATCH])
                   for i in range(0, len(paths), SEARCH_RETRY_BATCH)]
        while pending:
            batch = pending.pop(0)
            rc, got, err = self._grep(batch)
            if rc != 128:
                out.append(got)
            elif len(batch) > 1 and self.runs < SEARCH_RETRY_MAX_RUNS:
                pending[:0] = [batch[:len(batch) // 2], batch[len(batch) // 2:]]
            else:
                alone = self._file(batch[0], err) if len(batch) == 1 else invalid(err)
                if isinstance(alone, ToolResult):
                    return alone
                out.append(alone)
        return b"".join(out)

    def _grep(self, paths: list[bytes]) -> tuple[int, bytes, bytes]:
        self.runs += 1
        return self.view.grep(self.text, [literal(p) for p in paths], perl=True,
                              ignore_case=self.ignore_case, max_per_file=self.limit)

    def _grep_lines(self, lines: list[bytes], numbers: list[int]) -> tuple[int, bytes, bytes]:
        self.runs += 1
        return self.view.grep_lines([lines[n - 1] for n in numbers], self.text, perl=True,
                                    ignore_case=self.ignore_case)

    def _file(self, path: bytes, err: bytes) -> bytes | ToolResult:
        """The records of the search in file ``path`` without its failing lines the model is
        not shown, numbered as in the file; none for a secret path; the error result when a
        failing line is shown or the file or the runs are over their bounds."""
        name = git.decode_text(path)
        if self.view.is_secret(name):
            return b""
        fs_name = os.fsdecode(path)
        if "\n" in fs_name or "\r" in fs_name:  # read_many takes one name per line
            data = self.view.read(fs_name)
        else:  # the size is checked before the blob is read
            data = self.view.read_many([fs_name], SEARCH_RETRY_FILE_MAX_BYTES).get(fs_name)
        if data is None or len(data) > SEARCH_RETRY_FILE_MAX_BYTES:
            return invalid(err)
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        text = [git.decode_text(raw) for raw in lines]
        failing = self._failing(lines, lambda n: self.shown(name, n, text))
        if failing is None:
            return invalid(err)
        numbers = [n for n in range(1, len(lines) + 1) if n not in failing]
        rc, got, err = self._grep_lines(lines, numbers)
        if rc == 128:  # never expected: every failing line was left out
            return invalid(err)
        head = f"{self.view.head}:".encode() + path
        out: list[bytes] = []
        for rec in got.split(b"\n"):
            parts = rec.split(b"\0", 2)
            if len(parts) == 3 and parts[1].isdigit() and len(out) != self.limit:
                out.append(b"%s\0%d\0%s\n" % (head, numbers[int(parts[1]) - 1], parts[2]))
        return b"".join(out)

    def _failing(self, lines: list[bytes], shown: Callable[[int], bool]) -> set[int] | None:
        """The 1-based numbers of the lines the search fails on alone (halving the failing
        parts of the file); None when one of them is ``shown`` or past
        SEARCH_RETRY_MAX_RUNS."""
        failing: set[int] = set()
        stack = [list(range(1, len(lines) + 1))]
        while stack:
            part = stack.pop()
            if self.runs >= SEARCH_RETRY_MAX_RUNS:
                return None
            if not part or self._grep_lines(lines, part)[0] != 128:
                continue
            if len(part) > 1:
                stack += [part[len(part) // 2:], part[:len(part) // 2]]
            elif shown(part[0]):
                return None
            else:
                failing.add(part[0])
        return failing
