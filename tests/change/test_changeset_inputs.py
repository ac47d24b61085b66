"""The bounded change-set loader (spec §3.6) with harder inputs: files binary only by
``.gitattributes`` re-diffed as text, deleted files the snapshot still uses, the hook's file
names as a filter, and non-UTF-8 path names, each read from the streamed patch. Real git
repositories; ``changeset.load_change_set`` called directly, nothing faked."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ocr_hook.change import changeset, selection
from ocr_hook.git import target
from ocr_hook.report import html
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

APP = "def div(a, b):\n    return a / b\n"
ALLOW = changeset.ScanPolicy((), 1 << 20)


def load(repo: GitRepo, policy: selection.SelectionPolicy | None = None,
         names: list[str] | None = None) -> changeset.ChangeSet:
    tgt = target.staged_snapshot(repo.path, os.environ)
    return changeset.load_change_set(repo.path, tgt, policy or selection.SelectionPolicy(),
                                     scan=ALLOW, names=names)


def test_attribute_binary_text_is_rediffed_as_text_and_an_excluded_one_scanned(
    repo: GitRepo,
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    token = "ghp_" + "R3aLt0k3nV4lu3F0rT3st1ngPurp0s3s0nly"  # fake; split for scanners
    repo.stage({".gitattributes": "*.py -diff\nnotes.txt binary\n", "calc.py": APP,
                "notes.txt": f"release\ntoken: {token}\n",
                "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + b"\0" * 64})
    cs = load(repo, selection.SelectionPolicy(max_file_bytes=100_000, max_files=5))
    got = {d.file.path: (d.reason, d.reviewed, d.file.loaded, d.file.binary_attribute,
                         d.file.insertions) for d in cs.decisions}
    assert got == {
        ".gitattributes": ("unsupported_ext", False, False, "", 2),
        "calc.py": ("", True, True, "-diff", 2),
        "logo.png": ("binary", False, False, "", 0),
        "notes.txt": ("unsupported_ext", False, True, "binary", 2),
    }
    calc = next(f for f in cs.files if f.path == "calc.py")
    assert [ln.text for h in calc.hunks for ln in h.lines] == ["def div(a, b):",
                                                               "    return a / b"]
    assert cs.findings == []  # loaded files are scanned by the caller (change_scan)


def test_deleted_file_still_imported_is_loaded_and_reviewed(repo: GitRepo) -> None:
    repo.commit({"pkg/textutil.py": "def fmt(x):\n    return str(x)\n",
                 "app.py": "from pkg.textutil import fmt\n"}, "init")
    repo.git("rm", "-q", "pkg/textutil.py")
    [d] = load(repo, selection.SelectionPolicy(max_file_bytes=100_000)).decisions
    assert (d.file.path, d.reason, d.reviewed, d.file.loaded) == (
        "pkg/textutil.py", "", True, True)
    assert d.file.referenced_by == ("app.py:1: from pkg.textutil import fmt",)
    assert [ln.kind for h in d.file.hunks for ln in h.lines] == ["-", "-"]


def test_hook_file_names_filter_before_the_max_files_bound(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({f"src/mod_{i}.py": f"X_{i} = {i}\n" for i in range(4)})
    cs = load(repo, selection.SelectionPolicy(max_files=1),
              names=["src/mod_1.py", "./src/mod_3.py"])
    assert [(d.file.path, d.reason, d.file.loaded) for d in cs.decisions] == [
        ("src/mod_1.py", "", True), ("src/mod_3.py", "over_max_files", False)]
    assert cs.unchanged_names == []
    # an unchanged name: files handed, not changes (--all-files); every changed file is kept
    cs = load(repo, selection.SelectionPolicy(max_files=1), names=["docs/unchanged.md"])
    assert [(d.file.path, d.reason) for d in cs.decisions] == [
        ("src/mod_0.py", ""), ("src/mod_1.py", "over_max_files"),
        ("src/mod_2.py", "over_max_files"), ("src/mod_3.py", "over_max_files")]
    assert cs.unchanged_names == ["docs/unchanged.md"]


def test_non_utf8_path_is_read_from_the_stream_within_the_byte_bound(repo: GitRepo) -> None:
    repo.commit({"README.md": "x\n"}, "init")
    name = os.fsdecode(b"caf\xe9.py")
    (repo.path / name).write_text(APP)
    (repo.path / "zeta.py").write_text(APP * 40)
    repo.git("add", "-A")
    cs = load(repo, selection.SelectionPolicy(max_total_bytes=400))
    assert [(d.file.path, d.reason, d.file.loaded, d.file.insertions) for d in cs.decisions] == [
        (name, "", True, 2), ("zeta.py", "over_max_total_bytes", False, 80)]


def test_detect_secrets_pass_reads_the_sections_of_files_that_are_not_loaded(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hexval = hashlib.sha256(b"ocr-hook changeset fixture").hexdigest()[:40]
    repo.commit({"README.md": "x\n"}, "init")
    repo.stage({"vendor/lib.py": f'import os\nCHECKSUM = "{hexval}"\n',
                "app.py": f'X = 1\nY = "{hexval}"\n'})
    llm.tool_calls(("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache"],
                           llm.env(OCR_HOOK_SECURITY_DETECT_SECRETS="true"), capsys)
    data = json.loads(out)
    assert rc == 1, err
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("app.py", True, ""), ("vendor/lib.py", False, "provider_directory")]
    spots = [(c["path"], c["start_line"], c["content"].split("(", 1)[1].split(")")[0])
             for c in data["comments"] if c["content"].startswith("Hard-coded secret (")]
    assert spots == [("app.py", 2, "detect-secrets:hex-high-entropy-string"),
                     ("vendor/lib.py", 2, "detect-secrets:hex-high-entropy-string")]
    assert len(llm.requests) == 1 and hexval not in json.dumps(llm.requests)


def test_review_page_lists_bound_files_as_not_reviewed_with_their_detail() -> None:
    detail = "5 files to review, more than select.max_files (2)"
    data = {"status": "partial", "gate": {"mode": "blocking", "fail_on": "high"},
            "comments": [], "warnings": [], "files": [
                {"path": "a.py", "status": "added", "reviewed": True, "reason": ""},
                {"path": "b.py", "status": "added", "reviewed": False,
                 "reason": "over_max_files", "detail": detail}]}
    page = html.render_html(data, [], "PASS")
    assert ('<td>b.py</td><td>added</td><td class="miss">not reviewed: over select.max_files: '
            f"{detail}</td>") in page
