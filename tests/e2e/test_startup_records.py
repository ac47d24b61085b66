"""Class building at start-up: the dataclasses built on every run's shared path (nothing to
review, ``--preview``, a cache hit) are the listed ones. Building a dataclass costs several
times a NamedTuple (its methods are generated and compiled at import), and these paths are the
tightest, so a new one here is a conscious choice. Each check runs in a fresh interpreter and
lists the dataclasses of the ``ocr_hook`` modules the run imported (``ocr_hook.llm`` excepted:
tests/llm/test_types.py pins those). The same runs import none of the stdlib modules in UNUSED
(``shutil`` with its compression modules, ``tempfile`` with ``random``, ``datetime``,
``base64``: ~8 ms together), and the help formatter wraps at the width ``shutil`` would give.

Real: a subprocess interpreter, ``cli.main``, git, HTTP to the scripted loopback model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ocr_hook.cli.parser import Formatter, terminal_columns
from ocr_hook.util.atomicfile import create_unique
from tests.support.cli import run_python
from tests.support.gitrepo import GitRepo
from tests.support.scripted_llm import ScriptedLLM

PROBE = """\
import dataclasses, json, sys
from ocr_hook import cli
rc = cli.main(sys.argv[1:])
found = sorted(
    f"{name}.{obj.__name__}" for name, mod in list(sys.modules.items())
    if name.startswith("ocr_hook") and not name.startswith("ocr_hook.llm")
    for obj in vars(mod).values()
    if isinstance(obj, type) and obj.__module__ == name and dataclasses.is_dataclass(obj))
unused = sorted(m for m in UNUSED_MODULES if m in sys.modules)
sys.stderr.write("\\nDATACLASSES=" + json.dumps(found) + "\\nUNUSED=" + json.dumps(unused)
                 + "\\nRC=" + str(rc) + "\\n")
"""
UNUSED = ("shutil", "tempfile", "random", "bz2", "lzma", "datetime", "base64")

CONFIG = {f"ocr_hook.config.models.{c}" for c in (
    "Config", "LlmConfig", "ReviewConfig", "SelectConfig", "RulesConfig", "GateConfig",
    "CacheConfig", "ToolsConfig", "McpConfig", "SecurityConfig", "BudgetConfig",
    "TelemetryConfig")}
RESULTS = {f"ocr_hook.report.result.{c}" for c in (
    "FileOutcome", "GroupOutcome", "GroupReport", "ReviewResult")}
SHARED = CONFIG | RESULTS | {"ocr_hook.diff.model.FileDiff"}


def dataclasses_of(argv: list[str], cwd: Path, env: dict[str, str],
                   cheap: bool = True) -> tuple[int, set[str]]:
    """Run ``cli.main(argv)`` in a new interpreter: (exit code, dataclasses loaded). A
    ``cheap`` run (no model call) must not import UNUSED."""
    p = run_python(["-c", PROBE.replace("UNUSED_MODULES", repr(UNUSED)), *argv], cwd=cwd, env=env)
    lines = p.stderr.splitlines()
    found = json.loads(next(ln for ln in lines if ln.startswith("DATACLASSES="))[12:])
    unused = json.loads(next(ln for ln in lines if ln.startswith("UNUSED="))[7:])
    assert unused == [] or not cheap, f"{argv} imported {unused}"
    return int(next(ln for ln in lines if ln.startswith("RC="))[3:]), set(found)


def test_shared_paths_build_only_these_dataclasses(repo: GitRepo, llm: ScriptedLLM) -> None:
    repo.commit({"README.md": "hi\n"}, "init")
    assert dataclasses_of(["review"], repo.path, llm.env()) == (0, SHARED)
    repo.stage({"app.py": "x = 1\n"})
    changes = SHARED | {"ocr_hook.change.changeset.ChangeSet", "ocr_hook.secrets.blobs.BlobScan",
                        "ocr_hook.change.scan.ChangeScan"}
    assert dataclasses_of(["review", "--preview"], repo.path, llm.env()) == (0, changes)
    llm.tool_calls(("task_done", {"state": "DONE"}))
    assert dataclasses_of(["review"], repo.path, llm.env(), cheap=False)[0] == 0
    assert len(llm.requests) == 1
    rc, hit = dataclasses_of(["review", "--format", "json"], repo.path, llm.env())
    assert (rc, len(llm.requests)) == (0, 1)  # answered from the cache
    assert hit == changes  # grouping.Group is a NamedTuple


@pytest.mark.parametrize("columns", ["", "50", "0", "-3", "wide", "200"])
def test_help_width_is_the_one_shutil_gives(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    assert Formatter("git ocr")._width == shutil.get_terminal_size().columns - 2


def test_create_unique_makes_a_new_private_file(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    fd, name = create_unique(folder, ".tmp-1-", ".part")
    os.close(fd)
    path = Path(name)
    assert (path.parent, path.name[:7], len(path.name), path.suffix) == (
        folder, ".tmp-1-", 7 + 12 + 5, ".part")
    assert (path.stat().st_mode & 0o777, path.read_bytes()) == (0o600, b"")
    fd2, name2 = create_unique(folder, ".tmp-1-", ".part")
    os.close(fd2)
    assert name2 != name and sorted(p.name for p in folder.iterdir()) == sorted(
        [Path(name).name, Path(name2).name])
