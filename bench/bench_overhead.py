#!/usr/bin/env python3
"""Pipeline overhead with a zero-latency model (spec §15): what a committer pays for
ocr-hook itself, next to the last recorded figures.

Cases (each a new ``git ocr`` process, ``--runs`` times, medians):
- ``python -c pass`` and ``git ocr -h``: the floor;
- ``nothing to review``: ``git ocr review`` with nothing staged (≤ 0.15 s);
- ``preview, 1 file``: ``git ocr review --preview`` of one staged Python file (≤ 0.15 s);
- ``review, 1 file``: ``git ocr review --format json --no-cache --effort low`` of that file,
  the model answering ``code_comment`` + ``task_done`` in one reply and approving in the
  review filter (own time ≤ 0.25 s);
- ``cache hit``: the same review again with the cache on, answered from it (≤ 0.2 s; 0 calls);
- ``review, 50 files``: 50 modified files in 5 folders (grouping call, 5 groups).

Columns: ``wall`` (what the user waits for), ``model`` (time with at least one LLM request in
flight, from the session log: HTTP and JSON on both sides; the model itself takes 0), ``own`` =
wall − model, ``cpu`` (user + system of the process and its git children), ``peak MiB`` and
the LLM calls; then the recorded ``own`` of the same case (``bench/results/overhead.json``)
and the ratio now / recorded. ``--record LABEL`` stores this run's medians under LABEL and
makes it the comparison point of later runs.

``--against DIR`` also runs every case with another source tree of ocr-hook first on
``PYTHONPATH`` (e.g. ``git archive <rev> | tar -x -C DIR``, plus a symlink
``DIR/ocr_hook/builtin -> ../config``), alternating run by run, and prints its ``own`` and the
ratio: on a shared machine only side-by-side runs compare fairly.

Usage: python bench/bench_overhead.py [--runs 9] [--record LABEL] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
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
    task_of,
)

from tests.support.scripted_llm import Reply, openai_text, openai_tool_calls

RESULTS = Path(__file__).resolve().parent / "results" / "overhead.json"
TARGETS_S = {"nothing to review": 0.15, "preview, 1 file": 0.15, "review, 1 file": 0.25,
             "cache hit": 0.20}  # spec §15 (own time)


def module(i: int, edit: bool) -> str:
    body = "".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(10))
    return body.replace("return x + 5\n", "return x - 5\n") if edit else body


def make_repo(base: Path, name: str, n: int, env: dict[str, str], stage: bool = True) -> Path:
    repo = base / name
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    paths = [f"pkg{i % 5}/mod_{i}.py" if n > 1 else "app.py" for i in range(n)]
    for i, p in enumerate(paths):
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        (repo / p).write_text(module(i, False))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "base")
    if stage:
        for i, p in enumerate(paths):
            (repo / p).write_text(module(i, True))
        git(repo, env, "add", "-A")
    return repo


def zero_latency(llm: ScriptedLLM) -> None:
    """Grouping answers from the file list; a main request gets one ``code_comment`` on the
    edited line and ``task_done`` in the same reply; the review filter approves."""
    def answer(raw: str) -> Reply:
        body = json.loads(raw)
        msgs = body.get("messages") or []
        task = task_of(body)
        if task == "grouping":
            return Reply(openai_text(json.dumps(EchoModel.groups(str(msgs[1]["content"])))))
        if task == "review_filter":
            return Reply(openai_tool_calls(("approve_all_comments", {})))
        if task == "main" and "return x - 5" in str(msgs[1].get("content", "")):
            first = str(msgs[1]["content"]).split('<file path="', 1)[1].split('"', 1)[0]
            return Reply(openai_tool_calls(
                ("code_comment", {"comments": [{
                    "path": first, "existing_code": "return x - 5", "severity": "low",
                    "category": "other", "content": "Subtracts instead of adding."}]}),
                ("task_done", {"state": "DONE"})))
        return Reply(openai_tool_calls(("task_done", {"state": "DONE"})))
    llm._next = answer  # type: ignore[method-assign]


Row = tuple[str, float, float, float, float, float, int]


def measure(label: str, cmd: list[str], cwds: list[Path], envs: list[dict[str, str]],
            runs: int, check: Callable[[dict], str] | None = None) -> list[Row]:
    """Medians of ``runs`` runs of ``cmd`` per variant (cwd, env), the variants alternating
    run by run: [(label, wall, model, own, cpu, rss, calls)] in variant order."""
    samples: list[list[tuple[float, float, float, float, int]]] = [[] for _ in envs]
    for cwd, env in zip(cwds, envs, strict=True):
        run_child(cmd, cwd, env)  # warm-up: bytecode and page cache, as on a machine in use
    for _ in range(runs):
        for i, (cwd, env) in enumerate(zip(cwds, envs, strict=True)):
            r = run_child(cmd, cwd, env)
            data = r.json() if "json" in cmd else {}
            if r.rc not in (0, 1):
                raise SystemExit(f"{label} failed ({r.rc}): {r.stderr[-400:]}")
            if check is not None and (problem := check(data)):
                raise SystemExit(f"{label}: {problem}")
            w = (model_wait_s(session_records(cwd, data["session_id"]))
                 if data.get("session_id") else 0.0)
            samples[i].append((r.wall_s, w, r.cpu_s, r.maxrss_mib,
                               int(data.get("summary", {}).get("llm_calls", 0))))
    return [(label, med([x[0] for x in sm]), med([x[1] for x in sm]),
             med([x[0] - x[1] for x in sm]), med([x[2] for x in sm]),
             med([x[3] for x in sm]), int(med([x[4] for x in sm]))) for sm in samples]


def complete(calls: int | None = None, hit: bool = False) -> Callable[[dict], str]:
    def check(data: dict) -> str:
        s = data.get("summary", {})
        if data.get("status") != "complete":
            return f"status {data.get('status')!r}"
        if calls is not None and s.get("llm_calls") != calls:
            return f"{s.get('llm_calls')} LLM calls, expected {calls}"
        if hit and not s.get("cache_hits"):
            return "not answered from the cache"
        return ""
    return check


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--record", metavar="LABEL", default="",
                    help="store these medians as the new comparison point")
    ap.add_argument("--against", metavar="DIR", default="",
                    help="also run another ocr-hook source tree, alternating (see above)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-overhead-"))
    llm = fast_llm(ScriptedLLM("openai"))
    zero_latency(llm)
    try:
        env = clean_env(base / "home", **llm.env())
        envs = [env] + ([{**env, "PYTHONPATH": str(Path(args.against).resolve())}]
                        if args.against else [])
        review = [*OCR_CMD, "review", "--format", "json", "--effort", "low"]
        empty = [make_repo(base, "empty", 1, env, stage=False)] * len(envs)
        one = [make_repo(base, "one", 1, env)] * len(envs)
        many = [make_repo(base, "many", 50, env)] * len(envs)
        cached = [make_repo(base, f"cached{i}", 1, env) for i in range(len(envs))]
        for repo, e in zip(cached, envs, strict=True):  # each variant its own cache format
            first = run_child(review, repo, e)
            if complete()(first.json()):
                raise SystemExit(f"first cached review: {complete()(first.json())} "
                                 f"{first.stderr[-400:]}")
        n = args.runs
        by_case = [
            measure("python -c pass", [sys.executable, "-c", "pass"], [base] * len(envs), envs,
                    n),
            measure("git ocr -h", [*OCR_CMD, "-h"], [base] * len(envs), envs, n),
            measure("nothing to review", [*OCR_CMD, "review"], empty, envs, n),
            measure("preview, 1 file", [*OCR_CMD, "review", "--preview"], one, envs, n),
            # 1 request (2 in a tree where the review filter is still on by default)
            measure("review, 1 file", [*review, "--no-cache"], one, envs, n, complete()),
            measure("cache hit", review, cached, envs, n, complete(0, hit=True)),
            measure("review, 50 files", [*review, "--no-cache"], many, envs, n, complete()),
        ]
        rows = [variants[0] for variants in by_case]
        against = {variants[1][0]: variants[1][3] for variants in by_case if len(variants) > 1}
        recorded = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
        last = recorded.get("runs", [{}])[-1] if recorded.get("runs") else {}
        last_own = last.get("own_s", {})
        print(f"pipeline overhead, zero-latency scripted model, medians of {args.runs} runs, "
              f"{load_line()}; recorded: {last.get('label', 'none')}"
              + (f"; against: {args.against} (alternating runs)" if args.against else ""))
        out = []
        for label, wall, wait, own, cpu, rss, calls in rows:
            before = last_own.get(label)
            target = TARGETS_S.get(label)
            other = against.get(label)
            out.append((label, f"{wall:.3f}", f"{wait:.3f}", f"{own:.3f}",
                        "-" if target is None else f"{target:.2f}",
                        f"{cpu:.3f}", f"{rss:.0f}", calls,
                        "-" if before is None else f"{before:.3f}",
                        "-" if not before else f"{own / before:.2f}",
                        *(() if not args.against else
                          ("-" if other is None else f"{other:.3f}",
                           "-" if not other else f"{own / other:.2f}"))))
        print(table(("case", "wall s", "model s", "own s", "target s", "cpu s", "peak MiB",
                     "LLM calls", "recorded own s", "now/recorded",
                     *(("against own s", "now/against") if args.against else ())), out))
        if args.record:
            recorded.setdefault("runs", []).append({
                "label": args.record, "load": load_line(), "runs": args.runs,
                "own_s": {r[0]: round(r[3], 4) for r in rows},
                "wall_s": {r[0]: round(r[1], 4) for r in rows},
                "cpu_s": {r[0]: round(r[4], 4) for r in rows},
                **({"against": args.against, "against_own_s": {
                    k: round(v, 4) for k, v in against.items()}} if args.against else {})})
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(recorded, indent=1) + "\n")
            print(f"\nrecorded as {args.record!r} in {RESULTS}")
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
