"""The only code that knows where built-in data lives: package ``ocr_hook.builtin`` (the
repository's top-level ``config/`` directory, installed as package data).

Loaders are cached: the data never changes during a process.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any


@functools.cache
def _root() -> Traversable:
    try:
        return resources.files("ocr_hook.builtin")
    except ModuleNotFoundError:  # running from a source checkout without installing
        return Path(__file__).resolve().parent.parent / "config"


def read_text(relpath: str) -> str:
    """Text of ``config/<relpath>`` (UTF-8). Raises FileNotFoundError when absent."""
    node = _root()
    for part in relpath.split("/"):
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def list_dir(relpath: str) -> list[str]:
    """Names of the entries of ``config/<relpath>``, sorted."""
    node = _root()
    for part in relpath.split("/"):
        node = node.joinpath(part)
    return sorted(child.name for child in node.iterdir())


@functools.cache
def load_json(relpath: str) -> Any:
    """Parsed JSON of ``config/<relpath>`` (cached; treat the result as read-only)."""
    return json.loads(read_text(relpath))


@functools.cache
def template(name: str) -> str:
    """Prompt template ``config/templates/<name>.md`` with trailing newlines trimmed."""
    return read_text(f"templates/{name}.md").rstrip("\n")


def user_config_dir(environ: Mapping[str, str]) -> Path:
    """The folder of the user's own files (config.toml, rule.json, consents):
    ``$XDG_CONFIG_HOME/ocr-hook``, else ``$HOME/.config/ocr-hook``."""
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "ocr-hook"
