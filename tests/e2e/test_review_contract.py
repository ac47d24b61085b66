"""The review contract: ``code_comment`` answers where each comment landed, a path
copied as the prompt shows it reaches its file, one severity scale stated once, and a
comment filed again with a better quote replaces its unplaced copy.

Real: git repositories and diffs, the comment pool's threads, ``cli.main`` with HTTP to the
loopback model server, the shipped templates and tools.json. Fake: the model's replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ocr_hook.comments.pool import Collector, CommentPool, CommentProcessor
from ocr_hook.findings import Finding, RawComment, RunWarning, finding_id, merge_same_claims
from ocr_hook.tools.builtin.code_comment import NOT_PLACED, landing_text
from ocr_hook.tools.registry import parse_tools_json
from ocr_hook.util import resources, templates
from ocr_hook.vocabulary import Severity
from tests.support.cli import run_json
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP, GUARD, staged
from tests.support.scripted_llm import ScriptedLLM

DONE = ("task_done", {"state": "DONE"})


def raw(quote: str, path: str = "app.py", content: str = "Negative prices raise.") -> RawComment:
    return RawComment(path, content, quote, "", Severity.HIGH, "bug", None, "g")


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    ex = ThreadPoolExecutor(max_workers=2, thread_name_prefix="test-contract")
    yield ex
    ex.shutdown(wait=True, cancel_futures=True)


# --- where a comment landed ------------------------------------------------------------------


def finding(path: str, side: str, start: int, end: int, anchor: str,
            ambiguous: bool = False) -> Finding:
    return Finding(finding_id(path, side, "q", "c"), path, side, start, end, Severity.LOW,
                   "bug", "c", "q", "", anchor, ambiguous)


def test_landing_text_names_lines_side_and_what_to_quote_instead() -> None:
    cs = [raw("a"), raw("b"), raw("c"), raw("d", path="lib.py"), raw("e"), raw("f")]
    placed = [finding("app.py", "new", 13, 14, "hunk_new"),
              finding("app.py", "old", 9, 9, "hunk_old"),
              finding("app.py", "new", 40, 41, "file"),
              finding("app.py", "new", 2, 2, "refiled"),
              finding("app.py", "new", 5, 5, "hunk_new", ambiguous=True),
              None]
    assert landing_text(cs, placed) == (
        "Filed 6 comments:\n"
        "1. app.py:13-14 (new side)\n"
        "2. app.py:9 (old side)\n"
        "3. app.py:40-41 (new side, unchanged code outside the diff)\n"
        "4. app.py:2 (new side, moved from lib.py: the quote is in this file)\n"
        "5. app.py:5 (new side); the quote fits several places, the first was used: quote"
        " more lines\n"
        f"6. app.py: {NOT_PLACED}")
    assert landing_text(cs[:1], placed[:1]) == "Filed: app.py:13-14 (new side)"


def test_the_pool_places_comments_at_once_and_defers_only_unplaced_ones(
    repo: GitRepo, executor: ThreadPoolExecutor,
) -> None:
    files, lines, reviewed = staged(repo, {"app.py": APP}, {"app.py": GUARD})
    relocations: list[str] = []

    def relocate(fd: Any, c: RawComment) -> str | None:
        relocations.append(c.existing_code)
        return None

    processor = CommentProcessor(files, lines, reviewed, relocate=relocate)
    collector = Collector()
    pool = CommentPool(executor, processor, collector, place=processor.place)
    placed = pool.submit([raw("if item.price < 0:"), raw("def total(items):"),
                          raw("if item.price <= 0:")], "g")
    assert [(f.start_line, f.end_line, f.side, f.anchor) if f else None for f in placed] == [
        (13, 13, "new", "hunk_new"), (10, 10, "new", "hunk_new"), None]
    assert [f.start_line for f in pool.drain("g")] == [13, 10, 0]
    assert relocations == ["if item.price <= 0:"]  # only the unplaced one asked the model
    assert [f.start_line for f in collector.snapshot()] == [13, 10, 0]


def test_a_crashing_place_falls_back_to_the_background_anchoring(
    executor: ThreadPoolExecutor,
) -> None:
    def place(c: RawComment) -> tuple[Finding, list[RunWarning]]:
        raise RuntimeError("bug")

    def process(c: RawComment) -> tuple[Finding, list[RunWarning]]:
        return finding(c.path, "new", 3, 3, "hunk_new"), []

    pool = CommentPool(executor, process, Collector(), place=place)
    assert pool.submit([raw("x")], "k") == [None]
    assert [f.start_line for f in pool.drain("k")] == [3]


def test_an_escaped_path_copied_from_the_prompt_anchors_on_its_hunk(repo: GitRepo) -> None:
    names = ("a&b.py", 'quo"te.py', "l<t>.py")
    files, lines, reviewed = staged(repo, dict.fromkeys(names, APP), dict.fromkeys(names, GUARD))
    processor = CommentProcessor(files, lines, reviewed)
    for name in names:
        shown = templates.xml_attr(name)
        assert shown != name
        f, warnings = processor.place(raw("if item.price < 0:", path=shown))
        assert (f.path, f.start_line, f.anchor, warnings) == (name, 13, "hunk_new", [])


def test_a_comment_filed_again_with_a_landing_quote_replaces_its_unplaced_copy() -> None:
    unplaced = Finding("id1", "app.py", "new", 0, 0, Severity.CRITICAL, "security",
                       "Token leaks to the log.", "log(tok)", "", "none")
    placed = Finding("id2", "app.py", "new", 7, 7, Severity.HIGH, "security",
                     "Token leaks to the log.", "logger.info(token)", "", "hunk_new")
    other = Finding("id3", "app.py", "new", 0, 0, Severity.LOW, "bug", "Unrelated.", "x", "",
                    "none")
    merged = merge_same_claims([unplaced, other, placed])
    assert [(f.id, f.start_line, f.severity) for f in merged] == [
        ("id2", 7, Severity.CRITICAL), ("id3", 0, Severity.LOW)]


# --- the prompts -----------------------------------------------------------------------------


def test_one_severity_scale_stated_once_and_nowhere_else() -> None:
    scale = templates.render_template("severity", {})
    assert scale.count("- critical:") == 1
    tools = json.dumps([[t.spec.description, t.spec.parameters]
                        for t in parse_tools_json().values()])
    assert "exploitable" not in tools and "critical:" not in tools
    for name in resources.list_builtin_dir("rules"):
        if name.endswith(".md"):
            assert "**critical** =" not in resources.read_builtin_text(f"rules/{name}"), name
    assert resources.template("main_system").count("{{severity}}") == 1


def review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    monkeypatch.chdir(repo.path)
    rc, data, _ = run_json(["review", "--format", "json", "--no-cache", "--effort", "low", *args],
                           llm.env(), capsys, review_filter=False)
    return rc, data


def test_the_model_learns_where_its_comments_landed_and_escaped_paths_work(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"a&b.py": APP}, "base")
    repo.stage({"a&b.py": GUARD})
    comments = [
        {"path": "a&amp;b.py", "content": "Zero passes.", "existing_code": "if item.price < 0:",
         "severity": "high", "category": "bug"},
        {"path": "a&amp;b.py", "content": "The old loop.", "existing_code": "no such code here",
         "severity": "low", "category": "bug"},
    ]
    llm.tool_calls(("code_comment", {"comments": comments}))
    llm.tool_calls(DONE)
    rc, data = review(repo, llm, monkeypatch, capsys, "--fail-on", "critical")
    assert rc == 0 and data["status"] == "complete"
    system, user = (m["content"] for m in llm.requests[0]["messages"][:2])
    assert '<file path="a&amp;b.py" lines="20">' in user
    assert system.count("- critical:") == 1 and "same reply" in system
    [result] = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert result == ("Filed 2 comments:\n1. a&b.py:13 (new side)\n"
                      f"2. a&amp;b.py: {NOT_PLACED}")
    assert [(c["path"], c["start_line"]) for c in data["comments"]] == [
        ("a&b.py", 13), ("a&b.py", 0)]


# --- file_read_diff: every changed file, read on demand ----------------------------------------

TEST_APP = "from app import total\n\n\ndef test_total():\n    assert total([]) == 0\n"
TEST_APP_NEW = TEST_APP + "\n\ndef test_negative():\n    assert total([-1]) == -1\n"
TEST_APP_DIFF = (
    "==== FILE: tests/test_app.py ====\n"
    "diff --git a/tests/test_app.py b/tests/test_app.py\n"
    "--- a/tests/test_app.py\n+++ b/tests/test_app.py\n"
    "@@ -3,3 +3,7 @@ from app import total\n"
    " \n def test_total():\n     assert total([]) == 0\n"
    "+\n+\n+def test_negative():\n+    assert total([-1]) == -1"
)


def diff_tool_review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    """A review whose model asks file_read_diff for the excluded test file: the tool result the
    next request carries (the prompt lists the file by name only)."""
    llm.tool_calls(("file_read_diff", {"path_array": ["tests/test_app.py"]}))
    llm.tool_calls(DONE)
    rc, data = review(repo, llm, monkeypatch, capsys, *args)
    assert rc == 0 and data["status"] == "complete"
    assert {f["path"]: f["reason"] for f in data["files"]} == {
        "app.py": "", "tests/test_app.py": "default_path"}
    first, second = llm.requests
    prompt = first["messages"][1]["content"]
    assert "tests/test_app.py (+4/-0)" in prompt and "def test_negative" not in prompt
    return [m["content"] for m in second["messages"] if m["role"] == "tool"]


def test_file_read_diff_reads_a_changed_file_excluded_from_review(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"app.py": APP, "tests/test_app.py": TEST_APP}, "base")
    repo.stage({"app.py": GUARD, "tests/test_app.py": TEST_APP_NEW})
    assert diff_tool_review(repo, llm, monkeypatch, capsys) == [TEST_APP_DIFF]


def test_file_read_diff_reads_an_excluded_file_of_a_range(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = repo.commit({"app.py": APP, "tests/test_app.py": TEST_APP}, "base")
    tip = repo.commit({"app.py": GUARD, "tests/test_app.py": TEST_APP_NEW}, "guard")
    repo.stage({"tests/test_app.py": "staged, not in the range\n"})
    assert diff_tool_review(repo, llm, monkeypatch, capsys, "--from", base, "--to", tip) == [
        TEST_APP_DIFF]


# --- code_search: file patterns match like .gitignore lines ------------------------------------

def test_code_search_pattern_with_double_star_finds_a_file_directly_under_the_folder(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``pkg/**/*.py`` matches ``pkg/helpers.py`` (``**/`` spans zero folders), as every user
    of globs expects; git's plain pathspec answered "No matches found" for it."""
    repo.commit({"app.py": APP, "pkg/helpers.py": "def price_of(item):\n    return item.price\n",
                 "pkg/sub/deep.py": "from pkg.helpers import price_of\n"}, "base")
    repo.stage({"app.py": GUARD})
    llm.tool_calls(("code_search", {"search_text": "price_of",
                                    "file_patterns": ["pkg/**/*.py"]}))
    llm.tool_calls(DONE)
    rc, data = review(repo, llm, monkeypatch, capsys)
    assert (rc, data["status"]) == (0, "complete")
    [result] = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "No matches" not in result
    files = [ln.split(":", 1)[1].strip() for ln in result.splitlines() if ln.startswith("File:")]
    assert files == ["pkg/helpers.py", "pkg/sub/deep.py"], result
