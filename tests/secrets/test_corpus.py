"""Secret detection and redaction on the corpus of realistic fake secrets (spec §14.1):
``tests/support/secret_corpus.py``, 49 cases (cloud, VCS, payment, chat and
package-registry tokens, PEM blocks and their base64, connection strings, passwords of any length,
CRLF lines, a value on the line after its JSON key, a key split over two string literals, an
allow-marked token).

Real: the rule file, git repositories, the review pipeline through ``cli.main``, HTTP to the
scripted loopback model that records every request, the session file. Fake: the secrets (never
issued) and the model's replies.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocr_hook.diff.model import FileDiff, Hunk, Line
from ocr_hook.report.session import sessions_dir
from ocr_hook.secrets import diff_scan
from ocr_hook.secrets.redaction import find_secrets, redact
from tests.support import secret_corpus as corpus
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM, openai_text
from tests.support.secret_corpus import CASES, all_leaks, case_lines, corpus_files

GROUPING = "sort the changed files"  # in the grouping system prompt
SECRET_CONTENT_START = "Hard-coded secret ("


def test_corpus_covers_at_least_thirty_formats_with_crlf_and_multi_line_values() -> None:
    assert len({c.name for c in CASES}) == len(CASES) == 49
    assert len({c.type for c in CASES}) == 34
    assert any("\r\n" in c.text for c in CASES)
    assert sum(c.end_line > c.line for c in CASES) == 4  # split key, 3 PEM blocks
    assert [c.name for c in CASES if not c.finding] == ["allow-marked-token"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_is_one_finding_of_its_type_on_its_line_and_is_redacted(case: Any) -> None:
    hits = find_secrets(case.text)
    if case.finding:
        assert [(h.type, h.line) for h in hits] == [(case.type, case.line)]
        assert hits[0].line + hits[0].value.count("\n") == case.last_line
    else:
        assert hits == []
    redacted, count = redact(case.text)
    assert count == 1
    assert [leak for leak in case.leaks if leak in redacted] == []
    assert f"[REDACTED:{case.type}]" in redacted
    assert redacted.count("\n") == case.text.count("\n")
    assert redacted.count("\r\n") == case.text.count("\r\n")


def _added(path: str, text: str) -> FileDiff:
    rows = text.split("\n")[:-1]
    lines = tuple(Line("+", t, None, i) for i, t in enumerate(rows, 1))
    hunk = Hunk(0, 0, 1, len(lines), f"@@ -0,0 +1,{len(lines)} @@", lines)
    return FileDiff("added", path, path, hunks=(hunk,), insertions=len(lines),
                    patch="\n".join("+" + t for t in rows))


def expected_findings() -> list[tuple[str, int, int, str]]:
    lines = case_lines()
    return sorted((c.file, *lines[c.name], c.type) for c in CASES if c.finding)


def test_scanning_the_corpus_as_added_files_anchors_every_finding_to_its_lines() -> None:
    files = [_added(path, text) for path, text in corpus_files().items()]
    found = diff_scan.secret_findings(files)
    assert sorted((f.path, f.start_line, f.end_line,
                   f.content[len(SECRET_CONTENT_START):].split(")")[0]) for f in found
                  ) == expected_findings()
    assert {(f.severity.name, f.category, f.anchor) for f in found} == {
        ("CRITICAL", "security", "hunk_new")}
    shown = json.dumps([f.existing_code for f in found])
    assert [leak for leak in all_leaks() if leak in shown] == []
    for fd in files:
        diff_scan.redact_file_diff(fd, lambda s: redact(s)[0])
    sent = "\n".join(fd.patch + "".join(ln.text for h in fd.hunks for ln in h.lines)
                     for fd in files)
    assert [leak for leak in all_leaks() if leak in sent] == []


def test_a_review_of_the_corpus_sends_no_secret_value_in_any_request(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = corpus_files()
    paths = list(files)
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage(dict(files))
    before = repo.state()
    llm.reply(openai_text(json.dumps([{"label": "all", "files": paths}])), match=GROUPING)
    llm.tool_calls(*[("file_read", {"file_path": p}) for p in paths],
                   ("code_search", {"search_text": "password"}),
                   ("code_search", {"search_text": "KEY"}),
                   # fragments of hidden values: the redacted text is searched, so none
                   # of them is found (no match / no match oracle on hidden characters)
                   ("code_search", {"search_text": corpus.AWS_SPLIT_ID[10:15]}),
                   ("code_search", {"search_text": corpus.RSA_BODY[2][:12]}),
                   ("code_search", {"search_text": corpus.JSON_PW[:6]}),
                   ("file_read_diff", {"path_array": paths}))
    llm.tool_calls(("code_comment", {"comments": [{
        "path": "app/settings.py", "existing_code": 'GITHUB_TOKEN = "[REDACTED:github-token]"',
        "content": "Load tokens from the environment.", "severity": "high",
        "category": "security"}]}), ("task_done", {"state": "DONE"}))
    llm.tool_calls(("approve_all_comments", {}), match="approve_all_comments")
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--effort", "low", "--no-cache",
                            "--filter"], llm.env(), capsys)
    data = json.loads(out)
    assert rc == 1, err
    assert data["status"] == "complete"
    assert [(g["label"], g["files"]) for g in data["groups"]] == [("all", paths)]
    assert len(llm.requests) == 4  # grouping, main x2, review filter
    assert where_leaked(llm.requests) == []
    # every file was sent (in the prompt and through the tools), redacted
    tool_results = [m["content"] for m in llm.requests[2]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == len(paths) + 6
    assert sum("[REDACTED:" in r for r in tool_results) == len(paths) + 3
    assert tool_results[len(paths) + 2:len(paths) + 5] == ["No matches found"] * 3
    lines = case_lines()
    assert ('FIXTURE_TOKEN = "[REDACTED:github-token]"  # ocr-hook: allow-secret'
            in llm.requests[2]["messages"][1]["content"])
    secret_spots = sorted(
        (c["path"], c["start_line"], c["end_line"],
         c["content"][len(SECRET_CONTENT_START):].split(")")[0])
        for c in data["comments"] if c["content"].startswith(SECRET_CONTENT_START))
    assert secret_spots == expected_findings()
    [model] = [c for c in data["comments"] if c["severity"] == "high"]
    assert (model["path"], model["start_line"], model["anchor"]) == (
        "app/settings.py", lines["github-classic"][0], "hunk_new")
    assert [leak for leak in all_leaks() if leak in out] == []
    raw = (sessions_dir(repo.path / ".git") / f"{data['session_id']}.jsonl").read_text("utf-8")
    assert [leak for leak in all_leaks() if leak in raw] == []
    assert repo.state() == before


def where_leaked(requests: list[dict[str, Any]]) -> list[tuple[int, int, str, str]]:
    """(request, message, role, excerpt) of each corpus secret found in ``requests``."""
    out = []
    for i, r in enumerate(requests):
        for j, m in enumerate(r["messages"]):
            text = json.dumps(m)
            for leak in all_leaks():
                if leak in text:
                    k = text.index(leak)
                    out.append((i, j, m["role"], text[max(0, k - 120):k + 40]))
    return out
