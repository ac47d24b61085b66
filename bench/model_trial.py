#!/usr/bin/env python3
"""Model-in-the-loop trial: review real bug-fix commits whose fix is reverted in the index,
with a model that answers through ``bench/relay_model.py``.

Cases live in ``bench/trial_cases.json``. Each case repo is built from registry archives
(nothing is cloned; nothing downloaded is committed to this repository):

- ``pypi`` / ``npm``: HEAD is the buggy release with the listed files taken from the fixed
  release (so its changelog and tests do not describe the fix, as before a real regression);
  the buggy versions of those files are then staged (``git add``), so ``git diff --cached``
  brings the defect back;
- ``debian``: ``apt-get source --download-only`` (a private apt configuration with ``deb-src``
  lines under bench/results/tmp/apt, the system's is left alone), ``dpkg-source -x`` applies
  every Debian patch; ``debian/`` and ``.pc/`` are dropped, the tree is committed, and the named
  patch is reverse-applied to index and work tree (``git apply -R --index``).

Downloads are cached under bench/results/tmp/ (gitignored). ``build`` checks that each of a case's
defect ranges overlaps a staged hunk's new side.

``run`` starts the relay in this process on 127.0.0.1:PORT and, per case, points it at
``RELAY_DIR/<case>/`` and runs ``git ocr review --format json --effort low --no-cache`` in the
case repo (concurrency 1, 3600 s per request and 7200 s for the run) against
``http://127.0.0.1:PORT/v1`` (model ``trial-model``, protocol openai). When a review ends it
writes ``RELAY_DIR/<case>/done``; after the last one ``RELAY_DIR/done``. Whoever answers runs
``relay_model.py wait --dir RELAY_DIR`` / ``answer`` and sees only the rendered requests.
An answering agent may leave ``RELAY_DIR/<case>/unclear.md`` (what it found unclear); the
table quotes it.

Results: ``bench/results/model-trial-<label>.json`` and ``.md``: per case the known defect,
found or not (a finding on the defect's file overlapping its new-side lines), the other
findings (false alarms for a human to judge), requests, input tokens (ocr-hook's JSON summary
and the relay's own count), output tokens, verdict and exit code.

Usage:
  python bench/model_trial.py build [--case NAME] [--work DIR]
  python bench/model_trial.py run --relay-dir D --port P [--case NAME] [--label before|after]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import relay_model  # noqa: E402
from benchlib import OCR_CMD, clean_env, git, run_child, table  # noqa: E402

CASES_FILE = HERE / "trial_cases.json"
TMP = HERE / "results" / "tmp"
DL = TMP / "trial-dl"
APT = TMP / "apt"
RESULTS = HERE / "results"
DEBIAN_SOURCES = (
    "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian bookworm main\n"
    "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian-security bookworm-security main\n"
)


@dataclass(frozen=True)
class Case:
    """One trial case: ``source`` as in trial_cases.json, ``lines`` = new-side ranges."""

    name: str
    language: str
    source: dict[str, Any]
    reference: str
    file: str
    lines: tuple[tuple[int, int], ...]
    description: str


def load_cases(only: str | None = None) -> list[Case]:
    data = json.loads(CASES_FILE.read_text("utf-8"))
    cases = [Case(c["name"], c["language"], c["source"], c["reference"], c["defect"]["file"],
                  tuple((int(a), int(b)) for a, b in c["defect"]["lines"]),
                  c["defect"]["description"]) for c in data["cases"]]
    if only:
        cases = [c for c in cases if c.name == only]
        if not cases:
            raise SystemExit(f"no case {only!r} in {CASES_FILE.name}")
    return cases


# --- downloads ----------------------------------------------------------------------------

def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])}… failed: {(p.stderr or p.stdout).strip()[-400:]}")


def fetch_release(registry: str, package: str, version: str) -> Path:
    """A PyPI sdist or npm tarball (cached in bench/results/tmp/trial-dl/)."""
    dest = DL / registry / f"{package}-{version}"
    found = sorted(dest.glob("*")) if dest.exists() else []
    if not found:
        dest.mkdir(parents=True, exist_ok=True)
        if registry == "pypi":
            _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                  ":all:", "-d", str(dest), f"{package}=={version}"], dest)
        else:
            _run(["npm", "pack", "--silent", f"{package}@{version}"], dest)
        found = sorted(dest.glob("*"))
    return found[0]


def apt_env() -> dict[str, str]:
    """Environment for apt-get with a private configuration (deb-src of bookworm and
    bookworm-security, lists and cache under bench/results/tmp/apt)."""
    conf = APT / "apt.conf"
    if not conf.exists():
        (APT / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (APT / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (APT / "sources.list").write_text(DEBIAN_SOURCES)
        conf.write_text(f'Dir::Etc::SourceList "{APT / "sources.list"}";\n'
                        'Dir::Etc::SourceParts "/nonexistent";\n'
                        f'Dir::State::Lists "{APT / "lists"}";\nDir::Cache "{APT / "cache"}";\n')
    return {**os.environ, "APT_CONFIG": str(conf)}


def fetch_debian(package: str) -> Path:
    """The source package's .dsc (downloaded with its tarballs, cached)."""
    dest = DL / "debian" / package
    dsc = sorted(dest.glob("*.dsc")) if dest.exists() else []
    if not dsc:
        dest.mkdir(parents=True, exist_ok=True)
        env = apt_env()
        if not any((APT / "lists").glob("*Sources*")):
            _run(["apt-get", "update", "-q"], dest, env)
        _run(["apt-get", "source", "-q", "--download-only", package], dest, env)
        dsc = sorted(dest.glob("*.dsc"))
    return dsc[-1]


# --- case repos ---------------------------------------------------------------------------

def _unpack(archive: Path, into: Path) -> Path:
    """Extract ``archive`` into ``into``; return its single top folder (or ``into``)."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as t:
        if sys.version_info >= (3, 12):
            t.extractall(into, filter="data")
        else:
            t.extractall(into)
    tops = list(into.iterdir())
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else into


def _move_tree(src: Path, repo: Path, skip: tuple[str, ...] = ()) -> None:
    for child in src.iterdir():
        if child.name not in skip:
            shutil.move(str(child), str(repo / child.name))


def build_case(case: Case, work: Path, env: dict[str, str]) -> Path:
    """The case repo ``work/<name>``: fixed code committed, the fix reverted in the index."""
    repo = work / case.name
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, env, "init", "-q", "-b", "main")
    src = case.source
    with tempfile.TemporaryDirectory(dir=work) as tmp_s:
        tmp = Path(tmp_s)
        if src["registry"] in ("pypi", "npm"):
            fixed = _unpack(fetch_release(src["registry"], src["package"], src["fixed"]),
                            tmp / "fixed")
            buggy = _unpack(fetch_release(src["registry"], src["package"], src["buggy"]),
                            tmp / "buggy")
            # HEAD: the buggy release with only the fixed files taken from the fixed release
            # (its changelog and tests do not describe the fix, as before a real regression)
            for rel in src["files"]:
                shutil.copyfile(buggy / rel, tmp / "orig")
                shutil.copyfile(fixed / rel, buggy / rel)
                shutil.copyfile(tmp / "orig", fixed / rel)
            _move_tree(buggy, repo)
            git(repo, env, "add", "-A")
            git(repo, env, "commit", "-q", "-m",
                f"{src['package']} {src['buggy']} + {', '.join(src['files'])} of {src['fixed']}")
            for rel in src["files"]:
                shutil.copyfile(fixed / rel, repo / rel)
            git(repo, env, "add", "--", *src["files"])
        elif src["registry"] == "debian":
            dsc = fetch_debian(src["package"])
            out = tmp / "src"
            _run(["dpkg-source", "--no-check", "-x", str(dsc), str(out)], tmp)
            patch = tmp / src["patch"]
            shutil.copyfile(out / "debian" / "patches" / src["patch"], patch)
            _move_tree(out, repo, skip=("debian", ".pc"))
            git(repo, env, "add", "-A")
            git(repo, env, "commit", "-q", "-m", f"{src['package']} {dsc.stem.split('_')[1]}")
            git(repo, env, "apply", "-R", "--index", str(patch))
        else:
            raise SystemExit(f"{case.name}: unknown registry {src['registry']!r}")
    return repo


_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


def staged_hunks(repo: Path, env: dict[str, str], path: str) -> list[tuple[int, int]]:
    """New-side line ranges of the staged hunks of ``path`` (3 lines of context)."""
    patch = git(repo, env, "diff", "--cached", "--no-color", "-U3", "--", path)
    out = []
    for m in _HUNK_RE.finditer(patch):
        start, count = int(m.group(1)), int(m.group(2) or "1")
        out.append((start, start + max(count, 1) - 1))
    return out


def check_case(case: Case, repo: Path, env: dict[str, str]) -> dict[str, Any]:
    """Staged diff size and whether every defect range overlaps a staged hunk."""
    stat = git(repo, env, "diff", "--cached", "--numstat").split()
    hunks = staged_hunks(repo, env, case.file)
    inside = bool(case.lines) and all(any(a <= h1 and h0 <= b for h0, h1 in hunks)
                                      for a, b in case.lines)
    return {"files": len(stat) // 3, "added": sum(int(x) for x in stat[0::3]),
            "deleted": sum(int(x) for x in stat[1::3]), "hunks": hunks,
            "defect_in_hunks": inside}


# --- the review ---------------------------------------------------------------------------

def review_env(home: Path, port: int) -> dict[str, str]:
    return clean_env(
        home,
        OCR_LLM_URL=f"http://127.0.0.1:{port}/v1",
        OCR_LLM_MODEL="trial-model",
        OCR_LLM_PROTOCOL="openai",
        OCR_HOOK_LLM_TIMEOUT_S="3600",
        OCR_HOOK_LLM_MAX_RETRIES="0",
        OCR_HOOK_REVIEW_TIMEOUT_S="7200",
        OCR_HOOK_REVIEW_CONCURRENCY="1",
    )


_HUNK_OLD_NEW = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def deleted_line_positions(repo: Path, env: dict[str, str], path: str) -> dict[int, int]:
    """Old-file line -> the new-side line where it was deleted, for every deleted line of the
    staged diff of ``path`` (``git diff --cached -U0``; a pure deletion after new line c sits
    at c + 1, the first line after the cut). Lets a finding anchored on deleted lines
    (``side: old``) be scored against the defect's new-side range."""
    patch = git(repo, env, "diff", "--cached", "--no-color", "-U0", "--", path)
    where: dict[int, int] = {}
    for m in _HUNK_OLD_NEW.finditer(patch):
        old, old_n = int(m.group(1)), int(m.group(2) or "1")
        new, new_n = int(m.group(3)), int(m.group(4) or "1")
        at = new if new_n else new + 1
        for i in range(old_n):
            where[old + i] = at
    return where


def overlaps(comment: dict[str, Any], case: Case, deleted_at: dict[int, int]) -> bool:
    """Whether ``comment`` lies on the defect: new-side lines overlapping a defect range, or
    deleted lines (``side: old``) whose place in the new file is inside one."""
    if comment.get("path") != case.file:
        return False
    a, b = int(comment.get("start_line") or 0), int(comment.get("end_line") or 0)
    if a <= 0:
        return False
    if comment.get("side", "new") == "old":
        spots = [deleted_at[n] for n in range(a, max(a, b) + 1) if n in deleted_at]
        if not spots:
            return False
        a, b = min(spots), max(spots)
    return any(a <= hi and lo <= max(a, b) for lo, hi in case.lines)


def collect(case: Case, rc: int, review: dict[str, Any], relay_dir: Path,
            stderr: str, deleted_at: dict[int, int]) -> dict[str, Any]:
    """One case's row of the results."""
    comments = review.get("comments") or []
    hits = [c for c in comments if overlaps(c, case, deleted_at)]
    log = relay_model.read_log(relay_dir)
    summary = review.get("summary") or {}
    unclear = relay_dir / "unclear.md"
    return {
        "case": case.name, "language": case.language, "reference": case.reference,
        "defect": {"file": case.file, "lines": case.lines, "description": case.description},
        "exit_code": rc, "status": review.get("status"), "verdict": review.get("verdict"),
        "found": bool(hits),
        "hits": [_brief(c) for c in hits],
        "false_alarms": [_brief(c) for c in comments if c not in hits],
        "requests": summary.get("llm_calls"),
        "input_tokens": summary.get("input_tokens"),
        "output_tokens": summary.get("output_tokens"),
        "relay_requests": len(log),
        "relay_prompt_tokens": sum(e["prompt_tokens"] for e in log),
        "elapsed_ms": summary.get("elapsed_ms"),
        "warnings": review.get("warnings") or [],
        "unclear": unclear.read_text("utf-8").strip() if unclear.exists() else "",
        "stderr_tail": stderr.strip().splitlines()[-5:] if not review else [],
    }


def _brief(c: dict[str, Any]) -> dict[str, Any]:
    return {"path": c.get("path"), "lines": [c.get("start_line"), c.get("end_line")],
            "severity": c.get("severity"), "category": c.get("category"),
            "message": c.get("content")}


def markdown(rows: list[dict[str, Any]], label: str, command: str) -> str:
    out = [f"# Model trial ({label})", "", f"Command: `{command}`", "",
           "| case | lang | known defect | found | false alarms | requests | input tokens "
           "(ocr / relay) | verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d = r["defect"]
        lines = ", ".join(f"{a}-{b}" for a, b in d["lines"])
        out.append(
            f"| {r['case']} | {r['language']} | `{d['file']}:{lines}` {d['description']} | "
            f"{'yes' if r['found'] else 'no'} | {len(r['false_alarms'])} | "
            f"{r['requests']} | {r['input_tokens']} / {r['relay_prompt_tokens']} | "
            f"{r['verdict']} (exit {r['exit_code']}) |")
    out += ["", "## Findings per case", ""]
    for r in rows:
        out.append(f"### {r['case']} ({r['reference']})")
        out.append("")
        for tag, items in (("hit", r["hits"]), ("other", r["false_alarms"])):
            for c in items:
                msg = " ".join(str(c["message"] or "").split())
                out.append(f"- {tag}: `{c['path']}:{c['lines'][0]}-{c['lines'][1]}` "
                           f"{c['severity']}/{c['category']}: {msg}")
        if not r["hits"] and not r["false_alarms"]:
            out.append("- no findings")
        out.append(f"- unclear (answering model's notes): {r['unclear'] or '—'}")
        out.append("")
    return "\n".join(out)


def cmd_run(args: argparse.Namespace) -> int:
    cases = load_cases(args.case)
    relay_dir: Path = args.relay_dir.resolve()
    relay_dir.mkdir(parents=True, exist_ok=True)
    (relay_dir / "done").unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix="model-trial-", dir=args.work))
    env = review_env(work / "home", args.port)
    try:
        server, relay = relay_model.start(relay_dir / "_idle", args.port, "trial-model")
    except OSError as e:
        raise SystemExit(f"cannot start the relay on 127.0.0.1:{args.port}: {e}") from None
    rows = []
    try:
        for case in cases:
            repo = build_case(case, work, env)
            case_dir = relay_dir / case.name
            if case_dir.exists():
                shutil.rmtree(case_dir)
            relay.set_directory(case_dir)
            print(f"{case.name}: reviewing; answer with `python bench/relay_model.py wait "
                  f"--dir {relay_dir}`", file=sys.stderr, flush=True)
            cmd = [*OCR_CMD, "review", "--format", "json", "--effort", "low", "--no-cache"]
            child = run_child(cmd, repo, env, timeout_s=8000)
            (case_dir / "done").write_text(f"exit {child.rc}\n")
            (case_dir / "review.json").write_text(child.stdout)
            (case_dir / "review.stderr").write_text(child.stderr)
            deleted_at = deleted_line_positions(repo, env, case.file)
            rows.append(collect(case, child.rc, child.json(), case_dir, child.stderr,
                                deleted_at))
            print(f"{case.name}: exit {child.rc}, found {rows[-1]['found']}",
                  file=sys.stderr, flush=True)
    finally:
        (relay_dir / "done").write_text("finished\n")
        relay.stopping.set()
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)
        if (relay_dir / "_idle").is_dir() and not any((relay_dir / "_idle").iterdir()):
            (relay_dir / "_idle").rmdir()
    command = "python bench/model_trial.py " + " ".join(sys.argv[1:])
    suffix = args.label + (f"-{args.case}" if args.case else "")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"model-trial-{suffix}.json").write_text(
        json.dumps({"label": args.label, "command": command, "cases": rows}, indent=2) + "\n")
    md = markdown(rows, suffix, command)
    (RESULTS / f"model-trial-{suffix}.md").write_text(md + "\n")
    print(md)
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    """Score a finished run again from its relay folder (``<case>/review.json``, the answering
    model's ``unclear.md`` written after its last answer) on freshly built case repos."""
    relay_dir: Path = args.relay_dir.resolve()
    work = Path(tempfile.mkdtemp(prefix="model-trial-rescore-", dir=args.work))
    env = clean_env(work / "home")
    rows = []
    try:
        for case in load_cases(args.case):
            case_dir = relay_dir / case.name
            if not (case_dir / "review.json").exists():
                continue
            repo = build_case(case, work, env)
            done = (case_dir / "done").read_text().split()
            rc = int(done[1]) if len(done) == 2 and done[1].lstrip("-").isdigit() else -1
            review = json.loads((case_dir / "review.json").read_text() or "{}")
            stderr = (case_dir / "review.stderr").read_text()
            rows.append(collect(case, rc, review, case_dir, stderr,
                                deleted_line_positions(repo, env, case.file)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "python bench/model_trial.py " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"model-trial-{args.label}.json").write_text(
        json.dumps({"label": args.label, "command": command, "cases": rows}, indent=2) + "\n")
    md = markdown(rows, args.label, command)
    (RESULTS / f"model-trial-{args.label}.md").write_text(md + "\n")
    print(md)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    work = Path(args.work or tempfile.mkdtemp(prefix="model-trial-build-"))
    env = clean_env(work / "home")
    rows, ok = [], True
    for case in load_cases(args.case):
        repo = build_case(case, work, env)
        info = check_case(case, repo, env)
        ok &= info["defect_in_hunks"]
        rows.append([case.name, case.language, str(info["files"]),
                     f"+{info['added']} -{info['deleted']}",
                     " ".join(f"{a}-{b}" for a, b in info["hunks"]),
                     " ".join(f"{a}-{b}" for a, b in case.lines),
                     "yes" if info["defect_in_hunks"] else "NO", str(repo)])
    print(table(["case", "language", "files", "lines", "hunks (new side)",
                 "defect", "in hunk", "repo"], rows))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="model-in-the-loop trial on real bug fixes")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the case repos and check the defect ranges")
    b.add_argument("--case")
    b.add_argument("--work", type=Path, help="folder for the repos (default: a temp folder)")
    r = sub.add_parser("run", help="review each case through the relay")
    r.add_argument("--relay-dir", required=True, type=Path)
    r.add_argument("--port", type=int, default=8765)
    r.add_argument("--case")
    r.add_argument("--label", default="before")
    r.add_argument("--work", type=Path, help="parent of the temp work folder")
    rs = sub.add_parser("rescore", help="score a finished run again from its relay folder")
    rs.add_argument("--relay-dir", required=True, type=Path)
    rs.add_argument("--case")
    rs.add_argument("--label", required=True)
    rs.add_argument("--work", type=Path, help="parent of the temp work folder")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        return cmd_build(args)
    if args.cmd == "rescore":
        return cmd_rescore(args)
    t0 = time.monotonic()
    rc = cmd_run(args)
    print(f"total {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
