"""The ``delegated`` entry kind of the result cache (``pipeline.delegated``, spec §10): stored
and read like a run entry, in its own directory, so a run lookup of the same key never sees it
and a broken file is a miss that is removed."""

from __future__ import annotations

from pathlib import Path

from ocr_hook.findings import Finding
from ocr_hook.pipeline.cache.store import ResultCache
from ocr_hook.vocabulary import AnchorMethod, Category, Severity

KEY = "ab" * 32


def finding() -> Finding:
    return Finding(id="f1", path="calc.py", side="new", start_line=8, end_line=8,
                   severity=Severity.HIGH, category=Category.lookup("bug") or "bug",
                   content="empty list", existing_code="    return sum(xs) / len(xs)",
                   suggestion_code="", anchor=AnchorMethod.lookup("hunk_new") or "hunk_new",
                   code="    return sum(xs) / len(xs)")


def test_delegated_entry_round_trips_apart_from_run_entries(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache", 1 << 20, "0.1.0")
    cache.put_run(KEY, [finding()], [("calc.py", ["calc.py"])], effort="high", kind="delegated")
    assert [p.name for p in (tmp_path / "cache" / "delegated").iterdir()] == [f"{KEY}.json"]
    assert cache.get_run(KEY, "low") is None  # not a run entry
    hit = cache.get_run(KEY, "low", kind="delegated")
    assert hit is not None
    assert [(e.path, e.start_line, e.end_line, e.severity, e.anchor) for e in hit.findings] == [
        ("calc.py", 8, 8, "high", "hunk_new")]
    assert [(g.label, g.files) for g in hit.groups] == [("calc.py", ["calc.py"])]
    assert (cache.hits, cache.stats().entries["delegated"]) == (1, 1)


def test_a_broken_delegated_entry_is_a_miss_and_removed(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache", 1 << 20, "0.1.0")
    path = tmp_path / "cache" / "delegated" / f"{KEY}.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    assert cache.get_run(KEY, "low", kind="delegated") is None
    assert not path.exists()
