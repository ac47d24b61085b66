"""The main-task prompt of one group (spec §6.2), assembled from explicit fields with
``util.render_template``: the other changed files, the group's numbered diffs, rules,
the repository's agent guidance, background and the findings of earlier rounds (rounds ≥ 2);
plus the prompt size check (spec §6.3). Pure: the date, rules and redaction are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from .. import util
from ..diff import FileDiff, render_numbered
from ..findings import SECRET_SOURCE, Finding, RawComment
from ..llm import Message, user_parts
from .grouping import Group

CONFIRMED_CAP = 30  # spec §6.1 step 5 (OCR confirmedCap)
CONFIRMED_CODE_CHARS = 200  # spec §6.1 step 5 (OCR confirmedMaxExistingCode)
CONFIRMED_ISSUE_CHARS = 300  # spec §6.1 step 5 (OCR confirmedMaxContent)
PROMPT_CONTEXT_FRACTION = 0.8  # spec §6.3: a group prompt above 80 % of the context is skipped


def exceeds_tokens(texts: Sequence[str], limit: int, count: Callable[[str], int]) -> bool:
    """True when ``texts`` together have more than ``limit`` tokens. Counts exactly only when
    their UTF-8 size (an upper bound: a token is at least one byte) is above ``limit``, so small
    reviews never load a BPE table (spec §15)."""
    if sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) <= limit:
        return False
    return sum(count(t) for t in texts) > limit


OTHER_FILES_MAX = 200  # lines of the "other changed files" list: a huge change must not fill it


def _other_files(all_files: Sequence[FileDiff], group: Group) -> str:
    """The other changed files for the prompt, one line each, at most OTHER_FILES_MAX of them
    and then a line counting the rest."""
    mine = {id(f) for f in group.files}
    others = [f for f in all_files if id(f) not in mine]
    lines = [
        f"{f.status.upper():<9} {util.prompt_path(f.path)} (+{f.insertions}/-{f.deletions})"
        for f in others[:OTHER_FILES_MAX]
    ]
    if len(others) > OTHER_FILES_MAX:
        lines.append(f"... and {len(others) - OTHER_FILES_MAX} more changed files")
    return "\n".join(lines) if lines else "(none)"


def _file_element(f: FileDiff, line_count: Callable[[str], int | None],
                  as_git: bool = False) -> str:
    """One file of ``<review_files>``: ``<file path="…" lines="N">`` (N, the file's line count
    after the change, lets the model size a ``file_read``; left out when unknown), the note on
    a deleted file the snapshot still uses, and its numbered diff (``as_git``: git's own hunks,
    without the scope context of ``diff.context``)."""
    n = line_count(f.path)
    lines = f' lines="{n}"' if n is not None else ""
    return (f'<file path="{util.prompt_path(f.path)}"{lines}>\n{_deleted_note(f)}'
            f'{render_numbered(f, as_git=as_git)}\n</file>')


def _deleted_note(f: FileDiff) -> str:
    """For a deleted file the snapshot still refers to: what the review is for and
    the referring lines; "" otherwise."""
    if f.status != "deleted" or not f.referenced_by:
        return ""
    users = "\n".join(f"  {util.prompt_text(u, one_line=True)}" for u in f.referenced_by)
    return ("This file is deleted by the change, but the snapshot still refers to it here:\n"
            f"{users}\nCheck whether these users break without it.\n")


def group_fields(
    group: Group, all_files: Sequence[FileDiff], rules_text: str, background: str, now: str,
    line_count: Callable[[str], int | None] = lambda _path: None, *, as_git: bool = False,
    guidance: str = "", scan: bool = False,
) -> dict[str, str]:
    """Template fields of the main prompt of ``group``: date, other changed
    files (status + path, spec §6.2), the group's numbered diffs in ``<file>`` elements (with
    the new file's line count from ``line_count``; ``as_git``: git's hunks, for a group whose
    prompt with the scope context does not fit, spec §6.3), rules, background and ``guidance``
    (the ``<project_guidance>`` body, ``change.Guidance.block``: escaped already); ``scan``
    (``git ocr scan``) sets the ``scan`` field that turns on the whole-file notes of
    ``main_user`` and ``main_user_head`` (and the scan variant of the system prompt)."""
    return {
        "date": now,
        "other_files": _other_files(all_files, group),
        "diffs": "\n".join(_file_element(f, line_count, as_git) for f in group.files),
        "rules": rules_text,
        "background": background,
        "guidance": guidance,
        "scan": "1" if scan else "",
    }


def contract_fields(language: str, *, scan: bool = False, guidance: bool = False
                    ) -> dict[str, str]:
    """The main system prompt's shared fields: the one severity scale
    (``config/templates/severity.md``), the answer language, and which variant of the scope
    sentences to render: ``scan`` (``git ocr scan``: whole files, no ``preexisting`` guidance,
    no ``file_read_diff``) or ``change`` (a change review); the ``<project_guidance>`` sentence
    only with ``guidance`` (a repository without guidance files sends no words about them)."""
    return {"severity": util.render_template("severity", {}), "language": language or "English",
            "scan": "1" if scan else "", "change": "" if scan else "1",
            "guidance": "1" if guidance else ""}


def group_messages(
    fields: dict[str, str],
    language: str,
    redact: Callable[[str], str],
    *,
    confirmed: str = "",
    earlier: str = "",
) -> list[Message]:
    """System + user messages of one group's main task (spec §6.2) from its ``group_fields``;
    ``confirmed`` (earlier findings) only in rounds ≥ 2; ``earlier`` (:func:`earlier_block`:
    the findings of the last blocked review on the group's files, spec §12.3) after the diffs.

    The user message comes in parts, most stable first, so a provider's prompt cache reads as
    much as it can (spec §13.6): the checklist, the project guidance and background (the same
    for every group with the same rules in a run; its stable head), then the date, the other
    changed files and the diffs (the same in every round of the group), then the last blocked
    review's findings (the same in every round), then the earlier rounds' findings."""
    system = util.render_template("main_system",
                                  contract_fields(language, scan=bool(fields.get("scan")),
                                                  guidance=bool(fields.get("guidance"))))
    parts = [util.render_template("main_user_head", fields),
             util.render_template("main_user", fields)]
    if earlier:
        parts.append(util.render_template("main_user_earlier", {"earlier": earlier}))
    if confirmed:
        parts.append(util.render_template("main_user_confirmed", {"confirmed": confirmed}))
    return [Message("system", system), user_parts([redact(p) for p in parts])]


def confirmed_block(confirmed: Sequence[RawComment]) -> str:
    """Findings of earlier rounds for rounds ≥ 2 (spec §6.1 step 5): at most 30, each on
    one line per field (the path as :func:`util.prompt_path` shows it; code and content with every
    run of whitespace, line breaks included, as one space) and trimmed (code 200, content 300
    characters, then "...")."""

    def trim(text: str, limit: int) -> str:
        flat = " ".join(text.split())
        return flat if len(flat) <= limit else flat[:limit] + "..."

    items = []
    for i, c in enumerate(confirmed[:CONFIRMED_CAP], 1):
        code = trim(c.existing_code, CONFIRMED_CODE_CHARS)
        issue = trim(c.content, CONFIRMED_ISSUE_CHARS)
        items.append(f"{i}. {util.prompt_path(c.path)}\n   code: {code}\n   issue: {issue}")
    return "\n".join(items)


EARLIER_CAP = 30  # spec §12.3: earlier findings shown to one group


# the user message's own framing tags, any case: only these are written `&lt;…` in the block
_FRAME_TAG = re.compile(r"<(\s*/?\s*(?:earlier_findings|review_files|confirmed_findings"
                        r"|changed_files|other_changed_files|file)\b)", re.I)


def earlier_block(earlier: Sequence[Finding], paths: Collection[str] | None = None) -> str:
    """The findings of the last blocked review on a group's files (spec §12.3): those of
    ``earlier`` on ``paths`` (all when None), secret-scan findings left out (the scanner finds
    secrets again), at most EARLIER_CAP, then ``… and N more``. Each is numbered by its place
    in ``earlier`` (``E1`` is ``earlier[0]``, the label ``code_comment``'s ``repeats`` names)
    on two lines: ``- E1 path:line [severity] message`` and ``  code: quote`` (``path`` as
    :func:`util.prompt_path` shows it, ``line`` "?" when unanchored; message and code on one
    line, each framing tag of the user message (``</earlier_findings``, ``<file``, …, any
    case) written ``&lt;…`` so no text closes the block, everything else as it is, so the code
    reads as the diff shows it (``List<String>``, ``a<b``); cut at
    CONFIRMED_ISSUE_CHARS and CONFIRMED_CODE_CHARS); "" when there are none."""
    shown = [(i, f) for i, f in enumerate(earlier, 1)
             if f.source != SECRET_SOURCE and (paths is None or f.path in paths)]

    def flat(text: str, limit: int) -> str:
        one = " ".join(text.split())
        one = one if len(one) <= limit else one[:limit] + "..."
        return _FRAME_TAG.sub(r"&lt;\1", util.prompt_text(one, one_line=True))

    items = []
    for i, f in shown[:EARLIER_CAP]:
        line = f.start_line or "?"
        items.append(f"- E{i} {util.prompt_path(f.path)}:{line} [{f.severity.label}] "
                     f"{flat(f.content, CONFIRMED_ISSUE_CHARS)}")
        code = flat(f.code or f.existing_code, CONFIRMED_CODE_CHARS)
        if code:
            items.append(f"  code: {code}")
    if len(shown) > EARLIER_CAP:
        items.append(f"… and {len(shown) - EARLIER_CAP} more")
    return "\n".join(items)
