"""The diff model: one changed file (``FileDiff``) with its hunks (``Hunk``) and lines
(``Line``), the raw record git gives for it (``RawEntry``), and the numbered form the model
reads. Pure data; ``diff.patch`` builds it from git's bytes. Line numbers are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from ..errors import GitError
from ..util import prompt_text

# `git diff --raw` status letters (git-diff(1) "Raw output format"). U and X never occur
# between two trees; they are kept so an unexpected letter is reported, not mislabelled.
STATUS_NAMES = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
    "U": "unmerged",
    "X": "unknown",
}

MODE_SYMLINK = "120000"  # git's mode for a symbolic link (spec §3.5)
MODE_GITLINK = "160000"  # git's mode for a submodule commit (spec §3.5)
NO_NEWLINE_MARKER = b"\\"  # "\ No newline at end of file" (the text after it is localised)


class DiffParseError(GitError):
    """git printed something the parser cannot read (truncated record, misaligned patch)."""


class Line(NamedTuple):
    """One line of a hunk. ``text`` has no marker and no ``\n`` (a ``\r`` stays)."""

    kind: Literal[" ", "+", "-"]
    text: str
    old_line: int | None  # None for "+" lines
    new_line: int | None  # None for "-" lines


class Hunk(NamedTuple):
    """One ``@@ -old_start,old_count +new_start,new_count @@`` block (missing count = 1).

    ``header`` is the whole ``@@`` line as git printed it (function context included).
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str
    lines: tuple[Line, ...]


class RawEntry(NamedTuple):
    """One record of ``git diff --raw -z --no-abbrev`` plus its ``--numstat`` counts.

    ``insertions``/``deletions`` are None for binary files (numstat ``-``). ``similarity`` is
    the percentage git prints after R/C (``R086`` → 86), else None.
    """

    status: str  # one of STATUS_NAMES values
    old_path: str
    new_path: str
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str
    similarity: int | None
    insertions: int | None = None
    deletions: int | None = None


@dataclass(slots=True)
class FileDiff:
    """Everything known about one changed path.

    ``path`` is the new path (the old path for deletions). ``old_path == new_path`` unless
    renamed or copied. Modes are git's six octal digits (``000000`` on the absent side); oids
    are full hex ids (40 or 64 characters). ``patch`` is the file's section(s) of the unified
    diff without ``index`` lines (used for prompts, ``file_read_diff`` and cache keys).
    ``head_text`` holds the first bytes of the new blob, decoded, when ``git.target.load_diff``
    had to read them (generated-file markers outside the hunks, spec §4 gate 8), else None.
    ``notes`` are human-readable remarks (e.g. undecodable bytes replaced).
    ``binary_attribute`` names the ``.gitattributes`` entry (``-diff``, ``binary``…) that made
    git call this text file binary; it was diffed with ``--text`` (``git.target.load_diff``).
    ``referenced_by`` holds, for a deleted file, the snapshot lines that still refer to it
    (``<path>:<line>: <text>``, set by ``change.deleted_refs``); such a file is reviewed.
    ``size_bytes`` is the size of the larger of the two blobs of a file git would not diff
    because of it (above ``select.max_file_bytes``, ``change.changeset``), else None.
    ``git_hunks`` holds git's own hunks once ``diff.context.widen_file`` replaced ``hunks`` by
    hunks with the enclosing scope's lines added as context (prompts, anchoring and the review
    page use ``hunks``; ``patch`` stays git's), else None.
    ``whole`` is the selection reason the file's old side had (its old path, or a generated
    marker in its old first lines) when the file is reviewed whole because of it: ``hunks``
    then hold every line of the new blob as added (``change.whole``, spec §4), else "".
    ``loaded`` is False when the file's patch was not kept (excluded, too large, over a bound:
    ``change.changeset``):
    then ``hunks`` is empty and ``patch`` is "" although the file did change, and
    ``insertions``/``deletions`` are git's ``--numstat`` counts.
    """

    status: str
    old_path: str
    new_path: str
    old_mode: str = ""
    new_mode: str = ""
    old_oid: str = ""
    new_oid: str = ""
    similarity: int | None = None
    binary: bool = False
    insertions: int = 0
    deletions: int = 0
    hunks: tuple[Hunk, ...] = ()
    patch: str = ""
    extra_sections: int = 0
    decoding: str = "utf-8"  # utf-8 | replaced
    head_text: str | None = None
    notes: list[str] = field(default_factory=list)
    binary_attribute: str = ""
    referenced_by: tuple[str, ...] = ()
    size_bytes: int | None = None
    loaded: bool = True
    git_hunks: tuple[Hunk, ...] | None = None
    whole: str = ""

    @property
    def path(self) -> str:
        return self.old_path if self.status == "deleted" else self.new_path

    @property
    def submodule(self) -> bool:
        return MODE_GITLINK in (self.old_mode, self.new_mode)

    @property
    def symlink(self) -> bool:
        """True when the reviewed side is a symbolic link (the old side for deletions)."""
        if self.status == "deleted":
            return self.old_mode == MODE_SYMLINK
        return self.new_mode == MODE_SYMLINK

    @property
    def link_text(self) -> str:
        """The symlink's target as stored by git ("" when not a symlink or not in the hunks).

        New side for added/modified links, old side for deleted ones."""
        if not self.symlink:
            return ""
        want = "-" if self.status == "deleted" else "+"
        for h in self.hunks:
            for ln in h.lines:
                if ln.kind == want:
                    return ln.text
        return ""

    @property
    def mode_only(self) -> bool:
        """Only the file mode changed (e.g. ``chmod +x``): listed, never sent to the LLM."""
        return (
            self.status == "modified"
            and not self.hunks
            and not self.binary
            and self.old_mode != self.new_mode
        )

    @property
    def changed_lines(self) -> int:
        return self.insertions + self.deletions


def render_numbered(fd: FileDiff, *, as_git: bool = False) -> str:
    """The file's hunks for the model: each line prefixed with its new-side line number
    (blank for deleted lines) and its marker, e.g. ``  12 +    return x``. ``as_git``: git's
    own hunks (``git_hunks``) when the file's hunks were widened. A line break other than
    ``\\n`` inside a line (CR, U+2028, NEL, VT, FF…) is spelled out (``util.prompt_text``),
    so each row is one line for the model and the numbers stay git's."""
    out: list[str] = []
    hunks = fd.git_hunks if as_git and fd.git_hunks is not None else fd.hunks
    width = max((len(str(h.new_start + h.new_count)) for h in hunks), default=1)
    for h in hunks:
        out.append(h.header)
        for ln in h.lines:
            num = str(ln.new_line) if ln.new_line is not None else ""
            out.append(f"{num:>{width}} {ln.kind}{ln.text}")
    return prompt_text("\n".join(out))
