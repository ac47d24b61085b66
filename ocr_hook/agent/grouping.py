"""Reviewable files → review groups (spec §6.1 step 2).

Pure: no LLM call, no git, no clock. :func:`build_groups` decides between the deterministic
strategies here and one grouping LLM call it is given (``agent.tasks.grouping_call``), whose
answer is parsed and validated by :func:`parse_grouping_answer`. Every result then passes
:func:`cap_group_size` and :func:`split_over_budget`.

Thresholds are the reference project's (OCR ``task_template.json``): changed lines =
insertions + deletions.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..diff import FileDiff
from ..errors import OcrError
from ..util import prompt_path, unescape_prompt_path

log = logging.getLogger(__name__)

GROUPING_MIN_FILES = 4  # spec §6.1 (OCR GROUPING_MIN_FILES): below → no grouping LLM call
GROUPING_BUNDLE_LINE_THRESHOLD = 200  # spec §6.1 (OCR): fewer changed lines → one bundle
MAX_FILES_PER_GROUP = 10  # spec §6.1 (OCR maxFilesPerGroup)
GROUP_CONTEXT_FRACTION = 0.8  # spec §6.1: a group's diffs above 80 % of the context split
BUNDLE_LABEL = "small change set"

# compiled on first use (re's cache): only a grouping answer is parsed with them
_FENCE = r"^\s*```[a-zA-Z0-9_-]*\s*\n?|\n?\s*```\s*$"
_THINK = r"^\s*<think>.*?</think>\s*"  # re.S


class GroupingError(ValueError):
    """The grouping answer cannot be used (not JSON, not a list of groups)."""


class Group(NamedTuple):
    """Files reviewed together in one conversation. ``label`` is shown in output (JSON
    ``groups[].label``) and session logs; ``files`` keep the order of the diff. A small
    immutable value: a group never changes after it is made."""

    label: str
    files: list[FileDiff]

    @property
    def key(self) -> str:
        """Stable identity: the single path, or the sorted paths joined by ``,``."""
        return ",".join(sorted(f.path for f in self.files))


def total_changed(files: Sequence[FileDiff]) -> int:
    return sum(f.changed_lines for f in files)


def strategy(n_files: int, changed_lines: int) -> str:
    """How ``n_files`` reviewable files with ``changed_lines`` in total are grouped:
    ``single`` (≤ 1 file), ``bundle`` (< 4 files and < 200 lines), ``per_file`` (< 4 files,
    ≥ 200 lines) or ``llm`` (≥ 4 files: one grouping call)."""
    if n_files <= 1:
        return "single"
    if n_files < GROUPING_MIN_FILES:
        return "bundle" if changed_lines < GROUPING_BUNDLE_LINE_THRESHOLD else "per_file"
    return "llm"


def per_file(files: Sequence[FileDiff]) -> list[Group]:
    """One group per file, labelled with its path (also the fallback of every failure)."""
    return [Group(f.path, [f]) for f in files]


def deterministic_groups(files: Sequence[FileDiff]) -> list[Group] | None:
    """Groups for the strategies that need no LLM call, or None when :func:`strategy` is
    ``llm``."""
    kind = strategy(len(files), total_changed(files))
    if not files:
        return []
    if kind == "single":
        return [Group(files[0].path, list(files))]
    if kind == "bundle":
        return [Group(BUNDLE_LABEL, list(files))]
    if kind == "per_file":
        return per_file(files)
    return None


def file_list(files: Sequence[FileDiff]) -> str:
    """The grouping prompt's metadata table: one ``[i] STATUS path (+I/-D)`` line per file
    (``i`` zero-based; renames show ``old -> new``), each path as the main prompt shows it
    (``util.prompt_path``: XML-escaped, line breaks spelled out). Never any diff text (spec
    §6.1)."""
    lines = []
    for i, f in enumerate(files):
        name = (f"{prompt_path(f.old_path)} -> {prompt_path(f.new_path)}"
                if f.status in ("renamed", "copied") else prompt_path(f.path))
        lines.append(f"[{i}] {f.status.upper()} {name} (+{f.insertions}/-{f.deletions})")
    return "\n".join(lines)


def _json_payload(text: str) -> object:
    text = re.sub(_THINK, "", text or "", count=1, flags=re.S).strip()
    text = re.sub(_FENCE, "", text).strip()
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        raise GroupingError("grouping answer contains no JSON")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, min(starts))
    except ValueError as e:
        raise GroupingError(f"grouping answer is not valid JSON: {e}") from e
    return value


def parse_grouping_answer(text: str, files: Sequence[FileDiff]) -> list[Group]:
    """Validate the grouping model's answer against ``files``.

    Accepted shapes: ``[{"label": str, "files": [...]}, ...]`` or ``{"groups": [that]}``,
    optionally inside a code fence or after a ``<think>`` block. A file is named by its path
    (new or old path, as it is or as :func:`file_list` shows it) or by its ``[i]`` index.
    Unknown names, duplicates (the first group wins) and non-string labels are ignored; a group
    left empty is dropped; files no group covers get their own group labelled with the path,
    in diff order.
    Raises GroupingError when the answer is not such a list.
    """
    value = _json_payload(text)
    if isinstance(value, dict) and isinstance(value.get("groups"), list):
        value = value["groups"]
    if not isinstance(value, list):
        raise GroupingError("grouping answer is not a JSON list of groups")
    by_name: dict[str, int] = {}
    for i, f in enumerate(files):
        by_name.setdefault(f.path, i)
        by_name.setdefault(f.new_path, i)
        by_name.setdefault(f.old_path, i)
    taken: set[int] = set()
    groups: list[Group] = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("files"), list):
            continue
        members: list[int] = []
        for name in entry["files"]:
            idx: int | None = None
            if isinstance(name, bool):
                idx = None
            elif isinstance(name, int):
                idx = name if 0 <= name < len(files) else None
            elif isinstance(name, str):
                name = name.strip().removeprefix("./")
                idx = by_name.get(name)
                if idx is None:  # copied as the prompt shows it (``a&amp;b.py``)
                    idx = by_name.get(unescape_prompt_path(name))
            if idx is None or idx in taken:
                continue
            taken.add(idx)
            members.append(idx)
        if not members:
            continue
        label = entry.get("label")
        if not isinstance(label, str) or not label.strip():
            label = files[members[0]].path
        groups.append(Group(" ".join(label.split())[:200], [files[i] for i in members]))
    for i, f in enumerate(files):
        if i not in taken:
            groups.append(Group(f.path, [f]))
    return groups


def cap_group_size(groups: Sequence[Group], max_files: int = MAX_FILES_PER_GROUP) -> list[Group]:
    """Split groups of more than ``max_files`` files into chunks, in order; chunk labels get a
    ``(k/n)`` suffix so every label stays unique."""
    out: list[Group] = []
    for g in groups:
        if len(g.files) <= max_files:
            out.append(g)
            continue
        chunks = [g.files[i : i + max_files] for i in range(0, len(g.files), max_files)]
        for k, chunk in enumerate(chunks, 1):
            out.append(Group(f"{g.label} ({k}/{len(chunks)})", list(chunk)))
    return out


def split_over_budget(
    groups: Sequence[Group], exceeds: Callable[[Sequence[FileDiff]], bool]
) -> list[Group]:
    """Split every multi-file group whose diffs ``exceeds`` the group budget (the caller's
    test: 80 % of the context, in tokens) into single-file groups labelled
    ``<label> (split: <path>)``."""
    out: list[Group] = []
    for g in groups:
        if len(g.files) > 1 and exceeds(g.files):
            out.extend(Group(f"{g.label} (split: {f.path})", [f]) for f in g.files)
        else:
            out.append(g)
    return out


def build_groups(
    files: Sequence[FileDiff],
    *,
    ask_model: Callable[[Sequence[FileDiff]], list[Group]] | None,
    group_too_large: Callable[[Sequence[FileDiff]], bool],
    on_failure: Callable[[str], None],
) -> list[Group]:
    """Group ``files`` (spec §6.1 step 2). ≤ 1 file, or < 4 files: deterministic (bundle
    under 200 changed lines, else per file), no LLM call. Otherwise ``ask_model`` (the grouping
    call on metadata only; None = no endpoint) — any failure (OcrError) falls back to one group
    per file and passes its one-line message to ``on_failure`` (the run's ``grouping_failed``
    warning). Then groups above 10 files are split in order and groups whose diffs are
    ``group_too_large`` split into single files."""
    groups = deterministic_groups(files)
    if groups is None:
        if ask_model is None:
            groups = per_file(files)
        else:
            try:
                groups = ask_model(files)
            except OcrError as e:  # LlmError, an unusable answer, budget or deadline
                log.info("LLM grouping failed (%s); reviewing one group per file", e)
                on_failure(f"{e}; reviewing one group per file")
                groups = per_file(files)
    groups = cap_group_size(groups)
    return split_over_budget(groups, group_too_large)
