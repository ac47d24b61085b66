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


@pytest.mark.parametrize(
    ("flag", "moved_from", "block_preexisting", "verdict", "code"),
    [
        (False, "", False, "findings", Exit.FINDINGS),
        (True, "", False, "pass", Exit.OK),  # the model's preexisting flag
        (None, "a.py:10\u201320", False, "pass", Exit.OK),  # moved unchanged
        (None, "?", False, "pass", Exit.OK),  # moved, source not paired
        (False, "a.py:10\u201320", False, "findings", Exit.FINDINGS),  # the move causes it
        (True, "", True, "findings", Exit.FINDINGS),
        (False, "a.py:10\u201320", True, "findings", Exit.FINDINGS),
        (None, "", False, "findings", Exit.FINDINGS),  # not said
    ],
)
def test_preexisting_and_moved_findings_are_advisory_unless_block_preexisting(
    flag: bool | None, moved_from: str, block_preexisting: bool, verdict: str, code: Exit,
) -> None:
    finding = f(H)._replace(preexisting=flag, moved_from=moved_from)
    d = decide([finding], False, GateOptions(block_preexisting=block_preexisting))
    assert (d.verdict, d.exit_code, d.blocking_findings) == (verdict, code,
                                                             1 if code else 0)


def test_an_advisory_finding_does_not_hide_a_blocking_one() -> None:
    d = decide([f(C)._replace(preexisting=True), f(H, 7)], False, GateOptions())
    assert (d.verdict, d.exit_code, d.blocking_findings) == ("findings", Exit.FINDINGS, 1)
