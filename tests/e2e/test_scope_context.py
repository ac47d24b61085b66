"""The scope context of spec §3.5 end to end through ``cli.main``: a one-line change inside a
function is shown with the whole function, and a comment quoting an unchanged line of it
(outside git's three lines) anchors on exactly that line. A group whose prompt with the added
lines would pass the prompt size check (spec §6.3) is shown git's hunks instead.

Real: git, HTTP to the loopback model server, JSON output; fake: the model's replies.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ocr_hook.util import count_tokens
from tests.support.cli import run_cli
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

# refund() comes first and holds the same guard as apply_discount(): without the scope context
# the quote of apply_discount's guard matches only in the whole file, twice, and the first
# match (line 5, refund's) would win
SHOP_PY = """\
import json


def refund(order, user):
    if user is None:
        return 0
    return order.total


def apply_discount(order, user):
    if user is None:
        return order.total
    if not user.active:
        return order.total
    rate = user.rate
    base = order.total
    tax = order.tax
    fee = order.fee
    total = base + tax + fee
    return total - total * rate


def describe(order):
    return json.dumps({"total": order.total})
"""
CHANGED_LINE = "    return total - total * rate"  # line 20
GUARD_LINE = 11  # "    if user is None:" of apply_discount, 9 lines above the change


def _comment(quote: str) -> dict[str, Any]:
    return {"comments": [{
        "path": "shop.py",
        "content": "The guard returns the full total for a missing user, but the new rate is a "
                   "percentage: an anonymous order skips the discount the change introduces.",
        "existing_code": quote,
        "suggestion_code": "",
        "severity": "medium",
        "category": "bug",
    }]}


def _review(repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str], **env: str) -> tuple[int, dict[str, Any], str]:
    monkeypatch.chdir(repo.path)
    rc, out, err = run_cli(["review", "--format", "json", "--no-cache", "--effort", "low",
                            "--no-filter"], llm.env(**env), capsys)
    return rc, json.loads(out), err


def _stage_change(repo: GitRepo) -> None:
    repo.commit({"shop.py": SHOP_PY}, "shop")
    assert SHOP_PY.splitlines()[19] == CHANGED_LINE
    assert SHOP_PY.splitlines()[GUARD_LINE - 1] == "    if user is None:"
    repo.stage({"shop.py": SHOP_PY.replace(CHANGED_LINE, CHANGED_LINE + " / 100")})


def test_a_quoted_unchanged_line_of_the_enclosing_function_anchors_on_its_line(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _stage_change(repo)
    llm.tool_calls(("code_comment", _comment("    if user is None:")))
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = _review(repo, llm, monkeypatch, capsys)
    assert rc == 0, err
    [c] = data["comments"]
    assert (c["path"], c["side"], c["start_line"], c["end_line"]) == (
        "shop.py", "new", GUARD_LINE, GUARD_LINE)
    assert (c["anchor"], c["ambiguous"]) == ("hunk_new", False)
    user = llm.requests[0]["messages"][1]["content"]
    diff = user[user.index('<file path="shop.py"'):user.index("</file>")]
    # the whole function, from its header, as context lines with new-file numbers; git's own
    # hunk began at line 17
    assert diff.splitlines()[1:] == [
        "@@ -10,14 +10,14 @@",
        "10  def apply_discount(order, user):",
        "11      if user is None:",
        "12          return order.total",
        "13      if not user.active:",
        "14          return order.total",
        "15      rate = user.rate",
        "16      base = order.total",
        "17      tax = order.tax",
        "18      fee = order.fee",
        "19      total = base + tax + fee",
        "   -    return total - total * rate",
        "20 +    return total - total * rate / 100",
        "21  ",
        "22  ",
        "23  def describe(order):",
    ]
    tool_msgs = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "Filed: shop.py:11 (new side)"


def test_a_group_that_fits_only_with_git_hunks_is_shown_git_hunks(
    repo: GitRepo, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _stage_change(repo)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, _ = _review(repo, llm, monkeypatch, capsys)
    assert rc == 0 and data["status"] == "complete"
    wide = llm.requests[0]["messages"]
    wide_tokens = sum(count_tokens(m["content"]) for m in wide[:2])
    assert "11      if user is None:" in wide[1]["content"]
    # a context whose 80 % lies between git's hunks and the widened ones (the widening adds
    # 7 lines, about 50 tokens)
    context = math.ceil((wide_tokens - 25) / 0.8)
    llm.requests.clear()
    llm.tool_calls(("task_done", {"state": "DONE"}))
    rc, data, err = _review(repo, llm, monkeypatch, capsys,
                            OCR_HOOK_LLM_CONTEXT_TOKENS=str(context))
    assert rc == 0 and data["status"] == "complete", err
    assert [(f["path"], f["reviewed"]) for f in data["files"]] == [("shop.py", True)]
    user = llm.requests[0]["messages"][1]["content"]
    assert "@@ -17,7 +17,7 @@ def apply_discount(order, user):" in user
    assert "11      if user is None:" not in user
    assert "17      tax = order.tax" in user
