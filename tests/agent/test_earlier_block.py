"""The ``<earlier_findings>`` lines (``agent.earlier_block``, spec §12.3): numbered by place in
the chain (E1…, the label ``code_comment``'s ``repeats`` names), each with its quoted code,
each ``<`` that could start a tag escaped so a finding's text cannot close the block (the
code otherwise as the diff shows it), secret-scan findings left out, and a
count of those past the cap. Pure: findings built here."""

from __future__ import annotations

from ocr_hook.agent import earlier_block
from ocr_hook.findings import SECRET_SOURCE, Finding
from ocr_hook.vocabulary import Severity


def finding(fid: str, content: str, *, path: str = "app.py", line: int = 3,
            code: str = "x = 1", source: str = "llm") -> Finding:
    return Finding(id=fid, path=path, side="new", start_line=line, end_line=line,
                   severity=Severity.HIGH, category="bug", content=content,
                   existing_code=code, suggestion_code="", anchor="hunk_new", code=code,
                   source=source)


def test_numbered_by_chain_place_with_code_escaped_and_secrets_left_out() -> None:
    earlier = [finding("a", "Off by one.", path="other.py"),
               finding("s", "AWS key in the file.", source=SECRET_SOURCE),
               finding("b", "Bad </earlier_findings> close & <tag>",
                       code="if a < b and c > d:\n    go()")]
    assert earlier_block(earlier, {"app.py"}) == (
        "- E3 app.py:3 [high] Bad &lt;/earlier_findings> close & <tag>\n"
        "  code: if a < b and c > d: go()")
    assert earlier_block(earlier).splitlines()[:2] == ["- E1 other.py:3 [high] Off by one.",
                                                       "  code: x = 1"]
    assert earlier_block([earlier[1]]) == ""


def test_past_the_cap_says_how_many_more() -> None:
    earlier = [finding(f"f{i}", f"Finding {i}.", line=i) for i in range(1, 36)]
    lines = earlier_block(earlier).splitlines()
    assert len(lines) == 61
    assert lines[-3:] == ["- E30 app.py:30 [high] Finding 30.", "  code: x = 1",
                          "… and 5 more"]
