#!/usr/bin/env python3
"""Group concurrency (spec §15) and Ctrl-C latency (the bar: exit 130 within 2 s).

Concurrency: a repository with 16 staged files, a grouping answer of 16 single-file groups,
and a scripted loopback model whose every main-task answer (``task_done``) takes a fixed
latency. ``git ocr review`` (real subprocess, ``--effort low --no-cache``) reviews them with
``--concurrency C``; the wall time is the run's own ``summary.elapsed_ms`` (interpreter start-up
excluded, the same for every row). The reference is one group's time: the same review of a
single file (one group, one model call). Reported: median wall of the 16-group run and the
ratio wall / (ceil(16 / C) × one group's time); spec §15 asks for ≤ 1.3 at C = 8. The grouping
call is answered at once by default (it is a pipeline stage, not a group); ``--grouping-latency``
charges it the model latency too, as a separate row.

Two ratios are printed. "run": whole-run walls, where the one-file reference also carries the
run's fixed costs (lazy imports of requests/tiktoken, git, selection), which flatters the ratio.
"groups": the group phase only, from the session log (first main-task request to the last
``group_done``), against one group's own time in the one-file run — the stricter number.

Ctrl-C: four groups wait on a model that takes 60 s; SIGINT is sent once all four requests are
in flight; the time until the process has exited (code 130) is reported.

Usage: python bench/bench_concurrency.py [--latency 0.5] [--repeat 5] [--concurrency 1,2,4,8,16]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.gitrepo import GitRepo, git_env  # noqa: E402
from tests.support.scripted_llm import Reply, ScriptedLLM, openai_text, openai_tool_calls  # noqa: E402

GROUPING = "sort the changed files"
N_FILES = 16
EXE = Path(sys.executable).parent / "git-ocr"


def make_repo(base: Path, n: int) -> tuple[GitRepo, list[str]]:
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    repo = GitRepo(base / f"repo{n}", git_env(home))
    repo.commit({"README.md": "bench\n"}, "init")
    names = [f"pkg/mod{i:02}.py" for i in range(n)]
    repo.stage({p: "".join(f"value_{i}_{k} = {k}\n" for k in range(5))
                for i, p in enumerate(names)})
    return repo, names


def group_phase_s(repo: GitRepo, session_id: str) -> float:
    """First main-task request → last ``group_done`` in the run's session log, seconds."""
    path = repo.path / ".git" / "ocr-hook" / "sessions" / f"{session_id}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    start = min(r["ts"] for r in rows if r["type"] == "llm_request" and r.get("task") == "main")
    end = max(r["ts"] for r in rows if r["type"] == "group_done")
    return end - start


def run_review(repo: GitRepo, llm: ScriptedLLM, concurrency: int) -> tuple[float, dict]:
    env = {**repo.env, **llm.env(OCR_HOOK_REVIEW_FILTER="false"),
           "XDG_CACHE_HOME": str(repo.path.parent / "cache")}
    p = subprocess.run([str(EXE), "review", "--format", "json", "--no-cache", "--effort", "low",
                        "--concurrency", str(concurrency)], cwd=repo.path, env=env,
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"review failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    data = json.loads(p.stdout)
    return data["summary"]["elapsed_ms"] / 1000.0, data


def script(llm: ScriptedLLM, names: list[str], latency: float, grouping_latency: float) -> None:
    llm.queue.clear()
    llm.requests.clear()
    answer = json.dumps([{"label": n, "files": [n]} for n in names])
    llm.reply(openai_text(answer), delay_s=grouping_latency, match=GROUPING)
    llm.default = Reply(openai_tool_calls(("task_done", {"state": "DONE"})), delay_s=latency)


def bench_concurrency(args: argparse.Namespace, base: Path) -> None:
    llm = ScriptedLLM("openai")
    try:
        one_repo, one_names = make_repo(base, 1)
        many_repo, many_names = make_repo(base, N_FILES)
        one: list[float] = []
        one_phase: list[float] = []
        for _ in range(args.repeat):
            script(llm, one_names, args.latency, 0.0)
            wall, data = run_review(one_repo, llm, 8)
            assert data["status"] == "complete" and len(llm.requests) == 1
            one.append(wall)
            one_phase.append(group_phase_s(one_repo, data["session_id"]))
        t_one = statistics.median(one)
        g_one = statistics.median(one_phase)
        print(f"model latency {args.latency:.3f} s; one-file review: run {t_one:.3f} s, its one "
              f"group {g_one:.3f} s (medians of {args.repeat})\n")
        print(f"{'concurrency':>11} {'grouping':>9} {'run s':>7} {'ideal':>7} {'ratio':>6} "
              f"{'groups s':>9} {'ideal':>7} {'ratio':>6}")
        rows = [(c, 0.0) for c in args.concurrency]
        if args.grouping_latency:
            rows.append((8, args.latency))
        for conc, g_lat in rows:
            walls, phases = [], []
            for _ in range(args.repeat):
                script(llm, many_names, args.latency, g_lat)
                wall, data = run_review(many_repo, llm, conc)
                assert data["status"] == "complete", data["status"]
                assert len(data["groups"]) == N_FILES and len(llm.requests) == N_FILES + 1
                walls.append(wall)
                phases.append(group_phase_s(many_repo, data["session_id"]))
            med, ph = statistics.median(walls), statistics.median(phases)
            waves = math.ceil(N_FILES / conc)
            ideal, g_ideal = waves * t_one, waves * g_one
            grouping = f"{g_lat:.2f}s" if g_lat else "instant"
            print(f"{conc:>11} {grouping:>9} {med:>7.3f} {ideal:>7.3f} {med / ideal:>6.3f} "
                  f"{ph:>9.3f} {g_ideal:>7.3f} {ph / g_ideal:>6.3f}")
    finally:
        llm.close()


def bench_interrupt(args: argparse.Namespace, base: Path) -> None:
    llm = ScriptedLLM("openai")
    try:
        repo, names = make_repo(base, 4)
        times = []
        for _ in range(args.repeat):
            script(llm, names, 60.0, 0.0)
            env = {**repo.env, **llm.env(), "XDG_CACHE_HOME": str(repo.path.parent / "cache")}
            proc = subprocess.Popen([str(EXE), "review", "--format", "json", "--no-cache"],
                                    cwd=repo.path, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            end = time.monotonic() + 30
            while len(llm.requests) < 5 and time.monotonic() < end:  # grouping + 4 groups
                time.sleep(0.02)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=30)
            times.append(time.monotonic() - t0)
            err = proc.stderr.read().decode() if proc.stderr else ""
            if rc != 130:
                raise SystemExit(f"Ctrl-C exit code {rc}, expected 130: {err[-800:]}")
        print(f"\nCtrl-C with 4 groups waiting on a 60 s model: exit 130 after median "
              f"{statistics.median(times):.3f} s (max {max(times):.3f} s, {args.repeat} runs;"
              " bar: ≤ 2 s)")
    finally:
        llm.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.5, help="model latency per answer (s)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per row (median reported)")
    ap.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")],
                    default=[8], help="comma-separated group concurrency values (default 8)")
    ap.add_argument("--grouping-latency", action="store_true",
                    help="also run C=8 with the grouping call at the model latency")
    ap.add_argument("--no-interrupt", action="store_true", help="skip the Ctrl-C measurement")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocr-bench-") as tmp:
        base = Path(tmp)
        os.environ.pop("GIT_INDEX_FILE", None)
        bench_concurrency(args, base)
        if not args.no_interrupt:
            bench_interrupt(args, base)


if __name__ == "__main__":
    main()
