"""Large changes stay cheap (spec §3.6): sizes from git's metadata before any content is read,
a bounded secret scan of too-large blobs, bounds on the number of files and bytes reviewed,
and the streamed patch reader. Real: git repositories, the CLI, HTTP to the scripted loopback
model; fake: the model's replies. Files are kept to a few hundred KB: the thresholds come from
the configuration (``OCR_HOOK_SELECT_*``), the big numbers live in bench/bench_large.py."""

from __future__ import annotations

import json
import os
import select
import time
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.change import changeset, selection
from ocr_hook.diff.patch import split_patch_sections
from ocr_hook.diff.stream import PatchStream
from ocr_hook.errors import GitError
from ocr_hook.git import stream as gitstream
from ocr_hook.git import target
from ocr_hook.report.json_format import _files_block
from ocr_hook.secrets import blobs, chunks
from ocr_hook.tools.builtin.file_read import file_read
from ocr_hook.tools.builtin.file_read_diff import file_read_diff
from ocr_hook.tools.snapshot import SnapshotView
from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

AWS_KEY = "AKIA" + "IOSFODNN7REALKEY"  # fake; assembled so scanners skip this file
SECRET_START = "Hard-coded secret (aws-access-key)"


def data_lines(n: int, start: int = 0) -> str:
    """``n`` lines of JSON-ish data, 32 bytes each."""
    return "".join(f'  {{"id": {i:08d}, "v": "abc"}},\n' for i in range(start, start + n))


def by_path(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in data["files"]}


LIMITS = {"OCR_HOOK_SELECT_MAX_FILE_BYTES": "100000", "OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "65536"}


# -- too large by size: decided before any content is read ---------------------------------


def test_file_over_max_file_bytes_is_too_large_from_its_size_with_detail(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    big = data_lines(10_000)  # 320,000 bytes
    repo.stage({"data/big.json": big, "app.py": "x = 1\n"})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--preview", "--format", "json"], LIMITS, capsys)
    assert rc == 0, err
    got = by_path(data)["data/big.json"]
    assert got == {
        "path": "data/big.json", "status": "added", "reviewed": False, "reason": "too_large",
        "detail": "312.5 KiB, larger than select.max_file_bytes (97.7 KiB): content not read",
        "size_bytes": 320_000, "will_review": False, "insertions": 0, "deletions": 0,
    }
    assert by_path(data)["app.py"]["will_review"] is True


def test_too_large_file_is_never_loaded_and_git_reports_it_binary_by_size(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"big.json": data_lines(5_000), "small.json": data_lines(10)})
    tgt = target.staged_snapshot(repo.path, os.environ)
    policy = selection.SelectionPolicy(max_file_bytes=100_000)
    cs = changeset.load_change_set(repo.path, tgt, policy)
    big, small = cs.files
    assert (big.path, big.loaded, big.hunks, big.patch, big.size_bytes) == (
        "big.json", False, (), "", 160_000)
    assert (small.loaded, small.insertions, len(small.hunks)) == (True, 10, 1)
    assert [(d.reason, d.reviewed) for d in cs.decisions] == [("too_large", False), ("", True)]


def test_path_gates_come_before_the_size_gate(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"vendor/lib.js": data_lines(5_000), "tests/test_big.py": data_lines(5_000),
                "notes.bin": data_lines(5_000)})
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(repo.path, tgt, selection.SelectionPolicy(
        max_file_bytes=1000))
    assert [(d.file.path, d.reason) for d in cs.decisions] == [
        ("notes.bin", "unsupported_ext"), ("tests/test_big.py", "default_path"),
        ("vendor/lib.js", "provider_directory")]
    assert [d.file.size_bytes for d in cs.decisions] == [160_000] * 3


# -- bounded secret scan of too-large blobs ---------------------------------------------------


def test_secret_in_the_scanned_prefix_of_a_too_large_file_is_a_critical_finding(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    text = data_lines(2) + f"aws_key = {AWS_KEY}\n" + data_lines(10_000, 2)
    late = data_lines(10_000) + f"aws_key = {AWS_KEY}\n"  # past the scanned prefix
    repo.stage({"early.json": text, "late.json": late})
    env = {**LIMITS, "OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "262144"}  # 128 KiB for each file
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], env, capsys)
    assert rc == 1, err  # blocked by the critical finding, no endpoint needed
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"], c["severity"], c["anchor"]) == (
        "early.json", 3, 3, "critical", "file")
    assert c["content"].startswith(SECRET_START)
    assert AWS_KEY not in json.dumps(data)
    files = by_path(data)
    assert files["early.json"]["detail"] == (
        "312.6 KiB, larger than select.max_file_bytes (97.7 KiB): content not read; "
        "secret scan: first 128.0 KiB of 312.6 KiB scanned, 1 secret(s) found (critical "
        "finding)")
    assert files["late.json"]["detail"] == (
        "312.5 KiB, larger than select.max_file_bytes (97.7 KiB): content not read; "
        "secret scan: first 128.0 KiB of 312.5 KiB scanned, no secret found")


def test_text_output_lists_too_large_files_as_not_reviewed_with_size_and_scan_result(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"web/bundle.js": "var a=[" + "1," * 100_000 + "];"})
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["hook", "pre-commit"], LIMITS, capsys)
    assert rc == 0, err  # gate.on_error = allow
    lines = out.splitlines()
    assert ("not reviewed: web/bundle.js (too large: 195.3 KiB, larger than "
            "select.max_file_bytes (97.7 KiB): content not read; secret scan: first 64.0 KiB of "
            "195.3 KiB scanned, no secret found)") in lines
    assert ("NOT REVIEWED: 1 of 1 files: web/bundle.js larger than select.max_file_bytes "
            "(97.7 KiB); `git ocr review --preview` lists them; secret scan incomplete: the "
            "text added to 1 file (web/bundle.js) was not all scanned within "
            "security.max_scan_bytes (64.0 KiB); raise it, or name the files in "
            "select.exclude") in lines
    assert lines[-1] == ("PASS: review incomplete, let through by gate.on_error = allow "
                         "(blocking mode)")


def test_secret_late_in_a_long_single_line_is_found_in_its_windows(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    line = "var a=[" + "1," * 60_000 + f'];var k="{AWS_KEY}";' + "2," * 60_000 + "];"
    repo.stage({"bundle.js": line})
    env = {**LIMITS, "OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "500000"}
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], env, capsys)
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["anchor"]) == ("bundle.js", 1, "file")
    assert "[REDACTED:aws-access-key]" in c["existing_code"]
    assert len(c["existing_code"]) <= blobs.QUOTE_CHARS
    assert by_path(data)["bundle.js"]["detail"].endswith(
        "secret scan: all 234.4 KiB scanned, 1 secret(s) found (critical finding)")


# fake, assembled: a 1,002-character JWT (header, a long payload, signature), no "eyJ" inside
LONG_JWT = ("eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJ" + "zdWIiOi" + "Qk7mZ2xw" * 113 + "Qk7mZ2x"
            + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


def test_long_jwt_across_a_window_cut_of_a_long_line_is_found(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    assert len(LONG_JWT) == 1002
    repo.commit({"README.md": "x\n"}, "init")
    head = data_lines(3)  # the bundle's line is line 4
    line = "var a=[" + "1," * 7_742 + f'];var t="{LONG_JWT}";' + "2," * 60_000 + "];"
    assert line.index(LONG_JWT) == 15_500  # crosses the cut at bigscan.LINE_WINDOW_CHARS
    repo.stage({"bundle.js": head + line + "\n" + data_lines(2)})
    env = {**LIMITS, "OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "500000"}
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], env, capsys)
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"], c["severity"], c["anchor"]) == (
        "bundle.js", 4, 4, "critical", "file")
    assert c["content"].startswith("Hard-coded secret (jwt)")
    assert "[REDACTED:jwt]" in c["existing_code"]
    assert LONG_JWT[:40] not in json.dumps(data)
    assert by_path(data)["bundle.js"]["detail"].endswith(
        "scanned, 1 secret(s) found (critical finding)")


def test_long_line_windows_end_at_separators_and_stay_bounded() -> None:
    line = "var a=[" + "1," * 7_742 + f'];var t="{LONG_JWT}";' + "2," * 60_000 + "];"
    rows = list(chunks.stream_rows(["x\n" + line + "\n" + "z" * 40_000]))
    assert {n for n, _ in rows} == {1, 2, 3}
    assert max(len(r) for _, r in rows) <= blobs.LINE_WINDOW_CHARS
    assert sum(LONG_JWT in r for n, r in rows if n == 2) == 1  # whole in exactly one window
    # each window of line 2 is a slice of it; together they cover it all
    at = 0
    for n, r in rows:
        if n == 2:
            start = line.index(r, max(at - blobs.WINDOW_OVERLAP_CHARS - 1, 0))
            assert start <= at
            at = start + len(r)
    assert at == len(line)
    # a line with no separator at all still gets hard cuts overlapping by the old amount
    zs = [r for n, r in rows if n == 3]
    assert [len(r) for r in zs] == [16_384, 16_384, 8_256]


def test_secret_already_in_the_old_version_of_a_too_large_file_is_not_flagged(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    old = f"aws_key = {AWS_KEY}\n" + data_lines(5_000)
    repo.commit({"big.json": old}, "init")
    repo.stage({"big.json": old + data_lines(10, 9_000)})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], LIMITS, capsys)
    assert rc == 0, err
    assert data["comments"] == []
    assert by_path(data)["big.json"]["detail"].endswith(
        "secret scan: first 64.0 KiB of 156.6 KiB scanned, no secret found")


def test_too_large_file_with_binary_content_is_binary_and_not_scanned(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"blob.json": b"\0\1\2" * 50_000})
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(
        repo.path, tgt, selection.SelectionPolicy(max_file_bytes=1000),
        scan=changeset.ScanPolicy((), 1 << 20))
    [d] = cs.decisions
    assert (d.reason, d.detail, d.scan_gap, d.selected) == ("binary", "", False, False)


# -- bounds of the change set ----------------------------------------------------------------


def stage_modules(repo: GitRepo, n: int, lines: int = 2) -> list[str]:
    repo.commit({"README.md": "x\n"}, "init")
    names = [f"src/mod_{i}.py" for i in range(n)]
    repo.stage({p: "".join(f"v{j} = {j}\n" for j in range(lines)) for p in names})
    return names


def test_preview_marks_files_past_max_files_in_path_order(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    stage_modules(repo, 5)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--preview"], {"OCR_HOOK_SELECT_MAX_FILES": "2"}, capsys)
    assert rc == 0, err
    detail = ("5 files to review, more than select.max_files (2): files in select.include "
              "first, then the first ones in path order are reviewed")
    assert out.splitlines() == [
        "path          status    +/-  review",
        "src/mod_0.py  added   +2/-0  yes",
        "src/mod_1.py  added   +2/-0  yes",
        f"src/mod_2.py  added   +2/-0  no (over select.max_files: {detail})",
        f"src/mod_3.py  added   +2/-0  no (over select.max_files: {detail})",
        f"src/mod_4.py  added   +2/-0  no (over select.max_files: {detail})",
        "",
        "5 changed file(s), 2 to review",
    ]


def test_files_in_select_include_come_first_within_max_files(repo: GitRepo) -> None:
    stage_modules(repo, 5)
    tgt = target.staged_snapshot(repo.path, os.environ)
    policy = selection.SelectionPolicy(include=("src/mod_3.py",), max_files=2)
    cs = changeset.load_change_set(repo.path, tgt, policy)
    assert [(d.file.path, d.reason, d.file.loaded) for d in cs.decisions] == [
        ("src/mod_0.py", "", True), ("src/mod_1.py", "over_max_files", False),
        ("src/mod_2.py", "over_max_files", False), ("src/mod_3.py", "", True),
        ("src/mod_4.py", "over_max_files", False)]


@pytest.mark.parametrize(("on_error", "want_rc"), [("allow", 0), ("block", 3)])
def test_review_past_max_files_reviews_the_bound_and_reports_the_rest_not_reviewed(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], on_error: str, want_rc: int,
) -> None:
    stage_modules(repo, 5)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    env = llm.env(OCR_HOOK_SELECT_MAX_FILES="2", OCR_HOOK_GATE_ON_ERROR=on_error)
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], env, capsys)
    assert rc == want_rc, err
    assert len(llm.requests) == 1  # one group of the two files within the bound
    sent = llm.requests[0]["messages"][1]["content"]
    assert 'path="src/mod_0.py"' in sent and 'path="src/mod_1.py"' in sent
    assert 'path="src/mod_2.py"' not in sent
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("src/mod_0.py", True, ""), ("src/mod_1.py", True, ""),
        ("src/mod_2.py", False, "over_max_files"), ("src/mod_3.py", False, "over_max_files"),
        ("src/mod_4.py", False, "over_max_files")]
    assert (data["status"], data["verdict"]) == ("partial", "incomplete")
    assert ("NOT REVIEWED: 3 of 5 files: the change has more files to review than "
            "select.max_files (2); `git ocr review --preview` lists them") in err


def test_review_stops_at_max_total_bytes_and_later_files_are_not_reviewed(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"a.py": "a = 1\n" * 10, "b.py": "b = 1\n" * 400, "c.py": "c = 1\n"})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"],
                             {"OCR_HOOK_SELECT_MAX_TOTAL_BYTES": "1000"}, capsys)
    assert rc == 0, err  # no endpoint: gate.on_error allow
    assert [(f["path"], f["reason"]) for f in data["files"]] == [
        ("a.py", "no_endpoint"), ("b.py", "over_max_total_bytes"),
        ("c.py", "over_max_total_bytes")]
    assert by_path(data)["b.py"]["detail"] == (
        "the diffs to review pass select.max_total_bytes (1000 B) at this file; it and the "
        "files after it are not reviewed")
    assert data["status"] == "failed"


def test_added_lines_of_files_past_a_bound_are_still_scanned_for_secrets(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"a.py": "a = 1\n", "b.py": f"key = '{AWS_KEY}'\n"})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"], {"OCR_HOOK_SELECT_MAX_FILES": "1"},
                             capsys)
    assert rc == 1, err
    assert [(c["path"], c["start_line"], c["anchor"]) for c in data["comments"]] == [
        ("b.py", 1, "hunk_new")]


def test_scan_budget_used_up_is_stated_for_the_files_left_unscanned(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"tests/test_a.py": f"k = '{AWS_KEY}'\n",
                "tests/test_b.py": "x = 1\n" * 200 + f"k = '{AWS_KEY}'\n",
                "tests/test_c.py": f"k = '{AWS_KEY}'\n"})
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json"],
                             {"OCR_HOOK_SECURITY_MAX_SCAN_BYTES": "500"}, capsys)
    assert rc == 1, err
    assert [c["path"] for c in data["comments"]] == ["tests/test_a.py"]
    files = by_path(data)
    assert "detail" not in files["tests/test_a.py"]
    assert files["tests/test_b.py"]["detail"] == (
        "secret scan: not scanned, its 1.5 KiB diff is more than what was left of "
        "security.max_scan_bytes (500 B)")
    assert files["tests/test_c.py"]["detail"] == (
        "secret scan: not scanned, security.max_scan_bytes (500 B) was used up")


def test_diff_tool_reads_the_diff_of_a_file_not_loaded_on_demand(repo: GitRepo) -> None:
    lib = "".join(f"v{i} = {i}\n" for i in range(8))
    repo.commit({"README.md": "x\n", "vendor/lib.py": lib, "old_test.py": "t = 1\n" * 6,
                 "gone.md": "bye\n"}, "init")
    (repo.path / "tests").mkdir()
    repo.git("mv", "old_test.py", "tests/test_new.py")
    repo.git("rm", "-q", "gone.md")
    repo.stage({"app.py": "x = 1\n", "vendor/lib.py": lib.replace("v3 = 3", "v3 = 33"),
                "tests/test_new.py": "t = 1\n" * 6 + "t = 2\n", "big.json": data_lines(100)})
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(repo.path, tgt, selection.SelectionPolicy(
        max_file_bytes=1000))
    assert {d.file.path: (d.reason, d.file.loaded) for d in cs.decisions} == {
        "app.py": ("", True), "big.json": ("too_large", False), "gone.md": ("unsupported_ext", False),
        "tests/test_new.py": ("default_path", False), "vendor/lib.py": ("provider_directory",
                                                                       False)}
    view = SnapshotView(repo.path, tgt.head, cs.files, lambda s: s, base=tgt.base)
    res = file_read_diff(view, {"path_array": ["vendor/lib.py", "old_test.py", "gone.md",
                                               "big.json", "app.py"]})
    assert (res.is_error, res.text.split("\n")) == (False, [
        "==== FILE: vendor/lib.py ====",
        "diff --git a/vendor/lib.py b/vendor/lib.py", "--- a/vendor/lib.py",
        "+++ b/vendor/lib.py", "@@ -1,7 +1,7 @@", " v0 = 0", " v1 = 1", " v2 = 2", "-v3 = 3",
        "+v3 = 33", " v4 = 4", " v5 = 5", " v6 = 6",
        "==== FILE: tests/test_new.py ====",  # asked by its old name: the rename
        "diff --git a/old_test.py b/tests/test_new.py", "similarity index 85%",
        "rename from old_test.py", "rename to tests/test_new.py", "--- a/old_test.py",
        "+++ b/tests/test_new.py", "@@ -4,3 +4,4 @@ t = 1", " t = 1", " t = 1", " t = 1", "+t = 2",
        "==== FILE: gone.md ====",
        "diff --git a/gone.md b/gone.md", "deleted file mode 100644", "--- a/gone.md",
        "+++ /dev/null", "@@ -1 +0,0 @@", "-bye",
        "==== FILE: big.json ====",
        "(diff not shown: the file is 3200 bytes, above select.max_file_bytes)",
        "==== FILE: app.py ====",
        "diff --git a/app.py b/app.py", "new file mode 100644", "--- /dev/null",
        "+++ b/app.py", "@@ -0,0 +1 @@", "+x = 1"])
    assert [f.loaded for f in cs.files] == [True, False, False, False, False]  # nothing kept
    whole = {f.path: f.patch for f in target.load_diff(repo.path, tgt)}
    for f in cs.files:  # read on demand as the whole diff reads it
        assert view.read_patch(f, 1 << 20)[0] == whole[f.path], f.path
    no_base = SnapshotView(repo.path, tgt.head, cs.files, lambda s: s)
    assert file_read_diff(no_base, {"path_array": ["gone.md"]}).text == (
        "==== FILE: gone.md ====\n(diff not available)")


def test_diff_tool_bounds_a_diff_read_on_demand(repo: GitRepo,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from ocr_hook.tools.builtin import file_read_diff as tool

    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"app.py": "x = 1\n", "tests/test_data.py": data_lines(900)})
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(repo.path, tgt, selection.SelectionPolicy())
    view = SnapshotView(repo.path, tgt.head, cs.files, lambda s: s, base=tgt.base)
    lines = file_read_diff(view, {"path_array": ["tests/test_data.py"]}).text.split("\n")
    # a FILE line, 5 patch header lines and 900 added lines = 906
    assert lines[:3] == ["IS_TRUNCATED: true", "==== FILE: tests/test_data.py ====",
                         "diff --git a/tests/test_data.py b/tests/test_data.py"]
    assert lines[500] == '+  {"id": 00000493, "v": "abc"},'
    assert lines[501:] == ["", "Note: Results truncated to 500 of 906 diff lines. Request fewer"
                           " paths per call, or use file_read for the rest of a file."]
    monkeypatch.setattr(tool, "READ_DIFF_LOAD_MAX_BYTES", 4096)
    assert file_read_diff(view, {"path_array": ["tests/test_data.py"]}).text == (
        "==== FILE: tests/test_data.py ====\n(diff not shown: 29.2 KiB, more than"
        " file_read_diff reads (4.0 KiB))")


def test_file_read_refuses_a_changed_file_too_large_to_load(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"big.json": data_lines(5_000)})
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(repo.path, tgt, selection.SelectionPolicy(
        max_file_bytes=1000))
    view = SnapshotView(repo.path, tgt.head, cs.files, lambda s: s)
    res = file_read(view, {"file_path": "big.json"})
    assert (res.is_error, res.text) == (True, 'Error: "big.json" is too large to read (160000 '
                                        "bytes, above select.max_file_bytes); use code_search "
                                        "to find lines in it")


def test_renames_type_changes_and_modes_load_like_the_whole_diff(repo: GitRepo) -> None:
    body = "".join(f"line {i}\n" for i in range(40))
    repo.commit({"old/name.py": body, "link.py": "a = 1\n", "run.sh": "echo\n",
                 "gone.py": "g = 1\n"}, "init")
    (repo.path / "new").mkdir()
    repo.git("mv", "old/name.py", "new/name.py")
    repo.write({"new/name.py": body + "extra\n"})
    (repo.path / "link.py").unlink()
    os.symlink("new/name.py", repo.path / "link.py")
    os.chmod(repo.path / "run.sh", 0o755)
    repo.git("rm", "-q", "gone.py")
    repo.git("add", "-A")
    tgt = target.staged_snapshot(repo.path, os.environ)
    cs = changeset.load_change_set(repo.path, tgt, selection.SelectionPolicy())
    want = target.load_diff(repo.path, tgt)
    assert [(f.status, f.path, f.insertions, f.deletions) for f in cs.files] == [
        (f.status, f.path, f.insertions, f.deletions) for f in want]
    assert [(d.file.path, d.reason) for d in cs.decisions] == [
        ("gone.py", "deleted"), ("link.py", ""), ("new/name.py", ""), ("run.sh", "mode_only")]
    loaded = {f.path: f for f in cs.files if f.loaded}
    for f in want:
        if f.path in loaded:
            assert (loaded[f.path].hunks, loaded[f.path].patch) == (f.hunks, f.patch)


def test_path_gates_from_the_early_raw_listing_give_the_same_decisions(repo: GitRepo) -> None:
    repo.commit({"old.py": "a = 1\n" * 30, "x.py": "x = 1\n"}, "init")
    repo.git("mv", "old.py", "new.py")
    repo.stage({"vendor/a.js": "v\n", "tests/test_a.py": "t = 1\n", "x.py": "x = 2\n",
                "docs/a.txt": "d\n", ".env": "A=1\n"})
    tgt = target.staged_snapshot(repo.path, os.environ)
    policy = selection.SelectionPolicy(exclude=("docs/",))
    late = changeset.load_change_set(repo.path, tgt, policy)
    early = changeset.load_change_set(repo.path, tgt, policy, early_gates_min_paths=1)
    assert [(d.file.path, d.reason) for d in early.decisions] == [
        (d.file.path, d.reason) for d in late.decisions] == [
        (".env", "secret_path"), ("docs/a.txt", "user_exclude"), ("new.py", "rename_only"),
        ("tests/test_a.py", "default_path"), ("vendor/a.js", "provider_directory"),
        ("x.py", "")]


# -- streamed reading --------------------------------------------------------------------------


SECTIONS = [
    b"diff --git a/a b/a\nnew file mode 100644\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n"
    b"+diff --git a/x b/x\n",
    b"diff --git a/b b/b\nindex 1..2 100644\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-old\n+new\n",
    b"diff --git a/c b/c\nold mode 100644\nnew mode 100755\n",
]


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("chunk", [1, 3, 12, 13, 64, 10_000])
@pytest.mark.parametrize("keep_max", [0, 40, 70, 1 << 30])
def test_patch_stream_yields_each_section_kept_or_passed_over(chunk: int, keep_max: int) -> None:
    stream = PatchStream(pieces(b"commit message\n" + b"".join(SECTIONS), chunk))
    got = []
    while (item := stream.next_section(keep_max)) is not None:
        got.append(item)
    assert got == [(s if len(s) <= keep_max else None, len(s)) for s in SECTIONS]
    assert [len(split_patch_sections(s)) for s in SECTIONS] == [1, 1, 1]


def test_patch_stream_peeks_the_next_section_header() -> None:
    stream = PatchStream(pieces(b"".join(SECTIONS), 5))
    assert stream.peek_header() == b"diff --git a/a b/a"
    stream.next_section(0)
    assert stream.peek_header() == b"diff --git a/b b/b"
    stream.next_section(0)
    stream.next_section(0)
    assert stream.peek_header() is None
    assert stream.next_section(0) is None


def test_stream_git_stops_a_reader_that_leaves_early_and_reports_failures(
    repo: GitRepo,
) -> None:
    repo.commit({"big.txt": "x" * 300_000}, "init")
    oid = repo.git("rev-parse", "HEAD:big.txt").strip()
    with gitstream.stream_git(repo.path, "cat-file", "blob", oid) as stream:
        assert stream.read(10) == b"x" * 10  # git is killed at the end of the block
    assert blobs.read_prefix(repo.path, oid, 1000) == b"x" * 1000
    with pytest.raises(GitError, match=r"^git cat-file: .*\(exit 128\)$"):
        with gitstream.stream_git(repo.path, "cat-file", "blob", "0" * 40) as stream:
            assert stream.read(10) == b""
    with pytest.raises(GitError, match=r"^git cat-file: timed out after 0.2s$"):
        with gitstream.stream_git(repo.path, "cat-file", "--batch", stdin=b"", timeout_s=0.2,
                              extra_env={"GIT_TRACE": "0"}) as stream:
            time.sleep(0.5)


def test_stream_git_input_up_to_a_pipe_buffer_is_written_at_once_and_more_by_a_thread(
    repo: GitRepo,
) -> None:
    repo.commit({"a.txt": "alpha\n"}, "init")
    oid = repo.git("rev-parse", "HEAD:a.txt").strip()
    small = f"{oid}\n".encode()
    large = small * (select.PIPE_BUF // len(small) + 50)  # more than the pipe takes at once
    assert len(small) <= gitstream.SMALL_STDIN_BYTES < len(large)
    for data in (small, large):
        with gitstream.stream_git(repo.path, "cat-file", "--batch-check", stdin=data) as stream:
            out = b"".join(stream.chunks())
        assert out == f"{oid} blob 6\n".encode() * (len(data) // len(small))


def test_read_heads_returns_the_first_bytes_of_each_object(repo: GitRepo) -> None:
    repo.commit({"a.txt": "a" * 5000, "b.txt": "bb\n"}, "init")
    a = repo.git("rev-parse", "HEAD:a.txt").strip()
    b = repo.git("rev-parse", "HEAD:b.txt").strip()
    assert blobs.read_heads(repo.path, [a, "f" * 40, b], 100) == [b"a" * 100, None, b"bb\n"]


def test_files_block_is_the_text_json_dumps_would_print() -> None:
    files = [{"path": 'a"b\\c\n\u00e9\udcff', "status": "added", "reviewed": False,
              "reason": "", "size_bytes": 12, "detail": "x"}, {"path": "z", "n": None}]
    want = json.dumps({"a": 1, "files": files, "z": []}, indent=2, ensure_ascii=False)
    head = json.dumps({"a": 1, "files": "@", "z": []}, indent=2, ensure_ascii=False)
    assert head.replace('"@"', _files_block(files), 1) == want


def test_sizes_come_from_batch_check(repo: GitRepo) -> None:
    repo.commit({"a.txt": "abc"}, "init")
    oid = repo.git("rev-parse", "HEAD:a.txt").strip()
    assert changeset.blob_sizes(Path(repo.path), [oid, "0" * 40, "e" * 40]) == {oid: 3}
