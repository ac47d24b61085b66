"""``git ocr config list|get|set|unset|path`` and the consent commands ``config allow-mcp`` and
``config allow-endpoint`` (spec §1, §2, §7.3, §14).

``set``/``unset`` change the user file (``config.user_config_path``) through
``config.edit_toml`` (tomlkit: comments and layout stay) and write it atomically with mode 0600
(``config.write_private``): it may hold an API key.

Values and origins shown come from files a repository may hold (``.ocr-hook.toml`` at HEAD, its
MCP servers): every line printed passes ``util.display_text`` (a TOML literal stays valid TOML:
the spelling is TOML's ``\\u009b``; a bare ``get`` value keeps its newlines and tabs), so no
raw control, format or separator character reaches the terminal, and a consent prompt shows
exactly what would run.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config, git, llm, tools
from ..errors import ConfigError, OcrError
from ..exitcodes import Exit
from ..util import display_text
from .common import repo_or_none, say

log = logging.getLogger("ocr_hook.cli")


def run_config_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``config <action>``; returns the exit code. Raises OcrError for usage errors."""
    action = getattr(args, "config_cmd", None)
    if action == "path":
        say(config.user_config_path(environ))
        return Exit.OK
    if action in ("list", "get"):
        return _list_or_get(args, environ)
    if action in ("set", "unset"):
        return _set_or_unset(args, environ)
    if action == "allow-mcp":
        return allow_mcp(environ)
    if action == "allow-endpoint":
        return allow_endpoint(environ)
    raise OcrError("usage: git ocr config list|get KEY|set KEY VALUE|unset KEY|path")


def _display(key: str, value: Any, raw: bool) -> str:
    """A value as ``get``/``list`` show it: a TOML literal, ``llm.api_key`` masked unless
    ``raw``; ``raw`` strings bare."""
    if key == "llm.api_key" and value and not raw:
        return config.toml_literal(llm.mask_key(str(value)))
    if raw and isinstance(value, str):
        return value
    return config.toml_literal(value)


def _list_or_get(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``config list [--show-origin]`` (every key) or ``config get KEY`` (exit 1 when unset)."""
    action = args.config_cmd
    layers = config.config_layers(repo_or_none(), environ)
    cfg = config.build_config(layers)
    _, origin = config.merge_layers(layers)
    keys = config.all_keys() if action == "list" else [args.key]
    if action == "get":
        config.field_of(args.key)
    for key in keys:
        section, name = key.split(".", 1)
        value = getattr(getattr(cfg, section), name)
        if action == "get":
            if value is None or value == "":
                return Exit.NOT_SET  # as `git config --get` reports it
            if key == "llm.api_key" and not args.show_secret:
                say(display_text(_display(key, value, raw=False)))  # masked, as `list` shows it
            else:
                say(display_text(_display(key, value, raw=True), keep="\n\t"))  # bare value
            return Exit.OK
        shown = "(unset)" if value is None else _display(key, value, raw=False)
        where = origin.get(key, "default")
        say(display_text(f"{key} = {shown}") + (f"\t# {display_text(where)}"
                                                  if args.show_origin else ""))
    return Exit.OK


def _set_or_unset(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``config set KEY VALUE`` (``-``: one line from stdin) or ``config unset KEY`` on the
    user file. The value and then the whole edited file are validated before anything is
    written. Raises ConfigError naming the command line or the file."""
    path = config.user_config_path(environ)
    config.field_of(args.key)
    text = config.read_user_file(path)
    new_value: Any = None
    if args.config_cmd == "set":
        raw = sys.stdin.readline().rstrip("\r\n") if args.value == "-" else args.value
        if not raw.strip():
            where = "no value on stdin" if args.value == "-" else "empty value"
            raise ConfigError(f"{where} for {args.key}; nothing written (to remove the key:"
                              f" git ocr config unset {args.key})")
        source = f"`git ocr config set {args.key}`"
        new_value = config.parse_value(args.key, raw, source)
        section, _, name = args.key.partition(".")
        # the value itself first: its error names the command, not the file
        config.build_config([config.Layer(source, {section: {name: new_value}})])
    new_text = config.edit_toml(text, args.key, new_value, str(path))
    # then what the file will hold, naming the file in the error
    config.build_config([config.Layer(str(path), config.parse_toml(new_text, str(path)))])
    if args.config_cmd == "unset" and new_text == text:
        log.info("%s is not set in %s", args.key, path)
        return Exit.OK
    config.write_private(path, new_text)
    return Exit.OK


def allow_mcp(environ: Mapping[str, str]) -> int:
    """``git ocr config allow-mcp``: show the MCP servers of ``.ocr-hook.toml`` at HEAD and
    record the user's consent for exactly that list (ocr_hook/config/consent.py)."""
    repo = git.find_toplevel(Path.cwd())
    src = config.REPO_SOURCE
    servers = tools.parse_servers(config.repo_mcp_servers(repo), src)
    if not servers:
        raise OcrError(f"{src} defines no mcp.servers; nothing to allow")
    lines = [tools.describe_server(n, s) for n, s in servers.items()]
    fp = config.consent_fingerprint({n: s.model_dump() for n, s in servers.items()})
    path = config.record_consent(environ, repo, fp, lines)
    print(display_text(f"Allowed the MCP servers of {src} in {repo} to run during reviews:"))
    for line in lines:
        print(f"  {display_text(line)}")
    print(display_text(f"Recorded in {path}; any change to this list needs a new"
                       " `git ocr config allow-mcp`."))
    return Exit.OK


def allow_endpoint(environ: Mapping[str, str]) -> int:
    """``git ocr config allow-endpoint``: trust the endpoint settings of ``.ocr-hook.toml`` at
    HEAD for this repository and its linked worktrees (ocr_hook/config/consent.py)."""
    repo = git.find_toplevel(Path.cwd())
    src = config.REPO_SOURCE
    data = config.read_repo_file(repo) or {}
    settings = config.repo_endpoint_settings(config.Layer(src, data))
    if not settings:
        raise OcrError(f"{src} sets no endpoint setting (llm.provider, llm.protocol,"
                       " llm.base_url, llm.extra_headers, llm.extra_body); nothing to allow")
    lines = [f"llm.{k} = {settings[k]!r}" for k in settings]
    fp = config.consent_fingerprint({"endpoint": settings})
    path = config.record_consent(environ, repo, fp, lines, kind="endpoint")
    print(display_text(f"Trusting the endpoint settings of {src} in {repo}:"))
    for line in lines:
        print(f"  {display_text(line)}")
    print(display_text(f"Recorded in {path}; any change to them needs a new"
                       " `git ocr config allow-endpoint`."))
    return Exit.OK
