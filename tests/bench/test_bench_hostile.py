"""bench/bench_hostile.py, the attack table: one cheap row run for real (``--only``, a new
process of the bench, which starts its own loopback model and ``git ocr`` processes in a
temporary repository), its columns and ``--strict``; the fingerprint behind the ``intact``
column against real git changes. Nothing is faked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tests.support.paths import ROOT

BENCH = ROOT / "bench" / "bench_hostile.py"
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import repo_fingerprint  # noqa: E402


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def test_one_row_prints_its_columns_and_strict_follows_the_verdict(tmp_path: Path) -> None:
    md = tmp_path / "hostile.md"
    p = bench("--only", "cred-mysqldump", "--json", "--md", str(md))
    assert p.returncode == 0, p.stderr
    [row] = json.loads(p.stdout.strip().splitlines()[-1])["rows"]
    attack, expected, observed, verdict, intact = row["cells"]
    assert (row["name"], attack, expected, intact) == (
        "cred-mysqldump", "mysqldump -p…", "no piece sent", "yes")
    # two pieces of the password; the row is held exactly when neither reached the model
    assert (observed, verdict) == ("0/2 pieces sent; flagged", "held")
    table = p.stdout.split("\n\n", 1)[1]
    assert table.splitlines()[0].split() == ["attack", "expected", "observed", "held/broken",
                                             "intact"]
    assert f"| {attack} | {expected} | {observed} | {verdict} | yes |" in md.read_text()
    strict = bench("--only", "cred-mysqldump", "--strict")
    assert strict.returncode == 0, strict.stderr


def test_list_names_every_attack_once_and_an_unknown_name_is_a_usage_error() -> None:
    p = bench("--list")
    names = [line.split()[0] for line in p.stdout.splitlines()[2:]]
    assert p.returncode == 0 and len(names) == len(set(names)) == 29
    assert {"oracle", "trickle", "pass-hunks", "cred-age", "commit-message"} <= set(names)
    bad = bench("--only", "cred-mysqldump,no-such-attack")
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith("error: unknown attack no-such-attack; see --list")


@pytest.mark.parametrize("change, changed", [
    ("write", {"worktree"}),
    ("add", {"index"}),
    ("branch", {"refs"}),
    ("stash", {"index", "refs"}),  # the work tree is back as it was; the index is rewritten
    ("chmod", {"worktree"}),
])
def test_fingerprint_names_what_a_git_change_touched(repo: GitRepo, change: str,
                                                     changed: set[str]) -> None:
    repo.commit({"app.py": "x = 1\n", "lib/util.py": "y = 2\n"}, "init")
    before = repo_fingerprint(repo.path)
    assert repo_fingerprint(repo.path) == before  # reading changes nothing
    if change == "write":
        repo.write({"lib/util.py": "y = 3\n"})
    elif change == "add":
        repo.write({"new.py": "z = 1\n"})
        repo.git("add", "new.py")
        (repo.path / "new.py").unlink()
    elif change == "branch":
        repo.git("branch", "side")
    elif change == "stash":
        repo.stage({"app.py": "x = 2\n"})
        repo.git("stash", "-q")
    else:
        (repo.path / "app.py").chmod(0o755)
    after = repo_fingerprint(repo.path)
    assert {k for k in before if before[k] != after[k]} == changed
