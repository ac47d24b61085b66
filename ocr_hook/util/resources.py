"""The only code that knows where built-in data lives: package ``ocr_hook.builtin`` (the
repository's top-level ``config/`` directory, installed as package data).

The data is read by a plain path where there is one (importing ``importlib.resources`` and the
``tempfile``/``shutil`` it brings would slow every run's start-up): ``ocr_hook/builtin`` next
to this module in an installed package, else ``config/`` of a source checkout (this module's
package beside ``pyproject.toml``). Only a package that is not a folder on disk (a zip) is read
through ``importlib.resources``. Loaders are cached: the data never changes during a process.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Traversable

# a file every copy of the built-in data has: it tells the data folder from a namesake
_MARKER = "providers.json"


@functools.cache
def _root() -> Path | Traversable:
    here = Path(__file__).resolve().parent.parent  # the ocr_hook package folder
    installed = here / "builtin"
    if (installed / _MARKER).is_file():
        return installed
    checkout = here.parent / "config"
    if (checkout / _MARKER).is_file() and (here.parent / "pyproject.toml").is_file():
        return checkout
    from importlib import resources  # a zipped package: no folder to read from

    return resources.files("ocr_hook.builtin")


def read_builtin_text(relpath: str) -> str:
    """Text of ``config/<relpath>`` (UTF-8). Raises FileNotFoundError when absent."""
    node = _root()
    for part in relpath.split("/"):
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def list_builtin_dir(relpath: str) -> list[str]:
    """Names of the entries of ``config/<relpath>``, sorted."""
    node = _root()
    for part in relpath.split("/"):
        node = node.joinpath(part)
    return sorted(child.name for child in node.iterdir())


@functools.cache
def load_builtin_json(relpath: str) -> Any:
    """Parsed JSON of ``config/<relpath>`` (cached; treat the result as read-only)."""
    return json.loads(read_builtin_text(relpath))


@functools.cache
def template(name: str) -> str:
    """Prompt template ``config/templates/<name>.md`` with trailing newlines trimmed."""
    return read_builtin_text(f"templates/{name}.md").rstrip("\n")


def user_config_dir(environ: Mapping[str, str]) -> Path:
    """The folder of the user's own files (config.toml, rule.json, consents):
    ``$XDG_CONFIG_HOME/ocr-hook``, else ``$HOME/.config/ocr-hook``."""
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "ocr-hook"
