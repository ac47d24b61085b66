"""Finding ids and same-claim merging (spec §8.3). Pure: literal findings, no I/O."""

from __future__ import annotations

import pytest

from ocr_hook.findings import (
    MOVED_UNKNOWN,
    Finding,
    advisory_reason,
    advisory_text,
    finding_id,
    merge_same_claims,
    same_claim,
)
from ocr_hook.vocabulary import Severity

SQL = "User input is concatenated into the SQL query: injection. Use a parameterised query."


def finding(start: int, end: int, content: str = SQL, severity: Severity = Severity.HIGH,
            *, path: str = "app.py", side: str = "new", quote: str = "query = q + name",
            category: str = "security") -> Finding:
    return Finding(finding_id(path, side, quote, content), path, side, start, end, severity,
                   category, content, quote, "", "hunk_new" if start else "none")


def test_id_is_12_hex_chars_and_ignores_lines_and_whitespace() -> None:
    a = finding_id("app.py", "new", "    query = q + name\n", SQL)
    b = finding_id("app.py", "new", "\n+query  =  q + name\r\n\n", "  " + SQL.replace(" ", "  "))
    assert a == b
    assert len(a) == 12 and int(a, 16) >= 0
    assert finding(12, 12).id == finding(40, 41).id  # lines are not part of the id


@pytest.mark.parametrize("other", [
    ("lib.py", "new", "query = q + name", SQL),
    ("app.py", "old", "query = q + name", SQL),
    ("app.py", "new", "query = q + other", SQL),
    ("app.py", "new", "query = q + name", SQL + " Also log it."),
])
def test_id_changes_with_path_side_quote_or_content(other: tuple[str, str, str, str]) -> None:
    assert finding_id(*other) != finding_id("app.py", "new", "query = q + name", SQL)


def test_overlapping_same_claim_merges_keeping_highest_severity() -> None:
    low = finding(12, 13, severity=Severity.MEDIUM)
    crit = finding(13, 14, severity=Severity.CRITICAL)._replace(id="other-id")
    assert merge_same_claims([low, crit]) == [crit]
    assert merge_same_claims([crit, low]) == [crit]


def test_reworded_same_claim_merges() -> None:
    a = finding(12, 12, "SQL injection: user input is concatenated into the query string.")
    b = finding(12, 12, "User input concatenated into the query string: SQL injection!",
                Severity.CRITICAL)
    assert a.id != b.id
    assert same_claim(a, b)
    assert merge_same_claims([a, b]) == [b]


def test_same_line_different_claims_are_both_kept() -> None:
    sql = finding(12, 12)
    leak = finding(12, 12, "The cursor is never closed; use a with block.", Severity.MEDIUM,
                   category="bug")
    none = finding(12, 12, "name may be None here and the concatenation raises TypeError.",
                   category="bug")
    assert merge_same_claims([sql, leak, none]) == [sql, leak, none]


def test_claims_differing_in_a_quoted_identifier_are_both_kept() -> None:
    q = "total = price * qty + fee"
    a = finding(5, 5, "price may be negative here and the total becomes wrong for refunds.",
                category="bug", quote=q)
    b = finding(5, 5, "fee may be negative here and the total becomes wrong for refunds.",
                category="bug", quote=q)
    assert not same_claim(a, b)
    assert merge_same_claims([a, b]) == [a, b]


def test_same_claim_without_overlap_or_on_other_side_is_kept() -> None:
    a = finding(12, 12)
    far = finding(30, 31)._replace(id="far")
    old = finding(12, 12, side="old")._replace(id="old")
    assert merge_same_claims([a, far, old]) == [a, far, old]


def test_unanchored_duplicates_merge_only_with_the_same_quote() -> None:
    a = finding(0, 0)._replace(id="a")
    b = finding(0, 0, severity=Severity.CRITICAL)._replace(id="b")
    c = finding(0, 0, quote="something else entirely")._replace(id="c")
    assert merge_same_claims([a, b, c]) == [b, c]


def test_identical_ids_merge_regardless_of_lines() -> None:
    a = finding(12, 12)
    b = finding(40, 40, severity=Severity.CRITICAL)  # same id: same path/side/quote/content
    assert merge_same_claims([a, b]) == [b]


def test_a_merged_finding_is_preexisting_only_when_every_copy_was() -> None:
    a, b = finding(3, 3), finding(3, 4, severity=Severity.CRITICAL)
    assert [m.preexisting for m in merge_same_claims([a._replace(preexisting=True), b])] == [
        None]
    assert [m.preexisting for m in merge_same_claims([a._replace(preexisting=True),
                                                      b._replace(preexisting=False)])] == [False]
    merged = merge_same_claims([a._replace(preexisting=True), b._replace(preexisting=True)])
    assert [(m.severity, m.preexisting) for m in merged] == [(Severity.CRITICAL, True)]


def test_advisory_reason_and_text() -> None:
    f = finding(3, 3)
    assert (advisory_reason(f), advisory_text(f)) == ("", "")
    assert advisory_text(f._replace(preexisting=True)) == (
        "advisory: pre-existing (reported by the model)")
    moved = f._replace(moved_from="a.py:10\u201320")
    assert (advisory_reason(moved), advisory_text(moved)) == (
        "moved", "advisory: moved unchanged from a.py:10\u201320")
    assert advisory_text(f._replace(moved_from=MOVED_UNKNOWN)) == "advisory: moved unchanged"
    assert advisory_reason(moved._replace(preexisting=True)) == "preexisting"
    # the model says the change (the move itself) causes it: never advisory
    assert (advisory_reason(moved._replace(preexisting=False)),
            advisory_text(moved._replace(preexisting=False))) == ("", "")
