"""``git ocr dismiss --list`` lists the most severe first: the severity of the finding each
dismissal was made from, as the review sessions recorded it (issue 28: it listed high before
critical, in the order they were dismissed).

Real: git, the session log, the dismissal files, HTTP. Fake: the model's replies."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cli import run_cli, run_json
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

APP = "import db\n\n\ndef find(name):\n    q = 'SELECT ' + name\n    log(name)\n" \
      "    return db.run(q)\n"


def comment(quote: str, severity: str, category: str) -> dict[str, Any]:
    return {"path": "app.py", "content": f"{severity} problem", "existing_code": quote,
            "suggestion_code": "", "severity": severity, "category": category}


def test_dismiss_list_orders_by_severity_most_severe_first(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    repo.stage({"app.py": APP})
    monkeypatch.chdir(repo.path)
    llm.tool_calls(("code_comment", {"comments": [
        comment("log(name)", "low", "maintainability"),
        comment("return db.run(q)", "high", "bug"),
        comment("q = 'SELECT ' + name", "critical", "security"),
    ]}), ("task_done", {"state": "DONE"}))
    rc, data, err = run_json(["review", "--format", "json"], llm.env(), capsys,
                             review_filter=False)
    assert rc == 1, err
    ids = {c["severity"]: c["id"] for c in data["comments"]}
    # dismissed in the order high, low (personal), critical (shared)
    for severity, extra in (("high", []), ("low", []), ("critical", ["--shared"])):
        rc, _, err = run_cli(["dismiss", ids[severity], *extra], {}, capsys)
        assert rc == 0, err
    rc, out, _ = run_cli(["dismiss", "--list"], {}, capsys)
    assert rc == 0
    heads = [line.split()[:4] for line in out.splitlines() if not line.startswith(" ")]
    assert heads == [[ids["critical"], "shared", "app.py", "[security]"],
                     [ids["high"], "personal", "app.py", "[bug]"],
                     [ids["low"], "personal", "app.py", "[maintainability]"]]
    rc, out, _ = run_cli(["dismiss", "--list", "--json"], {}, capsys)
    assert [line.split('"finding_id": "')[1][:len(ids["high"])] for line in out.splitlines()] \
        == [ids["critical"], ids["high"], ids["low"]]
