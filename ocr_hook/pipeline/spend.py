"""Money caps (spec §13.7): the usage ledger, model prices and the check before a run's first
model call.

- Prices: ``config/providers.json``, each preset's ``prices`` table (USD per million tokens of
  ``input``, ``cached_input``, ``cache_write`` and ``output``). A model is priced by the
  table of its endpoint's preset, else by the first preset whose table names it (a custom or
  proxy endpoint serving ``claude-sonnet-4-5`` is priced as Anthropic's); a dated snapshot
  (``claude-sonnet-4-5-20250929``) or ``vendor/model`` name takes its model's price. A model found
  nowhere has no price: its tokens are counted, its cost is null.
- Ledger: ``$XDG_STATE_HOME/ocr-hook/usage.jsonl`` (else ``~/.local/state/ocr-hook/``), one
  JSON line per run that made model calls, appended with one ``write`` on an ``O_APPEND``
  descriptor (concurrent runs never interleave a line). Days and months are UTC.
- Check: today's (this month's) recorded cost plus this run's estimate (its input priced as
  uncached input, plus one request's maximum output) must not pass ``budget.daily_usd``
  (``budget.monthly_usd``); otherwise the run is not reviewed with the reason.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .. import config, util
from ..llm import Usage, estimate_tokens

LEDGER_NAME = "usage.jsonl"
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")  # a dated model snapshot
# the prompt around the diffs (system prompt, checklist, tool definitions): measured at about
# 5,000 tokens with the shipped prompts and tools; rounded up so the estimate stays a bound
PROMPT_ALLOWANCE_TOKENS = 8000
DEFAULT_OUTPUT_TOKENS = 16384  # spec §2 llm.max_output_tokens default


class Price(NamedTuple):
    """USD per million tokens of each kind (``config/providers.json`` ``prices``)."""

    input: float
    cached_input: float
    cache_write: float
    output: float

    def cost(self, u: Usage) -> float:
        """The USD cost of ``u`` (uncached input, cache reads, cache writes, output)."""
        return (u.input_tokens * self.input + u.cache_read_tokens * self.cached_input
                + u.cache_write_tokens * self.cache_write + u.output_tokens * self.output) / 1e6


def price_of(provider: str, model: str) -> Price | None:
    """The list price of ``model`` served through preset ``provider`` ("" or ``custom``: any
    preset's table), or None when no table names it, nor its name without a ``vendor/``
    prefix and a snapshot suffix (``-20250929``, ``-2024-07-18``, ``-latest``)."""
    presets = config.provider_presets()
    order = [presets[provider]] if provider in presets else []
    order += [p for name, p in presets.items() if name != provider]
    base = _SNAPSHOT.sub("", model.rpartition("/")[2])  # openrouter: vendor/model
    for preset in order:
        table = preset.get("prices") or {}
        row = table.get(model) or table.get(base)
        if row:
            return Price(float(row["input"]), float(row["cached_input"]),
                         float(row["cache_write"]), float(row["output"]))
    return None


def ledger_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/ocr-hook/usage.jsonl``, else ``$HOME/.local/state/ocr-hook/…``."""
    base = environ.get("XDG_STATE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ocr-hook" / LEDGER_NAME


def usd(amount: float) -> str:
    """``$0.98``; amounts under a cent keep four decimals (``$0.0012``) so they do not read
    as nothing."""
    return f"${amount:.2f}" if amount == 0 or amount >= 0.01 else f"${amount:.4f}"


def record_run(environ: Mapping[str, str], provider: str, model: str, usage: Usage,
               requests: int, *, now: _dt.datetime | None = None) -> dict[str, Any] | None:
    """Append one ledger line for a run's ``usage`` (nothing when it made no model call) and
    return it: ``time`` (UTC, ISO 8601 with ``Z``), ``provider``, ``model``, ``requests``, the
    four token counts, ``estimated`` (counted locally) and ``cost_usd`` (None: no price). An
    unwritable ledger is ignored (a review never fails for its accounting)."""
    if not requests and not usage.total:
        return None
    price = price_of(provider, model)
    when = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = {"time": when, "provider": provider, "model": model, "requests": requests,
            "input_tokens": usage.input_tokens, "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "output_tokens": usage.output_tokens, "estimated": usage.estimated,
            "cost_usd": round(price.cost(usage), 8) if price else None}
    path = ledger_path(environ)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(line, sort_keys=True) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass
    return line


def read_ledger(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """The ledger's lines in order; a line that is not a JSON object with a ``time`` text (a
    torn or hand-edited line) is skipped."""
    try:
        text = ledger_path(environ).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("time"), str):
            out.append(row)
    return out


def spent(rows: Iterable[Mapping[str, Any]], prefix: str) -> float:
    """The recorded cost of the rows whose ``time`` starts with ``prefix`` (a UTC day
    ``2026-12-03`` or month ``2026-12``); unpriced rows count nothing."""
    return sum(float(r["cost_usd"]) for r in rows
               if r["time"].startswith(prefix) and isinstance(r.get("cost_usd"), (int, float)))


class CapCheck(NamedTuple):
    """The verdict of :func:`check_caps`: ``why`` (non-empty: the run must not start) and
    ``warning`` (non-empty: a cap cannot be enforced, one line)."""

    why: str = ""
    warning: str = ""


def check_caps(cfg: config.Config, environ: Mapping[str, str], provider: str, model: str,
               patches: Sequence[str], max_output_tokens: int,
               *, now: _dt.datetime | None = None) -> CapCheck:
    """Would this run pass ``budget.daily_usd`` or ``budget.monthly_usd``? Its estimate: the
    ``patches`` (the reviewed files' diff texts) at UTF-8 bytes / 3 tokens plus
    PROMPT_ALLOWANCE_TOKENS, priced as uncached input, plus ``max_output_tokens`` of output.
    Without a cap: nothing is read. Without a price for ``model``: a warning, no refusal."""
    b = cfg.budget
    caps = [(label, cap, key) for label, cap, key in (
        ("daily", b.daily_usd, "budget.daily_usd"),
        ("monthly", b.monthly_usd, "budget.monthly_usd")) if cap is not None]
    if not caps:
        return CapCheck()
    price = price_of(provider, model)
    if price is None:
        return CapCheck(warning=f"{', '.join(k for _, _, k in caps)} cannot be enforced: no"
                                f" price for model {util.display_text(model)!s} in"
                                " config/providers.json (its tokens are counted only)")
    tokens = estimate_tokens("\n".join(patches)) + PROMPT_ALLOWANCE_TOKENS
    estimate = price.cost(Usage(input_tokens=tokens,
                                output_tokens=max_output_tokens or DEFAULT_OUTPUT_TOKENS))
    rows = read_ledger(environ)
    day = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d")
    for label, cap, key in caps:
        period = day if label == "daily" else day[:7]
        so_far = spent(rows, period)
        if so_far + estimate > cap:
            when = "today (UTC)" if label == "daily" else "this month (UTC)"
            return CapCheck(why=f"{label} budget {usd(cap)} would be passed: {usd(so_far)}"
                                f" spent {when}, this review needs about {usd(estimate)}"
                                f" ({key})")
    return CapCheck()
