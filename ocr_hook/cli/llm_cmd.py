"""``git ocr llm providers`` (the built-in presets), ``git ocr llm test`` (one review-shaped
request to the configured endpoint; spec §13) and ``git ocr llm usage`` (the usage ledger per
UTC day and model, and the budget caps; spec §13.7). Exit codes of ``llm test``: 0 tools work,
1 the model does not call tools, 2 no endpoint, 3 the request failed.

The report holds the server's and the model's text (an error body, the reply, tool names) and
settings a repository may set: each value printed passes ``util.display_text``, ``--json``
``report.display_json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from typing import Any

from .. import agent, config, llm, tools, util
from ..errors import ConfigError, LlmError, OcrError
from ..exitcodes import Exit
from ..report import display_json
from .common import repo_or_none, say

PROBE_SYSTEM = (
    "You are the code reviewer of ocr-hook. This request checks that the model can call the"
    " review tools. Reply only by calling a tool."
)
PROBE_USER = (
    'Connectivity check: there is nothing to review. Call the task_done tool with {"state":'
    ' "DONE"} now. Do not answer with text.'
)


def run_llm_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``llm providers|test``; returns the exit code. Raises OcrError for usage errors."""
    action = getattr(args, "llm_cmd", None)
    if action == "providers":
        table = config.provider_presets()
        if args.json:
            say(json.dumps(table, indent=2, ensure_ascii=False))
            return Exit.OK
        rows = [("NAME", "PROTOCOL", "BASE URL", "KEY VARIABLE", "PROMPT CACHE", "NOTES")]
        for name, p in table.items():
            key_env = p.get("key_env") or ("(none)" if p.get("keyless") else "")
            if p.get("keyless") and p.get("key_env"):
                key_env += " (optional)"
            rows.append((name, p.get("protocol", "openai"),
                         p.get("base_url") or f"${p.get('base_url_env', '')}", key_env,
                         p.get("prompt_cache", ""), p.get("note", "")))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            say("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5])
        say("\nUse: git ocr config set llm.provider NAME; git ocr config set llm.model MODEL")
        return Exit.OK
    if action == "test":
        return _llm_test(args, environ)
    if action == "usage":
        return _llm_usage(args, environ)
    raise OcrError("usage: git ocr llm test|providers|usage")


def _llm_test(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Send the review's request shape (system + user message, every main tool) once; report
    latency, whether the model called a tool, and the resolved endpoint with the key masked."""
    flags: dict[str, Any] = {}
    if args.provider:
        flags["provider"] = args.provider
    if args.model:
        flags["model"] = args.model
    layers = config.config_layers(repo_or_none(), environ,
                           config.Layer("command line", {"llm": flags} if flags else {},
                                        {f"llm.{k}": f"command-line option --{k}" for k in flags}),
                           llm_command=True)
    cfg = config.build_config(layers)
    endpoint, why = config.resolve_llm_endpoint(cfg, environ)
    if endpoint is None:
        raise ConfigError(why)
    url = llm.messages_url(endpoint.url) if endpoint.protocol == "anthropic" else llm.chat_url(
        endpoint.url)
    report: dict[str, Any] = {
        "provider": endpoint.provider, "protocol": endpoint.protocol, "model": endpoint.model,
        "url": url, "api_key": llm.mask_key(endpoint.api_key) or "(none)",
    }
    offered = [spec for spec, _plan, main in tools.load_tool_specs().values() if main]
    client = llm.make_client(endpoint,
                             count_tokens=lambda s: util.count_tokens(s, endpoint.model))
    messages = [llm.Message("system", PROBE_SYSTEM), llm.Message("user", PROBE_USER)]
    t0 = time.monotonic()
    try:
        turn = client.complete(messages, offered)
    except LlmError as e:
        report.update(ok=False, outcome="request_failed", error=str(e), error_kind=e.kind,
                      requests=e.attempts, latency_s=round(time.monotonic() - t0, 3))
        return _report(args, report, Exit.LLM_FAILED)
    from .. import pipeline  # spec §13.7: the probe's tokens are spent too

    pipeline.record_run(environ, endpoint.provider, endpoint.model, turn.usage, 1)
    calls = list(turn.message.tool_calls)
    outcome, code = "tool_call", Exit.OK
    if not calls:
        calls = agent.text_tool_calls(turn.message.content, {t.name for t in offered})
        outcome, code = ("tool_call_as_text", Exit.OK) if calls else ("no_tool_call",
                                                                       Exit.NO_TOOLS)
    u = turn.usage
    report.update(
        ok=code == Exit.OK, outcome=outcome, tool_calls=[c.name for c in calls],
        latency_s=round(turn.latency_s, 3), requests=turn.attempts,
        finish_reason=turn.finish_reason, server_model=turn.model,
        usage={"input": u.input_tokens, "output": u.output_tokens,
               "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
               "estimated": u.estimated},
        reply_text=turn.message.text[:200],
    )
    return _report(args, report, code)


def _report(args: argparse.Namespace, report: Mapping[str, Any], code: int) -> int:
    """Print the ``llm test`` report (JSON with ``--json``); returns ``code``."""
    if args.json:
        say(display_json(report))
        return code

    def shown(key: str) -> str:
        return util.display_text(str(report[key]))

    say(f"provider: {shown('provider')}  protocol: {shown('protocol')}  model: {shown('model')}")
    say(f"url:      {shown('url')}")
    say(f"api key:  {shown('api_key')}")
    say(f"latency:  {report['latency_s']:.2f}s over {report['requests']} request(s)")
    outcome = report["outcome"]
    if outcome == "request_failed":
        say(f"FAILED:   {shown('error')}")
    elif outcome == "no_tool_call":
        say("FAILED:   model does not call tools: it answered with text instead of a tool call"
            f' ("{shown("reply_text")}"); reviews need a model and server with tool calling'
            " (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice)")
    else:
        how = "as text in the reply (parsed by the fallback)" if outcome == "tool_call_as_text" \
            else "natively"
        u = report["usage"]
        names = util.display_text(", ".join(report["tool_calls"]))
        say(f"OK:       model called {names} {how}; tokens in/out"
            f" {u['input'] + u['cache_read'] + u['cache_write']}/{u['output']}"
            + (" (counted locally)" if u["estimated"] else ""))
    return code


_USAGE_COUNTS = ("requests", "input_tokens", "cache_read_tokens", "cache_write_tokens",
                 "output_tokens")


def usage_rows(ledger: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ledger's lines summed per (UTC day, provider, model), oldest day first: ``day``,
    ``provider``, ``model``, ``runs``, the counts of _USAGE_COUNTS, ``cost_usd`` (the priced
    runs' sum; None when no run of the row had a price) and ``unpriced_runs``."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for line in ledger:
        key = (line["time"][:10], str(line.get("provider", "")), str(line.get("model", "")))
        row = rows.setdefault(key, {"day": key[0], "provider": key[1], "model": key[2],
                                    "runs": 0, **dict.fromkeys(_USAGE_COUNTS, 0),
                                    "cost_usd": None, "unpriced_runs": 0})
        row["runs"] += 1
        for k in _USAGE_COUNTS:
            value = line.get(k)
            row[k] += value if isinstance(value, int) else 0
        cost = line.get("cost_usd")
        if isinstance(cost, (int, float)):
            row["cost_usd"] = round((row["cost_usd"] or 0.0) + cost, 8)
        else:
            row["unpriced_runs"] += 1
    return [rows[k] for k in sorted(rows)]


def _llm_usage(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Print the spend per UTC day and model, today's and this month's totals against the caps
    and the models without a price (tokens counted only)."""
    from .. import pipeline

    cfg = config.build_config(config.config_layers(repo_or_none(), environ))
    try:
        ledger, skipped = pipeline.read_ledger(environ)
    except pipeline.LedgerUnreadable as e:
        raise OcrError(str(e)) from None
    rows = usage_rows(ledger)
    day = time.strftime("%Y-%m-%d", time.gmtime())
    unpriced = sorted({r["model"] for r in rows if r["unpriced_runs"]})
    report = {
        "ledger": str(pipeline.ledger_path(environ)), "timezone": "UTC", "days": rows,
        "today": {"day": day, "cost_usd": round(pipeline.spent(ledger, day), 8),
                  "cap_usd": cfg.budget.daily_usd},
        "month": {"month": day[:7], "cost_usd": round(pipeline.spent(ledger, day[:7]), 8),
                  "cap_usd": cfg.budget.monthly_usd},
        "unpriced_models": unpriced, "skipped_lines": skipped,
    }
    if args.json:
        say(display_json(report))
        return Exit.OK
    if not rows:
        say(f"no model usage recorded yet (ledger: {report['ledger']})")
    else:
        table = [("DAY (UTC)", "PROVIDER", "MODEL", "RUNS", "REQUESTS", "INPUT", "CACHE READ",
                  "CACHE WRITE", "OUTPUT", "COST")]
        for r in rows:
            cost = "unknown" if r["cost_usd"] is None else f"${r['cost_usd']:.6f}"
            if r["cost_usd"] is not None and r["unpriced_runs"]:
                cost += " + unknown"
            table.append((r["day"], util.display_text(r["provider"]),
                          util.display_text(r["model"]),
                          *(str(r[k]) for k in ("runs", *_USAGE_COUNTS)), cost))
        widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
        for t in table:
            say("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)).rstrip())
        say(f"ledger: {report['ledger']}")
    for label, part in (("today", report["today"]), ("this month", report["month"])):
        cap = part["cap_usd"]
        limit = f"cap {pipeline.usd(cap)}" if cap is not None else "no cap"
        if cap is not None and part["cost_usd"] >= cap:
            limit += ", cap reached"
        say(f"{label}: ${part['cost_usd']:.6f} ({limit})")
    if skipped:
        say(f"skipped {skipped} ledger line{'s' if skipped != 1 else ''} that did not parse"
            " or had no valid cost_usd")
    if unpriced:
        say("no price for " + ", ".join(util.display_text(m) for m in unpriced)
            + ": tokens counted only (prices: config/providers.json); a cap cannot be"
              " enforced for these models")
    return Exit.OK
