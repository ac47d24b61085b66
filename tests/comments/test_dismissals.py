"""Dismissals (spec §8.5) on real repositories through ``cli.main``: ``git ocr dismiss ID``
survives moved lines, an amend and a reworded finding; ``--undo`` brings the finding back; a
shared dismissal staged in the commit under review does not apply to it; the inline marker
suppresses only its own line; secret findings cannot be dismissed.

Real: git, the session log, the cache, the dismissal files, HTTP. Fake: the model's replies
(the loopback scripted server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.comments.dismissals import apply_dismissals, dismiss_key, inline_reason
from ocr_hook.findings import Finding
from ocr_hook.vocabulary import Severity
from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

SQL = "    query = \"SELECT * FROM users WHERE name = '\" + name + \"'\""
APP = f"import db\n\n\ndef find(name):\n{SQL}\n    return db.run(query)\n"
# the same function after an amend: two lines above it, so the SQL line moves from 5 to 7
APP_MOVED = f"import db\nimport logging\n\nlog = logging.getLogger()\n\ndef find(name):\n{SQL}\n" \
            "    return db.run(query)\n"


def sql_comment(content: str) -> dict[str, Any]:
    return {"comments": [{"path": "app.py", "content": content, "existing_code": SQL.strip(),
                          "suggestion_code": "query = 'SELECT * FROM users WHERE name = ?'",
                          "severity": "critical", "category": "security"}]}


def review_json(llm: ScriptedLLM, capsys: pytest.CaptureFixture[str], *args: str,
                content: str | None = None) -> tuple[int, dict[str, Any], str]:
    if content is not None:
        llm.tool_calls(("code_comment", sql_comment(content)), ("task_done", {"state": "DONE"}))
    return run_json(["review", "--format", "json", *args], llm.env(), capsys, review_filter=False)


def test_dismissed_finding_stays_dismissed_across_amend_moved_line_and_rewording(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": APP})
    monkeypatch.chdir(repo.path)
    rc, data, err = review_json(llm, capsys, content="SQL injection: name is concatenated.")
    assert rc == 1
    [c] = data["comments"]
    assert (c["start_line"], c["severity"]) == (5, "critical")
    fid = c["id"]
    assert f"git ocr dismiss {fid} --reason" in err  # the blocked message names the command

    rc, out, err = run_cli(["dismiss", fid[:6], "--reason", "name is an enum value"], {}, capsys)
    assert rc == 0, err
    assert out == (f"dismissed {fid} (app.py:5 [critical · security]) for you"
                   f" ({repo.path / '.git' / 'ocr-hook' / 'dismissed.json'})\n")
    stored = json.loads((repo.path / ".git" / "ocr-hook" / "dismissed.json").read_text())
    [entry] = stored["dismissed"]
    assert entry["key"] == dismiss_key("app.py", SQL, "security")
    assert (entry["reason"], entry["author"]) == ("name is an enum value",
                                                  "Test <test@example.com>")
    # --list leads with the finding id the user saw, then the dismissal key
    rc, out, _ = run_cli(["dismiss", "--list"], {}, capsys)
    assert rc == 0 and out.splitlines() == [
        f"{fid}  personal  app.py [security]  {entry['date']}  Test <test@example.com>",
        f"    key:     {entry['key'][:12]}",
        f"    code:    {SQL.strip()}",
        "    finding: SQL injection: name is concatenated.",
        "    reason:  name is an enum value"]
    assert fid != entry["key"][:12]

    # the same snapshot again: answered from the cache, the dismissal applies at gate time
    calls = len(llm.requests)
    rc, data, _ = review_json(llm, capsys)
    assert len(llm.requests) == calls and data["summary"]["cache_hits"] == 1
    assert rc == 0 and data["verdict"] == "pass" and data["comments"] == []
    assert [(d["id"], d["by"], d["reason"], d["start_line"]) for d in data["dismissed"]] == [
        (fid, "personal", "name is an enum value", 5)]

    # commit, then amend: the line moves to 7 and the model words the finding differently
    repo.git("commit", "-q", "-m", "add find")
    repo.write({"app.py": APP_MOVED})
    repo.git("commit", "-q", "-a", "--amend", "-m", "add find, with logging")
    rc, data, _ = review_json(llm, capsys, "--commit", "HEAD",
                              content="Building SQL from `name` by concatenation allows injection.")
    assert rc == 0 and data["verdict"] == "pass" and data["comments"] == []
    [d] = data["dismissed"]
    assert (d["start_line"], d["by"], d["reason"]) == (7, "personal", "name is an enum value")
    assert d["id"] != fid  # a new finding id: other wording, same dismissal key
    rc, out, _ = run_cli(["review", "--commit", "HEAD"], llm.env(), capsys,
                         review_filter=False)  # cached now
    assert rc == 0
    assert (f"dismissed: app.py:7 [critical · security] id {d['id']} (personal, Test"
            " <test@example.com>): name is an enum value") in out.splitlines()
    assert out.splitlines()[-1] == "PASS: no finding at or above high, 1 dismissed (blocking mode)"

    # --undo by the id of the finding it dismissed brings it back
    rc, out, _ = run_cli(["dismiss", "--undo", d["id"]], {}, capsys)
    assert rc == 0 and out.startswith("undone: ")
    rc, data, _ = review_json(llm, capsys, "--commit", "HEAD")
    assert rc == 1 and data["verdict"] == "findings" and data["dismissed"] == []
    assert [c["start_line"] for c in data["comments"]] == [7]
    rc, out, _ = run_cli(["dismiss", "--list"], {}, capsys)
    assert out == "no dismissals\n"


def test_shared_dismissal_applies_from_the_next_commit_not_to_its_own(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": APP})
    monkeypatch.chdir(repo.path)
    rc, data, _ = review_json(llm, capsys, content="SQL injection.")
    assert rc == 1
    fid = data["comments"][0]["id"]
    rc, out, _ = run_cli(["dismiss", fid, "--shared", "--reason", "team: trusted input"], {},
                         capsys)
    assert rc == 0 and ".ocr-hook-dismissed.json; commit that file" in out
    assert not (repo.path / ".git" / "ocr-hook" / "dismissed.json").exists()
    # staged together with the finding's commit: the review reads the file from HEAD
    repo.git("add", ".ocr-hook-dismissed.json")
    rc, data, _ = review_json(llm, capsys, content="SQL injection, again.")
    assert rc == 1 and data["dismissed"] == []
    # the staged dismissal file is flagged as a change to the review configuration
    assert [(c["path"], c["start_line"], c["severity"]) for c in data["comments"]] == [
        (".ocr-hook-dismissed.json", 1, "medium"), ("app.py", 5, "critical")]
    assert "edits review configuration" in data["comments"][0]["content"]
    assert {f["path"] for f in data["files"]} == {"app.py", ".ocr-hook-dismissed.json"}
    repo.git("commit", "-q", "--no-verify", "-m", "app with shared dismissal")
    # the next change touching the same line: the committed dismissal applies
    repo.stage({"app.py": APP_MOVED})
    rc, data, _ = review_json(llm, capsys, content="Injection via name.")
    assert rc == 0 and data["comments"] == []
    assert [(d["by"], d["reason"]) for d in data["dismissed"]] == [
        ("shared", "team: trusted input")]
    rc, out, _ = run_cli(["dismiss", "--list"], {}, capsys)
    assert out.splitlines()[0].split()[1:3] == ["shared", "app.py"]


def test_inline_marker_suppresses_only_its_own_line(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    code = ("def load(a, b):\n"
            "    x = eval(a)  # ocr-hook: ignore trusted config expression\n"
            "    y = eval(b)\n"
            "    return x, y\n")
    repo.stage({"calc.py": code})
    llm.tool_calls(("code_comment", {"comments": [
        {"path": "calc.py", "content": "eval of input a", "existing_code": "x = eval(a)",
         "severity": "high", "category": "security"},
        {"path": "calc.py", "content": "eval of input b", "existing_code": "y = eval(b)",
         "severity": "high", "category": "security"},
    ]}), ("task_done", {"state": "DONE"}))
    monkeypatch.chdir(repo.path)
    rc, data, _ = review_json(llm, capsys)
    assert rc == 1
    assert [(c["start_line"], c["content"]) for c in data["comments"]] == [(3, "eval of input b")]
    assert [(d["start_line"], d["by"], d["reason"]) for d in data["dismissed"]] == [
        (2, "inline", "trusted config expression")]


def test_secret_findings_cannot_be_dismissed_or_inline_ignored(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    key = "AKIA" + "Q3EGRXJ7TV5PLMZN"
    repo.stage({"cfg.py": f'AWS_KEY = "{key}"  # ocr-hook: ignore\n'})
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json"], {}, capsys,
                           review_filter=False)  # no endpoint needed
    data = json.loads(out)
    assert rc == 1 and data["dismissed"] == []
    [c] = data["comments"]
    assert (c["severity"], c["category"]) == ("critical", "security")
    assert "ocr-hook: allow-secret" in err and f"git ocr dismiss {c['id']}" not in err
    rc, _, err = run_cli(["dismiss", c["id"]], {}, capsys)
    assert rc == 2
    assert "is a secret finding; secrets keep their own allow rules" in err


def test_dismiss_refuses_unknown_ambiguous_and_malformed_ids(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    monkeypatch.chdir(repo.path)
    rc, _, err = run_cli(["dismiss", "abcdef"], {}, capsys)
    assert rc == 2 and "no finding 'abcdef' in the recent reviews" in err
    rc, _, err = run_cli(["dismiss", "xyz!"], {}, capsys)
    assert rc == 2 and "invalid id 'xyz!'" in err
    rc, _, err = run_cli(["dismiss", "--undo", "abcd"], {}, capsys)
    assert rc == 2 and "no dismissal 'abcd'" in err
    (repo.path / ".git" / "ocr-hook").mkdir()
    (repo.path / ".git" / "ocr-hook" / "dismissed.json").write_text("{broken")
    rc, _, err = run_cli(["dismiss", "--list"], {}, capsys)
    assert rc == 2 and "dismissed.json: invalid JSON" in err
    assert len(err.strip().splitlines()) == 1


def _finding(code: str, line: int = 3, category: str = "bug", source: str = "llm") -> Finding:
    return Finding(id="f", path="a.py", side="new", start_line=line, end_line=line,
                   severity=Severity.HIGH, category=category, content="c", existing_code=code,
                   suggestion_code="", anchor="hunk_new", source=source, code=code)


@pytest.mark.parametrize(("code", "reason"), [
    ("x = 1  # ocr-hook: ignore", ""),
    ("x = 1  # ocr-hook: ignore: checked by caller", "checked by caller"),
    ("x = 1;  /* ocr-hook: ignore legacy API */", "legacy API"),
    ("<b>x</b> <!-- OCR-HOOK: IGNORE markup only -->", "markup only"),
    ("x = 1  # ocr-hook: ignore-secret", None),
    ("x = 1  # ocr-hook: allow-secret", None),
    ("x = 1", None),
])
def test_inline_reason_parses_marker_and_optional_reason(code: str, reason: str | None) -> None:
    assert inline_reason(code) == reason


def test_key_ignores_lines_indentation_and_wording_but_not_path_code_or_category() -> None:
    a = _finding("    if x  ==  1:\n\n        run()", line=3)
    b = a._replace(start_line=40, end_line=42, content="other words", id="g",
                   code="if x == 1:\n  run()")
    key = dismiss_key(a.path, a.code, a.category)
    assert dismiss_key(b.path, b.code, b.category) == key
    assert dismiss_key("b.py", a.code, a.category) != key
    assert dismiss_key(a.path, a.code, "security") != key
    assert dismiss_key(a.path, "if x == 2:\n run()", a.category) != key
    from ocr_hook.comments.dismissals import Dismissal
    d = Dismissal(key, "a.py", "bug", a.code, "r", "", "", "f", "c")
    kept, gone = apply_dismissals([a, b, _finding("z = 2")], [d])
    assert [f.code for f in kept] == ["z = 2"]
    assert [(g.finding.start_line, g.by) for g in gone] == [(3, "personal"), (40, "personal")]


def test_dismissals_file_is_private_and_written_atomically(
    repo: GitRepo, tmp_path: Path,
) -> None:
    from ocr_hook.comments import dismissal_files
    from ocr_hook.comments.dismissals import Dismissal

    d = Dismissal("a" * 64, "a.py", "bug", "x", "r", "T <t@e>", "2026-01-01T00:00:00Z", "f", "m")
    path = dismissal_files.save_personal(repo.path / ".git", [d, d])
    assert path == repo.path / ".git" / "ocr-hook" / "dismissed.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["dismissed.json"]
    assert dismissal_files.load_personal(repo.path / ".git") == [d]
