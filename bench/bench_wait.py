#!/usr/bin/env python3
"""The committer's wait with a hosted model (spec §15): how many model round trips a
small change costs, and how long they take under a hosted-model latency model, next to the
reference CLI (OCR 1.12.4) on the same change, model and latency.

Latency model of the loopback server (tests' ScriptedLLM, Nagle off): every request waits
``--fixed-s`` (default 0.8 s: network, queueing, time to first token) plus ``--per-kib-s``
(default 0.03125 s, i.e. 0.5 s per 16 KiB) per KiB of request body (prompt processing), then
answers. The model files one ``code_comment`` on the changed line and calls ``task_done`` in
the same reply; every other request gets the least it expects (``task_done``; the review
filter, opt-in in ocr-hook, approves). A 1-file change (one edited line of a 40-line Python
module, staged) runs as:

- ``hook pre-commit``: ``git ocr hook pre-commit --format json`` (effort low), cache off;
- ``hook, no finding``: the same with a model that finishes without a comment;
- ``review``: ``git ocr review --format json`` (effort low, the default), cache off;
- ``review (medium)``: the same with ``--effort medium``;
- ``review, then hook``: ``git ocr review`` with the cache on, then the pre-commit hook on the
  same snapshot (spec §10: the hook must make 0 requests);
- ``OCR review (low)`` / ``OCR review (default)``: ``ocr review --format json --audience
  agent`` in the same repository content (only the index differs from HEAD, so OCR's
  workspace review reviews exactly the staged change) with ``--effort low`` (the hook's
  effort) and at OCR's default effort; ``OCR native (low)``: the platform binary the npm
  launcher starts (``ocrlib.native_binary``), without Node's start-up. OCR's requests are told apart and answered by
  ``ocrlib.ocr_answer`` (main: the same comment + ``task_done``; fact-check filter: approve;
  a later round: ``task_done``). Skipped with ``--no-ocr`` or when no OCR is found.

Every case runs once per round, ``--runs`` rounds, so the tools alternate run by run.

First table (ocr-hook, medians): LLM requests by task, ``sequential`` (the most requests that
ran one after another: the longest chain of non-overlapping request intervals in the session
log, i.e. the round trips the committer waits for), wall time, model time and own time; then
the recorded sequential count and wall of the same case (``bench/results/wait.json``).

Second table (both tools, the server's clock, ``ocrlib.ServerClock``): requests by kind,
sequential requests, wall, server-busy seconds and own = wall − server busy; then the ratio
ocr-hook ``hook pre-commit`` wall / ``OCR review (low)`` wall (target ≤ 0.7) and the hook's
request count (target 1). ``--record LABEL`` stores this run as the comparison point.

Usage: python bench/bench_wait.py [--runs 3] [--fixed-s 0.8] [--per-kib-s 0.03125]
                                  [--ocr [PATH] | --no-ocr] [--record L]
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

import ocrlib
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

from tests.support.scripted_llm import openai_tool_calls

RESULTS = Path(__file__).resolve().parent / "results" / "wait.json"
SOURCE = "".join(f"def f_{j}(x):\n    return x + {j}\n\n\n" for j in range(10))
COMMENT = {"path": "app.py", "existing_code": "return x - 5", "severity": "high",
           "category": "bug", "content": "Subtracts instead of adding."}
CHANGED_LINE = 22  # "    return x - 5" in the new app.py
HOOK_CASE, OCR_CASE, OCR_NATIVE = "hook pre-commit", "OCR review (low)", "OCR native (low)"
TARGET_RATIO = 0.7


def hosted(llm: ScriptedLLM, clock: ocrlib.ServerClock, fixed_s: float, per_kib_s: float,
           comment: bool, tool: str) -> None:
    """Answer like a hosted model: latency by request size; one comment + task_done in the
    main request (ocr-hook's or OCR's, by ``tool``), the least expected everywhere else."""
    def answer(body: dict[str, Any], raw: str) -> tuple[str, dict, float]:
        delay = ocrlib.latency_s(raw, fixed_s, per_kib_s)
        if tool == "ocr":
            kind, out = ocrlib.ocr_answer(body, COMMENT if comment else None)
            return kind, out, delay
        task = task_of(body)
        if task == "review_filter":
            return task, openai_tool_calls(("approve_all_comments", {})), delay
        msgs = body.get("messages") or []
        user = str(msgs[1].get("content", "")) if len(msgs) > 1 else ""
        if task == "main" and comment and "<confirmed_findings>" not in user:
            return task, openai_tool_calls(("code_comment", {"comments": [COMMENT]}),
                                           ("task_done", {"state": "DONE"})), delay
        return task, openai_tool_calls(("task_done", {"state": "DONE"})), delay
    ocrlib.attach(llm, clock, answer)


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


def server_figures(r: Any, spans: list[ocrlib.Span]) -> dict[str, Any]:
    busy = ocrlib.busy_s(spans)
    return {"s_kinds": ocrlib.kinds(spans), "s_requests": len(spans),
            "s_seq": ocrlib.chain(spans), "s_busy": busy, "s_own": r.wall_s - busy}


def run_case(cmd: list[str], repo: Path, env: dict[str, str], clock: ocrlib.ServerClock,
             findings: int | None) -> dict[str, Any]:
    mark = clock.mark()
    r = run_child(cmd, repo, env)
    data = r.json()
    if r.rc not in (0, 1) or data.get("status") != "complete":
        raise SystemExit(f"{' '.join(cmd[-4:])} failed ({r.rc}): {r.stderr[-400:]}")
    if findings is not None and len(data.get("comments", [])) != findings:
        raise SystemExit(f"{' '.join(cmd[-4:])}: {len(data.get('comments', []))} comments, "
                         f"expected {findings}")
    recs = session_records(repo, data["session_id"])
    tasks = Counter(str(x.get("task")) for x in recs if x.get("type") == "llm_request")
    wait = model_wait_s(recs)
    return {"tasks": dict(tasks), "requests": sum(tasks.values()), "seq": sequential(recs),
            "wall": r.wall_s, "model": wait, "own": r.wall_s - wait, "rc": r.rc,
            "findings": len(data.get("findings", [])), **server_figures(r, clock.since(mark))}


def run_ocr(cmd: list[str], repo: Path, env: dict[str, str], clock: ocrlib.ServerClock,
            findings: int) -> dict[str, Any]:
    """One OCR review: it must complete with ``findings`` comments, each on the changed line."""
    mark = clock.mark()
    r = run_child(cmd, repo, env)
    data = r.json()
    comments = data.get("comments") or []
    if r.rc != 0 or data.get("status") != "complete" or len(comments) != findings or any(
            c.get("start_line") != CHANGED_LINE for c in comments):
        raise SystemExit(f"OCR {' '.join(cmd[1:])} ({r.rc}): {comments} {r.stderr[-400:]}")
    return {"wall": r.wall_s, "rc": r.rc, **server_figures(r, clock.since(mark))}


def cases(ocr: str) -> list[tuple[str, str, bool, list[list[str]]]]:
    """(label, tool, the model files a comment, commands run in one fresh repository)."""
    hook = [*OCR_CMD, "hook", "pre-commit", "--format", "json"]
    review = [*OCR_CMD, "review", "--format", "json"]
    out = [(HOOK_CASE, "ocr-hook", True, [hook + ["--no-cache"]]),
           ("hook, no finding", "ocr-hook", False, [hook + ["--no-cache"]]),
           ("review", "ocr-hook", True, [review + ["--no-cache"]]),
           ("review (medium)", "ocr-hook", True, [review + ["--no-cache", "--effort", "medium"]]),
           ("review, then hook", "ocr-hook", True, [review, hook])]
    if ocr:
        out += [(OCR_CASE, "ocr", True, [ocrlib.review_command(ocr, "--effort", "low")]),
                ("OCR review (default)", "ocr", True, [ocrlib.review_command(ocr)])]
    if native := (ocrlib.native_binary(ocr) if ocr else ""):
        out.append((OCR_NATIVE, "ocr", True, [ocrlib.review_command(native, "--effort", "low")]))
    return out


def hook_table(rows: dict[str, list[dict[str, Any]]], last: dict[str, Any]
               ) -> tuple[str, dict[str, Any]]:
    """The ocr-hook table (session-log figures) and the record of its cases."""
    out, record = [], {}
    for label, runs in rows.items():
        if "tasks" not in runs[0]:
            continue
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
    return table(("case", "requests by task", "sequential", "wall s", "model s", "own s",
                  "recorded seq", "recorded wall s"), out), record


def server_table(rows: dict[str, list[dict[str, Any]]], tools: dict[str, str]
                 ) -> tuple[str, dict[str, Any]]:
    """Both tools' cases on the server's clock, and their record."""
    out, record = [], {}
    for label, runs in rows.items():
        if label not in (HOOK_CASE, "hook, no finding") and tools[label] != "ocr":
            continue
        kinds = runs[-1]["s_kinds"]
        fig = {"requests": int(med([r["s_requests"] for r in runs])),
               "seq": int(med([r["s_seq"] for r in runs])), "kinds": kinds,
               "wall_s": round(med([r["wall"] for r in runs]), 3),
               "server_s": round(med([r["s_busy"] for r in runs]), 3),
               "own_s": round(med([r["s_own"] for r in runs]), 3),
               "exit": int(med([r["rc"] for r in runs]))}
        record[label] = fig
        out.append(("OCR 1.12.4" if tools[label] == "ocr" else "ocr-hook", label,
                    ", ".join(f"{k} {v}" for k, v in kinds.items()) or "none", fig["seq"],
                    f"{fig['wall_s']:.3f}", f"{fig['server_s']:.3f}", f"{fig['own_s']:.3f}",
                    fig["exit"]))
    return table(("tool", "case", "requests by kind", "sequential", "wall s", "server s",
                  "own s", "exit"), out), record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fixed-s", type=float, default=0.8)
    ap.add_argument("--per-kib-s", type=float, default=0.03125)
    ocrlib.add_arguments(ap)
    ap.add_argument("--record", metavar="LABEL", default="")
    args = ap.parse_args()
    ocr = ocrlib.from_arguments(args)
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-wait-"))
    llm = fast_llm(ScriptedLLM("openai"))
    clock = ocrlib.ServerClock(llm)
    try:
        env = clean_env(base / "home", **llm.env(), **ocrlib.NO_UPDATE)
        if ocr:
            ocrlib.write_config(base / "home", llm.url)
        plan = cases(ocr)
        tools = {label: tool for label, tool, _, _ in plan}
        rows: dict[str, list[dict[str, Any]]] = {}
        for i in range(args.runs):  # one run of every case per round: the tools alternate
            for label, tool, comment, cmds in plan:
                hosted(llm, clock, args.fixed_s, args.per_kib_s, comment, tool)
                repo = make_repo(base, f"{label.replace(' ', '_').replace(',', '')}{i}", env)
                for cmd in cmds:
                    res = (run_ocr(cmd, repo, env, clock, 1) if tool == "ocr" else
                           run_case(cmd, repo, env, clock, None))
                rows.setdefault(label, []).append(res)  # the last command's figures
        recorded = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
        last = recorded["runs"][-1] if recorded.get("runs") else {}
        print(f"committer's wait, hosted-model latency {args.fixed_s:.2f} s + "
              f"{args.per_kib_s:.5f} s/KiB per request, 1-file change, medians of {args.runs} "
              f"runs, {load_line()}; recorded: {last.get('label', 'none')}")
        text, record = hook_table(rows, last)
        print(text)
        print("\ntarget: hook pre-commit ≤ 2 sequential requests; review, then hook:"
              " 0 requests in the hook")
        against: dict[str, Any] = {}
        if ocr:
            text, against = server_table(rows, tools)
            ratio = against[HOOK_CASE]["wall_s"] / against[OCR_CASE]["wall_s"]
            against["ratio_wall"] = round(ratio, 3)
            if OCR_NATIVE in against:
                against["ratio_wall_native"] = round(
                    against[HOOK_CASE]["wall_s"] / against[OCR_NATIVE]["wall_s"], 3)
            print(f"\nagainst OCR 1.12.4 ({ocr}), the server's clock (own = wall − server "
                  f"busy), same change, model and latency, alternating runs:")
            print(text)
            print(f"\nhook pre-commit wall / OCR review (low) wall: {ratio:.2f}x (target ≤ "
                  f"{TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'}); "
                  f"hook requests: {against[HOOK_CASE]['requests']} (target 1: "
                  f"{'met' if against[HOOK_CASE]['requests'] == 1 else 'NOT met'})"
                  + (f"; against OCR's native binary: {against['ratio_wall_native']:.2f}x"
                     if OCR_NATIVE in against else ""))
        if args.record:
            recorded.setdefault("runs", []).append({
                "label": args.record, "load": load_line(), "runs": args.runs,
                "fixed_s": args.fixed_s, "per_kib_s": args.per_kib_s, "cases": record,
                **({"ocr": {"version": ocrlib.OCR_VERSION, "cases": against}} if ocr else {})})
            RESULTS.write_text(json.dumps(recorded, indent=1) + "\n")
            print(f"recorded as {args.record!r} in {RESULTS}")
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
