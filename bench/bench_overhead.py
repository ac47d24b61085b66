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

Against OCR 1.12.4 (``--ocr [PATH]``; by default when ``ocrlib.find_ocr`` finds it, ``--no-ocr``
to skip): ``review, 1 file`` (OCR: ``ocr review --format json --audience agent --effort low``
in the same repository, whose only change is the staged file; OCR's main request is answered
with the same ``code_comment`` + ``task_done``, its fact-check filter approves, see
``ocrlib.ocr_answer``) and ``preview, 1 file`` (``ocr review --preview``), each tool run after
the other, run by run; OCR runs both as installed (the npm launcher ``ocr``, a Node script
that starts the platform binary) and as that binary itself (``ocrlib.native_binary``). Own
time here is defined once for every tool on the loopback server's clock
(``ocrlib.ServerClock``): wall − the time the server was handling at least one request of the
run; ocr-hook's session-log model time is not used in this table. ocr-hook runs there as a
user installs it (``benchlib.installed_command``: a regular, non-editable install of this tree
in a cached venv, as pipx, uv or the pre-commit framework make it), or as this checkout's
``git-ocr`` with ``--checkout``. Columns: both tools' wall,
server and own seconds, requests, and ocr-hook own / OCR own (target for the review: ≤ 1.5x).

Usage: python bench/bench_overhead.py [--runs 9] [--record LABEL] [--against DIR]
                                      [--ocr [PATH] | --no-ocr] [--checkout]
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

import ocrlib
from benchlib import (
    OCR_CMD,
    ChildRun,
    EchoModel,
    ScriptedLLM,
    clean_env,
    fast_llm,
    git,
    installed_command,
    load_line,
    med,
    model_wait_s,
    run_child,
    session_records,
    table,
    task_of,
)

from tests.support.scripted_llm import openai_text, openai_tool_calls

RESULTS = Path(__file__).resolve().parent / "results" / "overhead.json"
TARGETS_S = {"nothing to review": 0.15, "preview, 1 file": 0.15, "review, 1 file": 0.25,
             "cache hit": 0.20}  # spec §15 (own time)
OCR_TARGETS = {"review, 1 file": 1.5}  # ocr-hook own / OCR own
COMMENT = {"path": "app.py", "existing_code": "return x - 5", "severity": "low",
           "category": "other", "content": "Subtracts instead of adding."}


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


def zero_latency(llm: ScriptedLLM, clock: ocrlib.ServerClock) -> None:
    """Grouping answers from the file list; a main request gets one ``code_comment`` on the
    edited line and ``task_done`` in the same reply; the review filter approves. OCR's
    requests (told apart by ``ocrlib.ocr_kind``) get the same comment in its main request and
    the least they expect otherwise (``ocrlib.ocr_answer``)."""
    def answer(body: dict, raw: str) -> tuple[str, dict, float]:
        if ocrlib.ocr_kind(body) != "other":
            kind, out = ocrlib.ocr_answer(body, COMMENT)
            return f"ocr {kind}", out, 0.0
        msgs = body.get("messages") or []
        task = task_of(body)
        if task == "grouping":
            return task, openai_text(json.dumps(EchoModel.groups(str(msgs[1]["content"])))), 0.0
        if task == "review_filter":
            return task, openai_tool_calls(("approve_all_comments", {})), 0.0
        if task == "main" and "return x - 5" in str(msgs[1].get("content", "")):
            first = str(msgs[1]["content"]).split('<file path="', 1)[1].split('"', 1)[0]
            return task, openai_tool_calls(
                ("code_comment", {"comments": [{**COMMENT, "path": first}]}),
                ("task_done", {"state": "DONE"})), 0.0
        return task, openai_tool_calls(("task_done", {"state": "DONE"})), 0.0
    ocrlib.attach(llm, clock, answer)


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


def ocr_check(review: bool) -> Callable[[ChildRun], str]:
    """An OCR run's problem ("" when none): a review must complete with the one comment on the
    edited line (22); a preview must exit 0."""
    def check(r: ChildRun) -> str:
        if r.rc != 0:
            return f"exit {r.rc}: {r.stderr[-300:]}"
        if not review:
            return ""
        data = r.json()
        lines = [c.get("start_line") for c in data.get("comments") or []]
        return "" if data.get("status") == "complete" and lines == [22] else \
            f"status {data.get('status')!r}, comment lines {lines}"
    return check


def hook_check(check: Callable[[dict], str] | None) -> Callable[[ChildRun], str]:
    def run_check(r: ChildRun) -> str:
        if r.rc not in (0, 1):
            return f"exit {r.rc}: {r.stderr[-300:]}"
        return check(r.json()) if check is not None else ""
    return run_check


def against_ocr(label: str, cmds: dict[str, list[str]], repo: Path, env: dict[str, str],
                clock: ocrlib.ServerClock, runs: int,
                checks: dict[str, Callable[[ChildRun], str]]) -> dict[str, dict]:
    """``runs`` runs of each tool's command in ``repo``, one after the other (the order flips
    every round), after one warm-up each: per tool the medians of wall, server-busy and own
    seconds (``ocrlib.busy_s``), the request count and the requests by kind of the last run."""
    for cmd in cmds.values():
        run_child(cmd, repo, env)
    samples: dict[str, list[tuple[float, float, int, dict[str, int]]]] = {t: [] for t in cmds}
    for i in range(runs):
        for tool in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            mark = clock.mark()
            r = run_child(cmds[tool], repo, env)
            spans = clock.since(mark)
            if problem := checks[tool](r):
                raise SystemExit(f"{label}, {tool}: {problem}")
            samples[tool].append((r.wall_s, ocrlib.busy_s(spans), len(spans),
                                  ocrlib.kinds(spans)))
    return {tool: {"wall_s": med([x[0] for x in sm]), "server_s": med([x[1] for x in sm]),
                   "own_s": med([x[0] - x[1] for x in sm]),
                   "requests": int(med([x[2] for x in sm])), "kinds": sm[-1][3]}
            for tool, sm in samples.items()}


def ocr_pairs(ocr: str, exe: list[str], repo: Path, env: dict[str, str],
              clock: ocrlib.ServerClock, runs: int) -> dict[str, dict[str, dict]]:
    """The 1-file review and preview of ocr-hook (``exe``: its ``git-ocr`` command), OCR as
    given (``npm launcher`` when ``ocr`` is OCR's launcher) and, when found, the launcher's
    ``native binary``, alternating (see :func:`against_ocr`): {case: {tool: figures}}."""
    review = [*exe, "review", "--format", "json", "--effort", "low"]
    native = ocrlib.native_binary(ocr)
    exes = {("npm launcher" if native else "as given"): ocr,
            **({"native binary": native} if native else {})}
    reviews = {"ocr-hook": [*review, "--no-cache"],
               **{k: ocrlib.review_command(x, "--effort", "low") for k, x in exes.items()}}
    previews = {"ocr-hook": [*exe, "review", "--preview"],
                **{k: [x, "review", "--preview"] for k, x in exes.items()}}
    return {
        "review, 1 file": against_ocr(
            "review, 1 file", reviews, repo, env, clock, runs,
            {"ocr-hook": hook_check(complete()), **{k: ocr_check(True) for k in exes}}),
        "preview, 1 file": against_ocr(
            "preview, 1 file", previews, repo, env, clock, runs,
            {"ocr-hook": hook_check(None), **{k: ocr_check(False) for k in exes}})}


def ocr_table(pairs: dict[str, dict[str, dict]]) -> str:
    """One row per case and OCR executable: both tools' figures and ocr-hook own / OCR own."""
    out = []
    for label, p in pairs.items():
        h = p["ocr-hook"]
        for tool, o in p.items():
            if tool == "ocr-hook":
                continue
            target = OCR_TARGETS.get(label)
            ratio = h["own_s"] / o["own_s"] if o["own_s"] > 0 else float("nan")
            out.append((label, tool,
                        f"{h['wall_s']:.3f}", f"{h['server_s']:.3f}", f"{h['own_s']:.3f}",
                        h["requests"], f"{o['wall_s']:.3f}", f"{o['server_s']:.3f}",
                        f"{o['own_s']:.3f}", o["requests"], f"{ratio:.2f}",
                        "-" if target is None else f"{target:.1f}"))
    return table(("case", "OCR run as", "ocr-hook wall s", "server s", "own s", "requests",
                  "OCR wall s", "server s", "own s", "requests", "own ratio", "target"), out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--record", metavar="LABEL", default="",
                    help="store these medians as the new comparison point")
    ap.add_argument("--against", metavar="DIR", default="",
                    help="also run another ocr-hook source tree, alternating (see above)")
    ap.add_argument("--checkout", action="store_true",
                    help="against OCR: run this checkout's git-ocr, not a regular install")
    ocrlib.add_arguments(ap)
    args = ap.parse_args()
    ocr = ocrlib.from_arguments(args)
    base = Path(tempfile.mkdtemp(prefix="ocr-bench-overhead-"))
    llm = fast_llm(ScriptedLLM("openai"))
    clock = ocrlib.ServerClock(llm)
    zero_latency(llm, clock)
    try:
        env = clean_env(base / "home", **llm.env(), **ocrlib.NO_UPDATE)
        if ocr:
            ocrlib.write_config(base / "home", llm.url)
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
        exe = OCR_CMD if args.checkout else installed_command()
        pairs = {} if not ocr else ocr_pairs(ocr, exe, one[0], env, clock, n)
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
        if ocr:
            print(f"\nagainst OCR {ocrlib.OCR_VERSION} ({ocr}), the same repository and "
                  f"model, the tools alternating run by run; own = wall − server busy "
                  f"(the loopback server's clock) for both; ocr-hook: {exe[0]}:")
            print(ocr_table(pairs))
        if args.record:
            recorded.setdefault("runs", []).append({
                "label": args.record, "load": load_line(), "runs": args.runs,
                "own_s": {r[0]: round(r[3], 4) for r in rows},
                "wall_s": {r[0]: round(r[1], 4) for r in rows},
                "cpu_s": {r[0]: round(r[4], 4) for r in rows},
                **({"against": args.against, "against_own_s": {
                    k: round(v, 4) for k, v in against.items()}} if args.against else {}),
                **({"ocr": {"version": ocrlib.OCR_VERSION, "cases": {
                    label: {tool: {k: round(v, 4) if isinstance(v, float) else v
                                   for k, v in fig.items()} for tool, fig in p.items()}
                    for label, p in pairs.items()}, "own_ratio": {
                    label: {tool: round(p["ocr-hook"]["own_s"] / fig["own_s"], 3)
                            for tool, fig in p.items() if tool != "ocr-hook" and fig["own_s"]}
                    for label, p in pairs.items()}}} if ocr else {})})
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(recorded, indent=1) + "\n")
            print(f"\nrecorded as {args.record!r} in {RESULTS}")
    finally:
        llm.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
