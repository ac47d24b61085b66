"""A deleted file the snapshot still refers to is reviewed (spec §4.1): its deletion's diff and
the referring lines go to the model; a deletion nobody refers to stays excluded as ``deleted``
with no LLM call.

Real: git repositories, ``git grep`` over the snapshot tree, HTTP to the scripted loopback
model. Fake: the model's replies.
"""

from __future__ import annotations

import pytest

from ocr_hook.change import changeset, deleted_refs, selection
from ocr_hook.git import target
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

REVIEW = ["review", "--format", "json", "--effort", "low", "--no-filter"]
UTIL = "def fmt(x):\n    return f'{x:.2f}'\n"


def test_deleting_an_imported_module_is_reviewed_with_its_users(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"pkg/textutil.py": UTIL,
                 "app.py": "from pkg.textutil import fmt\n\nprint(fmt(2))\n",
                 "web/page.js": "// textutil is mentioned in a comment only\n"}, "init")
    repo.git("rm", "-q", "pkg/textutil.py")
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "pkg/textutil.py", "existing_code": "def fmt(x):",
        "content": "app.py still imports fmt from this module; the import will fail.",
        "severity": "high", "category": "bug"}]}), ("task_done", {"state": "DONE"}))
    before = repo.state()
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(REVIEW, llm.env(), capsys)
    assert rc == 1, err
    assert len(llm.requests) == 1
    prompt = llm.requests[0]["messages"][1]["content"]
    assert ('<file path="pkg/textutil.py">\nThis file is deleted by the change, but the snapshot'
            " still refers to it here:\n  app.py:1: from pkg.textutil import fmt\n"
            "Check whether these users break without it.\n") in prompt
    assert "  -def fmt(x):" in prompt
    assert [(f["path"], f["status"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("pkg/textutil.py", "deleted", True, "")]
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["severity"]) == (
        "pkg/textutil.py", "old", 1, "high")
    assert [w["message"] for w in data["warnings"] if w["type"] == "deleted_referenced"] == [
        "pkg/textutil.py: deleted but still referenced by 1 line(s) (first: app.py:1);"
        " deletion reviewed"]
    assert repo.state() == before


def test_deleting_an_unused_file_stays_excluded_without_a_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"pkg/textutil.py": UTIL, "app.py": "print(2)\n",
                 "notes.md": "textutil was an old helper\n"}, "init")
    repo.git("rm", "-q", "pkg/textutil.py")
    monkeypatch.chdir(repo.path)
    rc, data, err = run_json(REVIEW, llm.env(), capsys)
    assert rc == 0, err
    assert llm.requests == []
    assert [(f["path"], f["reviewed"], f["reason"]) for f in data["files"]] == [
        ("pkg/textutil.py", False, "deleted")]


@pytest.mark.parametrize(("path", "names"), [
    ("pkg/util/helpers.py", ("helpers",)),
    ("pkg/util/__init__.py", ("util",)),
    ("src/widgets/index.ts", ("widgets",)),
    ("include/ring_buffer.h", ("ring_buffer",)),
    ("src/io.rs", ()),
])
def test_reference_names(path: str, names: tuple[str, ...]) -> None:
    assert deleted_refs.reference_names(path) == names


def test_find_users_keeps_reference_lines_of_each_language(repo: GitRepo) -> None:
    repo.commit({"ring_buffer.h": "struct rb;\n", "widgets/index.ts": "export {}\n",
                 "helpers.rb": "X = 1\n"}, "init")
    repo.commit({"main.c": '#include "ring_buffer.h"\nint ring_buffer = 0;\n',
                 "app.ts": "import { w } from './widgets';\nconst widgets = 1;\n",
                 "run.rb": "require_relative 'helpers'\n"}, "users")
    repo.git("rm", "-q", "ring_buffer.h", "widgets/index.ts", "helpers.rb")
    snap = target.staged_snapshot(repo.path, {})
    files = [f for f in target.load_diff(repo.path, snap) if f.status == "deleted"]
    assert deleted_refs.find_users(repo.path, snap.head, files) == {
        "ring_buffer.h": ('main.c:1: #include "ring_buffer.h"',),
        "widgets/index.ts": ("app.ts:1: import { w } from './widgets';",),
        "helpers.rb": ("run.rb:1: require_relative 'helpers'",),
    }


def test_find_users_lists_the_best_evidence_first(repo: GitRepo) -> None:
    repo.commit({"a/util.py": "X = 1\n", "b/util.py": "Y = 2\n",
                 "b/app.py": "from b import util\n", "c/main.py": "from a import util\n"}, "init")
    repo.git("rm", "-q", "a/util.py")
    snap = target.staged_snapshot(repo.path, {})
    files = [f for f in target.load_diff(repo.path, snap) if f.status == "deleted"]
    assert deleted_refs.find_users(repo.path, snap.head, files) == {
        "a/util.py": ("c/main.py:1: from a import util", "b/app.py:1: from b import util")}


def test_only_the_first_deleted_files_are_searched_past_the_cap(
        repo: GitRepo, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    repo.commit({"lib/alpha.py": "A = 1\n", "lib/beta.py": "B = 1\n", "lib/gamma.py": "C = 1\n",
                 "app.py": "from lib import alpha, beta, gamma\n"}, "init")
    repo.git("rm", "-q", "lib/alpha.py", "lib/beta.py", "lib/gamma.py")
    snap = target.staged_snapshot(repo.path, {})
    files = [f for f in target.load_diff(repo.path, snap) if f.status == "deleted"]
    monkeypatch.setattr(deleted_refs, "SEARCH_MAX_FILES", 2)
    assert deleted_refs.mark_referenced(repo.path, [(snap.head, f) for f in reversed(files)])
    users = {f.path: f.referenced_by for f in files}
    assert users == {"lib/alpha.py": ("app.py:1: from lib import alpha, beta, gamma",),
                     "lib/beta.py": ("app.py:1: from lib import alpha, beta, gamma",),
                     "lib/gamma.py": ()}
    assert "3 files deleted: only the first 2 (path order) were searched" in caplog.text


def test_the_search_started_early_gives_the_same_users_as_the_one_after_the_gates(
        repo: GitRepo) -> None:
    repo.commit({"lib/alpha.py": "A = 1\n", "lib/beta.py": "B = 1\n", "docs/gamma.py": "C\n",
                 "app.py": "from lib import alpha\nimport gamma\n"}, "init")
    repo.git("rm", "-q", "lib/alpha.py", "lib/beta.py", "docs/gamma.py")
    snap = target.staged_snapshot(repo.path, {})
    policy = selection.SelectionPolicy(exclude=("docs/",))
    late = changeset.load_change_set(repo.path, snap, policy)
    early = changeset.load_change_set(repo.path, snap, policy, early_gates_min_paths=1)
    for loaded in (late, early):
        assert [(d.file.path, d.reason, d.file.referenced_by) for d in loaded.decisions] == [
            ("docs/gamma.py", "user_exclude", ()),
            ("lib/alpha.py", "", ("app.py:1: from lib import alpha",)),
            ("lib/beta.py", "deleted", ())]
