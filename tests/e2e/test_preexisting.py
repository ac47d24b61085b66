"""Blocking only what the change introduced (spec §7.1.1 ``preexisting``, §9): a finding on a
block git's moved-code detection shows as moved unchanged, and one the model flags
``preexisting``, are advisory and say why; ``gate.block_preexisting = true`` makes both block; a
finding on an unchanged line the change made wrong (a guard removed above it) blocks; a moved
block with a changed line blocks on that line. The flag survives the result cache and
``git ocr delegate submit``; ids (and so dismissals) do not depend on it.

Real: git, HTTP to the loopback model server, ``cli.main`` (JSON and text output), a real
``git ocr`` process for delegation; fake: the model's replies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ocr_hook.findings import finding_id
from tests.e2e.test_git_calls import GitLog
from tests.support.cli import GIT_OCR, run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

HELPER = """\
def mean(values):
    total = 0
    for v in values:
        total += v
    return total / len(values)
"""
UTIL_PY = f"""\
import os


def home():
    return os.environ["HOME"]


{HELPER}

def last(items):
    return items[-1]
"""
STATS_PY = "RATE = 2\n"
# mean() moved unchanged from util.py (lines 8-12) to the end of stats.py (lines 4-8)
MOVED_UTIL = UTIL_PY.replace(HELPER + "\n\n", "")
MOVED_STATS = STATS_PY + "\n\n" + HELPER
DIVISION = "    return total / len(values)"
DIV_CLAIM = "ZeroDivisionError when values is empty: return 0.0 for an empty list"

SHOP_PY = """\
def price(order, user):
    if user is None:
        return order.total
    rate = user.rate
    return order.total * rate
"""
RATE_LINE = "    rate = user.rate"  # line 4; line 2 after the guard is removed


def _comment(path: str, quote: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"comments": [{"path": path, "content": content, "existing_code": quote,
                          "severity": "high", "category": "bug", **extra}]}


def _script(llm: ScriptedLLM, *comments: dict[str, Any]) -> None:
    for c in comments:
        llm.tool_calls(("code_comment", c))
    llm.tool_calls(("task_done", {"state": "DONE"}))


def _review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str], *flags: str, fmt: str = "json",
            **env: str) -> tuple[int, Any, str]:
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", fmt, "--effort", "low", "--no-filter",
                            *flags], llm.env(**env), capsys)
    return rc, (json.loads(out) if fmt == "json" else out), err


def _move_staged(repo: GitRepo) -> None:
    repo.commit({"util.py": UTIL_PY, "stats.py": STATS_PY}, "init")
    assert UTIL_PY.splitlines()[11] == DIVISION and MOVED_STATS.splitlines()[7] == DIVISION
    repo.stage({"util.py": MOVED_UTIL, "stats.py": MOVED_STATS})


def test_a_finding_on_a_block_moved_unchanged_is_advisory_with_where_it_came_from(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _move_staged(repo)
    _script(llm, _comment("stats.py", "    for v in values:\n        total += v\n"
                          "    return total / len(values)", DIV_CLAIM))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 0, err
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("stats.py", "new", 6, 8)
    assert (c["severity"], c["advisory_reason"], c["moved_from"]) == ("high", "moved",
                                                                       "util.py:10\u201312")
    assert data["verdict"] == "pass"
    assert data["gate"]["blocking"] is False

    _script(llm, _comment("stats.py", DIVISION, DIV_CLAIM))
    rc, text, err = _review(repo, llm, monkeypatch, capsys, "--no-cache", fmt="text")
    assert rc == 0, err
    assert "  advisory: moved unchanged from util.py:12\n" in text
    assert ("PASS: no finding at or above high, 1 advisory (pre-existing or moved)"
            " (blocking mode)") in text
    assert "BLOCKING" not in text


def test_block_preexisting_makes_the_moved_finding_block(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _move_staged(repo)
    _script(llm, _comment("stats.py", DIVISION, DIV_CLAIM))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache",
                            OCR_HOOK_GATE_BLOCK_PREEXISTING="true")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["start_line"], c["advisory_reason"], c["moved_from"]) == (8, "", "")
    assert data["verdict"] == "findings"


def test_a_changed_line_inside_a_moved_block_blocks(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"util.py": UTIL_PY, "stats.py": STATS_PY}, "init")
    changed = MOVED_STATS.replace(DIVISION, "    return total / (len(values) - 1)")
    repo.stage({"util.py": MOVED_UTIL, "stats.py": changed})
    _script(llm, _comment("stats.py", "    return total / (len(values) - 1)",
                          "ZeroDivisionError for a one-item list: the new - 1 divides by zero"))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["advisory_reason"], c["moved_from"]) == (
        "stats.py", 8, "", "")


def _context_change(repo: GitRepo) -> None:
    """util.py committed; the change adds a function below last(): mean() is unchanged."""
    repo.commit({"util.py": UTIL_PY}, "init")
    repo.stage({"util.py": UTIL_PY + "\n\ndef first(items):\n    return items[0]\n"})


def test_a_finding_the_model_flags_preexisting_is_advisory_and_blocks_when_asked(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _context_change(repo)
    claim = "IndexError on an empty list; the new first() has the same flaw"
    _script(llm, _comment("util.py", "    return items[-1]", claim, preexisting=True))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 0, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"]) == ("util.py", 16, 16)
    assert (c["advisory_reason"], c["moved_from"]) == ("preexisting", "")
    assert c["id"] == finding_id("util.py", "new", "    return items[-1]", claim)
    assert data["verdict"] == "pass"

    _script(llm, _comment("util.py", "    return items[-1]", claim, preexisting=True))
    rc, text, err = _review(repo, llm, monkeypatch, capsys, "--no-cache", fmt="text")
    assert rc == 0, err
    assert "  advisory: pre-existing (reported by the model)\n" in text

    _script(llm, _comment("util.py", "    return items[-1]", claim, preexisting=True))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache",
                            OCR_HOOK_GATE_BLOCK_PREEXISTING="true")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["start_line"], c["advisory_reason"], data["verdict"]) == (16, "", "findings")
    assert c["id"] == finding_id("util.py", "new", "    return items[-1]", claim)


def test_an_unchanged_line_the_change_made_wrong_blocks_on_that_line(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"shop.py": SHOP_PY}, "init")
    repo.stage({"shop.py": SHOP_PY.replace(
        "    if user is None:\n        return order.total\n", "")})
    _script(llm, _comment("shop.py", RATE_LINE,
                          "AttributeError for an anonymous order: the change removed the"
                          " `user is None` guard above this line"))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == ("shop.py", "new", 2, 2)
    assert (c["advisory_reason"], c["moved_from"], data["verdict"]) == ("", "", "findings")


def test_a_cached_result_keeps_the_flag_and_finds_the_move_again(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _move_staged(repo)
    _script(llm,
            _comment("stats.py", DIVISION, DIV_CLAIM),
            _comment("util.py", "    return items[-1]", "IndexError on an empty list",
                     preexisting=True))
    rc, first, err = _review(repo, llm, monkeypatch, capsys)
    assert rc == 0, err
    sent = len(llm.requests)
    rc, again, err = _review(repo, llm, monkeypatch, capsys)
    assert rc == 0, err
    assert len(llm.requests) == sent  # answered from the result cache
    assert again["summary"]["cache_hits"] >= 1
    assert [(c["path"], c["start_line"], c["advisory_reason"], c["moved_from"])
            for c in again["comments"]] == [
        ("stats.py", 8, "moved", "util.py:12"),
        ("util.py", 9, "preexisting", ""),
    ] == [(c["path"], c["start_line"], c["advisory_reason"], c["moved_from"])
          for c in first["comments"]]


def test_a_delegated_submit_honours_the_flag(repo: GitRepo) -> None:
    if not GIT_OCR.exists() or shutil.which("git") is None:  # pragma: no cover
        pytest.fail("git-ocr console script missing: install the package (-e .)")
    _context_change(repo)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OCR_", "OPENAI_", "ANTHROPIC_"))}
    env.update(repo.env)
    env["OCR_HOOK_REVIEW_FILTER"] = "false"
    findings: Path = repo.path.parent / "findings.json"
    findings.write_text(json.dumps([{
        "path": "util.py", "existing_code": "    return items[-1]", "preexisting": True,
        "content": "IndexError on an empty list", "severity": "high", "category": "bug"}]))
    p = subprocess.run([str(GIT_OCR), "delegate", "submit", str(findings), "--format", "json"],
                       cwd=repo.path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    [c] = json.loads(p.stdout)["comments"]
    assert (c["start_line"], c["advisory_reason"]) == (16, "preexisting")
    # the hook, with no endpoint, answers from the stored delegated result: still advisory
    p = subprocess.run([str(GIT_OCR), "review", "--format", "json"], cwd=repo.path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [(c["start_line"], c["advisory_reason"]) for c in data["comments"]] == [
        (16, "preexisting")]
    assert data["verdict"] == "pass"


def test_a_preexisting_flag_on_lines_the_change_wrote_is_refused(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _context_change(repo)
    _script(llm, _comment("util.py", "    return items[0]", "IndexError on an empty list",
                          preexisting=True))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["advisory_reason"]) == ("util.py", 20, "")
    assert [(w["type"], w["file"]) for w in data["warnings"]] == [
        ("preexisting_refused", "util.py")]


def test_the_moved_code_diff_runs_only_for_a_finding_that_would_block(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    _move_staged(repo)
    log = GitLog(tmp_path / "shim", monkeypatch)
    _script(llm, {"comments": [{"path": "stats.py", "content": DIV_CLAIM,
                                "existing_code": DIVISION, "severity": "low",
                                "category": "bug"}]})
    rc, _data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 0, err
    assert not any("--color-moved" in line for line in log.log.read_text().splitlines())
    _script(llm, _comment("stats.py", DIVISION, DIV_CLAIM))
    rc, _data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 0, err
    moved = [line for line in log.log.read_text().splitlines() if "--color-moved" in line]
    assert len(moved) == 1
    assert moved[0].split("\t")[0].endswith("-- stats.py util.py")


ADMIN_PY = """\
def purge(req, user):
    if user.is_admin:
        audit_log.write(req.path, user)
        delete_everything(req.target)
        notify_admins(req.target, user)
    return done(req)
"""
UNGUARDED = ("        delete_everything(req.target)\n", "    delete_everything(req.target)\n")


def test_a_guard_removed_by_deindenting_its_body_blocks(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"admin.py": ADMIN_PY}, "init")
    body = "".join(ADMIN_PY.splitlines(keepends=True)[2:5])
    flat = body.replace("        ", "    ")
    repo.stage({"admin.py": ADMIN_PY.replace(body, "        pass\n" + flat)})
    _script(llm, _comment("admin.py", UNGUARDED[1].rstrip("\n"),
                          "every user can purge: the body left the is_admin guard"))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"]) == ("admin.py", 5, 5)
    assert (c["advisory_reason"], c["moved_from"], data["verdict"]) == ("", "", "findings")


def test_two_swapped_lines_block(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    check, act = "    require_admin_permission(req)\n", "    perform_dangerous_operation(req)\n"
    src = "def drop(req):\n" + check + act + "    return finished_response(req)\n"
    repo.commit({"drop.py": src}, "init")
    repo.stage({"drop.py": src.replace(check + act, act + check)})
    _script(llm, _comment("drop.py", act.rstrip("\n"),
                          "the operation now runs before the permission check"))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["advisory_reason"], c["moved_from"]) == (
        "drop.py", 2, "", "")


CONFIG_DIR = """\
def config_dir():
    base = os.environ.get("XDG_CONFIG_HOME")
    return base or os.path.expanduser("~/.config")
"""
BASE_LINE = '    base = os.environ.get("XDG_CONFIG_HOME")'


def test_code_moved_where_its_import_is_missing_blocks_when_the_model_says_so(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"util.py": "import os\n\n\n" + CONFIG_DIR, "paths.py": "HOME = '~'\n"}, "init")
    repo.stage({"util.py": "import os\n", "paths.py": "HOME = '~'\n\n\n" + CONFIG_DIR})
    claim = "NameError: paths.py never imports os, which the moved config_dir() uses"
    _script(llm, _comment("paths.py", BASE_LINE, claim, preexisting=False))
    rc, data, err = _review(repo, llm, monkeypatch, capsys)
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["advisory_reason"], c["moved_from"]) == (
        "paths.py", 5, "", "")
    assert data["verdict"] == "findings"
    sent = len(llm.requests)
    rc, again, err = _review(repo, llm, monkeypatch, capsys)  # the cache keeps the false
    assert (rc, len(llm.requests), again["summary"]["cache_hits"] >= 1) == (1, sent, True)
    assert [(c["start_line"], c["advisory_reason"]) for c in again["comments"]] == [(5, "")]
    _script(llm, _comment("paths.py", BASE_LINE, claim))  # no flag: a move of 3 lines
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 0, err
    [c] = data["comments"]
    assert (c["start_line"], c["advisory_reason"], c["moved_from"]) == (5, "moved", "util.py:5")


def test_a_preexisting_flag_on_a_quote_not_found_is_refused(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _context_change(repo)
    _script(llm, _comment("util.py", "    return items.pop(7)", "IndexError on a short list",
                          preexisting=True))
    rc, data, err = _review(repo, llm, monkeypatch, capsys, "--no-cache")
    assert rc == 1, err
    [c] = data["comments"]
    assert (c["path"], c["start_line"], c["end_line"], c["advisory_reason"]) == (
        "util.py", 0, 0, "")
    assert [(w["type"], w["file"]) for w in data["warnings"]
            if w["type"] == "preexisting_refused"] == [("preexisting_refused", "util.py")]


def test_dismiss_hints_name_only_blocking_findings_and_a_refused_flag_is_on_stderr(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo.commit({"util.py": UTIL_PY, "stats.py": STATS_PY}, "init")
    repo.stage({"util.py": MOVED_UTIL + "\n\ndef first(items):\n    return items[0]\n",
                "stats.py": MOVED_STATS})
    new_claim = "IndexError on an empty list in the new first()"
    _script(llm, _comment("stats.py", DIVISION, DIV_CLAIM),
            _comment("util.py", "    return items[0]", new_claim, preexisting=True))
    rc, text, err = _review(repo, llm, monkeypatch, capsys, "--no-cache", fmt="text")
    assert rc == 1, err
    moved_id = finding_id("stats.py", "new", DIVISION, DIV_CLAIM)
    new_id = finding_id("util.py", "new", "    return items[0]", new_claim)
    assert "advisory: moved unchanged from util.py:12" in text
    hints = [line for line in err.splitlines() if "git ocr dismiss" in line]
    assert [h.split()[4] for h in hints] == [new_id]  # "ocr-hook:   git ocr dismiss ID"
    assert moved_id not in err
    assert err.count(f"ocr-hook: finding {new_id} was flagged pre-existing but its lines were"
                     " not found or the change wrote them: it counts as the change's\n") == 1
