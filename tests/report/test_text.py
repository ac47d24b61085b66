"""Golden tests of the text output (spec §11.1): blocking findings first and marked, the rest by
severity, each with location, category, message, anchored code, suggestion and id; dismissed
findings; excluded paths with reasons in words; the verdict in words with the mode.

The expected texts are files in ``tests/data/text/``. After a deliberate change of the output,
regenerate them with ``OCR_HOOK_REGEN_GOLDENS=1 .venv/bin/python -m pytest
tests/report/test_text.py`` and review the diff. Real: the renderer. Synthetic: the results
(built in the test, so every case is exact)."""

from __future__ import annotations

import io
import os
from dataclasses import replace

import pytest

from ocr_hook.comments.dismissals import DismissedFinding
from ocr_hook.findings import Finding
from ocr_hook.gate import GateOptions, decide
from ocr_hook.llm.types import Usage
from ocr_hook.report.result import FileOutcome, ReviewResult
from ocr_hook.report.text import verdict_line, write_text
from ocr_hook.vocabulary import Severity
from tests.support.paths import DATA

GOLDEN_DIR = DATA / "text"
REGEN = os.environ.get("OCR_HOOK_REGEN_GOLDENS") == "1"


def finding(fid: str, path: str, start: int, end: int, sev: Severity, category: str,
            content: str, code: str, suggestion: str = "", side: str = "new",
            anchor: str = "hunk_new") -> Finding:
    return Finding(id=fid, path=path, side=side, start_line=start, end_line=end, severity=sev,
                   category=category, content=content, existing_code=code.strip(),
                   suggestion_code=suggestion, anchor=anchor, code=code if start else "")


FINDINGS = [  # in file order, as a review returns them
    finding("a1b2c3d4e5f6", "api/users.py", 12, 12, Severity.LOW, "style",
            "Name the constant instead of the magic number 86400.",
            "    ttl = 86400"),
    finding("0f1e2d3c4b5a", "api/users.py", 30, 31, Severity.CRITICAL, "security",
            "User input is concatenated into SQL: injection.",
            "    q = \"SELECT * FROM users WHERE name = '\" + name\n    cur.execute(q)",
            "    cur.execute(\"SELECT * FROM users WHERE name = ?\", (name,))"),
    finding("99aa88bb77cc", "lib/cache.py", 7, 7, Severity.MEDIUM, "bug",
            "The lock is released before the dict is read.",
            "        value = self._data.get(key)"),
    finding("1234abcd5678", "lib/cache.py", 0, 0, Severity.HIGH, "performance",
            "The whole cache is copied on every lookup.",
            "return dict(self._data)[key]", anchor="none"),
    finding("fedcba987654", "lib/cache.py", 20, 20, Severity.HIGH, "bug",
            "The removed check allowed negative sizes.",
            "    if size < 0: raise ValueError(size)", side="old", anchor="hunk_old"),
]
FILES = [
    FileOutcome("api/users.py", "api/users.py", "modified", True, "", 9, 2, True),
    FileOutcome("lib/cache.py", "lib/cache.py", "modified", True, "", 4, 4, True),
    FileOutcome("yarn.lock", "yarn.lock", "modified", False, "unsupported_ext", 80, 12),
    FileOutcome("package-lock.json", "package-lock.json", "modified", False, "default_path",
                300, 120),
    FileOutcome("dist/app.min.js", "dist/app.min.js", "modified", False, "provider_directory",
                1, 1),
    FileOutcome("vendor/github.com/x/y.go", "vendor/github.com/x/y.go", "added", False,
                "provider_directory", 40, 0),
    FileOutcome("tests/test_users.py", "tests/test_users.py", "modified", False, "default_path",
                20, 3),
    FileOutcome("docs/logo.png", "docs/logo.png", "added", False, "binary", 0, 0),
    FileOutcome("gen/api.pb.go", "gen/api.pb.go", "modified", False, "default_path", 50, 50),
]


def result(findings: list[Finding], gate: GateOptions, files: list[FileOutcome] = FILES,
           dismissed: list[DismissedFinding] | None = None,
           incomplete: bool = False, status: str = "complete") -> ReviewResult:
    r = ReviewResult(
        status=status, decision=decide(findings, incomplete, gate), gate=gate,
        findings=list(findings), files=list(files), groups=[], warnings=[],
        input={"mode": "staged"}, llm={"provider": "custom", "model": "m"},
        usage=Usage(input_tokens=5230, output_tokens=412), llm_calls=3, llm_attempts=3,
        elapsed_ms=4200, session_id="s")
    r.dismissed = list(dismissed or [])
    return r


DISMISSED = DismissedFinding(
    finding("5566778899aa", "api/users.py", 44, 44, Severity.HIGH, "security",
            "Token compared with ==.", "    if token == expected:"),
    "personal", "constant-time compare is done by the caller", "Ann <ann@example.com>")

CASES = {
    "blocked": result(FINDINGS, GateOptions()),
    "advisory": result(FINDINGS, GateOptions(mode="advisory")),
    "pass_with_dismissed": result(FINDINGS[:1], GateOptions(), dismissed=[DISMISSED]),
    "incomplete_allowed": result(
        [], GateOptions(),
        files=[replace(FILES[0], reviewed=False, reason="timeout"), *FILES[1:3]],
        incomplete=True, status="partial"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_output_matches_golden(name: str) -> None:
    buf = io.StringIO()
    r = CASES[name]
    if name == "incomplete_allowed":
        r.incomplete_reasons = ["NOT REVIEWED: 1 of 2 files: time limit of 300s reached"
                                " (review.timeout_s, --timeout)"]
    write_text(r, buf, {"NO_COLOR": "1"})
    path = GOLDEN_DIR / f"{name}.txt"
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(buf.getvalue(), encoding="utf-8")
    assert buf.getvalue() == path.read_text(encoding="utf-8")


def test_blocking_findings_come_first_then_by_severity() -> None:
    buf = io.StringIO()
    write_text(CASES["blocked"], buf, {"NO_COLOR": "1"})
    heads = [ln for ln in buf.getvalue().splitlines() if "] id " in ln
             and not ln.startswith(("dismissed:", " "))]
    assert [h.rsplit(" id ", 1)[1] for h in heads] == [
        "0f1e2d3c4b5a", "fedcba987654", "1234abcd5678", "99aa88bb77cc", "a1b2c3d4e5f6"]
    assert [h.startswith("BLOCKING ") for h in heads] == [True, True, True, False, False]


@pytest.mark.parametrize(("case", "line"), [
    ("blocked", "BLOCKED: 3 findings at or above high (blocking mode)"),
    ("advisory", "PASS: 3 findings at or above high, not blocking (advisory mode)"),
    ("pass_with_dismissed", "PASS: no finding at or above high, 1 dismissed (blocking mode)"),
    ("incomplete_allowed",
     "PASS: review incomplete, let through by gate.on_error = allow (blocking mode)"),
])
def test_verdict_line_says_what_happened_with_the_mode(case: str, line: str) -> None:
    assert verdict_line(CASES[case]) == line


def test_verdict_line_for_one_finding_and_for_incomplete_blocked() -> None:
    assert verdict_line(result(FINDINGS[1:2], GateOptions(fail_on="critical"))) == (
        "BLOCKED: 1 finding at or above critical (blocking mode)")
    assert verdict_line(result([], GateOptions(on_error="block"), incomplete=True)) == (
        "BLOCKED: review incomplete and gate.on_error = block (blocking mode)")


def test_files_reviewed_whole_are_listed_first_and_capped() -> None:
    from ocr_hook.report.text import COVERAGE_LINES_MAX, coverage_lines

    whole = [FileOutcome(f"src/t{i}.py", f"tests/test_t{i}.py", "renamed", True, "", 3, 0,
                         True, "reviewed whole, its old path was left out: test file",
                         whole="default_path")
             for i in range(COVERAGE_LINES_MAX + 2)]
    lines = coverage_lines([*whole, FileOutcome("README.md", "README.md", "modified", False,
                                                "unsupported_ext", 1, 0)])
    assert lines[0] == ("reviewed whole: tests/test_t0.py → src/t0.py (its old path was left"
                        " out: test file)")
    assert lines[COVERAGE_LINES_MAX:] == ["reviewed whole: 2 more",
                                          "excluded: README.md (not a source file type)"]
