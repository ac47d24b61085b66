"""Secret detection (spec §14), in-process, medians of several runs:

1. detection on a fake corpus: ``--corpus cases`` (the default) is
   ``tests/support/secret_corpus.py`` (49 cases), ``--corpus shapes`` is
   ``tests/secrets/shape_corpus.py`` (secrets by shape family: URL passwords with reserved
   characters, SDK arguments, joined literals, CLI password flags, ...); ``found`` = a finding on
   the case's line (an allow-marked case must give none), ``redacted`` = no value of the case left
   in the redacted text; the cases missed are listed by name;
2. false positives on clean text: findings in this repository's ``ocr_hook/*.py`` and in an npm
   lock file of 3,000 packages (sha512 integrity hashes: high entropy, no secret), and with
   ``--corpus shapes`` the corpus's non-secrets (hashes, UUIDs, placeholders, code);
3. cost: ``scan`` = ``secrets.diff_scan.secret_findings`` over every hunk of a change (it runs
   on every review, excluded files included, also without an endpoint), ``redact`` =
   ``Redactor`` on the same text the first time (later sends of a text are memoised), per KiB of
   diff text; and the import cost in a fresh interpreter (module import plus compiling every
   rule, an upper bound: a scan compiles only the rules its texts can match,
   ``secrets.patterns``).

The same numbers are printed for Yelp's detect-secrets 1.x when it is installed (``pip install
'ocr-hook[detect-secrets]'``; an optional extra, see README "Secrets"): its own way of
scanning, ``SecretsCollection.scan_file`` with the default plugins and filters, on the same
texts written to temporary files; ``(no entropy)`` ignores its two high-entropy plugins, and
``(all, as .txt)`` scans each case under a ``.txt`` name, where its code heuristics (a line that
assigns a call's result is an "indirect reference") do not drop hits.
It reports lines, not spans, so it has no ``redacted`` column: a caller could only blank lines.
``ours + detect-secrets`` is ocr-hook with ``security.detect_secrets`` on: our scan, then
detect-secrets over the same added lines, its values that ours left in place made findings and
replaced by the Redactor (``secrets.detect_secrets_pass``).

``--baseline REV`` adds ocr-hook's scanner of git revision REV (``git archive`` into a temporary
folder, measured in a child process): the "before" of a change to the rules.

Usage: ``python bench/bench_secrets.py [--runs N] [--baseline REV] [--corpus cases|shapes]``.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]


def _import_path() -> None:
    """``--code DIR`` (the baseline child): import ocr_hook from DIR instead of this tree."""
    if "--code" in sys.argv:
        sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])
    sys.path.insert(1 if "--code" in sys.argv else 0, str(ROOT))


_import_path()

from bench.benchlib import load_line, table  # noqa: E402
from ocr_hook.agent.redactor import Redactor  # noqa: E402
from ocr_hook.diff.model import FileDiff, Hunk, Line  # noqa: E402
from ocr_hook.findings import Finding  # noqa: E402
from ocr_hook.secrets import diff_scan  # noqa: E402
from tests.secrets import shape_corpus  # noqa: E402
from tests.support import secret_corpus  # noqa: E402


class BenchCase(NamedTuple):
    """One fake secret of the corpus measured (``--corpus``): 1-based lines of its value."""

    name: str
    file: str
    text: str
    line: int
    last_line: int
    leaks: tuple[str, ...]
    finding: bool


CASES: list[BenchCase] = []  # the corpus chosen by --corpus (set_corpus)
CLEAN_EXTRA: dict[str, str] = {}  # the corpus's own non-secrets, path -> text


def set_corpus(name: str) -> None:
    """Fill CASES and CLEAN_EXTRA with corpus ``name`` ("cases" or "shapes")."""
    CASES.clear()
    CLEAN_EXTRA.clear()
    if name == "cases":
        CASES.extend(BenchCase(c.name, c.file, c.text, c.line, c.last_line, c.leaks, c.finding)
                     for c in secret_corpus.CASES)
        return
    for s in shape_corpus.SHAPES:
        rows = s.text.split("\n")
        last = max(i for i, row in enumerate(rows, 1) if s.leaks[-1] in row)
        CASES.append(BenchCase(s.name, s.path, s.text, s.line, last, s.leaks, True))
    for c in shape_corpus.CLEAN:
        CLEAN_EXTRA[f"clean/{c.name}/{c.path}"] = c.text


def corpus_files() -> dict[str, str]:
    """path -> text of the chosen corpus, the snippets of each file joined."""
    files: dict[str, str] = {}
    for case in CASES:
        files[case.file] = files.get(case.file, "") + case.text
    return files


def added_file(path: str, text: str) -> FileDiff:
    """``text`` as the diff of a newly added file (one hunk of ``+`` lines)."""
    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    lines = tuple(Line("+", t, None, i) for i, t in enumerate(rows, 1))
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
    return json.dumps({"packages": entries}, indent=2) + "\n"


def clean_inputs() -> dict[str, str]:
    """path → text of inputs that hold no secret."""
    src = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
           for p in sorted((ROOT / "ocr_hook").rglob("*.py"))}
    return {**src, "package-lock.json": lock_file(3000), **CLEAN_EXTRA}


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def import_ms(code: str, runs: int, path: Sequence[str]) -> float:
    """Median wall time of a fresh interpreter running ``code`` minus an empty one's."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}

    def run(src: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", src], check=True, env=env)
        return time.perf_counter() - t0

    empty = statistics.median(run("pass") for _ in range(runs))
    return (statistics.median(run(code) for _ in range(runs)) - empty) * 1000


# --- ocr-hook -----------------------------------------------------------------------------


Scan = Callable[[list[FileDiff]], tuple[list[Finding], dict[str, str]]]


def ours_scan(fds: list[FileDiff]) -> tuple[list[Finding], dict[str, str]]:
    """ocr-hook's own scan: (findings, no literals)."""
    return diff_scan.secret_findings(fds), {}


def combined_scan(fds: list[FileDiff]) -> tuple[list[Finding], dict[str, str]]:
    """ocr-hook with ``security.detect_secrets`` on, as ``change.scan`` runs it: (our findings
    and detect-secrets' on the values ours left, the literals the run's Redactor replaces)."""
    from ocr_hook.secrets import detect_secrets_pass

    rows = detect_secrets_pass.added_rows(fds)
    found, literals = detect_secrets_pass.library_findings(detect_secrets_pass.detect_secrets_hits(rows), rows, ())
    return [*diff_scan.secret_findings(fds, (), None, literals), *found], literals


def ours_detection(scan: Scan = ours_scan) -> tuple[int, int, list[str]]:
    """(found, redacted, names of missed cases) for ocr-hook's scanner (``scan``)."""
    found = redacted = 0
    missed = []
    for case in CASES:
        fd = added_file(case.file, case.text)
        findings, literals = scan([fd])
        lines = {(f.start_line, f.end_line) for f in findings}
        if case.finding:
            ok_found = any(a <= case.line <= b for a, b in lines)
        else:
            ok_found = not lines
        sent = Redactor(literals)(fd.patch)
        ok_redacted = not [leak for leak in case.leaks if leak in sent]
        found += ok_found
        redacted += ok_redacted
        if not (ok_found and ok_redacted):
            missed.append(case.name + ("" if ok_found else " (finding)")
                          + ("" if ok_redacted else " (leak)"))
    return found, redacted, missed


def ours_false_positives(texts: dict[str, str], scan: Scan = ours_scan) -> int:
    return len(scan([added_file(p, t) for p, t in texts.items()])[0])


def ours_cost(runs: int, scan: Scan = ours_scan) -> list[tuple[str, float, float, float]]:
    """(input, KiB, scan ms, redact ms) for the corpus, review.py and the lock file."""
    review_py = (ROOT / "ocr_hook" / "pipeline" / "review.py").read_text(encoding="utf-8")
    inputs = [
        (f"secret corpus ({len(corpus_files())} files)",
         [added_file(p, t) for p, t in corpus_files().items()]),
        ("review.py (1 file)", [added_file("ocr_hook/pipeline/review.py", review_py)]),
        ("package-lock.json (3,000 pkgs)", [added_file("package-lock.json", lock_file(3000))]),
    ]
    scan(inputs[0][1])  # compile the rules (and load plugins) outside the timings
    rows = []
    for name, fds in inputs:
        kib = sum(len(fd.patch.encode()) for fd in fds) / 1024
        literals = scan(fds)[1]
        scan_ms = median_ms(lambda fds=fds: scan(fds), runs)
        redact = median_ms(lambda fds=fds, lit=literals: [Redactor(lit)(fd.patch) for fd in fds],
                           runs)
        rows.append((name, kib, scan_ms, redact))
    return rows


# Every rule compiled (each regex compiles on first need, in secrets.patterns; the except branch
# serves a --baseline tree whose redact._rules() compiles them all): the import cost's upper bound.
_COMPILE_ALL = ("try:\n    from ocr_hook.secrets.patterns import rules\n"
                "    [r.pattern for r in rules()]\n"
                "except ImportError:\n    redact._rules()\n")


def ours_report(runs: int) -> dict[str, Any]:
    found, redacted, missed = ours_detection()
    return {
        "found": found, "redacted": redacted, "missed": missed,
        "false_positives": ours_false_positives(clean_inputs()),
        "cost": ours_cost(runs),
        "import_ms": import_ms(
            "from ocr_hook.secrets import diff_scan, redact\n" + _COMPILE_ALL, runs, sys.path[:2]),
    }


def combined_report(runs: int) -> dict[str, Any]:
    """ours_report() with ``security.detect_secrets`` on (detect-secrets installed)."""
    found, redacted, missed = ours_detection(combined_scan)
    return {
        "found": found, "redacted": redacted, "missed": missed,
        "false_positives": ours_false_positives(clean_inputs(), combined_scan),
        "cost": ours_cost(runs, combined_scan),
        "import_ms": import_ms(
            "from ocr_hook.secrets import diff_scan, redact, detect_secrets_pass\n" + _COMPILE_ALL +
            "from detect_secrets.settings import default_settings\n"
            "from detect_secrets.core.scan import _process_line_based_plugins\n"
            "with default_settings(): pass", runs, sys.path[:2]),
    }


# --- detect-secrets -----------------------------------------------------------------------


def ds_available() -> bool:
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        return False
    return True


def ds_scan(folder: Path, files: dict[str, str]) -> dict[str, list[tuple[int, str]]]:
    """detect-secrets' findings (line, plugin type) per path, scanning ``files`` written under
    ``folder`` with its default settings (all plugins, default filters)."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    for rel, text in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", newline="")
    out: dict[str, list[tuple[int, str]]] = {rel: [] for rel in files}
    with default_settings():
        sc = SecretsCollection(root=str(folder))
        for rel in files:
            sc.scan_file(str(folder / rel))
        for name, secret in sc:
            rel = Path(name).as_posix()
            rel = rel[len(folder.as_posix()) + 1:] if rel.startswith(folder.as_posix()) else rel
            out.setdefault(rel, []).append((secret.line_number, secret.type))
    return out


ENTROPY_TYPES = ("Base64 High Entropy String", "Hex High Entropy String")


def ds_report(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        found = {"all": 0, "no entropy": 0, "all, as .txt": 0}
        missed: dict[str, list[str]] = {mode: [] for mode in found}
        for i, case in enumerate(CASES):  # one file per case: its de-duplication is per file
            rel = f"{i:02}/{Path(case.file).name}"
            hits = ds_scan(Path(tmp) / "corpus", {rel: case.text})[rel]
            in_case = [t for n, t in hits if case.line <= n <= case.last_line]
            # its heuristics treat code files differently (a line assigning a call's result is
            # an "indirect reference"): the same text named .txt shows what its plugins match
            txt = ds_scan(Path(tmp) / "corpus-txt", {rel + ".txt": case.text})[rel + ".txt"]
            for mode, types in (("all", in_case),
                                ("no entropy", [t for t in in_case if t not in ENTROPY_TYPES]),
                                ("all, as .txt",
                                 [t for n, t in txt if case.line <= n <= case.last_line])):
                ok = bool(types) == case.finding
                found[mode] += ok
                if not ok:
                    missed[mode].append(case.name)
        clean = ds_scan(Path(tmp) / "clean", clean_inputs())
        fp = {"all": sum(len(v) for v in clean.values()),
              "no entropy": sum(1 for v in clean.values() for _, t in v
                                if t not in ENTROPY_TYPES)}
        review_py = (ROOT / "ocr_hook" / "pipeline" / "review.py").read_text(encoding="utf-8")
        inputs = [(f"secret corpus ({len(corpus_files())} files)", corpus_files()),
                  ("review.py (1 file)", {"ocr_hook/pipeline/review.py": review_py}),
                  ("package-lock.json (3,000 pkgs)", {"deps/package-lock.json": lock_file(3000)})]
        cost = []
        for n, (name, files) in enumerate(inputs):
            kib = sum(len(t.encode()) for t in files.values()) / 1024
            folder = Path(tmp) / f"cost{n}"
            ms = median_ms(lambda folder=folder, files=files: ds_scan(folder, files), runs)
            cost.append((name, kib, ms, float("nan")))
    return {
        "found": found, "missed": missed, "false_positives": fp, "cost": cost,
        "import_ms": import_ms(
            "from detect_secrets import SecretsCollection\n"
            "from detect_secrets.settings import default_settings\n"
            "from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class\n"
            "get_mapping_from_secret_type_to_class()", runs, sys.path[:2]),
    }


# --- baseline -----------------------------------------------------------------------------


def baseline_report(rev: str, runs: int, corpus: str) -> dict[str, Any]:
    """ours_report() of ocr-hook at git revision ``rev``, run in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", rev, "ocr_hook", "config"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        # the built-in data as the package ocr_hook.builtin, as an install has it
        os.rename(Path(tmp) / "config", Path(tmp) / "ocr_hook" / "builtin")
        out = subprocess.run([sys.executable, __file__, "--runs", str(runs), "--code", tmp,
                              "--corpus", corpus, "--json"],
                             check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out))


# --- report -------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", metavar="REV", help="also measure ocr-hook at this revision")
    ap.add_argument("--corpus", choices=("cases", "shapes"), default="cases",
                    help="the fake corpus: tests/support/secret_corpus.py (cases) or "
                         "tests/secrets/shape_corpus.py (shapes)")
    ap.add_argument("--code", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    set_corpus(args.corpus)
    ours = ours_report(args.runs)
    if args.json:
        print(json.dumps(ours))
        return
    scanners: list[tuple[str, dict[str, Any]]] = []
    if args.baseline:
        scanners.append((f"ocr-hook {args.baseline}",
                         baseline_report(args.baseline, args.runs, args.corpus)))
    scanners.append(("ocr-hook (this tree)", ours))
    ds = ds_report(args.runs) if ds_available() else None
    if ds is not None:
        scanners.append(("ours + detect-secrets", combined_report(args.runs)))
    total = len(CASES)
    rows: list[Sequence[object]] = []
    for name, r in scanners:
        rows.append((name, f"{r['found']}/{total}", f"{r['redacted']}/{total}",
                     r["false_positives"], f"{r['import_ms']:.0f}"))
    if ds is not None:
        for mode in ds["found"]:
            fp = ds["false_positives"].get(mode, "-")
            rows.append((f"detect-secrets ({mode})", f"{ds['found'][mode]}/{total}", "-", fp,
                         f"{ds['import_ms']:.0f}"))
    extra = f" + {len(CLEAN_EXTRA)} non-secrets of the corpus" if CLEAN_EXTRA else ""
    print(f"Detection on the {args.corpus} corpus ({total} cases), false positives on clean text "
          f"(ocr_hook/*.py + a 3,000-package lock file{extra}), import cost")
    print(table(["scanner", "found", "redacted", "false pos.", "import ms"], rows))
    print()
    for name, r in scanners:
        print(f"missed by {name}: {', '.join(r['missed']) or 'none'}")
    if ds is not None:
        for mode in ds["found"]:
            print(f"missed by detect-secrets ({mode}): {', '.join(ds['missed'][mode])}")
    else:
        print("detect-secrets is not installed: pip install detect-secrets to compare")
    print()
    cost_rows: list[Sequence[object]] = []
    for name, r in [*scanners, *([("detect-secrets", ds)] if ds else [])]:
        for inp, kib, scan, redact in r["cost"]:
            cost_rows.append((f"{name}: {inp}", f"{kib:.0f}", f"{scan:.1f}",
                              "-" if math.isnan(redact) else f"{redact:.1f}",
                              f"{scan / max(kib, 1e-9):.2f}"))
    print(f"Scan cost (median of {args.runs} runs)")
    print(table(["scanner: input", "KiB", "scan ms", "redact ms", "scan ms/KiB"], cost_rows))
    print(load_line())


if __name__ == "__main__":
    main()
