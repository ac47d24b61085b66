"""MCP server configuration (spec §7.3): ``mcp.servers.<name>`` validated once at start-up.

A server is ``{type = "stdio", command, args, env, tools?, setup?}`` or ``{type = "http", url,
headers, tools?}`` (``type`` may be left out when ``command`` or ``url`` says it). ``tools`` is
an allow-list of tool names; ``setup`` is one command (an argv list, no shell) run in the
repository top before the server starts. ``${NAME}`` in ``env`` and ``headers`` values is
replaced by the variable from the review's environment (:func:`expand_vars`). Pure: nothing
here starts a process or imports ``mcp``/``anyio``; :mod:`.bridge` runs the servers.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Server(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: list[str] | None = None


class StdioServer(_Server):
    """A server started as a subprocess speaking MCP over stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    setup: list[str] | None = None

    @field_validator("setup")
    @classmethod
    def _setup_argv(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not v[0].strip()):
            raise ValueError("setup must be a non-empty argv list, e.g. [\"npm\", \"ci\"]")
        return v


class HttpServer(_Server):
    """A server reached over MCP streamable HTTP at ``url``."""

    type: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError("url must start with http:// or https://")
        return v


McpServer = Annotated[StdioServer | HttpServer, Field(discriminator="type")]


class _Servers(BaseModel):
    servers: dict[str, McpServer]


def parse_servers(
    raw: Mapping[str, Any], source: str = "configuration"
) -> dict[str, StdioServer | HttpServer]:
    """Validate ``mcp.servers`` (name → table). Raises ConfigError("invalid
    mcp.servers.<name>.<field> in <source>: <why>") for the first problem."""
    data: dict[str, Any] = {}
    for name, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"invalid mcp.servers.{name} in {source}: must be a table")
        if "type" not in entry:
            kind = "stdio" if "command" in entry else "http" if "url" in entry else None
            entry = {**entry, "type": kind} if kind else entry
        data[name] = entry
    try:
        return dict(_Servers.model_validate({"servers": data}).servers)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"][1:] if str(x) not in ("stdio", "http")]
        key = ".".join(["mcp.servers", *loc])
        msg = err["msg"]
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            msg = "type must be stdio (with command) or http (with url)"
        raise ConfigError(f"invalid {key} in {source}: {msg}") from None


def describe_server(name: str, spec: StdioServer | HttpServer) -> str:
    """One line for people (``git ocr config allow-mcp``): what runs or is contacted."""
    if isinstance(spec, HttpServer):
        return f"{name}: http {spec.url}"
    line = f"{name}: {argv_text([spec.command, *spec.args])}"
    if spec.env:
        line += f" (env: {', '.join(f'{k}={v}' for k, v in sorted(spec.env.items()))})"
    if spec.setup:
        line += f" (set-up: {argv_text(spec.setup)})"
    return line


def argv_text(argv: Sequence[str]) -> str:
    """``argv`` as one shell-quoted line, for messages (never executed)."""
    return " ".join(shlex.quote(a) for a in argv)


def expand_vars(value: str, environ: Mapping[str, str]) -> str:
    """Replace ``${NAME}`` by ``environ[NAME]`` (empty when unset)."""
    return _VAR.sub(lambda m: environ.get(m.group(1), ""), value)
