#!/usr/bin/env python3
"""Pipeline overhead with a zero-latency model (SPEC §15: a 1-file review ≤ 0.3 s wall).

Two staged changes in temporary repositories: 1 modified Python file, and 50 modified Python
files in 5 folders (the grouping call answers 5 groups of 10). The loopback model (tests'
ScriptedLLM, Nagle off) answers every request at once: the grouping JSON, then ``task_done``
for each group, with a ``usage`` block as real providers send. Each row runs
``git ocr review --format json --no-cache --effort low`` as a new process ``--runs`` times.

Columns (medians):
- ``wall``: what the user waits for (interpreter start-up and imports included);
- ``in-run``: the run's own ``summary.elapsed_ms`` (from config loading to the result);
- ``model``: time with at least one LLM request in flight (session log, union of intervals):
  HTTP and JSON on both sides plus the server thread; the model itself takes 0;
- ``own`` = wall − model, and its share of wall: our start-up, git, selection, prompts,
  anchoring, cache and output;
- ``cpu``: user + system seconds of the process and its git children; ``peak MiB``: max RSS.
Reference rows: a bare ``python -c pass`` and ``git ocr -h``.

Usage: python bench/bench_overhead.py [--runs 9]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    OCR_CMD,
    EchoModel,
    ScriptedLLM,
    clean_env,
    fast_llm,
    git,
    load_line,
    med,
    model_wait_s,
    run_child,
    session_records,
    table,
)

from tests.support.scripted_llm import Reply, openai_text, openai_tool_calls


def module(i: int, edit: bool) -> str:
    body = "".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(10))
    return body.replace("return x + 5\n", "return x - 5\n") if edit else body


def make_repo(base: Path, n: int, env: dict[str, str]) -> Path:
    repo = base / f"repo{n}"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    paths = [f"pkg{i % 5}/mod_{i}.py" if n > 1 else "app.py" for i in range(n)]
    for i, p in enumerate(paths):
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        (repo / p).write_text(module(i, False))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "base")
    for i, p in enumerate(paths):
        (repo / p).write_text(module(i, True))
    git(repo, env, "add", "-A")
    return repo


def zero_latency(llm: ScriptedLLM) -> None:
    """Grouping answers from the file list; every other request gets task_done."""
    def answer(raw: str) -> Reply:
        body = json.loads(raw)
        msgs = body.get("messages") or []
        if msgs and str(msgs[0].get("content", "")).startswith("You sort the changed files"):
            return Reply(openai_text(json.dumps(EchoModel.groups(str(msgs[1]["content"])))))
        return Reply(openai_tool_calls(("task_done", {"state": "DONE"})))
    llm._next = answer  # type: ignore[method-assign]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-overhead-"))
    llm = fast_llm(ScriptedLLM("openai"))
    zero_latency(llm)
    try:
        env = clean_env(base / "home", **llm.env())
        rows = []
        for label, cmd, cwd in (("python -c pass", [sys.executable, "-c", "pass"], base),
                                ("git ocr -h", [*OCR_CMD, "-h"], base)):
            runs = [run_child(cmd, cwd, env) for _ in range(args.runs)]
            rows.append((label, f"{med([r.wall_s for r in runs]):.3f}", "-", "-",
                         f"{med([r.wall_s for r in runs]):.3f}", "100%",
                         f"{med([r.cpu_s for r in runs]):.3f}",
                         f"{med([r.maxrss_mib for r in runs]):.0f}", 0))
        walls: dict[int, float] = {}
        for n in (1, 50):
            repo = make_repo(base, n, env)
            wall, inrun, wait, own, share, cpu, rss, calls = ([] for _ in range(8))
            for _ in range(args.runs):
                r = run_child([*OCR_CMD, "review", "--format", "json", "--no-cache", "--effort",
                               "low"], repo, env)
                data = r.json()
                if r.rc != 0 or data.get("status") != "complete":
                    raise SystemExit(f"{n}-file review failed ({r.rc}): {r.stderr[-400:]}")
                w = model_wait_s(session_records(repo, data["session_id"]))
                wall.append(r.wall_s)
                inrun.append(data["summary"]["elapsed_ms"] / 1000)
                wait.append(w)
                own.append(r.wall_s - w)
                share.append((r.wall_s - w) / r.wall_s)
                cpu.append(r.cpu_s)
                rss.append(r.maxrss_mib)
                calls.append(data["summary"]["llm_calls"])
            walls[n] = med(wall)
            rows.append((f"review, {n} file{'s' if n > 1 else ''}", f"{med(wall):.3f}",
                         f"{med(inrun):.3f}", f"{med(wait):.3f}", f"{med(own):.3f}",
                         f"{100 * med(share):.0f}%", f"{med(cpu):.3f}", f"{med(rss):.0f}",
                         int(med(calls))))
        print(f"pipeline overhead, zero-latency scripted model, medians of {args.runs} runs, "
              f"{load_line()}")
        print(table(("case", "wall s", "in-run s", "model s", "own s", "own share", "cpu s",
                     "peak MiB", "LLM calls"), rows))
        print(f"\n50-file / 1-file wall ratio {walls[50] / walls[1]:.2f}; "
              f"SPEC §15 1-file target ≤ 0.300 s wall: {walls[1]:.3f} s "
              f"({'met' if walls[1] <= 0.3 else 'NOT met'})")
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
