#!/usr/bin/env python3
"""``git ocr review --preview`` over N changed files (spec §15: ≤ 0.3 s for 1,000
files; under 1 s on the project machine at the least).

Builds a temporary repository with one commit of N files, then stages a change touching all of
them: 60 % modified (.py/.ts/.go, some with the edit below line 20 so the generated-marker
check reads blob heads), 20 % added, 10 % renamed with an edit, 5 % deleted, 5 % excluded
paths (tests, vendor/, lock files, .txt). Measures:

- ``cli``: wall time of the console script ``git-ocr review --preview --format json`` as a
  new process (what a user waits for, Python start-up and imports included);
- ``cpu``: user + system CPU seconds of the same run (git children included), which stays
  meaningful when the machine is shared;
- in-process stages with modules already imported: ``snapshot`` (index copy + write-tree),
  ``load_change_set`` (what a review runs: the streamed git diff, metadata gates, the patches
  of the files within ``select.max_files``, blob heads, gates 1–10; default settings), and
  for comparison ``load_diff`` + ``select`` (every patch read and parsed, then all gates).

Prints one table of medians (and min/max) over ``--runs`` repetitions per size in ``--files``
(comma-separated), with the peak RSS of the ``cli`` process (``os.wait4`` rusage: the process
and the git children it waited for). The machine may be shared: run it on an idle machine for
the figure that counts (the load average is printed).

Usage: python bench/bench_preview.py [--files 1000,10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocr_hook.change import changeset, selection  # noqa: E402
from ocr_hook.config.layering import SelectConfig  # noqa: E402
from ocr_hook.git import target  # noqa: E402

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def module(i: int, lines: int = 40) -> str:
    return "".join(f"def f_{i}_{j}(x):\n    return x + {j}\n" for j in range(lines // 2))


def build_repo(root: Path, n: int) -> Path:
    """A repository whose staged snapshot changes ``n`` paths in the mix described above."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    exts = (".py", ".ts", ".go")
    n_mod, n_add, n_ren, n_del = int(n * 0.6), int(n * 0.2), int(n * 0.1), int(n * 0.05)
    n_excl = n - n_mod - n_add - n_ren - n_del
    base = {}
    for i in range(n_mod + n_ren + n_del):
        base[f"src/pkg{i % 20}/mod_{i}{exts[i % 3]}"] = module(i)
    for path, text in base.items():
        p = repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    paths = list(base)
    for k, path in enumerate(paths[:n_mod]):
        text = module(k)
        at = "return x + 1\n" if k % 2 else "return x + 15\n"
        (repo / path).write_text(text.replace(at, at.replace("x +", "x -"), 1))
    for k, path in enumerate(paths[n_mod : n_mod + n_ren]):
        new = path.replace("/mod_", "/moved_")
        git(repo, "mv", path, new)
        (repo / new).write_text(module(n_mod + k) + "extra = 1\n")
    for path in paths[n_mod + n_ren :]:
        (repo / path).unlink()
    for i in range(n_add):
        p = repo / f"new/pkg{i % 20}/added_{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(module(10_000 + i, 20))
    excluded = ("tests/test_{i}.py", "vendor/lib{i}/x.js", "docs/note_{i}.txt",
                "web/{i}/package-lock.json", "gen/api_{i}.pb.go")
    for i in range(n_excl):
        p = repo / excluded[i % len(excluded)].format(i=i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(module(20_000 + i, 6))
    git(repo, "add", "-A")
    return repo


def cpu_s() -> float:
    """User + system CPU seconds of this process and its finished children (git, git-ocr)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) of each of ``runs`` calls. CPU time barely moves when other
    processes compete for the cores; wall time is what a user waits for on an idle machine."""
    wall, cpu = [], []
    for _ in range(runs):
        c0, t0 = cpu_s(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(cpu_s() - c0)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=lambda s: [int(x) for x in s.split(",")], default=[1000],
                    help="comma-separated numbers of changed files (default 1000)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    for n in args.files:
        bench_size(n, args.runs)
    return 0


def bench_size(n_files: int, runs: int) -> None:
    """Build a repository of ``n_files`` changed paths and print its table."""
    args = argparse.Namespace(files=n_files, runs=runs)
    exe = Path(sys.executable).parent / "git-ocr"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ocr_hook.cli"]
    tmp = Path(tempfile.mkdtemp(prefix="ocr-bench-preview-"))
    try:
        repo = build_repo(tmp, args.files)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OCR_", "OPENAI_", "ANTHROPIC_"))}
        env.update(GIT_ENV, XDG_CONFIG_HOME=str(tmp / "xdg"), XDG_CACHE_HOME=str(tmp / "cache"))
        first = subprocess.run([*cmd, "review", "--preview", "--format", "json"], cwd=repo,
                               env=env, capture_output=True, text=True, check=True)
        files = json.loads(first.stdout)["files"]
        reviewed = sum(1 for f in files if f["will_review"])

        peak_mib: list[float] = []

        def cli() -> None:
            proc = subprocess.Popen([*cmd, "review", "--preview", "--format", "json"], cwd=repo,
                                    env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
            if os.waitstatus_to_exitcode(status):
                raise SystemExit(f"preview failed with {os.waitstatus_to_exitcode(status)}")
            peak_mib.append(usage.ru_maxrss / 1024)

        snap = target.staged_snapshot(repo, env)
        loaded = target.load_diff(repo, snap)
        policy = selection.SelectionPolicy()
        defaults = SelectConfig()
        bounded = selection.SelectionPolicy(max_file_bytes=defaults.max_file_bytes,
                                            max_files=defaults.max_files,
                                            max_total_bytes=defaults.max_total_bytes)
        rows = [
            ("cli (new process)", measure(cli, args.runs)),
            ("snapshot", measure(lambda: target.staged_snapshot(repo, env), args.runs)),
            ("load_change_set", measure(
                lambda: changeset.load_change_set(repo, snap, bounded), args.runs)),
            ("load_diff", measure(lambda: target.load_diff(repo, snap), args.runs)),
            ("select", measure(lambda: selection.select(loaded, policy), args.runs)),
        ]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"preview of {len(files)} changed files ({reviewed} to review), "
              f"{args.runs} runs, load average {load:.2f}")
        print(f"{'stage':<20} {'wall median s':>14} {'min s':>7} {'max s':>7} "
              f"{'cpu median s':>13}")
        for name, (wall, cpu) in rows:
            print(f"{name:<20} {statistics.median(wall):>14.3f} {min(wall):>7.3f} "
                  f"{max(wall):>7.3f} {statistics.median(cpu):>13.3f}")
        print(f"cli peak RSS: median {statistics.median(peak_mib):.0f} MiB, max "
              f"{max(peak_mib):.0f} MiB\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
