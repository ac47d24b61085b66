"""Gate (spec §9): structured severities + options → verdict and exit code. Pure table tests."""

from __future__ import annotations

import pytest

from ocr_hook.findings import Finding
from ocr_hook.gate import Exit, GateOptions, decide
from ocr_hook.vocabulary import Severity


def f(sev: Severity, start_line: int = 3) -> Finding:
    return Finding(id=f"{sev.label}{start_line}", path="a.py", side="new", start_line=start_line,
                   end_line=start_line, severity=sev, category="bug",
                   content="this looks CRITICAL and must block", existing_code="x",
                   suggestion_code="", anchor="hunk_new" if start_line else "none")


C, H, M, L = Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW


@pytest.mark.parametrize(
    ("findings", "incomplete", "mode", "fail_on", "on_error", "verdict", "code", "hits"),
    [
        ([], False, "blocking", "high", "allow", "pass", Exit.OK, 0),
        ([L, M], False, "blocking", "high", "allow", "pass", Exit.OK, 0),  # wording is ignored
        ([H], False, "blocking", "high", "allow", "findings", Exit.FINDINGS, 1),
        ([C, H, L], False, "blocking", "high", "allow", "findings", Exit.FINDINGS, 2),
        ([H], False, "blocking", "critical", "allow", "pass", Exit.OK, 0),
        ([M], False, "blocking", "medium", "allow", "findings", Exit.FINDINGS, 1),
        ([L], False, "blocking", "low", "allow", "findings", Exit.FINDINGS, 1),
        ([C], False, "advisory", "high", "block", "findings", Exit.OK, 1),
        ([], True, "blocking", "high", "allow", "incomplete", Exit.OK, 0),
        ([], True, "blocking", "high", "block", "incomplete", Exit.INCOMPLETE, 0),
        ([], True, "advisory", "high", "block", "incomplete", Exit.OK, 0),
        ([L], True, "blocking", "high", "block", "incomplete", Exit.INCOMPLETE, 0),
        ([H], True, "blocking", "high", "block", "findings", Exit.FINDINGS, 1),  # findings first
    ],
)
def test_gate_table(findings: list[Severity], incomplete: bool, mode: str, fail_on: str,
                    on_error: str, verdict: str, code: Exit, hits: int) -> None:
    d = decide([f(s) for s in findings], incomplete, GateOptions(mode, fail_on, on_error))
    assert (d.verdict, d.exit_code, d.blocking_findings) == (verdict, int(code), hits)
    assert d.blocked is (code != Exit.OK)


def test_unanchored_findings_count() -> None:
    d = decide([f(H, start_line=0)], False, GateOptions())
    assert (d.verdict, d.exit_code) == ("findings", 1)
