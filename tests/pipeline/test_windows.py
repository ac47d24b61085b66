"""``pipeline.windows``: a scanned file too large for one prompt cut into overlapping windows."""

from __future__ import annotations

from ocr_hook.agent import Group
from ocr_hook.diff import FileDiff, Hunk, Line
from ocr_hook.pipeline.windows import windowed_groups


def _added(path: str, texts: list[str]) -> FileDiff:
    lines = tuple(Line("+", t, None, i) for i, t in enumerate(texts, 1))
    header = f"@@ -0,0 +1,{len(texts)} @@"
    patch = "\n".join([header, *(f"+{t}" for t in texts)]) + "\n"
    return FileDiff("added", path, path, hunks=(Hunk(0, 0, 1, len(texts), header, lines),),
                    patch=patch, insertions=len(texts))


def count(text: str) -> int:  # one token per character: exact arithmetic for the test
    return len(text)


def test_windows_cover_every_line_overlap_and_keep_small_files_grouped() -> None:
    big = _added("big.py", [f"x{i:03d}" for i in range(1, 101)])  # "  1 +x001\n": 10 tokens
    small = _added("small.py", ["ok"])
    groups, whole_of = windowed_groups([Group("g", [small, big])], 200, count)  # 100 a window
    assert groups[0] == Group("g", [small])
    windows = [g.files[0] for g in groups[1:]]
    # 10 numbered lines fit in 100 tokens; each window repeats half of the one before (5 < 20)
    spans = [(s + 1, s + 10) for s in range(0, 91, 5)]
    assert [(w.hunks[0].new_start, w.hunks[0].new_start + w.hunks[0].new_count - 1)
            for w in windows] == spans
    assert [g.label for g in groups[1:]] == [f"big.py lines {a}-{b}" for a, b in spans]
    assert all(whole_of[id(w)] is big for w in windows)
    assert windows[0].hunks[0].header == "@@ -0,0 +1,10 @@ window 1 of 19"
    assert windows[-1].hunks[0].header == "@@ -0,0 +91,10 @@ window 19 of 19"
    assert [ln.new_line for ln in windows[1].hunks[0].lines] == list(range(6, 16))
    assert len({w.patch for w in windows}) == len(windows)  # each window its own cache key


def test_long_windows_overlap_by_twenty_lines() -> None:
    f = _added("c.py", ["y"] * 300)  # "  1 +y\n": 7 tokens, 71 lines a window of 500
    groups, _ = windowed_groups([Group("c.py", [f])], 1000, count)
    starts = [g.files[0].hunks[0].new_start for g in groups]
    assert starts == [1, 52, 103, 154, 205, 256]  # 71 lines each, 20 of them repeated
    assert groups[-1].label == "c.py lines 256-300"


def test_a_line_longer_than_a_window_is_a_window_alone_and_a_change_is_never_cut() -> None:
    f = _added("a.py", ["short", "L" * 500, "short"])
    groups, _ = windowed_groups([Group("a.py", [f])], 200, count)
    assert [g.label for g in groups] == ["a.py lines 1-1", "a.py lines 2-2", "a.py lines 3-3"]
    changed = _added("b.py", ["x" * 300])
    h = changed.hunks[0]
    changed.hunks = (h._replace(lines=(Line("-", "old", 1, None), *h.lines)),)
    same, whole_of = windowed_groups([Group("b.py", [changed])], 200, count)
    assert same == [Group("b.py", [changed])] and whole_of == {}
