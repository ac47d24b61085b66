#!/usr/bin/env python3
"""Tokens per review, split by prompt part (spec §15: report input tokens per review; keep
prompts lean).

The diffs: the release commits of bench/real_repos.py (real changes of six, simplejson,
bcrypt, debug, semver and ms, from PyPI and npm archives). Each is reviewed with
``git ocr review --commit SHA --format json --no-cache --effort low`` (the pre-commit stage's
effort) against the request-driven scripted model of bench/benchlib.py (EchoModel: grouping
answer, one ``file_read`` + ``code_search`` turn, one ``code_comment`` turn, ``task_done``;
review filter approves). Its replies carry no ``usage``, so ocr-hook counts with tiktoken.

Every request the model received is split and counted with ``ocr_hook.util.tokens.count_tokens``
(o200k_base, as for any model tiktoken does not know), summed over the review's requests (each
request re-sends the conversation, so a part counts once per request that carries it):
- ``system``: the system prompt; ``tools``: the JSON tool definitions sent with the request;
- ``rules``: the ``<review_checklist>`` block; ``diffs``: the ``<review_files>`` block;
- ``tool results``: ``tool`` messages; ``history``: earlier assistant turns sent back;
- ``other``: the rest (file lists, instructions, date, comments sent to the review filter,
  nudges). ``sum`` adds the parts; ``ocr-hook in``/``out``: the result's summary counts.

Usage: python bench/bench_tokens.py [--repos six,debug]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_repos
from benchlib import OCR_CMD, EchoModel, clean_env, echo_llm, run_child, table, task_of

from ocr_hook.util.tokens import count_tokens

PARTS = ("system", "tools", "rules", "diffs", "tool results", "history", "other")
_BLOCKS = (("rules", re.compile(r"<review_checklist>.*?</review_checklist>", re.S)),
           ("diffs", re.compile(r"<review_files>.*?</review_files>", re.S)))


def split_request(body: dict[str, Any]) -> Counter[str]:
    """Token counts of one request body by part (see module doc)."""
    out: Counter[str] = Counter()
    if body.get("tools"):
        out["tools"] += count_tokens(json.dumps(body["tools"]))
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content)
        role = m.get("role")
        if role == "system":
            out["system"] += count_tokens(content)
        elif role == "tool":
            out["tool results"] += count_tokens(content)
        elif role == "assistant":
            calls = json.dumps(m.get("tool_calls") or [])
            out["history"] += count_tokens(content) + count_tokens(calls)
        elif i == 1:
            rest = content
            for part, rx in _BLOCKS:
                for block in rx.findall(rest):
                    out[part] += count_tokens(block)
                rest = rx.sub("", rest)
            out["other"] += count_tokens(rest)
        else:
            out["other"] += count_tokens(content)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", default=",".join(r.name for r in real_repos.REPOS))
    args = ap.parse_args()
    names = set(args.repos.split(","))
    work = Path(tempfile.mkdtemp(prefix="ocr-bench-tokens-"))
    model = EchoModel()
    llm = echo_llm(model)
    try:
        env = clean_env(work / "home", **llm.env())
        rows, totals = [], Counter()
        summary_in = summary_out = n_reviews = 0
        by_task: Counter[str] = Counter()
        for spec in real_repos.REPOS:
            if spec.name not in names:
                continue
            commits = real_repos.build_repo(spec, work, env)
            for version, sha in commits[1:]:
                llm.requests.clear()
                r = run_child([*OCR_CMD, "review", "--commit", sha, "--format", "json",
                               "--no-cache", "--effort", "low"], work / spec.name, env)
                data = r.json()
                if r.rc not in (0, 1) or data.get("status") != "complete":
                    raise SystemExit(f"{spec.name} {version}: review failed ({r.rc}): "
                                     f"{r.stderr[-400:]}")
                parts: Counter[str] = Counter()
                for body in llm.requests:
                    counted = split_request(body)
                    parts += counted
                    by_task[task_of(body)] += sum(counted.values())
                s = data["summary"]
                reviewed = sum(f["reviewed"] for f in data["files"])
                rows.append((f"{spec.name} {version}", reviewed, len(llm.requests),
                             *(parts[p] for p in PARTS), sum(parts.values()),
                             s["input_tokens"], s["output_tokens"]))
                totals += parts
                summary_in += s["input_tokens"]
                summary_out += s["output_tokens"]
                n_reviews += 1
        total = sum(totals.values())
        rows.append(("TOTAL", sum(r[1] for r in rows), sum(r[2] for r in rows),
                     *(totals[p] for p in PARTS), total, summary_in, summary_out))
        rows.append(("share of sum", "", "", *(f"{100 * totals[p] / total:.0f}%" for p in PARTS),
                     "100%", "", ""))
        print(f"input tokens per review by prompt part ({n_reviews} real release commits, "
              "--effort low, scripted EchoModel; o200k_base counts)")
        print(table(("commit", "files", "requests", *PARTS, "sum", "ocr-hook in",
                     "ocr-hook out"), rows))
        print("\nby task: " + ", ".join(f"{t} {n}" for t, n in by_task.most_common())
              + f"; mean input tokens per review {summary_in / max(1, n_reviews):.0f}")
    finally:
        llm.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
