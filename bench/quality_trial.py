#!/usr/bin/env python3
"""Review quality on real pull requests: AACR-Bench PRs reviewed by ocr-hook and by the
reference CLI (OCR, npm ``@alibaba-group/open-code-review``), every model request answered
through ``relay_model.py``, findings matched to the expert labels by a blind judge.

The cases are ``bench/quality/cases.json``: PRs of ``dataset/positive_samples.json`` of
``alibaba/aacr-bench`` (fields ``githubPrUrl``, ``source_commit``, ``target_commit``,
``comments[]`` with ``path``, ``from_line``, ``to_line``, ``category``, ``note``). Never add a PR
of ``gofr-dev/gofr`` or ``bluewave-labs/Checkmate``: they are kept back for an independent
check (``load_cases`` refuses them).

Commands (``-h`` for flags):

- ``build --work W``: one clone per case under ``W/<case>`` (from ``--mirrors`` — folders
  ``<owner>+<name>/repo`` holding git directories — else from GitHub), work tree at the
  PR's target commit; checks both commits exist.
- ``run --tool ocr-hook|ocr --label L --relay-dir D --port P --work W``: reviews each case in
  range mode (``--from source --to target``, each tool's default effort) with every request
  going to the relay, into ``D/<case>/`` (``review.json``, ``review.stderr``, ``done``), then
  ``D/done``. ``--ocr-hook-tree T`` runs ocr-hook from a source tree (today's main, say);
  ``--ocr PATH`` is the OCR executable.
- ``pack --runs D1 D2 ... --out J``: per case, ``J/<case>.md`` for the judge: the labels
  (``L1`` …: path, lines, category, note) and the findings of every run pooled and shuffled
  under opaque ids (``F…``: path, lines, text; no tool, no severity); ``J.key.json`` (beside
  the folder, out of the judge's sight) maps ids back. The judge writes ``J/<case>.verdict.json``:
  ``{"matches": [{"finding": "F…", "label": "L…"}], "plausible": ["F…"]}`` — a finding matches a
  label when it is in the same file and about the same issue; ``plausible`` lists unmatched
  findings that are real problems nonetheless.
- ``score --judged J --run NAME=D ... --label L``: recall, defect recall (Code Defect,
  Security Vulnerability and Performance labels), precision, line-level recall (a matched
  finding that also overlaps the label's lines), requests and input tokens per PR and tool,
  the answering models' ``unclear.md`` notes; writes ``results/quality-trial.md`` (after the
  ``--preamble`` text) and ``results/quality-trial.json``; ``--data F`` also writes every
  finding (with its judged id, requests and input tokens per PR) and every verdict to ``F``.
- ``unpack --data F --run NAME --out D``: the run ``NAME`` of such a file (or of an older one
  without usage, taking requests and tokens from ``--usage results/quality-trial-….json``) as a
  run folder ``D/<case>/`` (``review.json``, ``done``, ``log.jsonl`` with as many entries as its
  requests), so a later judgement can pool it with new runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import relay_model  # noqa: E402
from benchlib import OCR_CMD, clean_env, run_child  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = HERE / "quality" / "cases.json"
RESULTS = HERE / "results"
KEPT_BACK = ("gofr-dev/gofr", "bluewave-labs/checkmate")
DEFECT_CATEGORIES = ("Code Defect", "Security Vulnerability", "Performance")
DATASET_DEFAULT = RESULTS / "tmp" / "aacr" / "positive_samples.json"


def load_cases(only: str | None = None) -> list[dict[str, Any]]:
    cases = json.loads(CASES.read_text("utf-8"))
    for c in cases:
        if c["repo"].lower() in KEPT_BACK:
            raise SystemExit(f"{c['url']}: this repository is kept back for an independent check")
    if only:
        names = set(only.split(","))
        cases = [c for c in cases if c["name"] in names]
    return cases


def load_labels(dataset: Path, case: dict[str, Any]) -> list[dict[str, Any]]:
    """The expert comments of ``case`` from AACR's ``positive_samples.json``, as
    ``{"id": "L1", "path", "lines": [a, b], "category", "note"}`` (from/to swapped when the
    dataset has them reversed)."""
    rows = json.loads(dataset.read_text("utf-8"))
    pr = next(r for r in rows if r["githubPrUrl"] == case["url"])
    out = []
    for i, c in enumerate(pr["comments"], 1):
        a, b = int(c["from_line"]), int(c["to_line"])
        out.append({"id": f"L{i}", "path": c["path"], "lines": [min(a, b), max(a, b)],
                    "category": c["category"], "note": c["note"].strip()})
    return out


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


# --- build --------------------------------------------------------------------------------

def cmd_build(args: argparse.Namespace) -> int:
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    for c in load_cases(args.case):
        dest = work / c["name"]
        if not dest.exists():
            mirror = args.mirrors / c["repo"].replace("/", "+") / "repo" if args.mirrors else None
            src = str(mirror) if mirror and mirror.exists() else f"https://github.com/{c['repo']}"
            subprocess.run(["git", "clone", "-q", "--no-checkout", src, str(dest)], check=True)
        for ref in (c["source"], c["target"]):
            git(dest, "cat-file", "-e", f"{ref}^{{commit}}")
        git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", c["target"])
        base = git(dest, "merge-base", c["source"], c["target"]).strip()
        stat = git(dest, "diff", "--shortstat", base, c["target"]).strip()
        print(f"{c['name']}: {c['language']}, {c['labels']} labels, {stat}")
    return 0


# --- run ----------------------------------------------------------------------------------

def _ocr_config(home: Path, port: int) -> None:
    cfg = home / ".opencodereview" / "config.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(json.dumps({"llm": {
        "url": f"http://127.0.0.1:{port}/v1", "auth_token": "relay", "model": "trial-model",
        "protocol": "openai", "use_anthropic": False, "timeout_sec": 3600}}))


def review_command(args: argparse.Namespace, case: dict[str, Any]) -> list[str]:
    rng = ["--from", case["source"], "--to", case["target"]]
    if args.tool == "ocr":
        return [args.ocr, "review", *rng, "--format", "json", "--concurrency", "1",
                "--timeout", "0", "--audience", "agent"]
    return [*OCR_CMD, "review", *rng, "--format", "json", "--no-cache"]


def cmd_run(args: argparse.Namespace) -> int:
    relay_dir: Path = args.relay_dir.resolve()
    relay_dir.mkdir(parents=True, exist_ok=True)
    (relay_dir / "done").unlink(missing_ok=True)
    home = relay_dir / "_home"
    env = clean_env(home, OCR_LLM_URL=f"http://127.0.0.1:{args.port}/v1",
                    OCR_LLM_MODEL="trial-model", OCR_LLM_TOKEN="relay", OCR_LLM_PROTOCOL="openai",
                    OCR_HOOK_LLM_TIMEOUT_S="3600", OCR_HOOK_LLM_MAX_RETRIES="0",
                    OCR_HOOK_REVIEW_TIMEOUT_S="14400", OCR_HOOK_REVIEW_CONCURRENCY="1")
    if args.ocr_hook_tree:
        env["PYTHONPATH"] = str(args.ocr_hook_tree.resolve())
    if args.tool == "ocr":
        _ocr_config(home, args.port)
    server, relay = relay_model.start(relay_dir / "_idle", args.port, "trial-model")
    try:
        for case in load_cases(args.case):
            repo = args.work.resolve() / case["name"]
            case_dir = relay_dir / case["name"]
            if (case_dir / "done").exists():
                continue
            shutil.rmtree(case_dir, ignore_errors=True)
            relay.set_directory(case_dir)
            print(f"{case['name']}: reviewing with {args.tool}", file=sys.stderr, flush=True)
            child = run_child(review_command(args, case), repo, env, timeout_s=14400)
            (case_dir / "review.json").write_text(child.stdout)
            (case_dir / "review.stderr").write_text(child.stderr)
            (case_dir / "done").write_text(f"exit {child.rc}\n")
            print(f"{case['name']}: exit {child.rc}", file=sys.stderr, flush=True)
    finally:
        (relay_dir / "done").write_text("finished\n")
        relay.stopping.set()
        server.shutdown()
        server.server_close()
    return 0


# --- findings -----------------------------------------------------------------------------

def findings(run_dir: Path, case: str) -> list[dict[str, Any]]:
    """The comments of one review as ``{"path", "lines": [a, b], "side", "severity",
    "category", "text"}``. ocr-hook's JSON has ``start_line``/``end_line``/``side``/``content``
    (+ ``suggestion``); OCR's has ``path``, ``start_line``/``end_line`` (or ``line``) and
    ``content``."""
    path = run_dir / case / "review.json"
    raw = path.read_text("utf-8") if path.exists() else ""
    try:
        doc = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    out = []
    for c in doc.get("comments") or []:
        a = int(c.get("start_line") or c.get("line") or 0)
        b = int(c.get("end_line") or a)
        text = str(c.get("content") or c.get("message") or "").strip()
        sug = c.get("suggestion_code") or c.get("suggestion") or ""
        if sug:
            text += "\n\nSuggested code:\n" + str(sug).strip()
        out.append({"path": c.get("path") or c.get("file") or "", "lines": [a, b],
                    "side": c.get("side", "new"), "severity": str(c.get("severity") or ""),
                    "category": str(c.get("category") or ""), "text": text})
    return out


def usage(run_dir: Path, case: str) -> dict[str, int]:
    log = relay_model.read_log(run_dir / case)
    return {"requests": len(log), "input_tokens": sum(e["prompt_tokens"] for e in log)}


def key_path(judged: Path) -> Path:
    """Where ``pack`` keeps the id → run map: beside the judge's folder, never inside it."""
    return judged.resolve().with_name(judged.resolve().name + ".key.json")


def cmd_pack(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    key: dict[str, Any] = {}
    for case in load_cases(args.case):
        labels = load_labels(args.dataset, case)
        pool = []
        for d in args.runs:
            for i, f in enumerate(findings(d.resolve(), case["name"])):
                fid = "F" + hashlib.sha256(f"{d}|{case['name']}|{i}".encode()).hexdigest()[:6]
                pool.append((fid, f))
                key[fid] = {"run": str(d.resolve()), "case": case["name"], "index": i}
        random.Random(case["name"]).shuffle(pool)
        lines = [f"# {case['name']} ({case['url']})", "",
                 "## Labels (expert review comments)", ""]
        for lab in labels:
            lines += [f"### {lab['id']}: {lab['path']} lines {lab['lines'][0]}-{lab['lines'][1]}"
                      f" [{lab['category']}]", "", lab["note"], ""]
        lines += ["## Findings (reviewers' comments, in random order)", ""]
        for fid, f in pool:
            lines += [f"### {fid}: {f['path']} lines {f['lines'][0]}-{f['lines'][1]}", "",
                      f["text"], ""]
        (out / f"{case['name']}.md").write_text("\n".join(lines), "utf-8")
    key_path(out).write_text(json.dumps(key, indent=1))
    print(f"{len(key)} findings packed into {out}")
    return 0


# --- score --------------------------------------------------------------------------------

def _overlap(f: dict[str, Any], lab: dict[str, Any]) -> bool:
    """Whether finding ``f`` lies on label ``lab``'s lines: same path, new-side lines that
    overlap (AACR labels are on the right side; a finding on deleted lines never counts)."""
    a, b = f["lines"]
    return (f["path"] == lab["path"] and f["side"] != "old" and a > 0
            and a <= lab["lines"][1] and lab["lines"][0] <= b)


def score_run(name: str, run_dirs: list[Path], judged: Path, dataset: Path,
              key: dict[str, Any]) -> dict[str, Any]:
    rows, tot = [], {"labels": 0, "found": 0, "defect_labels": 0, "defect_found": 0,
                     "line": 0, "findings": 0, "matching": 0, "plausible": 0, "requests": 0,
                     "input_tokens": 0, "defect_findings": 0, "defect_blocking": 0,
                     "matched_defect": 0, "matched_defect_blocking": 0}
    back = {(v["run"], v["case"], v["index"]): k for k, v in key.items()}
    for case in load_cases():
        run_dir = next((d for d in run_dirs if (d / case["name"] / "done").exists()),
                       run_dirs[0])
        labels = {lab["id"]: lab for lab in load_labels(dataset, case)}
        fs = findings(run_dir, case["name"])
        ids = [back.get((str(run_dir), case["name"], i)) for i in range(len(fs))]
        verdict = json.loads((judged / f"{case['name']}.verdict.json").read_text("utf-8"))
        pairs = [(m["finding"], m["label"]) for m in verdict.get("matches", [])]
        mine = dict(zip(ids, fs, strict=True))
        found = {lab for fid, lab in pairs if fid in mine}
        line = {lab for fid, lab in pairs if fid in mine and _overlap(mine[fid], labels[lab])}
        matching = {fid for fid, _ in pairs if fid in mine}
        plausible = [fid for fid in verdict.get("plausible", []) if fid in mine
                     and fid not in matching]
        dl = [i for i, lab in labels.items() if lab["category"] in DEFECT_CATEGORIES]
        hit_defect = {fid for fid, lab in pairs if fid in mine and lab in dl}
        dfind = [f for f in fs if f["category"] in ("bug", "security", "performance",
                                                     "Code Defect", "Security Vulnerability",
                                                     "Performance")]
        u = usage(run_dir, case["name"])
        row = {"case": case["name"], "url": case["url"], "language": case["language"],
               "run_dir": str(run_dir),
               "labels": len(labels), "found": len(found), "line": len(line),
               "defect_labels": len(dl), "defect_found": len(found & set(dl)),
               "findings": len(fs), "matching": len(matching), "plausible": len(plausible),
               "defect_findings": len(dfind),
               "defect_blocking": sum(f["severity"].lower() in ("high", "critical")
                                      for f in dfind),
               "matched_defect": len(hit_defect),
               "matched_defect_blocking": sum(mine[fid]["severity"].lower() in ("high", "critical")
                                              for fid in hit_defect), **u}
        rows.append(row)
        for k in tot:
            tot[k] += row[k]
    return {"name": name, "rows": rows, "total": tot}


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 0.0


def summary(t: dict[str, int]) -> dict[str, Any]:
    return {"recall": _ratio(t["found"], t["labels"]),
            "defect_recall": _ratio(t["defect_found"], t["defect_labels"]),
            "precision": _ratio(t["matching"], t["findings"]),
            "line_recall": _ratio(t["line"], t["labels"]),
            "requests": t["requests"], "input_tokens": t["input_tokens"],
            "findings": t["findings"], "plausible_unlabelled": t["plausible"],
            "defect_findings_blocking": f"{t['defect_blocking']}/{t['defect_findings']}",
            "defect_label_findings_blocking":
                f"{t['matched_defect_blocking']}/{t['matched_defect']}"}


def cmd_score(args: argparse.Namespace) -> int:
    key = json.loads(key_path(args.judged).read_text("utf-8"))
    runs, named = [], []
    for spec in args.run:
        name, _, d = spec.partition("=")
        dirs = [Path(x).resolve() for x in d.split(",")]
        runs.append(score_run(name, dirs, args.judged, args.dataset, key))
        named.append((name, dirs))
    if args.data:
        write_data(args.data, args.label, named, args.judged, key)
    cases = load_cases()
    doc = {"label": args.label,
           "prs": [{"url": c["url"], "language": c["language"], "labels": c["labels"]}
                   for c in cases],
           **{r["name"]: summary(r["total"]) for r in runs},
           "per_pr": {r["name"]: [{k: v for k, v in row.items() if k != "run_dir"}
                                  for row in r["rows"]] for r in runs}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "quality-trial.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = ["| run | recall | defect recall | precision | line recall | findings | requests |"
          " input tokens |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        s, t = summary(r["total"]), r["total"]
        md.append(f"| {r['name']} | {t['found']}/{t['labels']} ({s['recall']:.0%}) | "
                  f"{t['defect_found']}/{t['defect_labels']} ({s['defect_recall']:.0%}) | "
                  f"{t['matching']}/{t['findings']} ({s['precision']:.0%}) | "
                  f"{t['line']}/{t['labels']} | {t['findings']} | {t['requests']} | "
                  f"{t['input_tokens']:,} |")
    md += ["", "| PR | language | labels | " + " | ".join(
        f"{r['name']} found / line / findings / requests / tokens" for r in runs) + " |",
           "|---|---|---|" + "---|" * len(runs)]
    for i, c in enumerate(cases):
        cells = []
        for r in runs:
            x = r["rows"][i]
            cells.append(f"{x['found']} / {x['line']} / {x['findings']} / {x['requests']} / "
                         f"{x['input_tokens']:,}")
        md.append(f"| [{c['name']}]({c['url']}) | {c['language']} | {c['labels']} | "
                  + " | ".join(cells) + " |")
    md += ["", "Findings at or above the default blocking level (high):", ""]
    md += [f"- {r['name']}: {summary(r['total'])['defect_findings_blocking']} of its bug, security"
           f" and performance findings; {summary(r['total'])['defect_label_findings_blocking']}"
           " of its findings that match a Code Defect, Security or Performance label"
           for r in runs]
    md += friction(runs)
    preamble = args.preamble.read_text("utf-8").rstrip() + "\n\n" if args.preamble else ""
    text = preamble + "\n".join(md) + "\n"
    (RESULTS / "quality-trial.md").write_text(text, "utf-8")
    print(text)
    return 0


def write_data(path: Path, label: str, runs: list[tuple[str, list[Path]]], judged: Path,
               key: dict[str, Any]) -> None:
    """``{"judgement", "runs": {name: {case: {"findings", "requests", "input_tokens"}}},
    "verdicts": {case: verdict}}``, each finding with its judged id."""
    back = {(v["run"], v["case"], v["index"]): k for k, v in key.items()}
    out: dict[str, Any] = {"judgement": label, "runs": {}, "verdicts": {}}
    for name, dirs in runs:
        out["runs"][name] = {}
        for case in load_cases():
            d = next((x for x in dirs if (x / case["name"] / "done").exists()), dirs[0])
            fs = findings(d, case["name"])
            for i, f in enumerate(fs):
                f["id"] = back.get((str(d), case["name"], i), "")
            out["runs"][name][case["name"]] = {"findings": fs, **usage(d, case["name"])}
    for case in load_cases():
        out["verdicts"][case["name"]] = json.loads(
            (judged / f"{case['name']}.verdict.json").read_text("utf-8"))
    path.write_text(json.dumps(out, indent=1) + "\n", "utf-8")


def cmd_unpack(args: argparse.Namespace) -> int:
    data = json.loads(args.data.read_text("utf-8"))
    per_pr = json.loads(args.usage.read_text("utf-8"))["per_pr"][args.run] if args.usage else []
    for case, entry in data["runs"][args.run].items():
        d = args.out / case
        d.mkdir(parents=True, exist_ok=True)
        comments = [{"path": f["path"], "start_line": f["lines"][0], "end_line": f["lines"][1],
                     "side": f["side"], "severity": f["severity"], "category": f["category"],
                     "content": f["text"]} for f in entry["findings"]]
        (d / "review.json").write_text(json.dumps({"comments": comments}), "utf-8")
        (d / "done").write_text("exit 0\n")
        row = next((r for r in per_pr if r["case"] == case), entry)
        n, tokens = int(row.get("requests", 0)), int(row.get("input_tokens", 0))
        parts = [tokens // n + (1 if i < tokens % n else 0) for i in range(n)]
        (d / "log.jsonl").write_text("".join(json.dumps({"prompt_tokens": t}) + "\n"
                                             for t in parts), "utf-8")
    print(f"{args.run}: {len(data['runs'][args.run])} cases unpacked into {args.out}")
    return 0


def friction(runs: list[dict[str, Any]]) -> list[str]:
    """The answering models' notes (``<case>/unclear.md`` of each run), per run and PR."""
    out = ["", "## What the answering models found unclear", ""]
    for r in runs:
        out += [f"### {r['name']}", ""]
        for row in r["rows"]:
            note = Path(row["run_dir"]) / row["case"] / "unclear.md"
            if note.exists():
                out += [f"**{row['case']}**", "", note.read_text("utf-8").strip(), ""]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--work", type=Path, required=True)
    b.add_argument("--mirrors", type=Path, default=None)
    b.add_argument("--case")
    r = sub.add_parser("run")
    r.add_argument("--tool", choices=("ocr-hook", "ocr"), required=True)
    r.add_argument("--relay-dir", type=Path, required=True)
    r.add_argument("--port", type=int, default=8765)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--case")
    r.add_argument("--ocr-hook-tree", type=Path)
    r.add_argument("--ocr", default=os.environ.get("OCR_BIN", "ocr"))
    k = sub.add_parser("pack")
    k.add_argument("--runs", type=Path, nargs="+", required=True)
    k.add_argument("--out", type=Path, required=True)
    k.add_argument("--dataset", type=Path, default=DATASET_DEFAULT)
    k.add_argument("--case")
    s = sub.add_parser("score")
    s.add_argument("--judged", type=Path, required=True)
    s.add_argument("--run", action="append", required=True, help="NAME=RELAY_DIR[,RELAY_DIR...]")
    s.add_argument("--dataset", type=Path, default=DATASET_DEFAULT)
    s.add_argument("--label", default="")
    s.add_argument("--preamble", type=Path, help="Markdown put before the tables")
    s.add_argument("--data", type=Path, help="also write every finding and verdict here")
    u = sub.add_parser("unpack")
    u.add_argument("--data", type=Path, required=True)
    u.add_argument("--run", required=True)
    u.add_argument("--out", type=Path, required=True)
    u.add_argument("--usage", type=Path, help="a quality-trial JSON with the run's per_pr usage")
    args = p.parse_args(argv)
    return {"build": cmd_build, "run": cmd_run, "pack": cmd_pack, "score": cmd_score,
            "unpack": cmd_unpack}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
