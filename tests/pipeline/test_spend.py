"""Prices and the ledger of the money caps (spec §13.7), on the shipped ``config/providers.json``
and a real ledger file in the test's isolated state folder."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from ocr_hook.config import Config, Layer, build_config
from ocr_hook.errors import SpendCapExceeded
from ocr_hook.llm import Usage
from ocr_hook.pipeline.spend import (
    Cap,
    LedgerUnreadable,
    Price,
    SpendGuard,
    check_caps,
    ledger_path,
    price_of,
    read_ledger,
    record_run,
    spent,
    usd,
)


def test_a_model_is_priced_by_its_preset_then_any_preset_and_a_dated_snapshot_by_its_model(
) -> None:
    sonnet = Price(3.0, 0.3, 3.75, 15.0)
    assert price_of("anthropic", "claude-sonnet-4-5") == sonnet
    assert price_of("custom", "claude-sonnet-4-5") == sonnet  # a proxy serving the model
    assert price_of("openrouter", "anthropic/claude-sonnet-4-5-20250929") == sonnet
    assert price_of("openai", "gpt-4o-mini-2024-07-18") == price_of("openai", "gpt-4o-mini")
    assert price_of("anthropic", "claude-opus-4-1") == Price(15.0, 1.5, 18.75, 75.0)
    assert price_of("openai", "gpt-4o-mini") == Price(0.15, 0.075, 0.15, 0.6)
    assert price_of("custom", "scripted-model") is None
    assert price_of("custom", "claude-opus-4-7") is None  # not priced as claude-opus-4


def test_cost_prices_each_kind_of_token() -> None:
    u = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=10_000,
              cache_write_tokens=2000)
    # 1000×3 + 10000×0.30 + 2000×3.75 + 200×15 = 3000 + 3000 + 7500 + 3000 per million
    assert round(price_of("anthropic", "claude-sonnet-4-5").cost(u), 10) == 0.0165


def test_the_ledger_is_appended_one_line_per_run_and_summed_per_utc_day_and_month() -> None:
    environ = dict(os.environ)
    at = dt.datetime(2026, 12, 3, 23, 59, 59, tzinfo=dt.timezone.utc)
    u = Usage(input_tokens=100, output_tokens=40, cache_read_tokens=1000)
    assert record_run(environ, "custom", "x", Usage(), 0, now=at) == (None, "")  # no call
    first, problem = record_run(environ, "anthropic", "claude-sonnet-4-5", u, 1, now=at)
    assert problem == ""
    record_run(environ, "custom", "scripted-model", u, 2, now=at + dt.timedelta(seconds=1))
    path = ledger_path(environ)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    lines = path.read_text().splitlines()
    assert read_ledger(environ) == ([json.loads(x) for x in lines], 0)
    assert first == {"time": "2026-12-03T23:59:59Z", "provider": "anthropic",
                     "model": "claude-sonnet-4-5", "requests": 1, "input_tokens": 100,
                     "cache_read_tokens": 1000, "cache_write_tokens": 0, "output_tokens": 40,
                     "estimated": False, "cost_usd": 0.0012}
    rows = read_ledger(environ).rows
    assert rows[1]["time"] == "2026-12-04T00:00:00Z" and rows[1]["cost_usd"] is None
    assert spent(rows, "2026-12-03") == 0.0012
    assert spent(rows, "2026-12-04") == 0  # unpriced: tokens only
    assert spent(rows, "2026-12") == 0.0012


SONNET = Price(3.0, 0.3, 3.75, 15.0)


def daily(cap: float) -> Config:
    return build_config([Layer("test", {"budget": {"daily_usd": cap}})])


def test_model_names_match_case_insensitively_and_with_a_dotted_version() -> None:
    assert price_of("anthropic", "Claude-Sonnet-4-5") == SONNET
    assert price_of("openrouter", "anthropic/claude-sonnet-4.5") == SONNET
    assert price_of("custom", "CLAUDE-SONNET-4.5-20250929") == SONNET
    assert price_of("openai", "GPT-4o-mini") == Price(0.15, 0.075, 0.15, 0.6)
    # a keyless local server is not charged list price, whatever model name it serves
    for local in ("ollama", "llama-cpp", "vllm", "litellm"):
        assert price_of(local, "claude-sonnet-4-5") is None


def test_a_relative_xdg_state_home_is_ignored() -> None:
    home = {"HOME": "/home/u"}
    assert str(ledger_path({**home, "XDG_STATE_HOME": "state"})) == (
        "/home/u/.local/state/ocr-hook/usage.jsonl")
    assert str(ledger_path({**home, "XDG_STATE_HOME": ""})) == (
        "/home/u/.local/state/ocr-hook/usage.jsonl")
    assert str(ledger_path({**home, "XDG_STATE_HOME": "/s"})) == "/s/ocr-hook/usage.jsonl"


def test_usd_keeps_four_decimals_below_one_dollar() -> None:
    assert [usd(x) for x in (0.025, 0.0, 0.01, 0.0012, 0.98, 1.0, 12.345)] == [
        "$0.0250", "$0.0000", "$0.0100", "$0.0012", "$0.9800", "$1.00", "$12.35"]


def _write(environ: dict[str, str], lines: list[str]) -> None:
    path = ledger_path(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def _line(time: str, cost: object) -> str:
    return json.dumps({"time": time, "model": "m", "cost_usd": cost})


def test_non_finite_or_negative_costs_are_skipped_and_counted() -> None:
    environ = dict(os.environ)
    good = [_line("2026-12-03T01:00:00Z", 0.25), _line("2026-12-03T02:00:00Z", None)]
    bad = ['{"time": "2026-12-03T03:00:00Z", "cost_usd": NaN}',
           '{"time": "2026-12-03T03:00:01Z", "cost_usd": Infinity}',
           '{"time": "2026-12-03T03:00:02Z", "cost_usd": -Infinity}',
           _line("2026-12-03T03:00:03Z", -1e9), _line("2026-12-03T03:00:04Z", "1"),
           _line("2026-12-03T03:00:05Z", True), "{torn", "[1]"]
    _write(environ, [good[0], *bad, good[1]])
    for since in ("", "2026-12"):
        ledger = read_ledger(environ, since=since)
        assert ledger.skipped == 8
        assert [r["cost_usd"] for r in ledger.rows] == [0.25, None]
        assert spent(ledger.rows, "2026-12-03") == 0.25


def test_the_cap_check_reads_only_the_current_month_from_the_end() -> None:
    environ = dict(os.environ)
    old = [_line(f"2026-11-{d:02d}T12:00:00Z", 1.0) for d in range(1, 31)] * 200
    new = [_line("2026-12-01T00:00:00Z", 0.5), _line("2026-12-03T10:00:00Z", 0.25)]
    _write(environ, [*old, *new])
    assert read_ledger(environ, since="2026-12") == ([json.loads(x) for x in new], 0)
    assert len(read_ledger(environ).rows) == 6002


def test_an_unreadable_ledger_refuses_a_capped_run_and_names_the_path() -> None:
    environ = dict(os.environ)
    path = ledger_path(environ)
    path.mkdir(parents=True)  # usage.jsonl is a directory
    with pytest.raises(LedgerUnreadable, match=r"^cannot read the usage ledger .*usage\.jsonl: Is"
                                               r" a directory$"):
        read_ledger(environ)
    cfg = build_config([])
    assert check_caps(cfg, environ, "anthropic", "claude-sonnet-4-5", ["x"], 0) == (
        "", "", "", None)  # no cap: nothing read
    capped = daily(1.0)
    verdict = check_caps(capped, environ, "anthropic", "claude-sonnet-4-5", ["x"], 0)
    assert verdict.why == (f"cannot read the usage ledger {path}: Is a directory"
                           " (budget.daily_usd cannot be checked)")
    assert verdict.kind == "spend_ledger" and verdict.guard is None
    assert verdict.warning == (f"cannot read the usage ledger {path}: Is a directory;"
                               " budget.daily_usd cannot be checked: the review is refused")
    _line_, problem = record_run(environ, "anthropic", "claude-sonnet-4-5",
                                 Usage(input_tokens=1), 1)
    assert problem == f"cannot write the usage ledger {path}: Is a directory"


def test_the_start_estimate_prices_the_first_request_with_a_modest_output() -> None:
    environ = dict(os.environ)
    capped = daily(0.025)
    # 8,000 prompt tokens + "x" (1 token) at $3 + 4,096 output at $15: $0.024 + $0.06144
    verdict = check_caps(capped, environ, "anthropic", "claude-sonnet-4-5", ["x"], 16384)
    assert verdict.why == (
        "daily budget $0.0250 would be passed: $0.0000 spent today (UTC), this review needs"
        " about $0.0854 (budget.daily_usd; resets at 00:00 UTC; see `git ocr llm usage`)")
    capped = daily(1.0)
    verdict = check_caps(capped, environ, "anthropic", "claude-sonnet-4-5", ["x"], 16384)
    assert verdict.why == "" and verdict.guard is not None
    assert verdict.guard.caps == [Cap("daily", 1.0, "budget.daily_usd", 0.0)]
    # an Opus run fits a $1 cap now: 8,001 × $15 + 4,096 × $75 per million = $0.427
    opus = check_caps(capped, environ, "anthropic", "claude-opus-4-1", ["x"], 16384)
    assert opus.why == "" and opus.guard is not None


def test_the_start_estimate_is_one_request_with_the_smallest_file_not_the_sum() -> None:
    environ = dict(os.environ)
    capped = daily(0.10)
    # ten 30,000-byte diffs (10,000 tokens each): the sum (108,000 tokens, $0.32 + $0.06144)
    # would be refused; one request with the smallest (3 bytes: 8,001 tokens) is $0.0854
    patches = ["y" * 30_000] * 10 + ["abc"]
    verdict = check_caps(capped, environ, "anthropic", "claude-sonnet-4-5", patches, 16384)
    assert verdict.why == "" and verdict.guard is not None
    tight = daily(0.08)  # not even the smallest file's request fits: refused, that request named
    verdict = check_caps(tight, environ, "anthropic", "claude-sonnet-4-5", patches, 16384)
    assert verdict.why == (
        "daily budget $0.0800 would be passed: $0.0000 spent today (UTC), this review needs"
        " about $0.0854 (budget.daily_usd; resets at 00:00 UTC; see `git ocr llm usage`)")


def test_the_guard_stops_the_request_that_would_pass_the_cap() -> None:
    guard = SpendGuard(SONNET, [Cap("monthly", 0.1, "budget.monthly_usd", 0.02)])
    so_far = Usage(input_tokens=10_000, output_tokens=1000)  # $0.03 + $0.015 = $0.045
    guard(so_far, [], 1000, 100)  # $0.003 + $0.0015: $0.0695 ≤ $0.10
    with pytest.raises(SpendCapExceeded) as e:
        guard(so_far, [], 1000, 16384)  # 1,000 + 4,096 output: $0.003 + $0.06144
    assert str(e.value) == (
        "monthly budget $0.1000 would be passed: $0.0200 spent this month (UTC), this review"
        " spent $0.0450 and its next request needs about $0.0644 (budget.monthly_usd; resets"
        " on the 1st at 00:00 UTC; see `git ocr llm usage`)")
    # another group's request in flight counts at its input and bounded output: 1,000 input
    # + 4,096 of its 16,384 output = $0.06444; $0.045 + $0.06444 + $0.0045 passes $0.08 left
    guard(so_far, [(1000, 100)], 1000, 100)  # $0.045 + $0.0045 + $0.0045 ≤ $0.08
    with pytest.raises(SpendCapExceeded, match=r"this review spent \$0\.1094 and its next"
                                               r" request needs about \$0\.0045 "):
        guard(so_far, [(1000, 16384)], 1000, 100)


def test_the_prompt_allowance_bounds_the_shipped_prompt_around_the_diffs() -> None:
    """PROMPT_ALLOWANCE_TOKENS prices what every request carries besides the diffs: the
    templates, the longest built-in rule file and the tool definitions must stay under it."""
    from ocr_hook.pipeline.spend import PROMPT_ALLOWANCE_TOKENS
    from ocr_hook.util import count_tokens, list_builtin_dir, read_builtin_text

    templates = sum(count_tokens(read_builtin_text(f"templates/{n}")) for n in (
        "main_system.md", "main_user_head.md", "main_user.md", "severity.md"))
    rules = max(count_tokens(read_builtin_text(f"rules/{n}"))
                for n in list_builtin_dir("rules") if n.endswith(".md"))
    tools = count_tokens(read_builtin_text("tools.json"))
    assert templates + rules + tools < PROMPT_ALLOWANCE_TOKENS, (templates, rules, tools)
