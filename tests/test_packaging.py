"""A non-editable install ships everything under config/ as package data (pre-commit installs
hooks with a plain `pip install .`). Real: setuptools build, wheel install, a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.gitrepo import GitRepo

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_config_data_and_runs_from_a_subdirectory(tmp_path: Path, repo: GitRepo) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True,
    )
    [wheel] = list(wheels.glob("ocr_hook-*.whl"))
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(wheel)],
        check=True, capture_output=True,
    )
    shipped = {p.relative_to(site / "ocr_hook" / "builtin").as_posix()
               for p in (site / "ocr_hook" / "builtin").rglob("*") if p.is_file()}
    for needed in ("tools.json", "supported_file_types.json", "templates/main_system.md",
                   "rules/rule_map.json", "rules/python.md", "providers.json"):
        assert needed in shipped
    repo.stage({"pkg/sub/app.py": "print('hi')\n", "pkg/sub/data.bin": b"\x00\x01"})
    env = {**repo.env, "PYTHONPATH": os.pathsep.join([str(site), *sys.path[1:]])}
    p = subprocess.run(
        [sys.executable, "-c", "import sys; from ocr_hook.cli import main; sys.exit(main())",
         "review", "--preview", "--format", "json"],
        cwd=repo.path / "pkg" / "sub", env=env, capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stderr
    files = {f["path"]: (f["will_review"], f["reason"]) for f in json.loads(p.stdout)["files"]}
    assert files == {"pkg/sub/app.py": (True, ""), "pkg/sub/data.bin": (False, "binary")}


def test_readme_test_command_prints_pytest_summary_line(tmp_path: Path) -> None:
    """CI runs the README's `python -m pytest -q`; with the project's pytest settings that must
    still end in pytest's "N passed in Xs" line (a second -q from addopts would hide it)."""
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_one.py").write_text("def test_one():\n    assert True\n")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tests)],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1].startswith("1 passed in ")
