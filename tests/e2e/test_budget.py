"""Money caps (spec §13.7): ``budget.daily_usd`` / ``budget.monthly_usd`` checked before a
run's first model call against the usage ledger priced by ``config/providers.json``; a run that
would pass a cap is NOT REVIEWED with the reason and gated by ``gate.on_error``; ``git ocr llm
usage`` shows the spend per UTC day and model; a repository file may lower a cap, never raise
it.

Real: ``git ocr`` processes, git repositories, the ledger file, HTTP to the scripted loopback
model (which reports the token counts); fake: the model's replies."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from ocr_hook.config import Layer
from ocr_hook.config.repo_file import cap_repo_budget
from tests.support.cli import GIT_OCR
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY
from tests.support.scripted_llm import ScriptedLLM, openai_tool_calls

PRICED = "claude-sonnet-4-5"  # $3 input, $0.30 cache read, $3.75 cache write, $15 output / MTok
LET_THROUGH = "PASS: review incomplete, let through by gate.on_error = allow (blocking mode)"
BLOCKED = "BLOCKED: review incomplete and gate.on_error = block (blocking mode)"


def ocr(repo: GitRepo, llm: ScriptedLLM, *args: str, **env: str
        ) -> subprocess.CompletedProcess[str]:
    """A real ``git ocr ARGS`` process in ``repo`` pointed at ``llm`` serving PRICED."""
    full = {**repo.env, **llm.env(OCR_LLM_MODEL=PRICED), "OCR_HOOK_REVIEW_FILTER": "false",
            **env}
    return subprocess.run([str(GIT_OCR), *args], cwd=repo.path, env=full, capture_output=True,
                          text=True, timeout=120)


def user_file(repo: GitRepo, text: str) -> None:
    path = Path(repo.env["XDG_CONFIG_HOME"]) / "ocr-hook" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def ledger(repo: GitRepo) -> Path:
    return Path(repo.env["XDG_STATE_HOME"]) / "ocr-hook" / "usage.jsonl"


def today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


def done_reply() -> dict[str, Any]:
    """task_done, with usage: 1,100 prompt tokens of which 1,000 read from the prompt cache,
    40 output tokens: at PRICED's list price 100×3 + 1000×0.30 + 40×15 = $0.001200."""
    body = openai_tool_calls(("task_done", {"state": "DONE"}))
    body["usage"] = {"prompt_tokens": 1100, "completion_tokens": 40, "total_tokens": 1140,
                     "prompt_tokens_details": {"cached_tokens": 1000}}
    return body


NEEDS = (r"this review needs about \$0\.\d{4} \(budget\.daily_usd from [^;]+; resets at 00:00"
         r" UTC; see `git ocr llm usage`\)")


def test_a_daily_cap_below_one_reviews_cost_is_not_reviewed_and_gated_by_on_error(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    before = repo.state()
    user_file(repo, "[budget]\ndaily_usd = 0.01\n")
    for on_error, code, verdict in (("allow", 0, LET_THROUGH), ("block", 3, BLOCKED)):
        p = ocr(repo, llm, "review", OCR_HOOK_GATE_ON_ERROR=on_error)
        assert p.returncode == code, p.stderr
        assert re.search(r"NOT REVIEWED: daily budget \$0\.0100 would be passed: \$0\.0000 spent"
                         r" today \(UTC\), " + NEEDS, p.stdout + p.stderr), p.stdout + p.stderr
        assert p.stdout.splitlines()[-1] == verdict
    user = Path(repo.env["XDG_CONFIG_HOME"]) / "ocr-hook" / "config.toml"
    assert f"(budget.daily_usd from {user}; resets at 00:00 UTC; see" in p.stdout
    p = ocr(repo, llm, "review", "--format", "json")
    data = json.loads(p.stdout)
    assert data["status"] == "failed"
    assert [w["type"] for w in data["warnings"]] == ["spend_cap"]
    assert [f["reason"] for f in data["files"]] == ["spend_cap"]
    assert llm.requests == []  # the scripted server received no request
    assert ledger(repo).read_text() == ""  # a run that called no model records nothing
    assert repo.state() == before


def test_llm_usage_shows_the_days_spend_and_a_later_run_counts_it(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, "[budget]\ndaily_usd = 5\nmonthly_usd = 50\n")
    llm.reply(done_reply())
    p = ocr(repo, llm, "review")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1
    [line] = [json.loads(x) for x in ledger(repo).read_text().splitlines()]
    assert line["time"].startswith(today()) and line["time"].endswith("Z")
    assert {k: line[k] for k in ("provider", "model", "requests", "input_tokens",
                                 "cache_read_tokens", "cache_write_tokens", "output_tokens",
                                 "cost_usd")} == {
        "provider": "custom", "model": PRICED, "requests": 1, "input_tokens": 100,
        "cache_read_tokens": 1000, "cache_write_tokens": 0, "output_tokens": 40,
        "cost_usd": 0.0012}
    p = ocr(repo, llm, "llm", "usage", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["today"] == {"day": today(), "cost_usd": 0.0012, "cap_usd": 5.0}
    assert data["month"] == {"month": today()[:7], "cost_usd": 0.0012, "cap_usd": 50.0}
    assert data["days"] == [{
        "day": today(), "provider": "custom", "model": PRICED, "runs": 1, "requests": 1,
        "input_tokens": 100, "cache_read_tokens": 1000, "cache_write_tokens": 0,
        "output_tokens": 40, "cost_usd": 0.0012, "unpriced_runs": 0}]
    assert data["unpriced_models"] == []
    text = ocr(repo, llm, "llm", "usage").stdout.splitlines()
    assert text[0].split() == ["DAY", "(UTC)", "PROVIDER", "MODEL", "RUNS", "REQUESTS",
                               "INPUT", "CACHE", "READ", "CACHE", "WRITE", "OUTPUT", "COST"]
    assert text[1].split() == [today(), "custom", PRICED, "1", "1", "100", "1000", "0", "40",
                               "$0.001200"]
    assert "today: $0.001200 (cap $5.00)" in text
    assert "this month: $0.001200 (cap $50.00)" in text
    # the recorded spend counts: a cap it leaves too little of refuses the next run
    p = ocr(repo, llm, "review", "--no-cache", OCR_HOOK_BUDGET_DAILY_USD="0.05")
    assert p.returncode == 0, p.stderr
    assert re.search(r"NOT REVIEWED: daily budget \$0\.0500 would be passed: \$0\.0012 spent"
                     r" today \(UTC\), " + NEEDS, p.stdout + p.stderr), p.stdout + p.stderr
    assert ("(budget.daily_usd from environment variable OCR_HOOK_BUDGET_DAILY_USD; resets at"
            " 00:00 UTC; see `git ocr llm usage`)") in p.stdout
    assert len(llm.requests) == 1


def test_spend_recorded_earlier_today_and_this_month_is_counted(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    ledger(repo).parent.mkdir(parents=True)
    earlier = {"time": f"{today()}T00:00:00Z", "provider": "anthropic", "model": PRICED,
               "requests": 9, "input_tokens": 0, "cache_read_tokens": 0,
               "cache_write_tokens": 0, "output_tokens": 0, "estimated": False,
               "cost_usd": 0.98}
    ledger(repo).write_text(json.dumps(earlier) + "\n{torn line\n", encoding="utf-8")
    user_file(repo, "[budget]\ndaily_usd = 1.00\n")
    p = ocr(repo, llm, "review")
    assert re.search(r"NOT REVIEWED: daily budget \$1\.00 would be passed: \$0\.9800 spent today"
                     r" \(UTC\), " + NEEDS, p.stdout + p.stderr), p.stdout + p.stderr
    user_file(repo, "[budget]\nmonthly_usd = 1.00\n")
    p = ocr(repo, llm, "review")
    assert re.search(r"NOT REVIEWED: monthly budget \$1\.00 would be passed: \$0\.9800 spent"
                     r" this month \(UTC\), this review needs about \$0\.\d{4}"
                     r" \(budget\.monthly_usd from [^;]+; resets on the 1st at 00:00 UTC; see"
                     r" `git ocr llm usage`\)",
                     p.stdout + p.stderr), p.stdout + p.stderr
    assert llm.requests == []


def test_a_repository_file_may_lower_the_cap_but_not_raise_it(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    # raising: the user's $0.01 stands, and the hook says the repository's value was ignored
    repo.commit({"README.md": "hello\n", ".ocr-hook.toml": "[budget]\ndaily_usd = 100\n"},
                "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, "[budget]\ndaily_usd = 0.01\n")
    p = ocr(repo, llm, "hook", "pre-commit")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert ("ignoring budget.daily_usd from .ocr-hook.toml (HEAD): a repository may only lower"
            " your budget caps") in out
    assert "NOT REVIEWED: daily budget $0.0100 would be passed" in out
    assert llm.requests == []
    # lowering: the repository's $0.01 under the user's $100 applies
    repo.commit({".ocr-hook.toml": "[budget]\ndaily_usd = 0.01\n"}, "lower the cap")
    repo.stage({"app.py": APP_PY + "\n\ndef more():\n    return 1\n"})
    user_file(repo, "[budget]\ndaily_usd = 100\n")
    p = ocr(repo, llm, "hook", "pre-commit")
    out = p.stdout + p.stderr
    assert "ignoring budget" not in out
    assert "NOT REVIEWED: daily budget $0.0100 would be passed" in out
    assert "(budget.daily_usd from .ocr-hook.toml (HEAD); resets at 00:00 UTC" in out
    assert llm.requests == []
    p = ocr(repo, llm, "config", "get", "budget.daily_usd")
    assert p.stdout.split()[0] == "0.01", p.stdout


def test_cap_repo_budget_drops_only_raising_values() -> None:
    repo = Layer(".ocr-hook.toml (HEAD)", {"budget": {"daily_usd": 3, "monthly_usd": 10},
                                           "gate": {"mode": "advisory"}})
    user = [Layer("config.toml", {"budget": {"daily_usd": 2, "monthly_usd": 20}})]
    layer, dropped = cap_repo_budget(repo, user)
    assert dropped == ["budget.daily_usd"]
    assert layer.data == {"budget": {"monthly_usd": 10}, "gate": {"mode": "advisory"}}
    layer, dropped = cap_repo_budget(repo, [])  # no user cap: any repository cap lowers
    assert dropped == [] and layer is repo
    # a number written as text compares as the number validation makes of it, on either side
    as_text = Layer(".ocr-hook.toml (HEAD)", {"budget": {"daily_usd": "5"}})
    assert cap_repo_budget(as_text, [Layer("config.toml", {"budget": {"daily_usd": 0.01}})])[1] \
        == ["budget.daily_usd"]
    assert cap_repo_budget(repo, [Layer("config.toml", {"budget": {"daily_usd": "1"}})])[1] \
        == ["budget.daily_usd"]


def test_an_unpriced_model_counts_tokens_only_and_says_the_cap_cannot_be_enforced(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, "[budget]\ndaily_usd = 0.01\n")
    llm.reply(done_reply())
    p = ocr(repo, llm, "review", "--format", "json", OCR_LLM_MODEL="scripted-model")
    data = json.loads(p.stdout)
    assert p.returncode == 0, p.stderr
    assert [w["message"] for w in data["warnings"] if w["type"] == "spend_unpriced"] == [
        "budget.daily_usd cannot be enforced: no price for model scripted-model in"
        " config/providers.json (its tokens are counted only)"]
    assert len(llm.requests) == 1
    p = ocr(repo, llm, "llm", "usage", "--json")
    usage = json.loads(p.stdout)
    assert usage["unpriced_models"] == ["scripted-model"]
    assert [(r["model"], r["cost_usd"], r["unpriced_runs"], r["input_tokens"])
            for r in usage["days"]] == [("scripted-model", None, 1, 100)]
    text = ocr(repo, llm, "llm", "usage").stdout
    assert "unknown" in text.splitlines()[1].split()
    assert ("no price for scripted-model: tokens counted only (prices: config/providers.json);"
            " a cap cannot be enforced for these models") in text


def test_llm_usage_without_a_ledger_says_so(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    p = ocr(repo, llm, "llm", "usage")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        f"no model usage recorded yet (ledger: {ledger(repo)})",
        "today: $0.000000 (no cap)", "this month: $0.000000 (no cap)"]


def test_llm_test_records_its_probe_in_the_ledger(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    llm.reply(done_reply())
    p = ocr(repo, llm, "llm", "test")
    assert p.returncode == 0, p.stderr
    [line] = [json.loads(x) for x in ledger(repo).read_text().splitlines()]
    assert (line["model"], line["requests"], line["cost_usd"]) == (PRICED, 1, 0.0012)


def test_a_later_pushed_range_counts_what_an_earlier_one_spent(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    c1 = repo.commit({"README.md": "hello\n"}, "init")
    c2 = repo.commit({"app.py": APP_PY}, "app")
    repo.git("checkout", "-q", "-b", "b", c1)
    c3 = repo.commit({"lib.py": APP_PY.replace("def ", "def lib_")}, "lib")
    user_file(repo, "[budget]\ndaily_usd = 0.20\n")
    body = done_reply()
    body["usage"]["completion_tokens"] = 10_000  # 100×3 + 1000×0.30 + 10000×15: $0.1506
    llm.reply(body)
    stdin = f"refs/heads/main {c2} refs/heads/main {c1}\nrefs/heads/b {c3} refs/heads/b {c1}\n"
    p = subprocess.run([str(GIT_OCR), "hook", "pre-push", "origin", "url"], cwd=repo.path,
                       input=stdin, capture_output=True, text=True, timeout=120,
                       env={**repo.env, **llm.env(OCR_LLM_MODEL=PRICED),
                            "OCR_HOOK_REVIEW_FILTER": "false"})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert len(llm.requests) == 1  # the first range only
    assert re.search(r"NOT REVIEWED: daily budget \$0\.2000 would be passed: \$0\.1506 spent"
                     r" today \(UTC\), " + NEEDS, out), out
    assert [json.loads(x)["cost_usd"] for x in ledger(repo).read_text().splitlines()] == [
        0.1506]
    assert f"reviewed refs/heads/main: {c1[:12]}..{c2[:12]} (1 commit)" in p.stdout.splitlines()
    assert (f"not reviewed refs/heads/b: {c1[:12]}..{c3[:12]} (1 commit)"
            in p.stdout.splitlines()), p.stdout


def test_a_single_pushed_range_over_the_cap_says_it_was_not_reviewed(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    c1 = repo.commit({"README.md": "hello\n"}, "init")
    c2 = repo.commit({"app.py": APP_PY}, "app")
    user_file(repo, "[budget]\ndaily_usd = 0.01\n")
    p = subprocess.run([str(GIT_OCR), "hook", "pre-push", "origin", "url"], cwd=repo.path,
                       input=f"refs/heads/b {c2} refs/heads/b {c1}\n", capture_output=True,
                       text=True, timeout=120,
                       env={**repo.env, **llm.env(OCR_LLM_MODEL=PRICED),
                            "OCR_HOOK_REVIEW_FILTER": "false"})
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert f"not reviewed refs/heads/b: {c1[:12]}..{c2[:12]} (1 commit)" in out, p.stdout
    assert "not reviewed: app.py (money cap reached)" in out
    assert llm.requests == []
