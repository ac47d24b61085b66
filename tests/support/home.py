"""The user's ocr-hook files in the isolated ``HOME`` that conftest gives each test: the folder
``$XDG_CONFIG_HOME/ocr-hook/`` with ``config.toml`` (the user layer of the settings) and
``rule.json`` (the user's review rules)."""

from __future__ import annotations

import os
from pathlib import Path


def user_file(name: str) -> Path:
    """The path of the user's ocr-hook file ``name`` (it need not exist)."""
    return Path(os.environ["XDG_CONFIG_HOME"]) / "ocr-hook" / name


def write_user_file(name: str, text: str) -> Path:
    """Write the user's ocr-hook file ``name`` (its folder is made when missing); returns its
    path. UTF-8, with lone surrogates written as they are (``surrogatepass``), so a fuzzed text
    reaches the file unchanged."""
    path = user_file(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def write_user_config(text: str) -> Path:
    """Write the user's ``config.toml``; returns its path."""
    return write_user_file("config.toml", text)
