"""The user's consent for MCP servers defined in a repository's ``.ocr-hook.toml`` (SPEC §7.3,
§14: repository configuration cannot run commands without the user's consent).

``git ocr config allow-mcp`` records, outside the repository, that the user allowed one exact
server list for one repository; a review starts repository-defined servers only when the list
it reads from HEAD has a recorded consent. Any change to the list (a command, an argument, an
environment value, a set-up command, a URL, a header, an allow-list) changes the fingerprint
and needs a new consent. What the commands themselves execute (a script inside the repository,
say) is not fingerprinted: consent is for the command list, as the spec says.

Store: ``$XDG_CONFIG_HOME/ocr-hook/mcp-consent.json`` (``~/.config`` when unset), mode 0600,
written atomically: ``{"version": 1, "allowed": [{"repository": <top-level path>,
"fingerprint": <sha256 hex>, "servers": [<one line per server>], "allowed_at": <ISO 8601>}]}``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import atomicfile
from .errors import ConfigError
from .resources import user_config_dir

CONSENT_FILE = "mcp-consent.json"
STORE_VERSION = 1


def consent_path(environ: Mapping[str, str]) -> Path:
    """Where consents are stored: ``$XDG_CONFIG_HOME/ocr-hook/mcp-consent.json``."""
    return user_config_dir(environ) / CONSENT_FILE


def fingerprint(servers: Mapping[str, Mapping[str, Any]]) -> str:
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
        raise ConfigError(f"cannot read MCP consent file {path}: {e}") from e
    allowed = data.get("allowed") if isinstance(data, dict) else None
    return [a for a in allowed if isinstance(a, dict)] if isinstance(allowed, list) else []


def is_allowed(environ: Mapping[str, str], repository: Path, fp: str) -> bool:
    """True when the user allowed server list ``fp`` for ``repository``. Raises ConfigError
    when the store exists but cannot be read."""
    repo = str(repository)
    return any(
        a.get("repository") == repo and a.get("fingerprint") == fp
        for a in _load(consent_path(environ))
    )


def record(
    environ: Mapping[str, str], repository: Path, fp: str, lines: Sequence[str],
    now: _dt.datetime | None = None,
) -> Path:
    """Record consent for server list ``fp`` in ``repository`` (earlier consents stay valid,
    so switching branches does not ask again) and return the store's path. Raises
    ConfigError when it cannot be written."""
    path = consent_path(environ)
    repo = str(repository)
    entries = [
        a for a in _load(path) if (a.get("repository"), a.get("fingerprint")) != (repo, fp)
    ]
    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).isoformat(timespec="seconds")
    entries.append({"repository": repo, "fingerprint": fp, "servers": list(lines),
                    "allowed_at": stamp})
    data = json.dumps({"version": STORE_VERSION, "allowed": entries}, indent=2) + "\n"
    try:
        atomicfile.write_bytes(path, data.encode("utf-8"), mode=0o600)
    except OSError as e:
        raise ConfigError(f"cannot write MCP consent file {path}: {e}") from e
    return path
