"""The end of a real ``git ocr`` process: ``cli.main`` without ``argv`` ends in
``_exit_process``, which skips the interpreter's teardown of every module but keeps what the
interpreter's own exit does for us: non-daemon threads are waited for, exit handlers run,
buffered stdout/stderr reach their pipes, and the exit code is the run's.

Real: a subprocess interpreter with its output on pipes.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_python

SCRIPT = """\
import atexit, sys, threading, time
from ocr_hook.cli.main import _exit_process

atexit.register(lambda: print("exit handler"))
worker = threading.Thread(target=lambda: (time.sleep(0.05), print("thread done")))
worker.start()
print("result")
sys.stderr.write("warning\\n")
_exit_process(3)
print("never")
"""


def test_exit_waits_for_threads_runs_handlers_and_flushes_output() -> None:
    # buffered, as for a user: the flush is what is tested
    p = run_python(["-c", SCRIPT], unset=("PYTHONUNBUFFERED",), timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (3, "result\nthread done\nexit handler\n",
                                                  "warning\n")


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
