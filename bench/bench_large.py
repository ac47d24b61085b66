#!/usr/bin/env python3
"""Large changes stay cheap: big files and huge change sets never stall a commit.

Two staged changes in temporary repositories, each run as a new ``git ocr`` process against
the loopback scripted model (benchlib's EchoModel, Nagle off), with default settings:

- ``big files``: a 50 MB JSON data file (1.2 M lines) and a 10 MB single-line JS bundle
  (nothing else staged, so no model call is due). Rows: ``git ocr review --preview`` and
  ``git ocr hook pre-commit`` (text output, as a hook prints it). Checked on every run: exit 0,
  both big files listed as ``too_large`` with their size and a stated secret scan, no LLM call.
- ``20,000 files``: the change mix of bench_preview.py (modified, added, renamed, deleted and
  excluded paths) over 20,000 paths. Rows: ``git ocr review --preview --format json`` and
  ``git ocr hook pre-commit --format json``. Checked: every path git lists is in ``files[]``
  exactly once, reviewed or with a reason; the hook run ends before ``review.timeout_s``.

Columns (medians over ``--runs``): wall seconds (and the fastest run, which shows best what an
idle machine would do when the load average is high), CPU seconds (process + git children),
peak RSS in MiB (``os.wait4``: the largest of the process and the children it waited for),
exit code, and the case's acceptance bound. Prints the table and, with ``--record FILE``, writes
it there too (bench/results/).

Usage: python bench/bench_large.py [--runs 5] [--files 20000] [--record FILE]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_preview import build_repo  # noqa: E402
from benchlib import (  # noqa: E402
    OCR_CMD,
    ChildRun,
    EchoModel,
    ScriptedLLM,
    clean_env,
    fast_llm,
    git,
    load_line,
    med,
    run_child,
    table,
)

BIG_JSON_BYTES = 50_000_000
BUNDLE_BYTES = 10_000_000
HOOK_TIMEOUT_S = 300  # review.timeout_s default: the hook's deadline


def write_big_files(repo: Path) -> None:
    """data/records.json (~50 MB, one record per line) and web/bundle.js (~10 MB, one line)."""
    rnd = random.Random(7)
    (repo / "data").mkdir()
    with open(repo / "data" / "records.json", "w", encoding="ascii") as f:
        f.write("[\n")
        written = 2
        i = 0
        while written < BIG_JSON_BYTES:
            row = f'  {{"id": {i}, "name": "item-{i}", "score": {rnd.random():.6f}}},\n'
            f.write(row)
            written += len(row)
            i += 1
        f.write('  {"id": -1}\n]\n')
    (repo / "web").mkdir()
    with open(repo / "web" / "bundle.js", "w", encoding="ascii") as f:
        piece = "function a(b){return b+1};var c=[" + ",".join(str(n) for n in range(200)) + "];"
        f.write(piece * (BUNDLE_BYTES // len(piece)))


def big_repo(base: Path, env: dict[str, str]) -> Path:
    repo = base / "big"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "base")
    write_big_files(repo)
    git(repo, env, "add", "-A")
    return repo


def check_big(run: ChildRun, hook: bool) -> str:
    """'' when the output lists both big files with size, reason and (hook) the secret scan."""
    if run.rc != 0:
        return f"exit {run.rc}: {run.stderr.strip()[-300:]}"
    for path, size in (("data/records.json", "47.7 MiB"), ("web/bundle.js", "9.5 MiB")):
        line = next((ln for ln in run.stdout.splitlines() if path in ln), "")
        if not ("too large" in line or "too_large" in line) or size not in line:
            return f"{path}: no too-large line with its size in the output"
        if hook and "secret scan: first" not in line:
            return f"{path}: no secret scan statement"
    if hook and " 0 LLM call(s)" not in run.stdout:
        return "an LLM call was made"
    return ""


def check_all_paths(repo: Path, env: dict[str, str], run: ChildRun, deadline_s: float) -> str:
    """'' when every changed path is in files[] once, reviewed or with a reason, in time."""
    if run.rc != 0:
        return f"exit {run.rc}: {run.stderr.strip()[-300:]}"
    data = run.json()
    listed = [f["path"] for f in data.get("files", [])]
    raw = git(repo, env, "diff", "--cached", "--name-only", "-z", "-M")
    want = sorted(p for p in raw.split("\0") if p)
    if sorted(listed) != want:
        return f"{len(listed)} paths listed, git lists {len(want)}"
    if any(not (f["reviewed"] or f["reason"] or f.get("will_review")) for f in data["files"]):
        return "a path is neither reviewed nor given a reason"
    if run.wall_s > deadline_s:
        return f"ran {run.wall_s:.1f}s, past its {deadline_s}s deadline"
    return ""


def measure(runs: int, cmd: Sequence[str], repo: Path, env: dict[str, str],
            check: Callable[[ChildRun], str]) -> list[ChildRun]:
    out = []
    for _ in range(runs):
        r = run_child(cmd, repo, env, timeout_s=HOOK_TIMEOUT_S + 60)
        problem = check(r)
        if problem:
            raise SystemExit(f"{' '.join(cmd[-3:])}: {problem}")
        out.append(r)
    return out


def row(name: str, results: Sequence[ChildRun], bound: str) -> list[str]:
    return [name, f"{med([r.wall_s for r in results]):.3f}",
            f"{min(r.wall_s for r in results):.3f}",
            f"{med([r.cpu_s for r in results]):.3f}",
            f"{med([r.maxrss_mib for r in results]):.0f}",
            str(results[0].rc), bound]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--record", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ocr-bench-large-"))
    llm = fast_llm(EchoModel(tool_first=False).attach(ScriptedLLM()))
    try:
        env = clean_env(tmp / "home", **llm.env())
        rows = []
        repo = big_repo(tmp, env)
        preview = [*OCR_CMD, "review", "--preview"]
        hook = [*OCR_CMD, "hook", "pre-commit", "--no-cache"]
        rows.append(row("50 MB + 10 MB one-line: preview",
                        measure(args.runs, preview, repo, env, lambda r: check_big(r, False)),
                        "-"))
        big_hook = measure(args.runs, hook, repo, env, lambda r: check_big(r, True))
        rows.append(row("50 MB + 10 MB one-line: hook run", big_hook, "≤ 2 s, ≤ 150 MiB"))
        sample = next(r for r in big_hook)
        lines = [ln for ln in sample.stdout.splitlines()
                 if ln.startswith(("excluded:", "not reviewed:", "NOT REVIEWED", "ocr-hook:"))]
        shutil.rmtree(repo, ignore_errors=True)

        many = tmp / "many"
        many.mkdir()
        repo = build_repo(many, args.files)
        n = len([p for p in git(repo, env, "diff", "--cached", "--name-only", "-z", "-M")
                 .split("\0") if p])
        name = f"{args.files:,} files"
        rows.append(row(f"{name}: preview", measure(
            args.runs, [*preview, "--format", "json"], repo, env,
            lambda r: check_all_paths(repo, env, r, HOOK_TIMEOUT_S)), "≤ 2 s"))
        many_hook = measure(max(1, min(args.runs, 3)), [*hook, "--format", "json"], repo, env,
                            lambda r: check_all_paths(repo, env, r, HOOK_TIMEOUT_S))
        rows.append(row(f"{name}: hook run", many_hook, f"within {HOOK_TIMEOUT_S} s"))
        data = many_hook[0].json()
        reasons: dict[str, int] = {}
        for f in data["files"]:
            key = "reviewed" if f["reviewed"] else f["reason"]
            reasons[key] = reasons.get(key, 0) + 1
        text = [
            f"large changes, medians of {args.runs} runs ({len(many_hook)} for the "
            f"{name} hook run), {load_line()}",
            table(["case", "wall s", "min wall s", "cpu s", "peak MiB", "exit", "acceptance"],
                  rows),
            "",
            "hook run on the big files, coverage lines:",
            *(f"  {ln}" for ln in lines),
            "",
            f"hook run on {name} ({n:,} paths in git's list): status {data['status']}, "
            f"verdict {data['verdict']}, {data['summary']['llm_calls']} LLM calls",
            "  " + ", ".join(f"{k} {v:,}" for k, v in sorted(reasons.items(),
                                                              key=lambda kv: -kv[1])),
            *(f"  {r}" for r in _not_reviewed_lines(many_hook[0].stderr, data)),
        ]
        out = "\n".join(text)
        print(out)
        if args.record:
            args.record.write_text(out + "\n", encoding="utf-8")
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _not_reviewed_lines(stderr: str, data: dict[str, object]) -> list[str]:
    """The run's NOT REVIEWED line (stderr in JSON mode), if any."""
    return [ln.strip() for ln in stderr.splitlines() if re.search(r"NOT REVIEWED", ln)][:1]


if __name__ == "__main__":
    sys.exit(main())
