"""Prices and the ledger of the money caps (spec §13.7), on the shipped ``config/providers.json``
and a real ledger file in the test's isolated state folder."""

from __future__ import annotations

import datetime as dt
import json
import os

from ocr_hook.llm import Usage
from ocr_hook.pipeline.spend import Price, ledger_path, price_of, read_ledger, record_run, spent


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
    assert record_run(environ, "custom", "x", Usage(), 0, now=at) is None  # no model call
    first = record_run(environ, "anthropic", "claude-sonnet-4-5", u, 1, now=at)
    record_run(environ, "custom", "scripted-model", u, 2, now=at + dt.timedelta(seconds=1))
    path = ledger_path(environ)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    lines = path.read_text().splitlines()
    assert [json.loads(x) for x in lines] == read_ledger(environ)
    assert first == {"time": "2026-12-03T23:59:59Z", "provider": "anthropic",
                     "model": "claude-sonnet-4-5", "requests": 1, "input_tokens": 100,
                     "cache_read_tokens": 1000, "cache_write_tokens": 0, "output_tokens": 40,
                     "estimated": False, "cost_usd": 0.0012}
    rows = read_ledger(environ)
    assert rows[1]["time"] == "2026-12-04T00:00:00Z" and rows[1]["cost_usd"] is None
    assert spent(rows, "2026-12-03") == 0.0012
    assert spent(rows, "2026-12-04") == 0  # unpriced: tokens only
    assert spent(rows, "2026-12") == 0.0012
