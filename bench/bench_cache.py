#!/usr/bin/env python3
"""Result cache (spec §10, §15): cold run vs unchanged re-run vs one-file-changed re-run.

A staged change of 10 Python files in 10 folders; the loopback model answers the grouping call
with 10 single-file groups and each group with ``task_done``, every answer after a fixed
latency (``--latency``, default 0.2 s) so that saved calls show in the wall time. Each
repetition: ``git ocr cache clear``, then

1. cold: review of the staged snapshot S0 (grouping + 10 groups);
2. unchanged: the same snapshot again (spec §15: 0 LLM calls, whole-run cache hit);
3. one file edited, same +/- counts (S1): the grouping answer is reused (keyed by file list
   and stats), one group is reviewed again;
4. one file with one more added line (S2): stats change, so the grouping call runs again,
   and one group is reviewed.

Each review is ``git ocr review --format json --effort low`` as a new process. Columns: LLM
calls by task (grouping / main), ``cache_hits`` of the result summary, wall and in-run
seconds; medians over ``--runs`` repetitions, and the wall ratio to the cold run.

Usage: python bench/bench_cache.py [--runs 5] [--latency 0.2]
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
    run_child,
    table,
    task_of,
)

from tests.support.scripted_llm import Reply, openai_text, openai_tool_calls

N_FILES = 10


def module(i: int, variant: int = 0) -> str:
    lines = [f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(8)]
    text = "".join(lines).replace("return x + 3\n", "return x - 3\n")
    if variant == 1:
        text = text.replace("return x - 3\n", "return x * 3\n")
    elif variant == 2:
        text = text.replace("return x - 3\n", "return x * 3\n    # checked\n")
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.2, help="model latency per answer, s")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-cache-"))
    llm = fast_llm(ScriptedLLM("openai"))

    def answer(raw: str) -> Reply:
        body = json.loads(raw)
        if task_of(body) == "grouping":
            groups = EchoModel.groups(str(body["messages"][1]["content"]))
            return Reply(openai_text(json.dumps(groups)), delay_s=args.latency)
        return Reply(openai_tool_calls(("task_done", {"state": "DONE"})), delay_s=args.latency)

    llm._next = answer  # type: ignore[method-assign]
    try:
        env = clean_env(base / "home", **llm.env())
        repo = base / "repo"
        repo.mkdir()
        git(repo, env, "init", "-q", "-b", "main")
        paths = [f"area{i}/mod_{i}.py" for i in range(N_FILES)]
        for i, p in enumerate(paths):
            (repo / p).parent.mkdir(parents=True, exist_ok=True)
            (repo / p).write_text(module(i).replace("return x - 3\n", "return x + 3\n"))
        git(repo, env, "add", "-A")
        git(repo, env, "commit", "-q", "-m", "base")

        def stage(variant: int) -> None:
            for i, p in enumerate(paths):
                (repo / p).write_text(module(i, variant if i == 4 else 0))
            git(repo, env, "add", "-A")

        cases = ("cold", "unchanged re-run", "1 of 10 edited (same stats)",
                 "1 of 10 edited (+1 line)")
        got: dict[str, list[tuple[int, int, int, float, float]]] = {c: [] for c in cases}
        for _ in range(args.runs):
            stage(0)
            c = run_child([*OCR_CMD, "cache", "clear"], repo, env)
            if c.rc:
                raise SystemExit(f"cache clear failed: {c.stderr}")
            for case, variant in zip(cases, (0, 0, 1, 2), strict=True):
                stage(variant)
                llm.requests.clear()
                r = run_child([*OCR_CMD, "review", "--format", "json", "--effort", "low"],
                              repo, env)
                data = r.json()
                if r.rc != 0 or data.get("status") != "complete":
                    raise SystemExit(f"{case}: review failed ({r.rc}): {r.stderr[-400:]}")
                tasks = [task_of(b) for b in llm.requests]
                got[case].append((tasks.count("grouping"), tasks.count("main"),
                                  data["summary"]["cache_hits"], r.wall_s,
                                  data["summary"]["elapsed_ms"] / 1000))
        cold = med([x[3] for x in got["cold"]])
        rows = []
        for case in cases:
            xs = got[case]
            wall = med([x[3] for x in xs])
            rows.append((case, int(med([x[0] for x in xs])), int(med([x[1] for x in xs])),
                         int(med([x[2] for x in xs])), f"{wall:.3f}",
                         f"{med([x[4] for x in xs]):.3f}", f"{wall / cold:.2f}"))
        print(f"result cache, {N_FILES} files in {N_FILES} groups, model latency "
              f"{args.latency:.2f} s, medians of {args.runs} runs, {load_line()}")
        print(table(("case", "grouping calls", "main calls", "cache hits", "wall s",
                     "in-run s", "wall / cold"), rows))
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
