"""The comparison of two reviews' findings (``comments.compare``, spec §12.2, §12.3): keyed like
dismissals (path, normalised anchored code, category), so moved lines and reworded findings
persist, changed code resolves; the re-review of a blocked one also counts a finding the model
raised again on changed code, and one whose code is still in the file, as persisting; and the
session records the comparison reads. Pure: findings built here."""

from __future__ import annotations

from ocr_hook.comments import compare_by_key, compare_since, finding_from_record
from ocr_hook.findings import Finding
from ocr_hook.vocabulary import Severity

SQL = "query = \"SELECT * FROM users WHERE name = '\" + name + \"'\""


def finding(fid: str, code: str = SQL, *, line: int = 5, path: str = "app.py",
            content: str = "User input is concatenated into SQL.",
            category: str = "security") -> Finding:
    return Finding(id=fid, path=path, side="new", start_line=line, end_line=line,
                   severity=Severity.CRITICAL, category=category, content=content,
                   existing_code=code, suggestion_code="", anchor="hunk_new", code=code)


def test_moved_and_reworded_finding_persists_changed_code_resolves_and_new_is_new() -> None:
    a = [finding("a1"), finding("a2", "return x / y", line=9, category="bug")]
    b = [finding("b1", "    " + SQL + "  ", line=7, content="SQL injection here."),  # moved
         finding("b2", "open(path)", line=3, category="bug")]
    cmp = compare_by_key(a, b)
    assert [f.id for f in cmp.resolved] == ["a2"]
    assert [(x.id, y.id if y else None) for x, y in cmp.persisting] == [("a1", "b1")]
    assert [f.id for f in cmp.new] == ["b2"]
    assert cmp.counts() == "1 resolved, 1 persisting, 1 new"
    assert cmp.ids() == {"resolved": ["a2"], "persisting": ["b1"], "new": ["b2"]}


def test_same_key_twice_pairs_in_order_and_the_extra_one_is_new() -> None:
    cmp = compare_by_key([finding("a1")], [finding("b1"), finding("b2", content="Other claim.")])
    assert [(x.id, y.id if y else None) for x, y in cmp.persisting] == [("a1", "b1")]
    assert [f.id for f in cmp.new] == ["b2"] and cmp.resolved == []


def test_since_raised_again_on_changed_code_persists_silence_on_gone_code_resolves() -> None:
    earlier = [finding("e1"), finding("e2", "return x / y", line=9, category="bug",
                                      content="Division by zero when y is 0.")]
    # e1's line was edited but the model files the same claim on it; e2's code is gone
    current = [finding("c1", SQL.replace("name", "user_name"), line=5)]
    asked: list[str] = []

    def still_there(f: Finding) -> bool:
        asked.append(f.id)
        return False

    cmp = compare_since(earlier, current, still_there)
    assert cmp.ids() == {"resolved": ["e2"], "persisting": ["c1"], "new": []}
    assert asked == ["e2"]  # asked only for what neither key nor claim matched


def test_since_unchanged_code_the_model_did_not_raise_again_still_persists() -> None:
    cmp = compare_since([finding("e1")], [], lambda f: f.id == "e1")
    assert cmp.ids() == {"resolved": [], "persisting": ["e1"], "new": []}
    assert cmp.persisting[0][1] is None


def test_finding_from_record_reads_a_comment_record_and_refuses_a_broken_one() -> None:
    rec = {"type": "comment", "id": "abc123abc123", "path": "app.py", "side": "new",
           "start_line": 12, "end_line": 12, "severity": "critical", "category": "security",
           "anchor": "hunk_new", "content": "SQL.", "source": "llm", "code": SQL}
    f = finding_from_record(rec)
    assert f is not None
    assert (f.id, f.path, f.start_line, f.severity, f.category, f.code) == (
        "abc123abc123", "app.py", 12, Severity.CRITICAL, "security", SQL)
    assert finding_from_record({**rec, "severity": "fatal"}) is None
    assert finding_from_record({**rec, "id": 7}) is None
    assert finding_from_record({**rec, "start_line": "12"}).start_line == 0  # type: ignore[union-attr]
