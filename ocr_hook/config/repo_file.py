"""What the committed repository file ``.ocr-hook.toml`` may name (spec §2, §14).

The repository file comes from whoever can push to the repository, so:

- the files it names (``review.background_file``, ``rules.file``, ``tools.file``) are paths
  inside the repository, read from HEAD like the file itself: no absolute path, no ``~``, no
  ``..`` out of the repository, and an untracked or uncommitted file does not exist for it.
  The same keys set in the user file, the environment or a flag may name any file on disk;
- its endpoint settings (``llm.provider``, ``llm.protocol``, ``llm.base_url``,
  ``llm.extra_headers``, ``llm.extra_body``) decide where the user's API key and code go, so
  they take effect only with the user's consent (``git ocr config allow-endpoint``), except a
  provider or protocol that changes nothing the user configured (see
  :func:`needs_endpoint_consent`).

Pure functions over layers, plus :func:`read_repo_path` (``git.head_blobs``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import git
from ..errors import ConfigError
from .layering import Layer, merge_layers

# Settings of the repository file that name a file (read from HEAD when the repository set them)
REPO_PATH_KEYS = ("review.background_file", "rules.file", "tools.file")
REPO_PATH_MAX_BYTES = 512 * 1024  # a background or tools file is a few KB of text
# [llm] keys that always need consent in the repository file: they choose the server and what
# is sent to it
ENDPOINT_KEYS = ("base_url", "extra_headers", "extra_body")
# [llm] keys that need consent when they change what the user's own settings select
ROUTE_KEYS = ("provider", "protocol")
# the user's own [llm] settings that a repository's provider or protocol would redirect
USER_ROUTE_KEYS = ("provider", "protocol", "base_url", "api_key", "api_key_cmd")


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    section, _, name = dotted.partition(".")
    table = data.get(section)
    return table.get(name) if isinstance(table, Mapping) else None


def repo_relative(key: str, value: str, source: str) -> str:
    """``value`` of ``key`` from the repository file as a normalised path relative to the top
    of the repository (``a/b.md``). Raises ConfigError naming key, value and source for an
    absolute path, a ``~`` path, a Windows drive or UNC path, or one that leaves the
    repository through ``..``. Pure."""
    text = value.replace("\\", "/")
    bad = ""
    if not text.strip():
        bad = "an empty path"
    elif text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        bad = "an absolute path"
    elif text.startswith("~"):
        bad = "a home-directory path"
    norm = posixpath.normpath(text) if not bad else ""
    if not bad and (norm == ".." or norm.startswith("../")):
        bad = "a path outside the repository"
    if bad or norm == ".":
        raise ConfigError(f"invalid {key} = {value!r} in {source}: {bad or 'not a file'}; the"
                          " repository file may only name files committed in the repository")
    return norm


def check_repo_paths(layer: Layer) -> Layer:
    """Refuse path settings of the repository file that point outside the repository
    (:func:`repo_relative`); returns ``layer`` unchanged. Raises ConfigError."""
    for key in REPO_PATH_KEYS:
        value = _get(layer.data, key)
        if isinstance(value, str) and value:
            repo_relative(key, value, layer.source)
    return layer


def repo_path_keys(layers: Sequence[Layer], repo_source: str) -> frozenset[str]:
    """The keys of REPO_PATH_KEYS whose effective value comes from the layer named
    ``repo_source`` (the repository file): those are read from HEAD, never from disk."""
    data, origin = merge_layers(layers)
    return frozenset(k for k in REPO_PATH_KEYS
                     if origin.get(k) == repo_source and _get(data, k))


def read_repo_path(repo: Path, key: str, value: str, source: str) -> str:
    """The text of the file ``value`` (set by ``key`` in the repository file) committed at HEAD
    of ``repo``. Raises ConfigError when the path leaves the repository, is not a file
    committed at HEAD (untracked, only staged, a directory) or is larger than
    REPO_PATH_MAX_BYTES."""
    rel = repo_relative(key, value, source)
    [data] = git.head_blobs(repo, [rel])
    if data is None:
        raise ConfigError(f"invalid {key} = {value!r} in {source}: no such file committed at"
                          " HEAD (the repository file may only name committed files)")
    if len(data) > REPO_PATH_MAX_BYTES:
        raise ConfigError(f"invalid {key} = {value!r} in {source}: larger than"
                          f" {REPO_PATH_MAX_BYTES // 1024} KB")
    return git.decode_text(data)


def endpoint_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The repository file's ``[llm]`` settings that choose where requests go: ENDPOINT_KEYS and
    ROUTE_KEYS present in ``data`` (the parsed file)."""
    llm = data.get("llm") if isinstance(data, Mapping) else None
    if not isinstance(llm, Mapping):
        return {}
    return {k: llm[k] for k in (*ROUTE_KEYS, *ENDPOINT_KEYS) if k in llm}


def needs_endpoint_consent(settings: Mapping[str, Any], below: Sequence[Layer],
                           above: Sequence[Layer]) -> list[str]:
    """The keys of ``settings`` (from :func:`endpoint_settings`) that take effect only with the
    user's consent. ``below``: the user's layers under the repository file (the user file);
    ``above``: those over it (environment, flags).

    Always ENDPOINT_KEYS. A ROUTE_KEYS value only when it would change what the user's own
    settings select: not when a layer above sets the key (it wins anyway) or the user file sets
    the same value; yes when the user file sets another value, or when the user sets none but
    configures a key, key command, URL, provider or protocol that the repository's choice would
    redirect. With none of those, the only key a preset can use is its own variable
    (``DEEPSEEK_API_KEY`` for ``deepseek``), which goes where the preset says. Pure."""
    def llm_of(layers: Sequence[Layer]) -> Mapping[str, Any]:
        data, _ = merge_layers(layers)
        llm = data.get("llm")
        return llm if isinstance(llm, Mapping) else {}

    low, high = llm_of(below), llm_of(above)
    configured = any(low.get(k) or high.get(k) for k in USER_ROUTE_KEYS)
    out = []
    for k, v in settings.items():
        if k in ENDPOINT_KEYS:
            out.append(k)
        elif high.get(k) or low.get(k) == v:
            continue
        elif low.get(k) or configured:
            out.append(k)
    return out


# [budget] keys: money caps the repository file may lower but never raise (spec §13.7)
BUDGET_KEYS = ("daily_usd", "monthly_usd")


def cap_repo_budget(layer: Layer, below: Sequence[Layer]) -> tuple[Layer, list[str]]:
    """The repository file's layer without the ``[budget]`` caps that would raise the user's
    own (spec §13.7): a cap of ``below`` (the user file) is an upper bound the repository may
    only lower; with no user cap any repository cap is a lowering. Returns (the layer, the
    dotted keys dropped). Values compare as validation reads them (a number written as text
    too, ``"5"``); one that is no number is kept and validation refuses it. Pure."""
    table = layer.data.get("budget") if isinstance(layer.data, Mapping) else None
    if not isinstance(table, Mapping):
        return layer, []
    user, _ = merge_layers(below)
    mine = user.get("budget") if isinstance(user.get("budget"), Mapping) else {}
    dropped = []
    for key in BUDGET_KEYS:
        value, cap = _amount(table.get(key)), _amount(mine.get(key))
        if value is not None and cap is not None and value > cap:
            dropped.append(f"budget.{key}")
    if not dropped:
        return layer, []
    kept = {k: v for k, v in table.items() if f"budget.{k}" not in dropped}
    return Layer(layer.source, {**layer.data, "budget": kept}, layer.names), dropped


def _amount(value: object) -> float | None:
    """A cap as validation reads it (a number, or a number written as text), else None (a
    bool, anything else: validation refuses those)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
