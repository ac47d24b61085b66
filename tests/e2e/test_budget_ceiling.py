"""Money caps as a ceiling (spec §13.7): the check before every model request, the ledger line
of an interrupted run, a ledger that cannot be read or written, bad ledger lines, and the
warnings a capped run shows on stderr.

Real: ``git ocr`` processes (signals included), git repositories, the ledger file, HTTP to the
scripted loopback model (which reports the token counts); fake: the model's replies."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from typing import Any

import pytest

from tests.e2e.test_budget import GIT_OCR, PRICED, ledger, ocr, today, user_file
from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, sql_comment
from tests.support.scripted_llm import ScriptedLLM, openai_tool_calls

RESETS = r"\(budget\.daily_usd from [^;]+; resets at 00:00 UTC; see `git ocr llm usage`\)"


def priced(*calls: tuple[str, Any], output: int = 2000) -> dict[str, Any]:
    """A reply with ``calls`` and usage 1,100 prompt tokens (1,000 cached) and ``output``
    completion tokens: at PRICED's price 100×3 + 1000×0.30 + output×15 per million (2,000:
    $0.0306)."""
    body = openai_tool_calls(*calls)
    body["usage"] = {"prompt_tokens": 1100, "completion_tokens": output,
                     "total_tokens": 1100 + output,
                     "prompt_tokens_details": {"cached_tokens": 1000}}
    return body


def lines(repo: GitRepo) -> list[dict[str, Any]]:
    return [json.loads(x) for x in ledger(repo).read_text().splitlines()]


def test_a_model_that_never_finishes_is_stopped_before_the_request_that_would_pass_the_cap(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, "[budget]\ndaily_usd = 0.15\n")
    llm.reply(priced(("code_comment", sql_comment())))
    for _ in range(19):  # it never calls task_done
        llm.reply(priced(("file_read", {"file_path": "app.py"})))
    p = ocr(repo, llm, "review", "--format", "json", OCR_HOOK_GATE_ON_ERROR="block")
    data = json.loads(p.stdout)
    # each request is priced at its input estimate + 4,096 output ($0.06144) beside the $0.0306
    # of each answered one: the 4th would need $0.0918 + about $0.08 > $0.15
    assert len(llm.requests) == 3
    assert [(x["requests"], x["output_tokens"], x["cost_usd"]) for x in lines(repo)] == [
        (3, 6000, 0.0918)]
    assert data["status"] == "failed"
    assert [f["reason"] for f in data["files"]] == ["spend_cap"]
    [why] = data["incomplete_reasons"]
    assert re.fullmatch(r"NOT REVIEWED: daily budget \$0\.1500 would be passed: \$0\.0000 spent"
                        r" today \(UTC\), this review spent \$0\.0918 and its next request"
                        r" needs about \$0\.0\d{3} " + RESETS, why), why
    # the comment filed before the cap is kept, as the token budget keeps them
    assert [(c["start_line"], c["severity"]) for c in data["comments"]] == [(12, "critical")]
    assert p.returncode == 1, p.stderr  # a critical finding blocks
    # a later run today: $0.0918 + the first request's estimate passes $0.15, nothing is sent
    p = ocr(repo, llm, "review")
    assert len(llm.requests) == 3
    assert re.search(r"NOT REVIEWED: daily budget \$0\.1500 would be passed: \$0\.0918 spent"
                     r" today \(UTC\), this review needs about \$0\.0\d{3} " + RESETS,
                     p.stdout), p.stdout


@pytest.mark.parametrize("settings", ["[budget]\ndaily_usd = 5\n", ""], ids=["cap", "no-cap"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_records_its_usage_so_far(
    repo: GitRepo, llm: ScriptedLLM, sig: signal.Signals, settings: str,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, settings)
    llm.reply(priced(("file_read", {"file_path": "app.py"})))
    llm.reply(priced(("task_done", {"state": "DONE"})), delay_s=30)  # still in flight
    env = {**repo.env, **llm.env(OCR_LLM_MODEL=PRICED), "OCR_HOOK_REVIEW_FILTER": "false"}
    proc = subprocess.Popen([str(GIT_OCR), "review"], cwd=repo.path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while len(llm.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(llm.requests) == 2
    sent = time.monotonic()
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=15)
    assert time.monotonic() - sent < 3.0
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "ocr-hook: interrupted"
    [line] = lines(repo)
    # the answered request's usage, and the one in flight counted by its input estimate
    assert (line["requests"], line["cache_read_tokens"], line["output_tokens"],
            line["estimated"]) == (2, 1000, 2000, True)
    assert line["input_tokens"] > 100 + 1000  # 100 answered + the in-flight request's prompt
    assert line["time"].startswith(today())
    assert line["cost_usd"] == round((line["input_tokens"] * 3 + 1000 * 0.3 + 2000 * 15) / 1e6,
                                     8)


def test_an_interrupted_run_that_cannot_write_the_ledger_says_so(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    ledger(repo).mkdir(parents=True)  # usage.jsonl is a directory; no cap set
    llm.reply(priced(("task_done", {"state": "DONE"})), delay_s=30)
    env = {**repo.env, **llm.env(OCR_LLM_MODEL=PRICED), "OCR_HOOK_REVIEW_FILTER": "false"}
    proc = subprocess.Popen([str(GIT_OCR), "review"], cwd=repo.path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not llm.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert err.splitlines()[-2:] == [
        f"ocr-hook: cannot write the usage ledger {ledger(repo)}: Is a directory",
        "ocr-hook: interrupted"]


def test_an_unreadable_ledger_refuses_a_capped_run_and_warns_an_uncapped_one(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    ledger(repo).mkdir(parents=True)  # usage.jsonl is a directory
    user_file(repo, "[budget]\ndaily_usd = 5\n")
    p = ocr(repo, llm, "review")
    path = ledger(repo)
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [
        f"ocr-hook: cannot read the usage ledger {path}: Is a directory; budget.daily_usd"
        " cannot be checked: the review is refused"]
    assert (f"NOT REVIEWED: cannot read the usage ledger {path}: Is a directory"
            " (budget.daily_usd cannot be checked)") in p.stdout.splitlines()
    assert llm.requests == []
    user_file(repo, "")
    p = ocr(repo, llm, "review", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert len(llm.requests) == 1
    assert json.loads(p.stdout)["status"] == "complete"
    assert (f"ocr-hook: cannot write the usage ledger {path}: Is a directory"
            in p.stderr.splitlines())
    p = ocr(repo, llm, "llm", "usage")
    assert p.returncode == 2
    assert p.stderr.strip() == f"ocr-hook: cannot read the usage ledger {path}: Is a directory"


def test_bad_costs_in_the_ledger_are_skipped_and_counted(repo: GitRepo, llm: ScriptedLLM
                                                         ) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    ledger(repo).parent.mkdir(parents=True)
    day = today()
    good = json.dumps({"time": f"{day}T00:00:00Z", "provider": "anthropic", "model": PRICED,
                       "requests": 1, "cost_usd": 0.98})
    ledger(repo).write_text("\n".join([
        good, f'{{"time": "{day}T00:00:01Z", "model": "{PRICED}", "cost_usd": NaN}}',
        f'{{"time": "{day}T00:00:02Z", "model": "{PRICED}", "cost_usd": Infinity}}',
        json.dumps({"time": f"{day}T00:00:03Z", "model": PRICED, "cost_usd": -1e9})]) + "\n")
    user_file(repo, "[budget]\ndaily_usd = 1\n")
    p = ocr(repo, llm, "review")  # the cap still holds: $0.98 + the estimate passes $1
    assert "NOT REVIEWED: daily budget $1.00 would be passed: $0.9800 spent today" in p.stdout
    assert llm.requests == []
    p = ocr(repo, llm, "llm", "usage", "--json")
    data = json.loads(p.stdout)  # valid JSON: no NaN
    assert (data["skipped_lines"], data["today"]["cost_usd"]) == (3, 0.98)
    assert [r["runs"] for r in data["days"]] == [1]
    text = ocr(repo, llm, "llm", "usage").stdout.splitlines()
    assert "skipped 3 ledger lines that did not parse or had no valid cost_usd" in text
    assert "today: $0.980000 (cap $1.00)" in text
    user_file(repo, "[budget]\ndaily_usd = 0.5\n")
    text = ocr(repo, llm, "llm", "usage").stdout.splitlines()
    assert "today: $0.980000 (cap $0.5000, cap reached)" in text


def test_the_unpriced_warning_is_on_stderr_once_in_text_and_hooks(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    user_file(repo, "[budget]\ndaily_usd = 0.01\n")
    warning = ("ocr-hook: budget.daily_usd cannot be enforced: no price for model scripted-model"
               " in config/providers.json (its tokens are counted only)")
    for n, args in enumerate((("review",), ("hook", "pre-commit"))):
        repo.stage({"app.py": APP_PY + f"\n\ndef more_{n}():\n    return {n}\n"})
        p = ocr(repo, llm, *args, OCR_LLM_MODEL="scripted-model")
        assert p.returncode == 0, p.stderr
        assert p.stderr.splitlines().count(warning) == 1, p.stderr


def test_groups_running_at_once_stay_under_the_cap_and_share_one_reason(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    repo.commit({"README.md": "hello\n"}, "init")
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40))  # 160 lines
    repo.stage({"a.py": body, "b.py": body.replace("def f", "def g")})  # 2 groups: > 200 lines
    user_file(repo, "[budget]\ndaily_usd = 0.15\n")
    for _ in range(20):  # neither ever calls task_done
        llm.reply(priced(("file_read", {"file_path": "a.py"})), delay_s=0.05)
    p = ocr(repo, llm, "review", "--format", "json", OCR_HOOK_REVIEW_CONCURRENCY="2")
    data = json.loads(p.stdout)
    assert p.returncode == 0, p.stderr
    [line] = lines(repo)
    assert line["requests"] == len(llm.requests)
    assert line["cost_usd"] == round(0.0306 * len(llm.requests), 8)
    assert line["cost_usd"] <= 0.15  # the ceiling held with two groups sending at once
    assert [(f["path"], f["reason"]) for f in data["files"]] == [
        ("a.py", "spend_cap"), ("b.py", "spend_cap")]
    [why] = data["incomplete_reasons"]
    assert why.count("daily budget $0.1500 would be passed") == 1, why
    assert why.startswith("NOT REVIEWED: daily budget $0.1500 would be passed: $0.0000 spent")


def test_a_capped_run_is_refused_when_the_ledger_cannot_be_created(
    repo: GitRepo, llm: ScriptedLLM,
) -> None:
    """No ledger yet, and none can be made (a link into a folder that does not exist: it
    reads as no ledger): every run would start at $0 spent, so a capped run is refused
    before its first request."""
    repo.commit({"README.md": "hello\n"}, "init")
    repo.stage({"app.py": APP_PY})
    ledger(repo).parent.mkdir(parents=True)
    ledger(repo).symlink_to(repo.path.parent / "nowhere" / "usage.jsonl")
    user_file(repo, "[budget]\ndaily_usd = 5\n")
    p = ocr(repo, llm, "review")
    assert p.returncode == 0, p.stderr
    assert (f"NOT REVIEWED: cannot write the usage ledger {ledger(repo)}: No such file or"
            " directory"
            " (budget.daily_usd cannot be checked)") in p.stdout.splitlines(), p.stdout
    assert llm.requests == []
