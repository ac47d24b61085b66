"""Configuration loading (spec §2): reads the user file, the repository file ``.ocr-hook.toml`` at
HEAD (never the work tree), the environment and the command-line flags into the layers that
``layering.build_config`` validates; guards the repository's endpoint settings and MCP servers
behind the user's consent; writes the user file (mode 0600, atomically) for ``git ocr config set``.

The user file is ``$XDG_CONFIG_HOME/ocr-hook/config.toml`` (``~/.config/…`` without XDG).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import git
from ..errors import ConfigError, OcrError
from ..util import user_config_dir
from . import layering
from .models import REPO_FILE
from .repo_file import (
    cap_repo_budget,
    check_repo_paths,
    endpoint_settings,
    needs_endpoint_consent,
    repo_path_keys,
)

log = logging.getLogger(__name__)

REPO_SOURCE = f"{REPO_FILE} (HEAD)"  # how errors name the committed repository file
# The repository files a review reads at HEAD (this one, ``change.rule_sources.OCR_RULE_FILE``,
# ``comments.dismissals.SHARED_FILE`` and ``change.guidance.GUIDANCE_FILES``): read in the same
# ``git cat-file --batch`` as this one (``git.head_blobs``), so each costs no process of its own
HEAD_FILES = (REPO_FILE, ".opencodereview/rule.json", ".ocr-hook-dismissed.json",
              "AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules")


def user_config_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/ocr-hook/config.toml``, else ``~/.config/ocr-hook/config.toml``."""
    return user_config_dir(environ) / "config.toml"


def read_user_file(path: Path) -> str:
    """The user file's text ("" when it does not exist). Raises ConfigError when unreadable."""
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from e


def config_layers(repo: Path | None, environ: Mapping[str, str],
                  flags: Any | None = None, *, llm_command: bool = False) -> list[Any]:
    """The layers of spec §2, lowest first: user file, repository file ``.ocr-hook.toml`` read
    from HEAD (when ``repo`` is given; secrets refused, paths confined to the repository,
    endpoint settings behind consent: ``repo``), the selected preset's standard
    variables (``OPENAI_API_KEY``…), ``OCR_HOOK_*``/``OCR_LLM_*``, and ``flags`` (a Layer).
    ``llm_command``: the command calls the LLM (review, hooks, ``llm test``), so ignored
    endpoint settings are worth a warning; other commands drop them silently."""
    layers: list[Any] = []
    user = user_config_path(environ)
    text = read_user_file(user)
    if text:
        layers.append(layering.Layer(str(user), layering.parse_toml(text, str(user))))
    env = layering.env_layer(environ)
    upper = [env] + ([flags] if flags is not None else [])
    if repo is not None:
        data = read_repo_file(repo)
        if data is not None:
            layer = check_repo_paths(layering.check_repo_layer(layering.Layer(REPO_SOURCE, data)))
            layer, raised = cap_repo_budget(layer, layers)
            if raised:  # spec §13.7: a repository may lower the user's money caps, not raise them
                (log.warning if llm_command else log.debug)(
                    "ignoring %s from %s: a repository may only lower your budget caps",
                    ", ".join(raised), REPO_SOURCE)
            layer = drop_repo_telemetry(layer, warn=llm_command)
            layers.append(guard_repo_endpoint(layer, repo, environ, list(layers), upper,
                                              warn=llm_command))
    layers.append(layering.preset_env_layer([*layers, *upper], environ))
    layers.extend(upper)
    return layers


def drop_repo_telemetry(layer: Any, warn: bool = True) -> Any:
    """The repository file's layer without its ``[telemetry]`` table (spec §2.5, §11.7): where
    traces go and whether they carry code is the user's choice, so a repository can neither turn
    them on nor put its code or prompts in them. When ``warn``, a warning says it was ignored."""
    if "telemetry" not in layer.data:
        return layer
    (log.warning if warn else log.debug)(
        "ignoring [telemetry] from %s: only your own settings may turn on telemetry",
        layer.source)
    return layering.Layer(layer.source, {k: v for k, v in layer.data.items() if k != "telemetry"})


def repo_endpoint_settings(layer: Any) -> dict[str, Any]:
    """The repository file's settings that decide where requests go (``llm.provider``,
    ``llm.protocol``, ``llm.base_url``, ``llm.extra_headers``, ``llm.extra_body``)."""
    return endpoint_settings(layer.data)


def guard_repo_endpoint(layer: Any, repo: Path, environ: Mapping[str, str],
                        below: Sequence[Any] = (), above: Sequence[Any] = (),
                        warn: bool = True) -> Any:
    """Drop the committed repository file's endpoint settings that need consent
    (``repo.needs_endpoint_consent``: ``llm.base_url``, ``llm.extra_headers``,
    ``llm.extra_body``, and a ``llm.provider``/``llm.protocol`` that changes what the user's
    own layers ``below``/``above`` select) unless the user allowed exactly these settings with
    ``git ocr config allow-endpoint`` (spec §14: a repository must not be able to send the
    user's API key to a server of its choosing). Returns the layer, possibly without those
    keys; when ``warn``, a warning says what was ignored. Consent is looked up per repository
    (its git common directory: linked worktrees share it, ``consent.consent_given``)."""
    settings = repo_endpoint_settings(layer)
    needed = needs_endpoint_consent(settings, below, above)
    if not needed:
        return layer
    from . import consent  # hashlib: only for settings that need a consent fingerprint

    fp = consent.consent_fingerprint({"endpoint": settings})
    if consent.consent_given(environ, repo, fp, kind="endpoint"):
        return layer
    llm = {k: v for k, v in layer.data["llm"].items() if k not in needed}
    data = {**layer.data, "llm": llm}
    (log.warning if warn else log.debug)(
        "ignoring %s from %s: a repository may not choose where your API key is sent; review"
        " it and run `git ocr config allow-endpoint` to trust it",
        ", ".join(f"llm.{k}" for k in needed), layer.source,
    )
    return layering.Layer(layer.source, data)


def read_repo_file(repo: Path) -> dict[str, Any] | None:
    """The parsed ``.ocr-hook.toml`` committed at HEAD of ``repo``, or None when there is none
    (or no HEAD yet). Raises ConfigError for invalid TOML."""
    [data] = git.head_blobs(repo, [REPO_FILE], prefetch=HEAD_FILES)
    if data is None:
        return None
    return layering.parse_toml(git.decode_text(data), REPO_SOURCE)


def repo_mcp_servers(repo: Path) -> dict[str, Any]:
    """The raw ``mcp.servers`` table of ``.ocr-hook.toml`` at HEAD ({} when absent). Raises
    OcrError when it is not a table."""
    data = read_repo_file(repo) or {}
    servers = (data.get("mcp") or {}).get("servers") or {}
    if not isinstance(servers, dict):
        raise OcrError(f"invalid mcp.servers in {REPO_SOURCE}: must be a table")
    return servers


def load_config(repo: Path, flags: Mapping[str, Any], environ: Mapping[str, str]
                ) -> layering.Config:
    """Layer defaults, user file, repository file (from HEAD), the preset's standard variables,
    ``OCR_HOOK_*``/``OCR_LLM_*`` and the flags (``layering.flag_layer``), then validate (spec §2).
    Raises ConfigError for the first invalid value."""
    return layering.build_config(config_layers(repo, environ, layering.flag_layer(flags)))


def load_settings(repo: Path, flags: Mapping[str, Any], environ: Mapping[str, str],
                  llm_command: bool = False, origins: dict[str, str] | None = None
                  ) -> tuple[layering.Config, frozenset[str]]:
    """:func:`load_config`, plus the path keys (``repo.REPO_PATH_KEYS``) whose value came from
    the repository file: their files are read from HEAD (``repo.read_repo_path``), never from
    disk. ``llm_command`` as for :func:`config_layers`. ``origins``, when given, receives each
    set key's source (dotted key → "environment variable …", a file). Raises ConfigError."""
    layers = config_layers(repo, environ, layering.flag_layer(flags), llm_command=llm_command)
    cfg = layering.build_config(layers)
    if origins is not None:
        origins.update(layering.merge_layers(layers)[1])
    return cfg, repo_path_keys(layers, REPO_SOURCE)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically with mode 0600 (folder created 0700): a temporary
    file in the same folder, fsync, ``os.replace``. Raises ConfigError on failure."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from e
