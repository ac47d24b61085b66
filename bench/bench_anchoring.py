#!/usr/bin/env python3
"""Anchoring accuracy on real diffs (spec §15): sdists of several releases of popular packages
from PyPI are unpacked into a git history, one commit per release; for every run of 1–5 added
lines in every diff, the run is quoted with perturbed indentation (as a model would copy it)
and anchored with ``ocr_hook.comments.anchor.locate``.

Outcomes per quote:
- exact: anchored to exactly the run's lines;
- ambiguous: the same text is added elsewhere too; anchored to one of those places and flagged
  ``ambiguous`` (indistinguishable without a line hint);
- wrong: anchored to other lines without the ambiguity flag, or to lines whose text differs;
- unanchored: no match (would be reported as "location unknown").

Usage: python bench/bench_anchoring.py [--packages requests:2.28.0,2.31.0 ...] [--max-quotes N]
Corpus downloads are cached under ~/.cache/ocr-hook-bench (pip download, PyPI only).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocr_hook.comments import anchor  # noqa: E402
from ocr_hook.diff.model import FileDiff  # noqa: E402
from ocr_hook.git import target  # noqa: E402

DEFAULT = {
    "requests": ["2.28.0", "2.29.0", "2.31.0", "2.32.3"],
    "click": ["8.1.3", "8.1.7"],
    "attrs": ["22.2.0", "23.1.0"],
    "flask": ["2.2.5", "3.0.0"],
    "jinja2": ["3.1.2", "3.1.4"],
}
SOURCE_EXT = {".py", ".pyi", ".js", ".ts", ".c", ".h", ".toml", ".cfg", ".yaml", ".yml", ".html", ".rst"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ocr-hook-bench"


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    p = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"git {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def fetch(pkg: str, version: str) -> Path:
    dest = CACHE / "sdists" / f"{pkg}-{version}"
    if dest.exists() and any(dest.iterdir()):
        return next(dest.iterdir())
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                    ":all:", "-d", str(dest), f"{pkg}=={version}"], check=True,
                   capture_output=True)
    return next(dest.iterdir())


def unpack(archive: Path, into: Path) -> None:
    for child in into.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    tmp = into.parent / (into.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
    else:
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data") if sys.version_info >= (3, 12) else t.extractall(tmp)  # noqa: S202
    [top] = list(tmp.iterdir())
    for child in top.iterdir():
        if child.suffix in SOURCE_EXT or child.is_dir():
            shutil.move(str(child), str(into / child.name))
    shutil.rmtree(tmp)
    for p in list(into.rglob("*")):
        if ".git" in p.relative_to(into).parts:
            continue
        if p.is_file() and p.suffix not in SOURCE_EXT:
            p.unlink()


def build_repo(pkg: str, versions: list[str], work: Path) -> tuple[Path, list[str]]:
    repo = work / pkg
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    commits = []
    for v in versions:
        unpack(fetch(pkg, v), repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", v)
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    return repo, commits


def perturb(line: str, rng: random.Random) -> str:
    body = line.strip()
    choice = rng.randrange(4)
    if choice == 0:
        return body
    if choice == 1:
        return "    " * rng.randrange(1, 4) + body
    if choice == 2:
        return "\t" + body + "  "
    return "+" + line  # the model copied the diff marker


def added_runs(fd: FileDiff, max_len: int) -> list[list[tuple[int, str]]]:
    runs: list[list[tuple[int, str]]] = []
    for h in fd.hunks:
        cur: list[tuple[int, str]] = []
        for ln in list(h.lines) + [None]:  # type: ignore[list-item]
            if ln is not None and ln.kind == "+" and ln.text.strip():
                cur.append((ln.new_line, ln.text))
                continue
            for size in range(1, max_len + 1):
                for i in range(0, len(cur) - size + 1):
                    runs.append(cur[i : i + size])
            cur = []
            if ln is not None and ln.kind == "+" and not ln.text.strip():
                continue
    return runs


def fragment_of(line: str, rng: random.Random) -> str | None:
    """A model-like partial quote of one line: a run of 3+ of its tokens, re-spaced."""
    tokens = re.findall(r"\w+|\S", line)
    if len(tokens) < 4:
        return None
    size = rng.randrange(3, len(tokens))
    start = rng.randrange(0, len(tokens) - size + 1)
    return " ".join(tokens[start : start + size])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-quotes", type=int, default=20000, help="per package")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"ocr-anchor-bench-{os.getpid()}"
    work.mkdir(parents=True)
    rows = []
    totals = {"quotes": 0, "exact": 0, "ambiguous": 0, "hint_fixes": 0, "wrong": 0,
              "unanchored": 0}
    ftotals = {"quotes": 0, "exact": 0, "ambiguous": 0, "wrong": 0, "unanchored": 0}
    t0 = time.monotonic()
    try:
        for pkg, versions in DEFAULT.items():
            repo, commits = build_repo(pkg, versions, work)
            c = {k: 0 for k in totals}
            for base, head in zip(commits, commits[1:], strict=False):
                t = target.Target("range", base, head, base, head)
                for fd in target.load_diff(repo, t):
                    if fd.binary or not fd.hunks or fd.status == "deleted":
                        continue
                    blob = subprocess.run(["git", "cat-file", "blob", f"{head}:{fd.new_path}"],
                                          cwd=repo, capture_output=True).stdout
                    new_file = blob.decode("utf-8", "replace").split("\n")
                    norm_added = [anchor.norm_line(ln.text) for h in fd.hunks for ln in h.lines
                                  if ln.kind == "+"]
                    for run in added_runs(fd, 1):
                        frag = fragment_of(run[0][1], rng)
                        if frag is None or ftotals["quotes"] >= args.max_quotes * 4:
                            continue
                        fa = anchor.fragment_anchor(fd, frag, None)
                        ftotals["quotes"] += 1
                        if fa is None:
                            ftotals["unanchored"] += 1
                            if os.environ.get("BENCH_DEBUG"):
                                print("UNANCHORED-FRAGMENT", repr(frag), repr(run[0][1])[:120])
                        elif (fa.side, fa.start_line) == ("new", run[0][0]):
                            ftotals["exact"] += 1
                        elif fa.ambiguous:
                            ftotals["ambiguous"] += 1
                        else:
                            ftotals["wrong"] += 1
                            if os.environ.get("BENCH_DEBUG"):
                                print("WRONG-FRAGMENT", pkg, fd.path, run[0], fa, repr(frag))
                    for run in added_runs(fd, 5):
                        if c["quotes"] >= args.max_quotes:
                            break
                        quote = "\n".join(perturb(text, rng) for _, text in run)
                        a = anchor.locate(fd, quote, new_file)
                        c["quotes"] += 1
                        want = (run[0][0], run[-1][0])
                        if a is None:
                            c["unanchored"] += 1
                            if os.environ.get("BENCH_DEBUG"):
                                print("UNANCHORED", pkg, fd.path, want, repr(quote)[:300])
                        elif (a.side, a.start_line, a.end_line) == ("new", *want):
                            c["exact"] += 1
                        elif a.ambiguous and a.side == "new" and [
                            anchor.norm_line(x) for x in new_file[a.start_line - 1 : a.end_line]
                            if anchor.norm_line(x)
                        ] == [anchor.norm_line(t) for _, t in run]:
                            c["ambiguous"] += 1
                            h = anchor.locate(fd, quote, new_file, want[0])
                            if h is not None and (h.start_line, h.end_line) == want:
                                c["hint_fixes"] += 1
                        else:
                            c["wrong"] += 1
                            if os.environ.get("BENCH_DEBUG"):
                                print("WRONG", pkg, fd.path, want, a, repr(quote)[:200])
                    del norm_added
            rows.append((pkg, len(versions), c))
            for k in totals:
                totals[k] += c[k]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'package':<10} {'releases':>8} {'quotes':>8} {'exact':>8} {'ambiguous':>9} "
          f"{'+hint→exact':>11} {'wrong':>6} {'unanchored':>10}")
    for pkg, n, c in rows + [("TOTAL", sum(r[1] for r in rows), totals)]:
        print(f"{pkg:<10} {n:>8} {c['quotes']:>8} {c['exact']:>8} {c['ambiguous']:>9} "
              f"{c['hint_fixes']:>11} {c['wrong']:>6} {c['unanchored']:>10}")
    f = ftotals
    print(f"\npart-of-a-line quotes (3+ tokens of one added line, re-spaced): {f['quotes']} quoted, "
          f"{f['exact']} exact, {f['ambiguous']} ambiguous, {f['wrong']} wrong, "
          f"{f['unanchored']} unanchored")
    totals["wrong"] += f["wrong"]
    q = max(1, totals["quotes"])
    print(f"\nexact rate {100 * totals['exact'] / q:.2f}% (with a line hint "
          f"{100 * (totals['exact'] + totals['hint_fixes']) / q:.2f}%)  wrong {totals['wrong']}  "
          f"({time.monotonic() - t0:.1f}s)")
    return 1 if totals["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
