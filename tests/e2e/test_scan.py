"""``git ocr scan`` end to end (spec §3.9): whole committed or staged files reviewed through the
pipeline against the scripted loopback model, on real repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_git_calls import GitLog
from tests.support.cli import GIT_OCR, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, SQL_LINE, sql_comment
from tests.support.scripted_llm import ScriptedLLM

DONE = ("task_done", {"state": "DONE"})
OTHER_PY = "def ok(x):\n    return x + 1\n"


def _project(repo: GitRepo) -> None:
    """A repository whose app/db.py (committed in an earlier commit, unchanged since) builds
    SQL from user input on line 12."""
    repo.commit({"app/db.py": APP_PY, "app/util.py": OTHER_PY, "README.md": "hi\n"}, "init")
    repo.commit({"README.md": "hi again\n"}, "docs")


def test_scan_of_a_committed_file_anchors_the_finding_and_blocks(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    repo.write({"app/db.py": APP_PY.replace(SQL_LINE, "pass"), "notes.txt": "untracked\n"})
    before = repo.state()
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/db.py", "--format", "json"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    data = json.loads(out)
    assert data["verdict"] == "findings" and data["status"] == "complete"
    assert data["input"]["mode"] == "scan"
    assert data["input"]["head"] == repo.git("rev-parse", "HEAD").strip()
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("app/db.py", "new", 12, 12)
    assert c["severity"] == "critical"
    assert [(f["path"], f["status"], f["reviewed"]) for f in data["files"]] == [
        ("app/db.py", "added", True)]
    [request] = llm.requests
    user = request["messages"][1]["content"]
    assert "This is a whole-file scan, not a change" in user
    assert '<file path="app/db.py" lines="14">' in user
    assert "1 +import sqlite3" in user and "12 +    query = " in user
    assert "pass" not in user.split("<review_files>")[1]  # HEAD's blob, not the work tree
    assert "blocking findings: 1 at or above high" in err
    assert repo.state() == before  # neither index nor work tree (nor refs) touched


def test_scan_from_a_subfolder_reads_paths_relative_to_it(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    monkeypatch.chdir(repo.path / "app")
    rc, out, err = run_cli(["scan", "db.py", "--format", "json"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    assert json.loads(out)["comments"][0]["start_line"] == 12


def test_the_scan_prompt_speaks_of_whole_files_and_offers_no_diff_tool(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    llm.tool_calls(DONE)
    monkeypatch.chdir(repo.path)
    rc, _out, err = run_cli(["scan", "app/util.py", "--format", "json"], llm.env(), capsys,
                            review_filter=False)
    assert rc == 0, err
    [request] = llm.requests
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert system.startswith("You are ocr-hook, a senior engineer reviewing whole files of a"
                             " repository: a scan, not a change.")
    assert "Scope: every problem in these files as they stand, on any of their lines" in system
    for gone in ("right before it is committed", "Out of scope: old problems",
                 "preexisting", "file_read_diff", "<!--"):
        assert gone not in system, gone
    assert ('In this scan, "the change" in the checklist means the scanned files, and every'
            " line of them is in scope") in user
    names = [t["function"]["name"] for t in request["tools"]]
    assert "file_read_diff" not in names and {"file_read", "code_comment"} <= set(names)
    [comment_tool] = [t for t in request["tools"] if t["function"]["name"] == "code_comment"]
    assert "preexisting" not in json.dumps(comment_tool)  # nothing predates a scan
    # a change review keeps its own wording, the diff tool and the flag
    repo.stage({"app/util.py": OTHER_PY + "\n\ndef two():\n    return 2\n"})
    llm.tool_calls(DONE)
    rc, _out, err = run_cli(["review", "--format", "json", "--no-cache"], llm.env(), capsys,
                            review_filter=False)
    assert rc == 0, err
    review = llm.requests[-1]
    system = review["messages"][0]["content"]
    assert "reviewing a change right before it is committed" in system
    assert "preexisting (optional)" in system and "file_read_diff" in system
    assert "<!--" not in system and "In this scan" not in review["messages"][1]["content"]
    assert "file_read_diff" in [t["function"]["name"] for t in review["tools"]]
    assert "preexisting" in json.dumps(review["tools"])


def test_pathspecs_combine_and_exclude_magic_takes_files_out(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    repo.commit({"src/main.py": OTHER_PY, "src/a.py": OTHER_PY, "src/b.py": OTHER_PY,
                 "src/c.txt": "x\n"}, "src")
    llm.tool_calls(DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "src/*.py", ":!src/main.py", "--format", "json"],
                           llm.env(), capsys, review_filter=False)
    assert rc == 0, err
    assert [f["path"] for f in json.loads(out)["files"]] == ["src/a.py", "src/b.py"]
    # an unmatched positive pathspec among them is still named
    rc, _out, err = run_cli(["scan", "src/*.py", "nope.py", ":!src/main.py"], llm.env(),
                            capsys, review_filter=False)
    assert rc == 2
    assert err.strip() == ("ocr-hook: nope.py: not a tracked file at HEAD"
                           " (git add it and scan with --staged)")


def test_an_untracked_path_from_a_subfolder_names_the_path_looked_up(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    monkeypatch.chdir(repo.path / "app")
    rc, _out, err = run_cli(["scan", "app/db.py"], llm.env(), capsys, review_filter=False)
    assert rc == 2
    assert err.strip() == ("ocr-hook: app/db.py: not a tracked file at HEAD: paths are"
                           " relative to the current folder app/, so this is app/app/db.py"
                           " (git add it and scan with --staged)")
    assert llm.requests == []


def test_staged_scan_reads_the_index_version(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixed = APP_PY.replace(SQL_LINE, 'query = "SELECT id FROM users WHERE name = ?"')
    repo.commit({"app/db.py": fixed}, "init")
    staged = "# staged header\n" + APP_PY  # the defect, one line lower, only in the index
    repo.stage({"app/db.py": staged})
    repo.write({"app/db.py": fixed})  # and the work tree holds the fixed text again
    before = repo.state()
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "--staged", "app/db.py", "--format", "json"], llm.env(),
                           capsys, review_filter=False)
    assert rc == 1, err
    data = json.loads(out)
    assert data["comments"][0]["start_line"] == 13
    assert data["input"]["head"] == "(index)" and data["input"]["snapshot_tree"]
    user = llm.requests[0]["messages"][1]["content"]
    assert "1 +# staged header" in user and "?" not in user.split("<review_files>")[1]
    assert repo.state() == before


def test_second_identical_scan_is_a_cache_hit(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    monkeypatch.chdir(repo.path)
    args = ["scan", "app/db.py", "--format", "json"]
    rc1, out1, _ = run_cli(args, llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 1
    rc2, out2, _ = run_cli(args, llm.env(), capsys, review_filter=False)
    assert (rc1, rc2) == (1, 1)
    assert len(llm.requests) == 1  # no model request the second time
    second = json.loads(out2)
    assert second["summary"]["cache_hits"] >= 1
    assert second["comments"][0]["start_line"] == 12
    # a review of the commit that added the file is a change review: not answered by the scan
    first_commit = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    llm.tool_calls(DONE)
    rc3, out3, _ = run_cli(["review", "--commit", first_commit, "--format", "json"],
                           llm.env(), capsys, review_filter=False)
    assert len(llm.requests) == 2 and rc3 == 0, out3


def test_all_scans_every_tracked_file_the_selection_keeps(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    llm.tool_calls(DONE)
    monkeypatch.chdir(repo.path / "app")
    rc, out, err = run_cli(["scan", "--all", "--format", "json"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 0, err
    files = {f["path"]: (f["status"], f["reviewed"]) for f in json.loads(out)["files"]}
    assert files["app/db.py"] == ("added", True) and files["app/util.py"] == ("added", True)
    assert set(files) == {"app/db.py", "app/util.py", "README.md"}


@pytest.mark.parametrize(("argv", "message"), [
    (["scan"], "ocr-hook: scan: name the files to scan"),
    (["scan", "notes.txt"], "ocr-hook: notes.txt: not a tracked file at HEAD"),
    (["scan", "--staged", "nope.py"], "ocr-hook: nope.py: not a tracked file in the index"),
    (["scan", "new.py"], "ocr-hook: new.py: not a tracked file at HEAD"),
    (["scan", "../x"], "ocr-hook: ../x: outside the repository"),
    (["scan", "--all", "README.md"], "ocr-hook: scan: give PATH… or --all, not both"),
])
def test_bad_paths_are_one_line_usage_errors(repo: GitRepo, llm: ScriptedLLM,
                                             argv: list[str], message: str) -> None:
    _project(repo)
    repo.write({"notes.txt": "untracked\n"})
    repo.stage({"new.py": OTHER_PY})  # staged only: not at HEAD
    before = repo.state()
    p = subprocess.run([str(GIT_OCR), *argv], cwd=repo.path, env={**repo.env, **llm.env()},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), p.stderr
    assert p.stdout == "" and llm.requests == []
    assert repo.state() == before


@pytest.mark.parametrize("fmt", ["text", "sarif", "html", "ndjson"])
def test_every_review_format_reports_the_scan(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], fmt: str,
) -> None:
    _project(repo)
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/db.py", "--format", fmt], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    if fmt == "text":
        head = repo.git("rev-parse", "HEAD").strip()
        assert "BLOCKING app/db.py:12 [critical · security]" in out
        assert f"scanned: whole files at {head[:12]}\n" in out
    elif fmt == "sarif":
        [res] = json.loads(out)["runs"][0]["results"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == 12
    elif fmt == "ndjson":
        events = [json.loads(line) for line in out.splitlines()]
        [finding] = [e for e in events if e["type"] == "finding"]
        assert finding["comment"]["start_line"] == 12 and events[-1]["type"] == "verdict"
    else:
        assert out.startswith("<!DOCTYPE html>") and "app/db.py" in out


def test_paths_with_all_and_an_unborn_head_are_usage_errors(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.stage({"app/db.py": APP_PY})  # no commit yet
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["scan", "app/db.py"], llm.env(), capsys)
    assert rc == 2 and "HEAD has no commit yet" in err and "--staged" in err
    rc, _, err = run_cli(["scan", "--all", "app/db.py"], llm.env(), capsys)
    assert rc == 2 and "give PATH… or --all, not both" in err
    llm.tool_calls(("code_comment", sql_comment("app/db.py")), DONE)
    rc, out, err = run_cli(["scan", "--staged", "app/db.py", "--format", "json"], llm.env(),
                           capsys, review_filter=False)
    assert rc == 1, err
    assert json.loads(out)["comments"][0]["start_line"] == 12


def _big_module(n: int, defect_at: int) -> str:
    rows = [f"VALUE_{i:04d} = compute_value({i}, scale=SCALE, offset=OFFSET)  # row {i}"
            for i in range(1, n + 1)]
    rows[defect_at - 1] = "PASSWORD = os.environ.get('DB_PASSWORD') or eval(input())"
    return "\n".join(rows) + "\n"


def test_a_file_too_large_for_one_prompt_is_scanned_in_windows(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _big_module(600, defect_at=540)
    repo.commit({"app/big.py": text}, "init")
    quote = "PASSWORD = os.environ.get('DB_PASSWORD') or eval(input())"
    comment = {"comments": [{"path": "app/big.py", "existing_code": quote,
                             "content": "eval of user input runs arbitrary code",
                             "severity": "critical", "category": "security"}]}
    llm.tool_calls(("code_comment", comment), DONE, match="+" + quote)  # the window holding it
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/big.py", "--format", "json"],
                           llm.env(OCR_HOOK_LLM_CONTEXT_TOKENS="12000"), capsys,
                           review_filter=False)
    assert rc == 1, err
    data = json.loads(out)
    assert data["status"] == "complete"
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"]) == ("app/big.py", 540, 540)
    labels = [g["label"] for g in data["groups"]]
    assert len(labels) >= 2 and all(lb.startswith("app/big.py lines ") for lb in labels)
    assert labels[0].startswith("app/big.py lines 1-") and labels[-1].endswith("-600")
    files = {f["path"]: f for f in data["files"]}
    assert files["app/big.py"]["reviewed"] is True
    users = [r["messages"][1]["content"] for r in llm.requests]
    assert len(users) == len(labels)  # one conversation per window, one request each here
    assert all(f"of {len(labels)}" in u and 'lines="600"' in u for u in users)
    # the windows overlap: every line is shown, and each window starts inside the one before
    shown = [int(lb.split()[-1].split("-")[0]) for lb in labels]
    ends = [int(lb.split("-")[-1]) for lb in labels]
    assert all(s <= e + 1 for s, e in zip(shown[1:], ends, strict=False))
    # the windowed file counts once in the start line
    assert f"reviewing 1 file in {len(labels)} groups with scripted-model" in err, err


def test_preview_lists_the_selection_without_a_model_call(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    repo.commit({"tests/test_db.py": "def test_x():\n    assert True\n"}, "tests")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "--all", "--preview", "--format", "json"], llm.env(), capsys)
    assert rc == 0, err
    files = {f["path"]: (f["status"], f["reason"]) for f in json.loads(out)["files"]}
    assert files["app/db.py"] == ("added", "") and files["tests/test_db.py"][1] == "default_path"
    assert llm.requests == []


def test_without_an_endpoint_the_scan_is_not_reviewed_and_names_no_delegation(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/db.py", "--format", "json"],
                           {"OCR_HOOK_GATE_ON_ERROR": "block"}, capsys)
    data = json.loads(out)
    assert rc == 3 and data["status"] == "failed", err  # incomplete and on_error = block
    assert data["incomplete_reasons"][0].startswith("NOT REVIEWED: ")
    assert "delegate" not in data["incomplete_reasons"][0]


def test_a_bounded_scan_names_the_scan_preview_and_session_list_says_scan(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    llm.tool_calls(DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/db.py", "app/util.py", "--format", "json"],
                           llm.env(OCR_HOOK_SELECT_MAX_FILES="1"), capsys, review_filter=False)
    assert rc == 0, err
    assert json.loads(out)["incomplete_reasons"] == [
        "NOT REVIEWED: 1 of 2 files: the scan has more files to review than select.max_files (1);"
        " raise select.max_files to review them, `git ocr scan \u2026 --preview` lists them"]
    rc, out, err = run_cli(["session", "list"], llm.env(), capsys)
    assert rc == 0, err
    header, row = out.splitlines()
    assert row.split()[header.split().index("STAGE") + 1] == "scan"  # STARTED is two words


def test_a_symlink_is_left_out_of_a_scan_with_its_reason(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(repo)
    (repo.path / "app" / "link.py").symlink_to("db.py")
    repo.git("add", "app/link.py")
    repo.git("commit", "-qm", "link")
    assert repo.git("ls-files", "-s", "app/link.py").startswith("120000 ")
    llm.tool_calls(DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/", "--format", "json"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 0, err
    files = {f["path"]: (f["reviewed"], f.get("reason")) for f in json.loads(out)["files"]}
    assert files == {"app/db.py": (True, ""), "app/util.py": (True, ""),
                     "app/link.py": (False, "symlink")}
    [request] = llm.requests
    assert '<file path="app/link.py"' not in request["messages"][1]["content"]


def test_nothing_in_a_scan_is_preexisting_and_no_moved_code_diff_runs(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    _project(repo)
    log = GitLog(tmp_path / "shim", monkeypatch)
    llm.tool_calls(("code_comment", {"comments": [
        {**sql_comment("app/db.py")["comments"][0], "preexisting": True}]}), DONE)
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/db.py", "--format", "json"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    data = json.loads(out)
    [c] = data["comments"]
    assert (c["start_line"], c["advisory_reason"], c["moved_from"]) == (12, "", "")
    assert [(w["type"], w["file"], w["message"]) for w in data["warnings"]] == [
        ("preexisting_refused", "app/db.py", f"finding {c['id']} was flagged pre-existing but a"
         " scan reviews the whole file: nothing in it predates the change")]
    assert not any("--color-moved" in line for line in log.log.read_text().splitlines())


def test_a_file_whose_windows_fail_counts_once_as_not_reviewed(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app/big.py": _big_module(600, defect_at=540),
                 "app/small.py": "def one():\n    return 1\n"}, "init")
    for _ in range(12):  # every window of big.py: a request the endpoint refuses
        llm.reply({"error": {"message": "bad request"}}, status=400, match="compute_value(")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["scan", "app/big.py", "app/small.py", "--format", "json"],
                           llm.env(OCR_HOOK_LLM_CONTEXT_TOKENS="12000"), capsys,
                           review_filter=False)
    assert rc == 0, err  # gate.on_error = allow
    data = json.loads(out)
    files = {f["path"]: (f["reviewed"], f["reason"]) for f in data["files"]}
    assert files["app/small.py"] == (True, "")
    assert files["app/big.py"][0] is False
    assert sum(1 for g in data["groups"] if g["label"].startswith("app/big.py lines")) >= 2
    [line] = data["incomplete_reasons"]
    assert line.startswith("NOT REVIEWED: 1 of 2 files: "), line
