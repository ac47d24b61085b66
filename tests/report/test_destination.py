"""Where a review's report goes, through a real ``git ocr`` process: ``--output`` into a
symbolic link, a FIFO and ``/dev/stdout`` (written into, never replaced), and stdout that fails
(a reader that went away, a full device): the exit code stays the gate's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tests.support.samples import APP_PY, sql_comment
from tests.support.scripted_llm import ScriptedLLM

BLOCKING_LINE = "ocr-hook: blocking findings: 1 at or above high"
REVIEW = [sys.executable, "-m", "ocr_hook.cli", "review", "--effort", "low", "--no-filter",
          "--no-cache"]


def blocked_change(repo: GitRepo, llm: ScriptedLLM) -> dict[str, str]:
    """A staged change the scripted model blocks (critical finding on app.py:12); the
    environment of a process reviewing it, with stdout buffered as for a user (no
    PYTHONUNBUFFERED: a failure must show up where a real run meets it)."""
    repo.stage({"app.py": APP_PY})
    llm.tool_calls(("code_comment", sql_comment()), ("task_done", {"state": "DONE"}))
    return buffered({**repo.env, **llm.env()})


def buffered(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}


def test_output_through_a_symlink_replaces_its_target_and_keeps_the_link(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    env = blocked_change(repo, llm)
    out = tmp_path / "out"
    out.mkdir()
    real = out / "real.json"
    real.write_text("old")
    link = out / "link.json"
    link.symlink_to(real)
    p = subprocess.run([*REVIEW, "--format", "json", "--output", str(link)], cwd=repo.path,
                       env=env, capture_output=True, check=False, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stdout == b""
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["comments"][0]["start_line"] == 12
    assert sorted(x.name for x in out.iterdir()) == ["link.json", "real.json"]


def test_output_into_a_fifo_is_written_into_not_replaced(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    env = blocked_change(repo, llm)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    p = subprocess.run([*REVIEW, "--format", "sarif", "--output", str(fifo)], cwd=repo.path,
                       env=env, capture_output=True, check=False, timeout=60)
    reader.join(timeout=10)
    assert p.returncode == 1, p.stderr
    assert fifo.is_fifo()
    [result] = json.loads(got[0])["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 12


def test_output_to_stdout_by_its_proc_link_writes_to_stdout(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    # /dev/stdout is this kind of link; a private one keeps a regression from replacing the
    # machine's own /dev/stdout
    env = blocked_change(repo, llm)
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to("/proc/self/fd/1")
    p = subprocess.run([*REVIEW, "--format", "json", "--output", str(stdout_link)],
                       cwd=repo.path, env=env, capture_output=True, check=False, timeout=120)
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["verdict"] == "findings"
    assert os.readlink(stdout_link) == "/proc/self/fd/1"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_reader_that_goes_away_does_not_turn_a_block_into_a_pass(
    repo: GitRepo, llm: ScriptedLLM, fmt: str,
) -> None:
    env = blocked_change(repo, llm)
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the report is written (`| head -0`)
    try:
        p = subprocess.run([*REVIEW, "--format", fmt], cwd=repo.path, env=env, stdout=w,
                           stderr=subprocess.PIPE, check=False, timeout=120)
    finally:
        os.close(w)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert BLOCKING_LINE in err.splitlines()  # the bypass hint still reaches stderr


def test_a_full_stdout_is_reported_and_never_exits_zero(repo: GitRepo, llm: ScriptedLLM,
                                                        tmp_path: Path) -> None:
    if not Path("/dev/full").is_char_device():
        pytest.fail("this test needs /dev/full (Linux)")
    env = blocked_change(repo, llm)
    with open("/dev/full", "wb") as full:
        p = subprocess.run([*REVIEW, "--format", "json"], cwd=repo.path, env=env, stdout=full,
                           stderr=subprocess.PIPE, check=False, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert err.splitlines().count(
        "ocr-hook: cannot write the report to stdout: No space left on device") == 1
    assert BLOCKING_LINE in err.splitlines()
    assert "Traceback" not in err and "internal error" not in err


def test_output_to_stdout_appended_to_a_file_keeps_what_the_file_held(
    repo: GitRepo, llm: ScriptedLLM, tmp_path: Path,
) -> None:
    # `git ocr review --output /dev/stdout >> ci.log`: the log is appended to, never replaced
    env = blocked_change(repo, llm)
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to("/proc/self/fd/1")
    log_file = tmp_path / "ci.log"
    log_file.write_text("earlier step\n")
    with open(log_file, "ab") as log:
        p = subprocess.run([*REVIEW, "--format", "json", "--output", str(stdout_link)],
                           cwd=repo.path, env=env, stdout=log, stderr=subprocess.PIPE,
                           check=False, timeout=120)
    assert p.returncode == 1, p.stderr
    first, rest = log_file.read_text().split("\n", 1)
    assert first == "earlier step"
    assert json.loads(rest)["comments"][0]["start_line"] == 12


def test_other_commands_keep_their_exit_code_when_stdout_fails(tmp_path: Path) -> None:
    env = buffered(dict(os.environ))
    cmd = [sys.executable, "-m", "ocr_hook.cli", "llm", "providers"]
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(cmd, cwd=tmp_path, env=env, stdout=w, stderr=subprocess.PIPE,
                           check=False, timeout=120)
    finally:
        os.close(w)
    assert (p.returncode, p.stderr.decode()) == (0, "")  # a reader gone is not an error
    with open("/dev/full", "wb") as full:
        p = subprocess.run(cmd, cwd=tmp_path, env=env, stdout=full, stderr=subprocess.PIPE,
                           check=False, timeout=120)
    assert (p.returncode, p.stderr.decode()) == (
        2, "ocr-hook: cannot write to stdout: No space left on device\n")
