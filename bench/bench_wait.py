#!/usr/bin/env python3
"""The committer's wait with a hosted model (spec §15): how many model round trips a
small change costs, and how long they take under a hosted-model latency model.

Latency model of the loopback server (tests' ScriptedLLM, Nagle off): every request waits
``--fixed-s`` (default 0.8 s: network, queueing, time to first token) plus ``--per-kib-s``
(default 0.03 s) per KiB of request body (prompt processing), then answers. The model files
one ``code_comment`` on the changed line and calls ``task_done`` in the same reply (the review
filter, opt-in, would approve). A 1-file change (one edited line of a 40-line Python module)
runs as:

- ``hook pre-commit``: ``git ocr hook pre-commit --format json`` (effort low), cache off;
- ``hook, no finding``: the same with a model that finishes without a comment;
- ``review``: ``git ocr review --format json`` (effort low, the default), cache off;
- ``review (medium)``: the same with ``--effort medium``;
- ``review, then hook``: ``git ocr review`` with the cache on, then the pre-commit hook on the
  same snapshot (spec §10: the hook must make 0 requests).

Columns (medians of ``--runs``): LLM requests by task, ``sequential`` (the most requests that
ran one after another: the longest chain of non-overlapping request intervals in the session
log, i.e. the round trips the committer waits for), wall time, model time and own time; then
the recorded sequential count and wall of the same case (``bench/results/wait.json``).
``--record LABEL`` stores this run as the comparison point.

Usage: python bench/bench_wait.py [--runs 3] [--fixed-s 0.8] [--per-kib-s 0.03] [--record L]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    OCR_CMD,
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
    task_of,
)

from tests.support.scripted_llm import Reply, openai_tool_calls

RESULTS = Path(__file__).resolve().parent / "results" / "wait.json"
SOURCE = "".join(f"def f_{j}(x):\n    return x + {j}\n\n\n" for j in range(10))


def hosted(llm: ScriptedLLM, fixed_s: float, per_kib_s: float, comment: bool) -> None:
    """Answer like a hosted model: latency by request size; one comment + task_done."""
    def answer(raw: str) -> Reply:
        delay = fixed_s + per_kib_s * len(raw.encode()) / 1024
        body = json.loads(raw)
        task = task_of(body)
        if task == "review_filter":
            return Reply(openai_tool_calls(("approve_all_comments", {})), delay_s=delay)
        msgs = body.get("messages") or []
        user = str(msgs[1].get("content", "")) if len(msgs) > 1 else ""
        if task == "main" and comment and "<confirmed_findings>" not in user:
            return Reply(openai_tool_calls(
                ("code_comment", {"comments": [{
                    "path": "app.py", "existing_code": "return x - 5", "severity": "high",
                    "category": "bug", "content": "Subtracts instead of adding."}]}),
                ("task_done", {"state": "DONE"})), delay_s=delay)
        return Reply(openai_tool_calls(("task_done", {"state": "DONE"})), delay_s=delay)
    llm._next = answer  # type: ignore[method-assign]


def make_repo(base: Path, name: str, env: dict[str, str]) -> Path:
    repo = base / name
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text(SOURCE)
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "base")
    (repo / "app.py").write_text(SOURCE.replace("return x + 5\n", "return x - 5\n"))
    git(repo, env, "add", "-A")
    return repo


def sequential(records: Sequence[Mapping[str, Any]]) -> int:
    """The longest chain of request intervals that do not overlap (earliest end first)."""
    open_at: dict[tuple[str, str], list[float]] = {}
    spans: list[tuple[float, float]] = []
    for r in records:
        key = (str(r.get("group", "")), str(r.get("task", "")))
        if r.get("type") == "llm_request":
            open_at.setdefault(key, []).append(float(r["ts"]))
        elif r.get("type") in ("llm_response", "llm_error") and open_at.get(key):
            spans.append((open_at[key].pop(0), float(r["ts"])))
    chain, end = 0, float("-inf")
    for s, e in sorted(spans, key=lambda x: x[1]):
        if s >= end:
            chain, end = chain + 1, e
    return chain


def run_case(cmd: list[str], repo: Path, env: dict[str, str]) -> dict[str, Any]:
    r = run_child(cmd, repo, env)
    data = r.json()
    if r.rc not in (0, 1) or data.get("status") != "complete":
        raise SystemExit(f"{' '.join(cmd[-4:])} failed ({r.rc}): {r.stderr[-400:]}")
    recs = session_records(repo, data["session_id"])
    tasks = Counter(str(x.get("task")) for x in recs if x.get("type") == "llm_request")
    wait = model_wait_s(recs)
    return {"tasks": dict(tasks), "requests": sum(tasks.values()), "seq": sequential(recs),
            "wall": r.wall_s, "model": wait, "own": r.wall_s - wait,
            "findings": len(data.get("findings", []))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fixed-s", type=float, default=0.8)
    ap.add_argument("--per-kib-s", type=float, default=0.03)
    ap.add_argument("--record", metavar="LABEL", default="")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-wait-"))
    llm = fast_llm(ScriptedLLM("openai"))
    try:
        env = clean_env(base / "home", **llm.env())
        hook = [*OCR_CMD, "hook", "pre-commit", "--format", "json"]
        review = [*OCR_CMD, "review", "--format", "json"]
        cases = (("hook pre-commit", True, [(hook + ["--no-cache"])]),
                 ("hook, no finding", False, [(hook + ["--no-cache"])]),
                 ("review", True, [(review + ["--no-cache"])]),
                 ("review (medium)", True, [(review + ["--no-cache", "--effort", "medium"])]),
                 ("review, then hook", True, [review, hook]))
        rows: dict[str, list[dict[str, Any]]] = {}
        for label, comment, cmds in cases:
            hosted(llm, args.fixed_s, args.per_kib_s, comment)
            for i in range(args.runs):
                repo = make_repo(base, f"{label.replace(' ', '_').replace(',', '')}{i}", env)
                for cmd in cmds:
                    res = run_case(cmd, repo, env)
                rows.setdefault(label, []).append(res)  # the last command's figures
        recorded = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
        last = recorded["runs"][-1] if recorded.get("runs") else {}
        print(f"committer's wait, hosted-model latency {args.fixed_s:.2f} s + "
              f"{args.per_kib_s:.3f} s/KiB per request, 1-file change, medians of {args.runs} "
              f"runs, {load_line()}; recorded: {last.get('label', 'none')}")
        out, record = [], {}
        for label, runs in rows.items():
            seq = int(med([r["seq"] for r in runs]))
            wall = med([r["wall"] for r in runs])
            tasks = runs[-1]["tasks"]
            before = last.get("cases", {}).get(label, {})
            record[label] = {"seq": seq, "requests": int(med([r["requests"] for r in runs])),
                             "wall_s": round(wall, 3), "tasks": tasks,
                             "own_s": round(med([r["own"] for r in runs]), 3)}
            out.append((label, ", ".join(f"{k} {v}" for k, v in sorted(tasks.items())) or "none",
                         seq, f"{wall:.3f}", f"{med([r['model'] for r in runs]):.3f}",
                         f"{med([r['own'] for r in runs]):.3f}",
                         before.get("seq", "-"),
                         f"{before['wall_s']:.3f}" if "wall_s" in before else "-"))
        print(table(("case", "requests by task", "sequential", "wall s", "model s", "own s",
                     "recorded seq", "recorded wall s"), out))
        print("\ntarget: hook pre-commit ≤ 2 sequential requests; review, then hook:"
              " 0 requests in the hook")
        if args.record:
            recorded.setdefault("runs", []).append({
                "label": args.record, "load": load_line(), "runs": args.runs,
                "fixed_s": args.fixed_s, "per_kib_s": args.per_kib_s, "cases": record})
            RESULTS.write_text(json.dumps(recorded, indent=1) + "\n")
            print(f"recorded as {args.record!r} in {RESULTS}")
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
