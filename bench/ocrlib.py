"""The reference CLI (OCR, npm ``@alibaba-group/open-code-review``) for side-by-side benches
(not a benchmark itself).

- :func:`find_ocr`: the ``ocr`` executable: ``--ocr PATH`` / ``$OCR_BIN``, else the copy this
  module installs once with npm under ``~/.cache/ocr-hook-bench/ocr-<version>`` (the only
  network use of a bench: the npm registry), else ``ocr`` on ``PATH``;
- :func:`write_config`: OCR's user config (``$HOME/.opencodereview/config.json``) pointing it at
  a loopback model server, over either protocol;
- :func:`review_command`: an ``ocr review`` command line; OCR has no staged-only mode, so a
  workspace review of a repository whose only change is staged reviews exactly the index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from benchlib import CACHE

OCR_VERSION = "1.12.4"
OCR_PACKAGE = "@alibaba-group/open-code-review"


def find_ocr(explicit: str | None = None, install: bool = True) -> str:
    """Path of an ``ocr`` executable of :data:`OCR_VERSION`. Raises SystemExit with a one-line
    reason when none is found and npm cannot install one."""
    given = explicit or os.environ.get("OCR_BIN")
    if given:
        if not shutil.which(given):
            raise SystemExit(f"OCR executable not found: {given}")
        return str(shutil.which(given))
    prefix = CACHE / f"ocr-{OCR_VERSION}"
    exe = prefix / "node_modules" / ".bin" / "ocr"
    if not exe.exists() and install and shutil.which("npm"):
        prefix.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["npm", "install", "--silent", "--prefix", str(prefix),
                            f"{OCR_PACKAGE}@{OCR_VERSION}"], capture_output=True, text=True,
                           check=False)
        if p.returncode:
            raise SystemExit(f"npm install {OCR_PACKAGE}@{OCR_VERSION} failed: "
                             f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    if exe.exists():
        return str(exe)
    on_path = shutil.which("ocr")
    if on_path:
        return on_path
    raise SystemExit(f"no OCR executable: pass --ocr PATH, set OCR_BIN, or install npm "
                     f"(npm install {OCR_PACKAGE}@{OCR_VERSION})")


def write_config(home: Path, url: str, protocol: str = "openai", model: str = "scripted-model",
                 timeout_s: int = 600) -> Path:
    """Write OCR's config under ``home`` (the HOME of its process) for the model server at
    ``url`` (the base URL the loopback server reports: ``…/v1`` for OpenAI, the host for
    Anthropic). Returns the config path."""
    cfg = home / ".opencodereview" / "config.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(json.dumps({"llm": {
        "url": url, "auth_token": "bench", "model": model, "protocol": protocol,
        "use_anthropic": protocol == "anthropic", "timeout_sec": timeout_s}}))
    return cfg


def review_command(ocr: str, *args: str) -> list[str]:
    """``ocr review --format json --audience agent`` plus ``args`` (e.g. ``--from A --to B``,
    ``--effort low``); without a range it reviews the work tree, index and untracked files."""
    return [ocr, "review", "--format", "json", "--audience", "agent", *args]
