"""Real hook managers from npm (lefthook, husky) for the tests of this folder.

They are installed once per machine and version into ``~/.cache/ocr-hook-tests/npm/<versions>``
(the real home, not the test's isolated one): the packages under ``tools/node_modules`` and
npm's own cache under ``cache``, so that a test's ``npm install --offline`` in a temporary
repository (which runs lefthook's ``postinstall`` and husky's ``prepare`` as a team's
``npm install`` does) reads nothing from the network. Tests that need them are skipped only
when ``npm`` is not on ``PATH``; a failed download fails them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

LEFTHOOK = "2.2.1"
HUSKY = "9.1.7"


@dataclass(frozen=True)
class NpmTools:
    """The cached packages: ``lefthook`` (its binary), ``npm`` (the program) and ``cache``
    (npm's cache folder holding both packages)."""

    root: Path
    npm: str

    @property
    def lefthook(self) -> Path:
        return self.root / "tools" / "node_modules" / ".bin" / "lefthook"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def install(self, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``npm install`` in ``cwd`` from the cache only, lifecycle scripts running (lefthook's
        postinstall even on CI: ``LEFTHOOK=1``)."""
        full = {**env, "npm_config_update_notifier": "false", "LEFTHOOK": "1"}
        full.pop("CI", None)
        return subprocess.run(
            [self.npm, "install", "--offline", "--no-audit", "--no-fund", "--cache",
             str(self.cache)], cwd=cwd, env=full, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def npm_tools() -> NpmTools:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not on PATH: the lefthook/husky tests need it (.ci/run installs it)")
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    root = home / ".cache" / "ocr-hook-tests" / "npm" / f"lefthook-{LEFTHOOK}-husky-{HUSKY}"
    tools = NpmTools(root, npm)
    if (root / "ok").is_file():
        return tools
    root.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(
        [npm, "install", "--prefix", str(root / "tools"), "--cache", str(tools.cache),
         "--ignore-scripts", "--no-audit", "--no-fund", f"lefthook@{LEFTHOOK}", f"husky@{HUSKY}"],
        cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HOME": str(home), "npm_config_update_notifier": "false"})
    assert p.returncode == 0, f"npm install of lefthook/husky failed: {p.stderr}"
    assert tools.lefthook.is_file()
    (root / "ok").write_text("lefthook husky\n")
    return tools
