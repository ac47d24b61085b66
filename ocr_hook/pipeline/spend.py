"""Money caps (spec §13.7): the usage ledger, model prices, the check before a run's first
model call and the ceiling checked before each request.

- Prices: ``config/providers.json``, each preset's ``prices`` table (USD per million tokens of
  ``input``, ``cached_input``, ``cache_write`` and ``output``). A model is priced by the
  table of its endpoint's preset, else by the first preset whose table names it (a custom or
  proxy endpoint serving ``claude-sonnet-4-5`` is priced as Anthropic's); names compare
  case-insensitively, a dated snapshot (``claude-sonnet-4-5-20250929``), a ``vendor/model`` name
  and a dotted version (``claude-sonnet-4.5``) take their model's price. A model found nowhere,
  and any model of a keyless local preset (ollama, llama-cpp, vllm, litellm), has no price: its
  tokens are counted, its cost is null.
- Ledger: ``$XDG_STATE_HOME/ocr-hook/usage.jsonl`` (an absolute XDG_STATE_HOME only, else
  ``~/.local/state/ocr-hook/``), one JSON line per run that made model calls, appended with one
  ``write`` on an ``O_APPEND`` descriptor (concurrent runs never interleave a line). Days and
  months are UTC; lines are in time order, so the cap check reads the file from its end back
  to the first line of an earlier month.
- Check: today's (this month's) recorded cost plus the first request's estimate (one request
  with the smallest reviewed file, not the sum of all) must not pass
  ``budget.daily_usd`` (``budget.monthly_usd``); then :class:`SpendGuard` stops the run before
  any request that would pass what is left of the cap.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .. import config, util
from ..errors import SpendCapExceeded
from ..llm import Usage, estimate_tokens

LEDGER_NAME = "usage.jsonl"
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")  # a dated model snapshot
_DOTTED = re.compile(r"(?<=\d)\.(?=\d)")  # claude-sonnet-4.5 (OpenRouter) → claude-sonnet-4-5
# the prompt around the diffs (system prompt, checklist, tool definitions): a bound on the
# shipped prompts and tools (tests/pipeline/test_spend.py checks they stay under it)
PROMPT_ALLOWANCE_TOKENS = 8000
# the output a request is priced at, in the start estimate and the per-request ceiling: a
# review turn (tool calls) is far shorter; llm.max_output_tokens when that is lower
ESTIMATE_OUTPUT_TOKENS = 4096
READ_BLOCK = 64 * 1024  # the cap check reads the ledger backwards in blocks of this size
_TIME = re.compile(rb'"time": *"([^"]*)"')


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


def _names(model: str) -> list[str]:
    """The lookup names of ``model``: itself, without ``vendor/`` and a snapshot suffix, with
    a dotted version dashed; lower case."""
    m = model.strip().lower()
    base = _SNAPSHOT.sub("", m.rpartition("/")[2])
    return list(dict.fromkeys([m, base, _DOTTED.sub("-", base)]))


def price_of(provider: str, model: str) -> Price | None:
    """The list price of ``model`` served through preset ``provider`` ("" or ``custom``: any
    preset's table), or None when no table names it (see the module docstring for the names
    tried) or ``provider`` is a keyless local preset (a local server costs no list price)."""
    presets = config.provider_presets()
    if presets.get(provider, {}).get("keyless"):
        return None
    order = [presets[provider]] if provider in presets else []
    order += [p for name, p in presets.items() if name != provider]
    names = _names(model)
    for preset in order:
        table = {k.lower(): v for k, v in (preset.get("prices") or {}).items()}
        row = next((table[n] for n in names if n in table), None)
        if row:
            return Price(float(row["input"]), float(row["cached_input"]),
                         float(row["cache_write"]), float(row["output"]))
    return None


def ledger_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/ocr-hook/usage.jsonl``, else (unset, empty or relative: the XDG
    Base Directory spec ignores a relative path) ``$HOME/.local/state/ocr-hook/…``."""
    base = environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ocr-hook" / LEDGER_NAME


def usd(amount: float) -> str:
    """``$1.25``; below $1 four decimals (``$0.0250``, ``$0.0012``) so a small cap and the
    amounts compared with it read right."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4f}"


def record_run(environ: Mapping[str, str], provider: str, model: str, usage: Usage,
               requests: int, *, now: _dt.datetime | None = None) -> tuple[dict | None, str]:
    """Append one ledger line for a run's ``usage`` (nothing when it made no model call) and
    return it with "" or, when the ledger cannot be written, a one-line problem naming the path
    and the OS error (a review never fails for its accounting). The line: ``time`` (UTC, ISO
    8601 with ``Z``), ``provider``, ``model``, ``requests``, the four token counts,
    ``estimated`` (counted locally) and ``cost_usd`` (None: no price)."""
    if not requests and not usage.total:
        return None, ""
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
    except OSError as e:
        return line, f"cannot write the usage ledger {path}: {e.strerror or e}"
    return line, ""


class Ledger(NamedTuple):
    """The ledger's good lines in order, and how many were skipped (not JSON, no ``time``, a
    ``cost_usd`` that is not a finite number ≥ 0 or null)."""

    rows: list[dict[str, Any]]
    skipped: int


class LedgerUnreadable(Exception):
    """The ledger exists but cannot be read (a directory, no permission): ``str()`` is one line
    naming the path and the OS error."""


def _good(raw: str) -> dict[str, Any] | None:
    try:
        row = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("time"), str):
        return None
    cost = row.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))
                             or not math.isfinite(cost) or cost < 0):
        return None
    return row


def _older(raw: bytes, since: str) -> bool:
    m = _TIME.search(raw)
    return bool(m) and m.group(1).decode("ascii", "replace") < since


def _tail_lines(path: Path, since: str) -> list[str]:
    """The lines of ``path`` from its end back to (not including) the first one whose time
    (the ``"time": "…"`` text) sorts before ``since``: blocks of READ_BLOCK read backwards; a
    block whose first line is not older is taken whole (lines are in time order)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        pos, tail, out = fh.tell(), b"", []
        while pos > 0:
            step = min(READ_BLOCK, pos)
            pos -= step
            fh.seek(pos)
            lines = (fh.read(step) + tail).split(b"\n")
            tail = lines.pop(0) if pos > 0 else b""
            if lines and not _older(lines[0], since):
                out.extend(reversed(lines))
                continue
            for raw in reversed(lines):
                if _older(raw, since):
                    return [x.decode("utf-8", "replace") for x in reversed(out)]
                out.append(raw)
    return [x.decode("utf-8", "replace") for x in reversed(out)]


def read_ledger(environ: Mapping[str, str], *, since: str = "") -> Ledger:
    """The ledger's lines in order (a missing ledger: none). ``since`` (a UTC month
    ``2026-12``): only the lines from the end back to an earlier month's line. Raises
    LedgerUnreadable when the file exists but cannot be read."""
    path = ledger_path(environ)
    try:
        if since:
            lines = _tail_lines(path, since)
        else:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return Ledger([], 0)
    except OSError as e:
        raise LedgerUnreadable(f"cannot read the usage ledger {path}: {e.strerror or e}") from e
    rows = [row for raw in lines if raw.strip() and (row := _good(raw)) is not None]
    return Ledger(rows, sum(1 for raw in lines if raw.strip()) - len(rows))


def spent(rows: Iterable[Mapping[str, Any]], prefix: str) -> float:
    """The recorded cost of the rows whose ``time`` starts with ``prefix`` (a UTC day
    ``2026-12-03`` or month ``2026-12``); unpriced rows count nothing."""
    return sum(float(r["cost_usd"]) for r in rows
               if r["time"].startswith(prefix) and isinstance(r.get("cost_usd"), (int, float)))


class Cap(NamedTuple):
    """One money cap of a run: ``label`` (daily, monthly), ``cap`` (USD), ``key`` (its
    setting), ``so_far`` (recorded cost of its period before the run), ``source`` (where the
    setting came from: a file, an environment variable; "" unknown)."""

    label: str
    cap: float
    key: str
    so_far: float
    source: str = ""

    def passed(self, estimate: float, *, run: float = 0.0) -> str:
        """The NOT REVIEWED reason when this run's cost so far ``run`` plus ``estimate`` (the
        next request) passes the cap, else ""."""
        if self.so_far + run + estimate <= self.cap:
            return ""
        when, resets = (("today (UTC)", "resets at 00:00 UTC") if self.label == "daily"
                        else ("this month (UTC)", "resets on the 1st at 00:00 UTC"))
        this = (f"this review needs about {usd(estimate)}" if not run else
                f"this review spent {usd(run)} and its next request needs about"
                f" {usd(estimate)}")
        key = f"{self.key} from {self.source}" if self.source else self.key
        return (f"{self.label} budget {usd(self.cap)} would be passed: {usd(self.so_far)}"
                f" spent {when}, {this} ({key}; {resets}; see `git ocr llm usage`)")


class SpendGuard:
    """The per-request ceiling (spec §13.7), the Meter's ``spend_check``: called before each
    model request with the run's answered usage, the (input estimate, maximum output) of the
    other requests in flight and the next request's input estimate and maximum output; each
    request not answered yet is priced at its input plus min(max output,
    ESTIMATE_OUTPUT_TOKENS) of output. Raises SpendCapExceeded (reason ``spend_cap``) when the
    next request would pass a cap."""

    def __init__(self, price: Price, caps: Sequence[Cap]) -> None:
        self.price = price
        self.caps = list(caps)

    def _request(self, input_tokens: int, max_output_tokens: int) -> float:
        return self.price.cost(Usage(input_tokens=input_tokens, output_tokens=min(
            max_output_tokens or ESTIMATE_OUTPUT_TOKENS, ESTIMATE_OUTPUT_TOKENS)))

    def __call__(self, answered: Usage, in_flight: Sequence[tuple[int, int]],
                 input_tokens: int, max_output_tokens: int) -> None:
        run = self.price.cost(answered) + sum(self._request(i, o) for i, o in in_flight)
        nxt = self._request(input_tokens, max_output_tokens)
        for cap in self.caps:
            why = cap.passed(nxt, run=run)
            if why:
                raise SpendCapExceeded(why)


class CapCheck(NamedTuple):
    """The verdict of :func:`check_caps`: ``why`` (non-empty: the run must not start),
    ``warning`` (non-empty: one line, a cap cannot be enforced or the ledger cannot be read)
    with its ``kind`` (``spend_unpriced``, ``spend_ledger``) and ``guard`` (the per-request
    ceiling of a run that may start; None without a cap or a price)."""

    why: str = ""
    warning: str = ""
    kind: str = ""
    guard: SpendGuard | None = None


def check_caps(cfg: config.Config, environ: Mapping[str, str], provider: str, model: str,
               patches: Sequence[str], max_output_tokens: int,
               *, now: _dt.datetime | None = None,
               sources: Mapping[str, str] | None = None) -> CapCheck:
    """Would this run's first request pass ``budget.daily_usd`` or ``budget.monthly_usd``? Its
    estimate: one request carrying the smallest of the ``patches`` (the reviewed files' diff
    texts; every group carries at least one file, so when that request cannot fit none can) at
    UTF-8 bytes / 3 tokens plus PROMPT_ALLOWANCE_TOKENS, priced as uncached input, plus
    min(``max_output_tokens``, ESTIMATE_OUTPUT_TOKENS) of output. Never the sum of the
    patches: each later request is checked by the run's :class:`SpendGuard`. Without a cap:
    nothing is read. Without a price for ``model``: a warning, no refusal. A ledger that
    cannot be read or written: a warning and a refusal (the cap could not be kept).
    ``sources``: each cap key's origin, for the message."""
    b = cfg.budget
    wanted = [(label, cap, key) for label, cap, key in (
        ("daily", b.daily_usd, "budget.daily_usd"),
        ("monthly", b.monthly_usd, "budget.monthly_usd")) if cap is not None]
    if not wanted:
        return CapCheck()
    keys = ", ".join(k for _, _, k in wanted)
    price = price_of(provider, model)
    if price is None:
        return CapCheck(warning=f"{keys} cannot be enforced: no price for model"
                                f" {util.display_text(model)!s} in config/providers.json"
                                " (its tokens are counted only)", kind="spend_unpriced")
    day = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d")
    path = ledger_path(environ)
    try:
        rows = read_ledger(environ, since=day[:7]).rows
        _writable(path)  # a ledger this run cannot append to would never add up to the cap
    except LedgerUnreadable as e:
        return CapCheck(why=f"{e} ({keys} cannot be checked)", warning=f"{e}; {keys} cannot"
                        " be checked: the review is refused", kind="spend_ledger")
    caps = [Cap(label, cap, key, spent(rows, day if label == "daily" else day[:7]),
                (sources or {}).get(key, ""))
            for label, cap, key in wanted]
    tokens = min((estimate_tokens(p) for p in patches), default=0) + PROMPT_ALLOWANCE_TOKENS
    estimate = price.cost(Usage(input_tokens=tokens, output_tokens=min(
        max_output_tokens or ESTIMATE_OUTPUT_TOKENS, ESTIMATE_OUTPUT_TOKENS)))
    for cap in caps:
        why = cap.passed(estimate)
        if why:
            return CapCheck(why=why)
    return CapCheck(guard=SpendGuard(price, caps))


def _writable(path: Path) -> None:
    """Create the ledger (and its folder) if missing and check it opens for appending.
    Raises LedgerUnreadable naming the path and the OS error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    except OSError as e:
        raise LedgerUnreadable(f"cannot write the usage ledger {path}: {e.strerror}") from e
