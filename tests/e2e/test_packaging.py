"""A non-editable install ships everything under config/ as package data (pre-commit installs
hooks with a plain `pip install .`). Real: setuptools build, wheel install, a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheels = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(ROOT)],
        check=True, capture_output=True,
    )
    [built] = list(wheels.glob("ocr_hook-*.whl"))
    return built


def test_wheel_ships_config_data_and_runs_from_a_subdirectory(
    tmp_path: Path, repo: GitRepo, wheel: Path,
) -> None:
    with zipfile.ZipFile(wheel) as zf:  # `pip install .` pulls no MCP/HTTP-server stack
        meta = zf.read(next(n for n in zf.namelist() if n.endswith("/METADATA"))).decode()
    requires = [ln.split(":", 1)[1].strip() for ln in meta.splitlines()
                if ln.startswith("Requires-Dist:")]
    assert [r for r in requires if r.startswith("mcp")] == [
        'mcp>=2.0; extra == "mcp"', 'mcp>=2.0; extra == "test"']
    assert [r for r in requires if r.startswith("detect-secrets")] == [  # opt-in
        'detect-secrets<2,>=1.5; extra == "detect-secrets"', 'detect-secrets<2,>=1.5; extra == "test"']
    assert [r for r in requires if r.startswith("opentelemetry")] == [  # opt-in: traces
        'opentelemetry-sdk>=1.25; extra == "otel"',
        'opentelemetry-exporter-otlp-proto-http>=1.25; extra == "otel"',
        'opentelemetry-sdk>=1.25; extra == "test"',
        'opentelemetry-exporter-otlp-proto-http>=1.25; extra == "test"']
    assert not [r for r in requires if "extra" not in r and r.split(">")[0].split(";")[0]
                in ("mcp", "starlette", "uvicorn", "httpx", "anyio", "protobuf")]
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(wheel)],
        check=True, capture_output=True,
    )
    shipped = {p.relative_to(site / "ocr_hook" / "builtin").as_posix()
               for p in (site / "ocr_hook" / "builtin").rglob("*") if p.is_file()}
    for needed in ("tools.json", "supported_file_types.json", "templates/main_system.md",
                   "rules/rule_map.json", "rules/rule_map_regex.json", "rules/python.md",
                   "providers.json"):
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
    p = subprocess.run([sys.executable, "-c", WHERE], env=env, capture_output=True, text=True,
                       cwd=tmp_path, check=True)  # the installed copy reads its folder
    assert json.loads(p.stdout) == [str(site / "ocr_hook" / "builtin"), False, True]


# where the built-in data is read from, whether importlib.resources was needed, data readable
WHERE = """\
import json, sys
from ocr_hook.util import resources
root = resources._root()
print(json.dumps([str(root), "importlib.resources" in sys.modules,
                  "openai" in resources.load_builtin_json("providers.json")["providers"]]))
"""


def test_a_zipped_package_reads_its_data_through_importlib_resources(
    tmp_path: Path, wheel: Path,
) -> None:
    """A wheel is a zip that Python can import from: no folder to read, so the data comes
    through ``importlib.resources`` (the plain-path reading is only a shortcut)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(wheel), *sys.path[1:]])}
    p = subprocess.run([sys.executable, "-c", WHERE], env=env, capture_output=True, text=True,
                       cwd=tmp_path, check=False)
    assert p.returncode == 0, p.stderr
    root, used_resources, readable = json.loads(p.stdout)
    assert (root.startswith(str(wheel)), used_resources, readable) == (True, True, True)


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


def test_everyday_install_puts_git_ocr_on_path_for_every_repository(
    tmp_path: Path, repo: GitRepo, wheel: Path,
) -> None:
    """README "Install for everyday use": a user-level install (the layout of ``pip install
    --user``: ``<base>/bin`` scripts, ``<base>/lib`` packages) is found by git as ``git ocr``
    in an unrelated repository, with nothing of this clone on PATH."""
    readme = (ROOT / "README.md").read_text()
    for command in ("pipx install ./ocr-hook", "uv tool install ./ocr-hook",
                    "python3 -m pip install --user ./ocr-hook"):
        assert command in readme
    base = tmp_path / "userbase"
    # --ignore-installed: never uninstall the developer's editable install of ocr-hook
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--ignore-installed", "--prefix", str(base), str(wheel)],
                   check=True, capture_output=True)
    assert sorted(p.name for p in (base / "bin").iterdir()) == ["git-ocr", "ocr-hook"]
    [site] = list(base.glob("lib/python3*/site-packages"))
    env = {**repo.env, "PATH": f"{base / 'bin'}:/usr/local/bin:/usr/bin:/bin",
           "PYTHONPATH": os.pathsep.join([str(site), *sys.path[1:]])}
    env.pop("VIRTUAL_ENV", None)
    repo.stage({"app.py": "X = 1\n"})
    p = subprocess.run(["git", "ocr", "review", "--preview", "--format", "json"],
                       cwd=repo.path, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert [(f["path"], f["will_review"]) for f in json.loads(p.stdout)["files"]] == [
        ("app.py", True)]
    p = subprocess.run(["git", "ocr", "-h"], cwd=repo.path, env=env, capture_output=True,
                       text=True)
    assert (p.returncode, p.stdout.split()[:3]) == (0, ["usage:", "git", "ocr"])
