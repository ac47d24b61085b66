"""The end of a real ``git ocr`` process: buffered stdout and stderr reach their pipes whole and
the exit code is the run's.

Real: a subprocess interpreter with its output on pipes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import cli_environ, run_python


def test_a_real_run_exits_with_its_code_and_full_output(tmp_path: Path) -> None:
    """``python -m ocr_hook.cli`` (what native hooks run): a usage error's message and exit
    code 2 arrive whole; ``--version`` prints its line and exits 0."""
    buffered = ("PYTHONUNBUFFERED",)  # as for a user: the flush is what is tested
    p = run_python(["-m", "ocr_hook.cli", "review", "--no-such-flag"], cwd=tmp_path,
                   unset=buffered, timeout=60)
    assert p.returncode == 2 and p.stderr.rstrip().endswith(
        "error: unrecognized arguments: --no-such-flag")
    p = run_python(["-m", "ocr_hook.cli", "--version"], cwd=tmp_path, unset=buffered, timeout=60)
    assert (p.returncode, p.stdout.split(" ")[0]) == (0, "ocr-hook")


def test_a_real_review_prints_its_whole_json_result_through_a_buffered_pipe(tmp_path: Path
                                                                           ) -> None:
    """A review process whose stdout is a pipe (block-buffered): the JSON result arrives whole
    at the normal end of the interpreter and the exit code is the gate's (0: nothing staged)."""
    unset = ("PYTHONUNBUFFERED", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], env=cli_environ(env), check=True)
    p = run_python(["-m", "ocr_hook.cli", "review", "--format", "json"], cwd=repo, env=env,
                   unset=unset, timeout=60)
    data = json.loads(p.stdout)
    assert (p.returncode, data["verdict"], data["files"]) == (0, "pass", [])
