"""The comparison of two reviews' findings (``comments.compare``, spec §12.2, §12.3): keyed like
dismissals (path, normalised anchored code, category), so moved lines and reworded findings
persist, changed code resolves; the re-review of a blocked one also pairs a finding the model
raised again on changed code or named by its label (E2), resolves what the model was shown and
did not raise again, carries what it did not review, counts dismissed ones apart; and the
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
    assert cmp.ids() == {"resolved": ["a2"], "persisting": ["b1"], "new": ["b2"], "carried": [],
                         "dismissed": []}


def test_same_key_twice_pairs_in_order_and_the_extra_one_is_new() -> None:
    cmp = compare_by_key([finding("a1")], [finding("b1"), finding("b2", content="Other claim.")])
    assert [(x.id, y.id if y else None) for x, y in cmp.persisting] == [("a1", "b1")]
    assert [f.id for f in cmp.new] == ["b2"] and cmp.resolved == []


def test_since_raised_again_on_changed_code_persists_silence_on_a_reviewed_file_resolves() -> None:
    earlier = [finding("e1"), finding("e2", "return x / y", line=9, category="bug",
                                      content="Division by zero when y is 0.")]
    # e1's line was edited but the model files the same claim on it; e2 is not filed again
    current = [finding("c1", SQL.replace("name", "user_name"), line=5)]
    cmp = compare_since(earlier, current, {"app.py"})
    assert cmp.ids() == {"resolved": ["e2"], "persisting": ["c1"], "new": [], "carried": [],
                         "dismissed": []}
    assert cmp.counts() == "1 resolved, 1 persisting, 0 new"


def test_since_unchanged_code_the_model_did_not_raise_again_is_resolved_not_persisting() -> None:
    # a guard added above the unchanged line fixed it: the model was shown it and is silent
    cmp = compare_since([finding("e1")], [], {"app.py"})
    assert cmp.ids() == {"resolved": ["e1"], "persisting": [], "new": [], "carried": [],
                         "dismissed": []}


def test_since_a_file_the_review_did_not_cover_is_carried() -> None:
    earlier = [finding("e1"), finding("e2", path="other.py")]
    cmp = compare_since(earlier, [], {"other.py"})
    assert cmp.ids() == {"resolved": ["e2"], "persisting": [], "new": [], "carried": ["e1"],
                         "dismissed": []}
    assert cmp.counts() == "1 resolved, 0 persisting, 0 new, 1 carried"
    assert compare_since(earlier, [], set()).ids()["carried"] == ["e1", "e2"]


def test_since_a_reworded_re_raise_with_its_label_persists_before_any_key() -> None:
    earlier = [finding("e1", "return x / y", line=9, category="bug",
                       content="Division by zero when y is 0."), finding("e2")]
    # other code, other words, other category: only the label says it is E2
    again = finding("c1", "cursor.execute(query)", line=12, category="bug",
                    content="The query is still built from raw input.")._replace(repeats="E2")
    cmp = compare_since(earlier, [again], {"app.py"})
    assert cmp.ids() == {"resolved": ["e1"], "persisting": ["c1"], "new": [], "carried": [],
                         "dismissed": []}
    assert [(a.id, b.id) for a, b in cmp.persisting] == [("e2", "c1")]
    # session compare reads the earlier id the session recorded
    by_id = compare_by_key(earlier, [again._replace(repeats="e2")])
    assert by_id.ids()["persisting"] == ["c1"] and by_id.ids()["resolved"] == ["e1"]
    assert compare_by_key(earlier, [again._replace(repeats="")]).counts() == (
        "2 resolved, 0 persisting, 1 new")


def test_a_label_naming_a_finding_on_another_path_is_ignored() -> None:
    earlier = [finding("e1"), finding("e2", path="other.py")]
    # filed on other.py, labelled E1 (app.py's): matched by key to e2, never to e1
    wrong = finding("c1", path="other.py")._replace(repeats="E1")
    cmp = compare_since(earlier, [wrong], {"app.py", "other.py"})
    assert cmp.ids() == {"resolved": ["e1"], "persisting": ["c1"], "new": [], "carried": [],
                         "dismissed": []}
    assert [(a.id, b.id) for a, b in cmp.persisting] == [("e2", "c1")]
    # by id too (session compare); nothing on other.py to pair with: new, e1 resolved
    by_id = compare_by_key(earlier[:1], [wrong._replace(repeats="e1")])
    assert by_id.ids()["resolved"] == ["e1"] and by_id.ids()["new"] == ["c1"]
    assert by_id.ids()["persisting"] == []


def test_a_label_naming_no_earlier_finding_is_ignored_and_the_key_still_pairs() -> None:
    earlier = [finding("e1")]
    for label in ("E7", "b1b1b1b1b1b1"):  # out of range; an id of a session in between
        again = finding("c1")._replace(repeats=label)
        since = compare_since(earlier, [again], {"app.py"})
        assert since.ids() == {"resolved": [], "persisting": ["c1"], "new": [], "carried": [],
                               "dismissed": []}, label
        assert compare_by_key(earlier, [again]).ids()["persisting"] == ["c1"], label


def test_a_dismissed_earlier_finding_counts_as_dismissed_in_both() -> None:
    earlier = [finding("e1")]
    gone = [finding("d1", "  " + SQL)]  # this review filed it again and it was dismissed
    since = compare_since(earlier, [], {"app.py"}, gone)
    assert since.ids() == {"resolved": [], "persisting": [], "new": [], "carried": [],
                           "dismissed": ["e1"]}
    assert since.counts() == "0 resolved, 0 persisting, 0 new, 1 dismissed"
    assert compare_by_key(earlier, [], gone).counts() == "0 resolved, 0 persisting, 0 new, 1 dismissed"


def test_finding_from_record_reads_a_comment_record_and_refuses_a_broken_one() -> None:
    rec = {"type": "comment", "id": "abc123abc123", "path": "app.py", "side": "new",
           "start_line": 12, "end_line": 12, "severity": "critical", "category": "security",
           "anchor": "hunk_new", "content": "SQL.", "source": "llm", "code": SQL}
    f = finding_from_record(rec)
    assert f is not None
    assert (f.id, f.path, f.start_line, f.severity, f.category, f.code) == (
        "abc123abc123", "app.py", 12, Severity.CRITICAL, "security", SQL)
    assert finding_from_record({**rec, "repeats": "e2e2e2e2e2e2"}).repeats == "e2e2e2e2e2e2"  # type: ignore[union-attr]
    assert finding_from_record({**rec, "severity": "fatal"}) is None
    assert finding_from_record({**rec, "id": 7}) is None
    assert finding_from_record({**rec, "start_line": "12"}).start_line == 0  # type: ignore[union-attr]
