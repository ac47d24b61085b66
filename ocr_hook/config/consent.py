"""The user's consent for MCP servers defined in a repository's ``.ocr-hook.toml`` (spec §7.3,
§14: repository configuration cannot run commands without the user's consent).

``git ocr config allow-mcp`` records, outside the repository, that the user allowed one exact
server list for one repository; a review starts repository-defined servers only when the list
it reads from HEAD has a recorded consent. Any change to the list (a command, an argument, an
environment value, a set-up command, a URL, a header, an allow-list) changes the fingerprint
and needs a new consent. What the commands themselves execute (a script inside the repository,
say) is not fingerprinted: consent is for the command list, as the spec says.

Stores, in ``$XDG_CONFIG_HOME/ocr-hook/`` (``~/.config`` when unset), mode 0600, written
atomically: ``mcp-consent.json`` for MCP server lists and ``endpoint-consent.json`` for the
endpoint settings of ``git ocr config allow-endpoint`` (endpoint consents recorded in
``mcp-consent.json`` by earlier versions are still honoured). Both:
``{"version": 1, "allowed": [{"repository": <key>, "fingerprint": <sha256 hex>, "servers":
[<one line per server or setting>], "allowed_at": <ISO 8601>}]}``. The repository key is the
absolute git common directory (shared by all linked worktrees of one repository); records keyed
on a work-tree top-level path by earlier versions still count for that work tree.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import git, util
from ..errors import ConfigError
from ..util import user_config_dir

CONSENT_FILE = "mcp-consent.json"
ENDPOINT_CONSENT_FILE = "endpoint-consent.json"
STORE_VERSION = 1
KINDS = ("mcp", "endpoint")


def consent_path(environ: Mapping[str, str], kind: str = "mcp") -> Path:
    """Where consents of ``kind`` (``mcp`` or ``endpoint``) are stored:
    ``$XDG_CONFIG_HOME/ocr-hook/mcp-consent.json`` or ``…/endpoint-consent.json``."""
    name = ENDPOINT_CONSENT_FILE if kind == "endpoint" else CONSENT_FILE
    return user_config_dir(environ) / name


def repository_key(repository: Path) -> str:
    """The key a consent is recorded under: the repository's git common directory, absolute
    and resolved (one key for the main work tree and every linked worktree). Raises OcrError
    when ``repository`` is not a git work tree."""
    return str(git.git_common_dir(repository).resolve())


def consent_fingerprint(servers: Mapping[str, Mapping[str, Any]]) -> str:
    """SHA-256 (hex) of the canonical JSON (sorted keys, no spaces) of the server tables
    (name → the validated entry as plain data)."""
    canon = json.dumps(servers, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read consent file {path}: {e}") from e
    allowed = data.get("allowed") if isinstance(data, dict) else None
    return [a for a in allowed if isinstance(a, dict)] if isinstance(allowed, list) else []


def consent_given(environ: Mapping[str, str], repository: Path, fp: str, kind: str = "mcp") -> bool:
    """True when the user allowed ``fp`` (a server list, or endpoint settings for ``kind``
    ``endpoint``) for ``repository`` (a work-tree top level): recorded under its common
    directory, or under this top-level path by an earlier version. Raises ConfigError when a
    store exists but cannot be read."""
    paths = [consent_path(environ, kind)]
    if kind == "endpoint":
        paths.append(consent_path(environ, "mcp"))  # where earlier versions recorded them
    entries = [a for p in paths for a in _load(p) if a.get("fingerprint") == fp]
    if not entries:
        return False
    keys = {str(repository), repository_key(repository)}
    return any(a.get("repository") in keys for a in entries)


def record_consent(
    environ: Mapping[str, str], repository: Path, fp: str, lines: Sequence[str],
    now: _dt.datetime | None = None, kind: str = "mcp",
) -> Path:
    """Record consent for ``fp`` (``kind`` ``mcp``: a server list; ``endpoint``: endpoint
    settings) in ``repository`` under its common-directory key (earlier consents stay valid,
    so switching branches does not ask again) and return the store's path. Raises
    ConfigError when it cannot be written."""
    path = consent_path(environ, kind)
    repo = repository_key(repository)
    entries = [
        a for a in _load(path) if (a.get("repository"), a.get("fingerprint")) != (repo, fp)
    ]
    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).isoformat(timespec="seconds")
    entries.append({"repository": repo, "fingerprint": fp, "servers": list(lines),
                    "allowed_at": stamp})
    data = json.dumps({"version": STORE_VERSION, "allowed": entries}, indent=2) + "\n"
    try:
        util.write_atomic(path, data.encode("utf-8"), mode=0o600)
    except OSError as e:
        raise ConfigError(f"cannot write consent file {path}: {e}") from e
    return path
