"""Cost of the security stages (SPEC §14, issue 10), in-process, medians of several runs:

- ``scan``: ``secret_scan.secret_findings`` over every hunk of a change (it runs on every review,
  excluded files included, also without an endpoint);
- ``redact``: ``Redactor`` on the same text the first time (later sends of a text are memoised);
- inputs: a small source diff, this repository's ``review.py`` as one added file, and an npm
  lock file of 3,000 packages (the largest text a commit commonly carries).

Usage: ``python bench/bench_secrets.py [--runs N]``. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchlib import load_line, table
from ocr_hook import secret_scan
from ocr_hook.agent.redaction import Redactor
from ocr_hook.diff import FileDiff, Hunk, Line


def added_file(path: str, text: str) -> FileDiff:
    lines = tuple(Line("+", t, None, i) for i, t in enumerate(text.split("\n"), 1))
    h = Hunk(0, 0, 1, len(lines), f"@@ -0,0 +1,{len(lines)} @@", lines)
    return FileDiff("added", path, path, hunks=(h,), insertions=len(lines),
                    patch="\n".join("+" + ln.text for ln in lines))


def lock_file(packages: int) -> str:
    entries = {}
    for i in range(packages):
        digest = base64.b64encode(hashlib.sha512(str(i).encode()).digest()).decode()
        entries[f"node_modules/pkg{i}"] = {
            "version": f"1.{i}.0",
            "resolved": f"https://registry.npmjs.org/pkg{i}/-/pkg{i}-1.{i}.0.tgz",
            "integrity": "sha512-" + digest,
        }
    return json.dumps({"packages": entries}, indent=2)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    review_py = (ROOT / "ocr_hook" / "review.py").read_text(encoding="utf-8")
    inputs = [
        ("small diff (40 lines)", added_file("app.py", "\n".join(review_py.split("\n")[:40]))),
        ("review.py (1 file)", added_file("ocr_hook/review.py", review_py)),
        ("package-lock.json (3,000 pkgs)", added_file("package-lock.json", lock_file(3000))),
    ]
    secret_scan.secret_findings([inputs[0][1]])  # compile the rules outside the timings
    rows = []
    for name, fd in inputs:
        kib = len(fd.patch.encode()) / 1024
        scan = median_ms(lambda fd=fd: secret_scan.secret_findings([fd]), args.runs)
        redact = median_ms(lambda fd=fd: Redactor()(fd.patch), args.runs)
        rows.append((name, f"{kib:.0f}", f"{scan:.1f}", f"{redact:.1f}",
                     f"{scan / max(kib, 1e-9):.2f}"))
    print(table(["input", "KiB", "scan ms", "redact ms", "scan ms/KiB"], rows))
    print(load_line())


if __name__ == "__main__":
    main()
