#!/usr/bin/env python3
"""The first push of an existing history to an empty remote: what is reviewed and
what it costs, against the 300,000-token hook budget.

A synthetic history (``--commits`` commits, each changing three generated Python modules of
about 50 lines in a folder that three consecutive commits change) is pushed with ``git ocr hook pre-push origin URL`` (git's
ref line on stdin, remote ``origin`` an empty bare repository) against the request-driven
scripted model of bench/benchlib.py (EchoModel: groups by folder, one tool turn, one comment
turn, ``task_done``; its replies carry no ``usage``, so ocr-hook counts tokens with tiktoken).
Each row is one push review (``--no-cache``):

- ``scope``: ``review.max_push_commits`` (20 by default; ``all`` = the whole history);
- ``budget``: ``review.max_tokens_budget``;
- ``reviewed``/``skipped``: commits in the reviewed range / older commits left out
  (JSON ``input.ranges[0]``); ``files``: files reviewed;
- ``calls``, ``tokens``: LLM calls and input + output tokens of the run (JSON ``summary``);
  ``of budget``: tokens / budget (never above 100 %: each request reserves its input estimate
  plus its maximum output before it is sent); ``status`` and wall seconds.

Usage: python bench/bench_push.py [--commits 120]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import OCR_CMD, EchoModel, clean_env, echo_llm, git, load_line, table


def module_text(commit: int, k: int) -> str:
    lines = [f'"""Module {k}, revision {commit}."""', "", "import math", ""]
    for f in range(8):
        lines += [f"def func_{f}_{commit}(x, y):", f"    total = x * {f} + y",
                  f"    if total > {commit}:", "        return math.sqrt(total)",
                  f"    return total - {k}", ""]
    return "\n".join(lines) + "\n"


def build(root: Path, env: dict[str, str], commits: int) -> tuple[Path, Path, str]:
    repo, remote = root / "repo", root / "remote.git"
    git(root, env, "init", "-q", "-b", "main", str(repo))
    git(root, env, "init", "-q", "--bare", str(remote))
    git(repo, env, "remote", "add", "origin", str(remote))
    for c in range(commits):
        folder = repo / f"pkg{c // 3}"  # each folder is changed by 3 consecutive commits
        folder.mkdir(exist_ok=True)
        for k in range(3):
            (folder / f"mod{k}.py").write_text(module_text(c, k))
        git(repo, env, "add", "-A")
        git(repo, env, "commit", "-q", "-m", f"commit {c}")
    return repo, remote, git(repo, env, "rev-parse", "HEAD").strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=120)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocr-bench-push-") as tmp:
        root = Path(tmp)
        env = clean_env(root / "home")
        repo, remote, tip = build(root, env, args.commits)
        llm = echo_llm(EchoModel())
        rows = []
        for scope, budget in (("20", 300_000), ("all", 300_000), ("all", 100_000)):
            run_env = {**env, "OCR_LLM_URL": llm.url, "OCR_LLM_TOKEN": "bench",
                       "OCR_LLM_MODEL": "bench-model", "OCR_HOOK_MAX_TOKENS_BUDGET": str(budget),
                       "OCR_HOOK_REVIEW_MAX_PUSH_COMMITS": "1000000" if scope == "all" else scope}
            line = f"refs/heads/main {tip} refs/heads/main {'0' * 40}\n"
            t0 = time.perf_counter()
            p = subprocess.run([*OCR_CMD, "hook", "pre-push", "origin", str(remote), "--format",
                                "json", "--no-cache"], cwd=repo, env=run_env, input=line,
                               capture_output=True, text=True, timeout=900)
            wall = time.perf_counter() - t0
            data = json.loads(p.stdout)
            rng = data["input"]["ranges"][0]
            s = data["summary"]
            tokens = s["input_tokens"] + s["output_tokens"]
            rows.append([scope, budget, rng["commits"], rng.get("not_reviewed_commits", 0),
                         s["files_reviewed"], s["llm_calls"], tokens,
                         f"{100 * tokens / budget:.1f} %", data["status"], f"{wall:.1f}"])
        llm.close()
    print(f"first push of {args.commits} commits to an empty remote; {load_line()}")
    print(table(["scope", "budget", "reviewed", "skipped", "files", "calls", "tokens",
                 "of budget", "status", "wall s"], rows))


if __name__ == "__main__":
    main()
