"""Binary by content, not by ``.gitattributes`` (spec §3.8): a text file marked ``-diff`` or
``binary`` (also in the same commit) is reviewed and secret-scanned as text, with the attribute
named in a warning; a file with NUL bytes stays binary whatever its attributes say.

Real: git repositories, ``.gitattributes`` files, HTTP to the scripted loopback model. Fake:
the model's replies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_hook.git import attributes, target
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

GH_TOKEN = "ghp_" + "R8x2Lq9ZtV4mN7pK3wY6sD1fH5jB0cXe2aGu"  # fake; assembled so scanners skip it
APP = "def div(a, b):\n    return a / b\n"


def test_attribute_marked_text_in_the_same_commit_is_reviewed_and_scanned(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({
        ".gitattributes": "*.py -diff\nnotes.txt binary\nlogo.png -diff\n",
        "calc.py": APP,
        "notes.txt": f"release checklist\ntoken: {GH_TOKEN}\n",
        "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + b"\0" * 64,
    })
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "calc.py", "existing_code": "    return a / b",
        "content": "Division by zero when b is 0.", "severity": "high", "category": "bug"}]}),
        ("task_done", {"state": "DONE"}))
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(["review", "--format", "json", "--effort", "low",
                              "--no-filter"], llm.env(), capsys)
    assert rc == 1, err
    assert len(llm.requests) == 1
    prompt = llm.requests[0]["messages"][1]["content"]
    assert "1 +def div(a, b):\n2 +    return a / b" in prompt
    files = {f["path"]: (f["reviewed"], f["reason"]) for f in data["files"]}
    assert files == {".gitattributes": (False, "unsupported_ext"), "calc.py": (True, ""),
                     "logo.png": (False, "binary"), "notes.txt": (False, "unsupported_ext")}
    spots = [(c["path"], c["start_line"], c["severity"]) for c in data["comments"]]
    assert spots == [("calc.py", 2, "high"), ("notes.txt", 2, "critical")]
    assert data["comments"][1]["content"].startswith("Hard-coded secret (github-token)")
    warnings = [(w["file"], w["message"]) for w in data["warnings"]
                if w["type"] == "binary_attribute"]
    assert warnings == [
        ("calc.py", "calc.py: marked -diff in .gitattributes but holds text (no NUL byte);"
                    " reviewed and scanned as text"),
        ("notes.txt", "notes.txt: marked binary in .gitattributes but holds text (no NUL byte);"
                      " reviewed and scanned as text"),
    ]
    assert "calc.py: marked -diff in .gitattributes" in err
    assert repo.state() == before


def test_committed_attribute_and_rename_keep_the_rename_pairing(
    repo: GitRepo, tmp_path: Path,
) -> None:
    body = "".join(f"line {n}\n" for n in range(1, 21))
    repo.commit({".gitattributes": "*.cfg -diff\n*.dat diff=opaque\n", "old.cfg": body,
                 "table.dat": "a\n"}, "init")
    repo.git("config", "diff.opaque.binary", "true")
    repo.git("mv", "old.cfg", "new.cfg")
    repo.write({"new.cfg": body.replace("line 7\n", "line seven\n"), "table.dat": "a\nb\n"})
    repo.git("add", "-A")
    snap = target.staged_snapshot(repo.path, {})
    files = target.load_diff(repo.path, snap)
    got = [(f.status, f.old_path, f.new_path, f.binary, f.binary_attribute,
            [(ln.kind, ln.new_line, ln.text) for h in f.hunks for ln in h.lines if ln.kind != " "])
           for f in files]
    assert got == [
        ("renamed", "old.cfg", "new.cfg", False, "-diff",
         [("-", None, "line 7"), ("+", 7, "line seven")]),
        ("modified", "table.dat", "table.dat", False, "diff=opaque", [("+", 2, "b")]),
    ]


def test_binary_attributes_names_the_marking_from_index_then_work_tree(repo: GitRepo) -> None:
    repo.stage({".gitattributes": "a.txt binary\nb.txt -diff\nc.txt diff=x\n"})
    repo.write({"sub/.gitattributes": "e.txt -diff\n"})  # not staged: git diff still reads it
    assert attributes.binary_attributes(
        repo.path, ["a.txt", "b.txt", "c.txt", "d.txt", "sub/e.txt"]) == {
        "a.txt": "binary", "b.txt": "-diff", "c.txt": "diff=x", "d.txt": "", "sub/e.txt": "-diff"}
