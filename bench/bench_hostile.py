#!/usr/bin/env python3
"""Hostile model I/O: what an oversized or endless model answer costs a review.

A 1-file staged change reviewed by ``git ocr review --format json --effort low`` as a new
process, against the tests' loopback model scripted with one of:

- ``response N MB``: a 200 reply without Content-Length whose message content is N MB of text
  (streamed up to the 8 MiB cap, then the group ends incomplete);
- ``1000 tool calls``: one reply asking for 1,000 ``file_find`` calls (none is run);
- ``1 MB arguments``: one ``file_find`` call with 1 MB of arguments (not run, not sent back);
- ``tool loop``: every reply one more ``file_find``, for ever (stops at ``review.max_tool_rounds``,
  default 100, plus the grace round).

Columns: the review's verdict and incomplete reason, HTTP requests the model received, wall
seconds and peak RSS (MiB, the review and the git processes it waited for, see WRAPPER);
medians over ``--runs`` repetitions.

Usage: python bench/bench_hostile.py [--runs 3] [--sizes 10,50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    OCR_CMD,
    Reply,
    ScriptedLLM,
    clean_env,
    fast_llm,
    git,
    load_line,
    med,
    openai_tool_calls,
    run_child,
    table,
)

FIND = ("file_find", {"query_name": "app"})
UNTIL_CLOSE = {"connection": "close"}  # no Content-Length: the client streams up to its cap
# The review runs under a small wrapper that reports its children's peak RSS: a process forked
# from this one (which holds the scripted 50 MB reply) would inherit our RSS high-water mark
# across exec on Linux, and os.wait4 of a direct child would report that instead.
WRAPPER = ("import resource, subprocess, sys\n"
           "rc = subprocess.run(sys.argv[1:]).returncode\n"
           "kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
           "sys.stderr.write(f'\\nmaxrss_kib={kib}\\n')\n"
           "sys.exit(rc)\n")


def big_reply(mb: int) -> bytes:
    return (b'{"choices":[{"index":0,"message":{"role":"assistant","content":"'
            + b"A" * (mb * 1024 * 1024) + b'"},"finish_reason":"stop"}]}')


def scenarios(sizes: list[int]) -> list[tuple[str, Any]]:
    """(label, script(llm)) pairs; a script queues the replies or sets the default reply."""
    out: list[tuple[str, Any]] = [
        (f"response {mb} MB", lambda llm, mb=mb: llm.reply(big_reply(mb), headers=UNTIL_CLOSE))
        for mb in sizes]
    out += [
        ("1000 tool calls", lambda llm: llm.reply(openai_tool_calls(*[FIND] * 1000))),
        ("1 MB arguments", lambda llm: llm.reply(openai_tool_calls(
            ("file_find", {"query_name": "x" * (1024 * 1024)})))),
        ("tool loop", lambda llm: setattr(llm, "default", Reply(openai_tool_calls(FIND)))),
    ]
    return out


def one_run(root: Path, script: Any) -> tuple[str, int, float, float]:
    """(verdict/reason, requests, wall s, peak RSS MiB) of one review in a fresh repository."""
    env = clean_env(root / "home")
    repo = root / "repo"
    repo.mkdir()
    git(repo, env, "init", "-q")
    (repo / "app.py").write_text("def div(a, b):\n    return a / b\n")
    git(repo, env, "add", "app.py")
    llm = fast_llm(ScriptedLLM("openai"))
    try:
        script(llm)
        env.update(llm.env(), OCR_HOOK_REVIEW_FILTER="false")
        run = run_child([sys.executable, "-c", WRAPPER, *OCR_CMD, "review", "--format", "json",
                         "--effort", "low"], repo, env)
        data = run.json()
        kib = int(run.stderr.rsplit("maxrss_kib=", 1)[1].split()[0])
        reasons = sorted({f.get("reason", "") for f in data.get("files", [])
                          if not f.get("reviewed")})
        outcome = f"{data.get('verdict', f'rc {run.rc}')} {','.join(reasons)}".strip()
        return outcome, len(llm.requests), run.wall_s, kib / 1024
    finally:
        llm.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="10,50", help="response sizes in MB, comma-separated")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = []
    for label, script in scenarios(sizes):
        results = []
        for _ in range(args.runs):
            root = Path(tempfile.mkdtemp(prefix="ocr-bench-hostile-"))
            try:
                results.append(one_run(root, script))
            finally:
                shutil.rmtree(root, ignore_errors=True)
        outcomes = sorted({r[0] for r in results})
        rows.append([label, " | ".join(outcomes), f"{med([r[1] for r in results]):g}",
                     f"{med([r[2] for r in results]):.2f}", f"{med([r[3] for r in results]):.0f}"])
    print(f"hostile model I/O, 1-file review, medians of {args.runs} ({load_line()})")
    print(table(["scenario", "verdict reason", "requests", "wall s", "peak RSS MiB"], rows))
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
