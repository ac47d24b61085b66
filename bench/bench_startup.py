#!/usr/bin/env python3
"""Start-up profile (spec §15): each path imports only what it needs.

Paths, each run ``--runs`` times as a new process through the installed console script:
- ``git ocr -h``;
- nothing to review: ``git ocr review`` with nothing staged;
- preview: ``git ocr review --preview`` of one staged file;
- cache hit: ``git ocr review --format json`` on a staged snapshot reviewed once before (the
  loopback model is up but must receive 0 requests; checked);
- review: ``git ocr review --format json --no-cache --effort low`` of one staged file (one
  request: the model calls ``task_done``).

For each path: the median wall time without ``-X importtime``, the heavy packages that were
imported (tiktoken, mcp, anyio, requests, httpx, pydantic, pathspec), and the top-level
``python -X importtime`` entries by median cumulative time (an entry's time includes what it
imported; nested entries are folded into their top-level import).

Usage: python bench/bench_startup.py [--runs 5] [--top 12]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    OCR_CMD,
    ScriptedLLM,
    clean_env,
    fast_llm,
    git,
    load_line,
    med,
    run_child,
    table,
)

HEAVY = ("tiktoken", "mcp", "mcp_types", "anyio", "requests", "httpx", "pydantic", "pathspec")
TOP_DEFAULT = 8
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def profile(cmd: list[str], cwd: Path, env: dict[str, str], runs: int,
            top: int) -> tuple[float, list[str], list[tuple[str, float, float]], float]:
    """(median wall s, heavy packages loaded, [(module, cumulative ms, self ms)] of the top
    level, median total import ms)."""
    walls = [run_child(cmd, cwd, env).wall_s for _ in range(runs)]
    cum: dict[str, list[float]] = defaultdict(list)
    own: dict[str, list[float]] = defaultdict(list)
    totals, heavy = [], set()
    for _ in range(runs):
        r = run_child([sys.executable, "-X", "importtime", *cmd[1:]]
                      if cmd[0] == sys.executable else
                      [sys.executable, "-X", "importtime", *cmd], cwd, env)
        total = 0.0
        for line in r.stderr.splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            name = m.group(4)
            if name.split(".")[0] in HEAVY:
                heavy.add(name.split(".")[0])
            if len(m.group(3)) == 1:  # top level: one space after the bar
                cum[name].append(int(m.group(2)) / 1000)
                own[name].append(int(m.group(1)) / 1000)
                total += int(m.group(2)) / 1000
        totals.append(total)
    entries = sorted(((n, statistics.median(v), statistics.median(own[n]))
                      for n, v in cum.items()), key=lambda e: -e[1])
    return med(walls), sorted(heavy), entries[:top], med(totals)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=TOP_DEFAULT)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-startup-"))
    llm = fast_llm(ScriptedLLM("openai"))
    try:
        env = clean_env(base / "home", **llm.env(OCR_HOOK_REVIEW_FILTER="false"))
        repo = base / "repo"
        repo.mkdir()
        git(repo, env, "init", "-q", "-b", "main")
        (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
        git(repo, env, "add", "-A")
        git(repo, env, "commit", "-q", "-m", "base")
        (repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
        git(repo, env, "add", "-A")
        first = run_child([*OCR_CMD, "review", "--format", "json"], repo, env)
        if first.rc != 0 or first.json().get("status") != "complete":
            raise SystemExit(f"first review failed: {first.stderr[-400:]}")
        llm.requests.clear()
        empty = base / "empty"
        empty.mkdir()
        git(empty, env, "init", "-q", "-b", "main")
        (empty / "app.py").write_text("x = 1\n")
        git(empty, env, "add", "-A")
        git(empty, env, "commit", "-q", "-m", "base")
        paths = (("git ocr -h", [*OCR_CMD, "-h"], base),
                 ("nothing to review", [*OCR_CMD, "review"], empty),
                 ("preview", [*OCR_CMD, "review", "--preview"], repo),
                 ("cache hit", [*OCR_CMD, "review", "--format", "json"], repo))
        print(f"start-up profile, medians of {args.runs} runs, {load_line()}")
        for label, cmd, cwd in paths:
            wall, heavy, entries, total = profile(cmd, cwd, env, args.runs, args.top)
            print(f"\n{label}: wall {wall:.3f} s, imports {total:.0f} ms; heavy packages "
                  f"imported: {', '.join(heavy) or 'none'}")
            print(table(("top-level import", "cumulative ms", "self ms"),
                        [(n, f"{c:.1f}", f"{s:.1f}") for n, c, s in entries]))
        if llm.requests:
            raise SystemExit(f"the cache-hit runs sent {len(llm.requests)} LLM requests")
        review = [*OCR_CMD, "review", "--format", "json", "--no-cache", "--effort", "low"]
        wall, heavy, entries, total = profile(review, repo, env, args.runs, args.top)
        print(f"\nreview, 1 file: wall {wall:.3f} s, imports {total:.0f} ms; heavy packages "
              f"imported: {', '.join(heavy) or 'none'}")
        print(table(("top-level import", "cumulative ms", "self ms"),
                    [(n, f"{c:.1f}", f"{s:.1f}") for n, c, s in entries]))
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
