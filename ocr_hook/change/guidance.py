"""The repository's agent guidance (spec §5.1): ``AGENTS.md``, ``CLAUDE.md``,
``.github/copilot-instructions.md`` and ``.cursorrules``, read from HEAD like the repository
rules (a staged edit cannot change its own review), bounded, and given to the model as the
``<project_guidance>`` block of the main prompt: conventions of this repository, never
instructions that override the review contract.

Bounds: FILE_MAX_BYTES of one file and TOTAL_MAX_BYTES of all, in GUIDANCE_FILES order; a file
over its share is cut after its last whole line that fits, and a note says so. The text is
escaped (:func:`escape`) so it can neither close its block nor open another one; redaction of
secrets is the prompt's (``agent.group_messages`` redacts every part).

``bound_guidance`` is pure; ``load_guidance`` reads HEAD through ``git.head_blobs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .. import git, util

GUIDANCE_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules")
FILE_MAX_BYTES = 16 * 1024  # one file's share of the prompt (UTF-8 bytes of its text)
TOTAL_MAX_BYTES = 32 * 1024  # all guidance files together


class GuidanceFile(NamedTuple):
    """One guidance file at HEAD: ``text`` as the prompt shows it (after the bound, before
    escaping), ``size`` its blob's bytes, ``shown`` the UTF-8 bytes of ``text``, ``cut`` whether
    the bound cut it (``text`` may then be "" when the total bound was used up before it)."""

    path: str
    text: str
    size: int
    shown: int
    cut: bool


class Guidance(NamedTuple):
    """The guidance files a review gives the model, in GUIDANCE_FILES order (empty when there
    are none or ``rules.guidance`` is false)."""

    files: tuple[GuidanceFile, ...] = ()

    @property
    def block(self) -> str:
        """The body of the prompt's ``<project_guidance>`` block: one
        ``<guidance_file path="…">`` element per file with its escaped text, then the cut note
        of a file the bound cut; "" without files."""
        parts = []
        for f in self.files:
            body = escape(f.text).rstrip("\n")
            if f.cut:
                note = (f"[ocr-hook: {f.path} is cut here: {f.size} bytes at HEAD, the first"
                        f" {f.shown} shown (guidance bound: {FILE_MAX_BYTES // 1024} KiB a file,"
                        f" {TOTAL_MAX_BYTES // 1024} KiB in all)]")
                body = f"{body}\n{escape(note)}" if body else escape(note)
            parts.append(f'<guidance_file path="{util.prompt_path(f.path)}">\n{body}\n'
                         "</guidance_file>")
        return "\n".join(parts)

    def listing(self) -> list[dict[str, Any]]:
        """The files for ``--preview`` and the JSON ``input.guidance``: ``{"path", "bytes"
        (at HEAD), "shown_bytes", "cut"}`` each."""
        return [{"path": f.path, "bytes": f.size, "shown_bytes": f.shown, "cut": f.cut}
                for f in self.files]


NO_GUIDANCE = Guidance()


def escape(text: str) -> str:
    """``text`` for inside a prompt block: ``&``, ``<`` and ``>`` as XML entities (no line can
    close ``</project_guidance>`` or open a block of ours) and inner line breaks spelled out
    (``util.prompt_text``)."""
    return util.prompt_text(util.xml_attr(text).replace("&quot;", '"'))


def _cut(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes that ends at a line
    break ("" when its first line is longer)."""
    head = text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    end = head.rfind("\n")
    return head[:end + 1] if end >= 0 else ""


def bound_guidance(found: Sequence[tuple[str, bytes]], *, file_max: int = FILE_MAX_BYTES,
                   total_max: int = TOTAL_MAX_BYTES) -> Guidance:
    """Guidance of ``found`` ((path, blob bytes) in prompt order): each text decoded
    (``git.decode_text``) and bounded to ``min(file_max, what total_max leaves)`` bytes, cut at
    a line. A blob that is empty or only whitespace is left out."""
    files = []
    used = 0
    for path, data in found:
        text = git.decode_text(data)
        if not text.strip():
            continue
        limit = max(0, min(file_max, total_max - used))
        size = len(text.encode("utf-8", "surrogatepass"))
        shown_text = text if size <= limit else _cut(text, limit)
        shown = len(shown_text.encode("utf-8", "surrogatepass"))
        used += shown
        files.append(GuidanceFile(path, shown_text, len(data), shown, shown_text != text))
    return Guidance(tuple(files))


def load_guidance(repo: Path, enabled: bool = True) -> Guidance:
    """The guidance files committed at HEAD of ``repo`` (never the index or the work tree),
    bounded (:func:`bound_guidance`); NO_GUIDANCE when ``enabled`` is false (``rules.guidance``)
    or HEAD has none. Raises GitError."""
    if not enabled:
        return NO_GUIDANCE
    blobs = git.head_blobs(repo, list(GUIDANCE_FILES))
    return bound_guidance([(p, b) for p, b in zip(GUIDANCE_FILES, blobs, strict=True)
                           if b is not None])
