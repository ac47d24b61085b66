"""Diff parser and model (spec §3.5): literal git output in tables, plus output produced by
real git in temporary repositories (``target.load_diff``). Nothing is faked."""

from __future__ import annotations

import pytest

from ocr_hook.diff.model import DiffParseError, Line, render_numbered
from ocr_hook.diff.patch import (
    build_file_diffs,
    parse_hunks,
    parse_raw_numstat_z,
    split_patch_sections,
)
from ocr_hook.git import target
from tests.support.gitrepo import GitRepo

Z40 = "0" * 40
A40 = "a" * 40
B40 = "b" * 40


def raw(*records: bytes) -> bytes:
    return b"".join(records)


# ---- --raw --numstat -z ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            raw(f":100644 100644 {A40} {B40} M\0app.py\0".encode(), b"3\t1\tapp.py\0"),
            [("modified", "app.py", "app.py", None, 3, 1)],
        ),
        (
            raw(f":100644 100644 {A40} {B40} R086\0old dir/x.py\0new dir/x.py\0".encode(),
                b"1\t1\t\0old dir/x.py\0new dir/x.py\0"),
            [("renamed", "old dir/x.py", "new dir/x.py", 86, 1, 1)],
        ),
        (
            raw(f":100644 100644 {A40} {B40} C075\0src.py\0copy.py\0".encode(),
                b"2\t0\t\0src.py\0copy.py\0"),
            [("copied", "src.py", "copy.py", 75, 2, 0)],
        ),
        (
            raw(f":000000 100644 {Z40} {B40} A\0img.png\0".encode(), b"-\t-\timg.png\0"),
            [("added", "img.png", "img.png", None, None, None)],
        ),
        (
            raw(f":100644 120000 {A40} {B40} T\0tc\0".encode(), b"1\t1\ttc\0"),
            [("type_changed", "tc", "tc", None, 1, 1)],
        ),
        (
            raw(f":000000 100644 {Z40} {B40} A\0tab\tname\nnl.py\0".encode(),
                b"1\t0\ttab\tname\nnl.py\0"),
            [("added", "tab\tname\nnl.py", "tab\tname\nnl.py", None, 1, 0)],
        ),
        (
            raw(f":100644 000000 {A40} {Z40} D\0ünï.py\0".encode(),
                "0\t4\tünï.py\0".encode()),
            [("deleted", "ünï.py", "ünï.py", None, 0, 4)],
        ),
    ],
)
def test_raw_numstat_records_become_entries_in_git_order(
    data: bytes, expected: list[tuple[object, ...]],
) -> None:
    got = [
        (e.status, e.old_path, e.new_path, e.similarity, e.insertions, e.deletions)
        for e in parse_raw_numstat_z(data)
    ]
    assert got == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (f":100644 100644 {A40} M\0x\0".encode(), "git diff --raw: malformed record"),
        (f":100644 100644 {A40} {B40} R100\0only-old\0".encode(),
         "git diff --raw: truncated rename record"),
        (raw(f":100644 100644 {A40} {B40} M\0x\0".encode(), b"1\t1\tx\0", b"2\t0\ty\0"),
         "git diff: 1 raw records but 2 numstat records"),
        (raw(f":100644 100644 {A40} {B40} M\0x\0".encode(), b"one\t1\tx\0"),
         "git diff --numstat: malformed record"),
    ],
)
def test_malformed_raw_output_is_a_parse_error(data: bytes, message: str) -> None:
    with pytest.raises(DiffParseError, match=message):
        parse_raw_numstat_z(data)


# ---- hunks ---------------------------------------------------------------------------------------


def hunk_rows(section: bytes) -> list[tuple[str, str, int | None, int | None]]:
    hunks, _, _ = parse_hunks(section.split(b"\n"))
    return [(ln.kind, ln.text, ln.old_line, ln.new_line) for h in hunks for ln in h.lines]


def test_no_newline_marker_in_the_middle_of_a_hunk_never_advances_line_numbers() -> None:
    section = (b"diff --git a/n.py b/n.py\n--- a/n.py\n+++ b/n.py\n@@ -1,2 +1,3 @@\n a\n-b\n"
               b"\\ No newline at end of file\n+b\n+c")
    assert hunk_rows(section) == [
        (" ", "a", 1, 1), ("-", "b", 2, None), ("+", "b", None, 2), ("+", "c", None, 3)]


def test_no_newline_marker_on_both_sides_at_the_end() -> None:
    section = (b"diff --git a/n b/n\n--- a/n\n+++ b/n\n@@ -1 +1 @@\n-old\n"
               b"\\ No newline at end of file\n+new\n\\ No newline at end of file")
    hunks, _, text = parse_hunks(section.split(b"\n"))
    [h] = hunks
    assert (h.old_start, h.old_count, h.new_start, h.new_count) == (1, 1, 1, 1)
    assert [(ln.kind, ln.text, ln.old_line, ln.new_line) for ln in h.lines] == [
        ("-", "old", 1, None), ("+", "new", None, 1)]
    assert text.count("\\ No newline at end of file") == 2


@pytest.mark.parametrize(
    ("header", "counts"),
    [
        (b"@@ -1 +1 @@", (1, 1, 1, 1)),
        (b"@@ -0,0 +1 @@", (0, 0, 1, 1)),
        (b"@@ -5 +4,0 @@ def f():", (5, 1, 4, 0)),
        (b"@@ -10,2 +10 @@", (10, 2, 10, 1)),
    ],
)
def test_hunk_header_without_counts_means_one(header: bytes, counts: tuple[int, ...]) -> None:
    old_start, old_count, new_start, new_count = counts
    body = [b"-x"] * old_count + [b"+y"] * new_count
    [h], _, _ = parse_hunks([b"diff --git a/f b/f", header, *body])
    assert (h.old_start, h.old_count, h.new_start, h.new_count) == counts
    assert [ln.old_line for ln in h.lines if ln.kind == "-"] == list(
        range(old_start, old_start + old_count))
    assert [ln.new_line for ln in h.lines if ln.kind == "+"] == list(
        range(new_start, new_start + new_count))


def test_lines_that_look_like_headers_inside_a_hunk_stay_content() -> None:
    patch = (b"diff --git a/doc.patch b/doc.patch\nnew file mode 100644\nindex 0000000..1111111\n"
             b"--- /dev/null\n+++ b/doc.patch\n@@ -0,0 +1,5 @@\n+diff --git a/x b/x\n"
             b"+--- a/x\n++++ b/x\n+@@ -1 +1 @@\n+-old\n"
             b"diff --git a/z.py b/z.py\nindex 2222222..3333333 100644\n--- a/z.py\n+++ b/z.py\n"
             b"@@ -1 +1 @@\n--- comment\n+++ comment")
    sections = split_patch_sections(patch)
    assert len(sections) == 2
    [h], _, _ = parse_hunks(sections[0])
    assert [ln.text for ln in h.lines] == [
        "diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-old"]
    [h2], _, _ = parse_hunks(sections[1])
    assert [(ln.kind, ln.text) for ln in h2.lines] == [("-", "-- comment"), ("+", "++ comment")]


def test_crlf_keeps_carriage_return_as_content_and_blank_context_counts() -> None:
    section = b"diff --git a/w b/w\n@@ -1,3 +1,3 @@\n a\r\n\n-b\r\n+B\r"
    assert hunk_rows(section) == [
        (" ", "a\r", 1, 1), (" ", "", 2, 2), ("-", "b\r", 3, None), ("+", "B\r", None, 3)]


def test_non_utf8_content_is_replaced_per_file_and_keeps_line_numbers() -> None:
    gbk = "# 中文\n".encode("gbk")
    patch = (b"diff --git a/g.py b/g.py\nnew file mode 100644\n--- /dev/null\n+++ b/g.py\n"
             b"@@ -0,0 +1,2 @@\n+" + gbk.rstrip(b"\n") + b"\n+x = 1\n")
    entry = parse_raw_numstat_z(f":000000 100644 {Z40} {B40} A\0g.py\0".encode() + b"2\t0\tg.py\0")
    [fd] = build_file_diffs(entry, patch)
    assert fd.decoding == "replaced"
    assert fd.notes == ["content is not valid UTF-8; undecodable bytes shown as U+FFFD"]
    assert [(ln.new_line, ln.text) for ln in fd.hunks[0].lines] == [
        (1, "# " + "\ufffd" * 4), (2, "x = 1")]


def test_nul_byte_in_content_marks_the_file_binary() -> None:
    _, binary, _ = parse_hunks([b"diff --git a/c b/c", b"@@ -0,0 +1 @@", b"+a\0b"])
    assert binary is True


def test_truncated_hunk_is_a_parse_error() -> None:
    with pytest.raises(DiffParseError, match="ends 0 old / 1 new lines early"):
        parse_hunks([b"diff --git a/f b/f", b"@@ -1,2 +1,4 @@", b" a", b"-b", b"+c", b"+d"])


def test_type_change_takes_both_sections_of_its_path() -> None:
    entries = parse_raw_numstat_z(
        raw(f":100644 120000 {A40} {B40} T\0tc\0".encode(),
            f":100644 100644 {A40} {B40} M\0z.py\0".encode(), b"1\t1\ttc\0", b"1\t1\tz.py\0"))
    patch = (b"diff --git a/tc b/tc\ndeleted file mode 100644\n--- a/tc\n+++ /dev/null\n"
             b"@@ -1 +0,0 @@\n-content\ndiff --git a/tc b/tc\nnew file mode 120000\n"
             b"--- /dev/null\n+++ b/tc\n@@ -0,0 +1 @@\n+target.py\n"
             b"\\ No newline at end of file\n"
             b"diff --git a/z.py b/z.py\n--- a/z.py\n+++ b/z.py\n@@ -1 +1 @@\n-1\n+2\n")
    tc, z = build_file_diffs(entries, patch)
    assert (tc.status, tc.extra_sections, tc.symlink, tc.link_text) == (
        "type_changed", 1, True, "target.py")
    assert (tc.insertions, tc.deletions) == (1, 1)
    assert [(ln.kind, ln.text) for ln in z.hunks[0].lines] == [("-", "1"), ("+", "2")]


def test_more_sections_than_paths_is_a_parse_error() -> None:
    entries = parse_raw_numstat_z(f":100644 100644 {A40} {B40} M\0a\0".encode() + b"1\t1\ta\0")
    patch = b"diff --git a/a b/a\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/b b/b\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(DiffParseError, match="2 patch sections for 1 changed paths"):
        build_file_diffs(entries, patch)


def test_render_numbered_shows_new_side_numbers() -> None:
    [h], _, _ = parse_hunks([b"diff --git a/f b/f", b"@@ -8,2 +8,2 @@ def f():", b" a",
                             b"-b", b"+c"])
    fd = build_file_diffs(
        parse_raw_numstat_z(f":100644 100644 {A40} {B40} M\0f\0".encode() + b"1\t1\tf\0"),
        b"diff --git a/f b/f\n@@ -8,2 +8,2 @@ def f():\n a\n-b\n+c\n")[0]
    assert fd.hunks == (h,)
    assert render_numbered(fd) == "@@ -8,2 +8,2 @@ def f():\n 8  a\n   -b\n 9 +c"


# ---- real git output ---------------------------------------------------------------------------


def files_of(repo: GitRepo, base: str, head: str) -> dict[str, object]:
    t = target.Target("range", base, head, base, head)
    return {f.path: f for f in target.load_diff(repo.path, t)}


def test_real_copies_parse_as_copied_with_source_and_similarity(repo: GitRepo) -> None:
    body = "".join(f"value_{i} = {i}\n" for i in range(20))
    base = repo.commit({"src.py": body}, "init")
    head = repo.commit({"copy.py": body + "extra = 1\n"}, "copy")
    t = target.Target("range", base, head, base, head)
    out_raw = repo.git("diff", "-C", "--find-copies-harder", "--raw", "--numstat", "-z",
                       "--no-abbrev", base, head).encode()
    out_patch = repo.git("diff", "-C", "--find-copies-harder", "--no-color", base, head).encode()
    [fd] = build_file_diffs(parse_raw_numstat_z(out_raw), out_patch)
    assert (fd.status, fd.old_path, fd.new_path, fd.similarity) == (
        "copied", "src.py", "copy.py", 96)
    assert [(ln.kind, ln.text, ln.new_line) for ln in fd.hunks[0].lines if ln.kind != " "] == [
        ("+", "extra = 1", 21)]
    # our own flags (-M only) report the same copy as an added file: all of it is new code
    [added] = target.load_diff(repo.path, t)
    assert (added.status, added.path, added.insertions) == ("added", "copy.py", 21)


def test_real_mid_hunk_no_newline_crlf_gbk_and_long_line(repo: GitRepo) -> None:
    long_line = "x = '" + "y" * 100_000 + "'"
    base = repo.commit({"n.py": b"a\nb", "w.py": b"one\r\ntwo\r\n", "long.py": "a = 1\n"}, "i")
    head = repo.commit({
        "n.py": b"a\nb\nc\n",
        "w.py": b"one\r\nTWO\r\n",
        "g.py": "# 注释\nx = 1\n".encode("gbk"),
        "long.py": f"a = 1\n{long_line}\n",
    }, "change")
    files = files_of(repo, base, head)
    rows = {p: [(ln.kind, ln.text, ln.old_line, ln.new_line) for h in f.hunks for ln in h.lines]
            for p, f in files.items()}
    assert rows["n.py"] == [(" ", "a", 1, 1), ("-", "b", 2, None), ("+", "b", None, 2),
                            ("+", "c", None, 3)]
    assert rows["w.py"] == [(" ", "one\r", 1, 1), ("-", "two\r", 2, None),
                            ("+", "TWO\r", None, 2)]
    # GBK 注释 = d7 a2 ca cd: "d7 a2" happens to be valid UTF-8 (U+05E2), the rest is not
    assert rows["g.py"] == [("+", "# \u05e2\ufffd\ufffd", None, 1), ("+", "x = 1", None, 2)]
    assert rows["long.py"] == [(" ", "a = 1", 1, 1), ("+", long_line, None, 2)]
    assert files["g.py"].decoding == "replaced"
    assert files["n.py"].decoding == "utf-8"


def test_real_patch_of_a_file_containing_diff_headers(repo: GitRepo) -> None:
    base = repo.commit({"a.txt": "a\n"}, "i")
    nasty = "diff --git a/evil b/evil\n--- a/evil\n+++ b/evil\n@@ -1 +1 @@\n-x\n+y\n"
    head = repo.commit({"doc.patch": nasty, "z.py": "z = 1\n"}, "c")
    files = files_of(repo, base, head)
    assert sorted(files) == ["doc.patch", "z.py"]
    assert [ln.text for ln in files["doc.patch"].hunks[0].lines] == nasty.splitlines()
    assert files["z.py"].hunks[0].lines == (Line("+", "z = 1", None, 1),)


def test_real_submodule_symlink_empty_and_mode_only_changes(repo: GitRepo) -> None:
    base = repo.commit({"run.sh": "echo\n", "old_link": "x"}, "i")
    (repo.path / "run.sh").chmod(0o755)
    (repo.path / "in.py").symlink_to("run.sh")
    repo.write({"empty.py": ""})
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{base},sub")
    head = repo.commit(message="c")
    files = files_of(repo, base, head)
    assert {p: (f.status, f.old_mode, f.new_mode, f.hunks != ()) for p, f in files.items()} == {
        "empty.py": ("added", "000000", "100644", False),
        "in.py": ("added", "000000", "120000", True),
        "run.sh": ("modified", "100644", "100755", False),
        "sub": ("added", "000000", "160000", True),
    }
    assert files["in.py"].link_text == "run.sh"
    assert files["run.sh"].mode_only and files["sub"].submodule
    assert files["sub"].hunks[0].lines == (Line("+", f"Subproject commit {base}", None, 1),)
