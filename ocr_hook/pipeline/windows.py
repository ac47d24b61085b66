"""Windows of a scanned file too large for one prompt (``git ocr scan``, spec §3.9): its one
added hunk cut into runs of consecutive lines that each fit, every window reviewed as a group
of its own. Findings still anchor on the whole file (the comment pool reads the snapshot's
files, not the windows), and the file counts as reviewed only when every window was."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..agent import Group, exceeds_tokens
from ..diff import FileDiff, Hunk, Line

WINDOW_SHARE = 0.5  # a window's lines take at most half the prompt limit: room for the
# system prompt, the checklist and the tool loop's conversation
WINDOW_OVERLAP_LINES = 20  # lines each window repeats from the end of the one before (at most
# half of that one's lines)


def windowed_groups(groups: Sequence[Group], prompt_limit: int, count: Callable[[str], int]
                    ) -> tuple[list[Group], dict[int, FileDiff]]:
    """``groups`` with every file whose patch alone exceeds ``WINDOW_SHARE`` × ``prompt_limit``
    tokens (``count``) moved out of its group into window groups of its own (label
    ``<path> lines A-B``), placed right after that group; other files keep their group. Returns
    (the new list of groups, the whole file of each window by ``id`` of the window). Only
    files of one added hunk (a scan's) are cut; any other stays as it was."""
    budget = max(int(prompt_limit * WINDOW_SHARE), 1)
    out: list[Group] = []
    whole_of: dict[int, FileDiff] = {}
    for g in groups:
        keep: list[FileDiff] = []
        cut: list[Group] = []
        for f in g.files:
            windows = _windows(f, budget, count) if exceeds_tokens([f.patch], budget, count) else []
            if len(windows) < 2:
                keep.append(f)
                continue
            for w in windows:
                whole_of[id(w)] = f
                h = w.hunks[0]
                cut.append(Group(f"{f.path} lines {h.new_start}-{h.new_start + h.new_count - 1}",
                                 [w]))
        if keep:
            out.append(g if len(keep) == len(g.files) else Group(g.label, keep))
        out.extend(cut)
    return out, whole_of


def _windows(f: FileDiff, budget: int, count: Callable[[str], int]) -> list[FileDiff]:
    """``f`` as consecutive windows of its added lines, each at most ``budget`` tokens of
    its lines as the prompt shows them, numbered (a single longer line is a window alone),
    each repeating the last ``WINDOW_OVERLAP_LINES`` lines of the one before (at most half of
    them, so every window moves on by at least half its length); [] when ``f`` is not one
    all-added hunk."""
    if len(f.hunks) != 1 or any(ln.kind != "+" for ln in f.hunks[0].lines):
        return []
    lines = f.hunks[0].lines
    width = len(str(lines[-1].new_line or len(lines)))  # the prompt numbers every line
    cost = [count(f"{ln.new_line or 0:>{width}} +{ln.text}\n") for ln in lines]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(lines):
        end, used = start, 0
        while end < len(lines) and (end == start or used + cost[end] <= budget):
            used += cost[end]
            end += 1
        spans.append((start, end))
        if end >= len(lines):
            break
        start = end - min(WINDOW_OVERLAP_LINES, (end - start) // 2)  # a window moves on
    return [_window(f, lines[a:b], i, len(spans)) for i, (a, b) in enumerate(spans, 1)]


def _window(f: FileDiff, lines: Sequence[Line], rank: int, total: int) -> FileDiff:
    """A copy of ``f`` holding ``lines`` (consecutive added lines) as its one hunk, its header
    ``@@ -0,0 +A,N @@ window K of M``; its patch is their unified text, so its group's cache
    key is the window's own."""
    first = lines[0].new_line or 1
    header = f"@@ -0,0 +{first},{len(lines)} @@ window {rank} of {total}"
    patch = "\n".join([header, *(f"+{ln.text}" for ln in lines)]) + "\n"
    return dataclasses.replace(f, hunks=(Hunk(0, 0, first, len(lines), header, tuple(lines)),),
                               patch=patch, git_hunks=None)
