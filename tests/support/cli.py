"""Running ``git ocr`` and Python for a test.

- :func:`run_cli` and :func:`run_json`: ``cli.main`` in this process, with the environment the
  caller names, its output read from pytest's capture fixture;
- :func:`run_python`: a fresh interpreter that imports this checkout (for what a test process,
  which has long imported everything, cannot show: start-up imports, a missing package);
- :data:`GIT_OCR`: the ``git-ocr`` console script of this virtual environment, for tests that
  need a real ``git ocr`` process (signals, peak memory, concurrent runs).

The environment of a command is built the same way everywhere, from the bottom up: this
process's environment (conftest's isolated ``HOME``, XDG folders and git identity, with the
user's own ``OCR_*``, ``OPENAI_*`` … variables removed) unless ``inherit`` is False, then the
review filter's setting when ``review_filter`` is given, then ``env``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, AnyStr

import pytest

from ocr_hook import cli
from tests.support.paths import ROOT

GIT_OCR = Path(sys.executable).parent / "git-ocr"


def cli_environ(env: Mapping[str, str] | None = None, *, inherit: bool = True,
                review_filter: bool | None = None) -> dict[str, str]:
    """The environment of a command: this process's (when ``inherit``), then
    ``OCR_HOOK_REVIEW_FILTER`` when ``review_filter`` is not None, then ``env``.

    ``review_filter=False`` turns the filter pass (spec §8.4) off, so that a test counts the
    review's own requests and sees every comment the model filed."""
    full = dict(os.environ) if inherit else {}
    if review_filter is not None:
        full["OCR_HOOK_REVIEW_FILTER"] = "true" if review_filter else "false"
    full.update(env or {})
    return full


def run_cli(args: Sequence[str], env: Mapping[str, str], capture: pytest.CaptureFixture[AnyStr],
            *, inherit: bool = True, review_filter: bool | None = None,
            ) -> tuple[int, AnyStr, AnyStr]:
    """``git ocr ARGS`` in this process: ``cli.main`` with the environment of
    :func:`cli_environ`, in the current working directory. Returns the exit code and what the
    command wrote to stdout and stderr, read (and so cleared) from ``capture`` (``capsys``
    gives text, ``capsysbinary`` bytes)."""
    rc = cli.main(list(args), environ=cli_environ(env, inherit=inherit,
                                                  review_filter=review_filter))
    out, err = capture.readouterr()
    return rc, out, err


def run_json(args: Sequence[str], env: Mapping[str, str], capture: pytest.CaptureFixture[str],
             *, inherit: bool = True, review_filter: bool | None = None,
             ) -> tuple[int, Any, str]:
    """:func:`run_cli` for a command whose stdout is one JSON document: (exit code, the
    parsed document, stderr). Fails if stdout is not exactly one JSON value."""
    rc, out, err = run_cli(args, env, capture, inherit=inherit, review_filter=review_filter)
    return rc, json.loads(out), err


def run_python(args: Sequence[str], *, cwd: Path | None = None,
               env: Mapping[str, str] | None = None, unset: Collection[str] = (), timeout: float = 120, check: bool = False,
               ) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` (``["-c", code, *argv]``, ``["-m", module, …]``) in a fresh
    interpreter of this virtual environment that imports this checkout (``PYTHONPATH`` is the
    repository root). Its environment: this process's without the names in ``unset``, then
    ``env``, then ``PYTHONPATH``. Text output is captured; the exit code is checked only with
    ``check``."""
    full = {k: v for k, v in os.environ.items() if k not in unset}
    full.update(env or {})
    full["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout, check=check)
