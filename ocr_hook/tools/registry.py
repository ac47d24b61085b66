"""Tool registry (spec §7.2): one interface for built-in and MCP tools, filled at start-up and
then frozen; dispatch turns every failure into a result the model can read.

A tool is a definition (``ToolSpec``: name, description, JSON Schema parameters) plus a handler
(arguments dict → ``ToolResult``, whose ``is_error`` marks an ``Error: …`` text). Built-in
definitions come from ``config/tools.json`` (``{"tools": [{name, plan_task, main_task,
definition: {name, description, parameters}}]}``, the reference tool's (OCR) format); a user
``tools.file`` in the same format may drop built-in tools or rewrite descriptions, and is
validated at start-up (:func:`apply_tools_file`, shapes in ``tools_file``); the shipped file
is package data, read as it is. Built-in handlers come from the one table of built-in tools,
``builtin.TOOLS`` (bound by ``builtin.builtin_handlers``). MCP tools are added after the
built-ins (:func:`build_registry`): reserved built-in names are skipped and the first
registration of a name wins.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .. import util
from ..errors import ConfigError
from ..llm import ToolCall, ToolSpec

log = logging.getLogger(__name__)

# The reference tool's (OCR) tool.NotAvailableMsg, naming the tool and the offered ones.
NOT_AVAILABLE = (
    "Error: Tool not found. The tool {name!r} does not exist or is not available. Please check"
    " the tool name and try again with one of: {names}."
)
# Tools a tools.file may not drop: the loop cannot end or report without them (spec §6.2).
REQUIRED_TOOLS = ("task_done", "code_comment")
# Names every provider accepts (OpenAI function names; Anthropic allows the same set).
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolResult(NamedTuple):
    """What the model sees for one tool call. ``is_error`` marks "Error: …" results."""

    text: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(message if message.startswith("Error") else f"Error: {message}", True)


Handler = Callable[[dict[str, Any]], ToolResult]


class ToolDef(NamedTuple):
    """A tool definition and the phases that offer it (plan | main)."""

    spec: ToolSpec
    plan: bool = False
    main: bool = True


class Tool(NamedTuple):
    """A registered tool: its definition, phases and handler (arguments dict → ToolResult).
    ``source`` is ``builtin`` or ``mcp:<server>``. ``alive`` (None = always) says whether the
    tool can still run; a dead one is withdrawn from later ``specs`` (an MCP server that
    stopped during the review)."""

    spec: ToolSpec
    handler: Handler
    plan: bool = False
    main: bool = True
    source: str = "builtin"
    alive: Callable[[], bool] | None = None


def parse_tools_json(
    text: str | None = None, source: str = "config/tools.json"
) -> dict[str, ToolDef]:
    """Tool definitions in the ``config/tools.json`` format (``{"tools": [...]}`` or a bare
    list): name → ToolDef, in file order. ``text`` None reads the shipped file. Raises
    ConfigError("tools file <source>: …") on invalid JSON, a malformed entry or a duplicate."""
    try:
        data = json.loads(text) if text is not None else util.load_builtin_json("tools.json")
    except ValueError as e:
        raise ConfigError(f"tools file {source}: not valid JSON ({e})") from e
    if isinstance(data, list):
        data = {"tools": data}
    if text is None:
        return _shipped(data)
    from .tools_file import parse  # a user's tools file: its shapes load only for one

    parsed = parse(data, source)
    out: dict[str, ToolDef] = {}
    for entry in parsed.tools:
        if entry.name in out:
            raise ConfigError(f"tools file {source}: tool {entry.name!r} is listed twice")
        d = entry.definition
        if d.name and d.name != entry.name:
            raise ConfigError(
                f"tools file {source}: tool {entry.name!r} has definition.name {d.name!r}"
            )
        out[entry.name] = ToolDef(
            ToolSpec(entry.name, d.description, d.parameters), entry.plan_task, entry.main_task
        )
    return out


def _shipped(data: Any) -> dict[str, ToolDef]:
    """The shipped definitions, read as they are (package data in the tools-file format; the
    tests check that validating them gives the same result, so a review builds no file
    shapes)."""
    out: dict[str, ToolDef] = {}
    for entry in data["tools"]:
        d = entry["definition"]
        out[entry["name"]] = ToolDef(
            ToolSpec(entry["name"], d.get("description", ""), d["parameters"]),
            entry.get("plan_task", False), entry.get("main_task", True))
    return out


def load_tool_specs(path_text: str | None = None) -> dict[str, tuple[ToolSpec, bool, bool]]:
    """Shipped (or given) definitions as name → (spec, in plan phase, in main phase)."""
    return {n: (d.spec, d.plan, d.main) for n, d in parse_tools_json(path_text).items()}


def _strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


def read_tools_file(path: str) -> str:
    """The text of the tools file at ``path`` (``tools.file`` / ``--tools``; ``~`` expanded,
    relative to the working directory). Raises ConfigError("cannot read tools file PATH
    (tools.file, --tools): <reason in words>") when it is missing, unreadable or not UTF-8
    text: one line, no ``[Errno N]``."""
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as e:
        why = e.strerror or type(e).__name__
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    raise ConfigError(f"cannot read tools file {path} (tools.file, --tools): {why}")


def apply_tools_file(
    builtin: Mapping[str, ToolDef], text: str, source: str
) -> dict[str, ToolDef]:
    """The built-in definitions narrowed by a user tools file (spec §7.2), in built-in order.

    A built-in tool absent from the file is dropped (``task_done`` and ``code_comment`` cannot
    be). A listed tool takes the file's descriptions (the tool's and its parameters'); its
    parameter schema must otherwise equal the built-in one, and its phases may only be
    narrowed (``plan_task``/``main_task`` true only where the built-in has them). Raises
    ConfigError at start-up for an unknown name or any other violation.
    """
    given = parse_tools_json(text, source)
    unknown = [n for n in given if n not in builtin]
    if unknown:
        raise ConfigError(
            f"tools file {source}: unknown tool {unknown[0]!r}; built-in tools:"
            f" {', '.join(builtin)}"
        )
    missing = [n for n in REQUIRED_TOOLS if n in builtin and n not in given]
    if missing:
        raise ConfigError(f"tools file {source}: {missing[0]} cannot be dropped")
    out: dict[str, ToolDef] = {}
    for name, base in builtin.items():
        mine = given.get(name)
        if mine is None:
            continue
        if _strip_descriptions(mine.spec.parameters) != _strip_descriptions(base.spec.parameters):
            raise ConfigError(
                f"tools file {source}: tool {name!r}: only descriptions may change, not the"
                " parameters schema"
            )
        if (mine.plan and not base.plan) or (mine.main and not base.main):
            raise ConfigError(
                f"tools file {source}: tool {name!r} cannot be added to a phase it is not"
                " built for (plan_task/main_task may only be turned off)"
            )
        if name in REQUIRED_TOOLS and not mine.main:
            raise ConfigError(f"tools file {source}: {name} cannot be dropped")
        description = mine.spec.description or base.spec.description
        out[name] = ToolDef(ToolSpec(name, description, mine.spec.parameters), mine.plan, mine.main)
    return out


class Registry:
    """Name → Tool. ``add`` until ``freeze``; first registration of a name wins. Read-only
    (and so safe to share between worker threads) once frozen."""

    def __init__(self, strict: bool = False) -> None:
        self._tools: dict[str, Tool] = {}
        self._frozen = False
        self.strict = strict

    def add(self, tool: Tool) -> bool:
        """Register ``tool``; returns False (and keeps the first) when the name is taken.
        Raises RuntimeError once frozen."""
        if self._frozen:
            raise RuntimeError("tool registry is frozen")
        if tool.spec.name in self._tools:
            return False
        self._tools[tool.spec.name] = tool
        return True

    def freeze(self) -> Registry:
        self._frozen = True
        return self

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self, phase: str = "main", only: tuple[str, ...] = ()) -> list[ToolSpec]:
        """Definitions offered in ``phase`` (plan | main), optionally limited to ``only``;
        tools whose ``alive()`` is False are left out."""
        out = []
        for t in self._tools.values():
            if (only and t.spec.name not in only) or (t.alive is not None and not t.alive()):
                continue
            if (phase == "plan" and t.plan) or (phase == "main" and t.main):
                out.append(t.spec)
        return out

    def dispatch(
        self,
        call: ToolCall,
        allowed: tuple[str, ...] = (),
        local: Mapping[str, Handler] | None = None,
    ) -> ToolResult:
        """Run one tool call. Unknown or disallowed names (and empty names) are answered with
        the not-available error listing the offered tools; undecodable or non-object arguments
        with an error giving the expected schema; a handler's crash becomes an error result
        (unless ``strict``, used by tests). ``local`` overrides handlers for this call
        (per-group ``code_comment``)."""
        tool = self._tools.get(call.name)
        if tool is None or (allowed and call.name not in allowed):
            names = ", ".join(allowed or tuple(self._tools))
            return ToolResult(NOT_AVAILABLE.format(name=call.name or "", names=names), True)
        if call.parse_error is not None:
            return ToolResult.error(
                f"Error parsing tool arguments for {call.name}: {call.parse_error}. Expected a JSON"
                f" object matching: {json.dumps(tool.spec.parameters, separators=(',', ':'))}"
            )
        args: Any = call.arguments
        if args is None or args == "":
            args = {}
        if not isinstance(args, dict):
            return ToolResult.error(
                f"arguments for {call.name} must be a JSON object, got {type(args).__name__}."
                f" Expected: {json.dumps(tool.spec.parameters, separators=(',', ':'))}"
            )
        handler = (local or {}).get(call.name, tool.handler)
        try:
            return handler(args)
        except Exception as e:  # noqa: BLE001 - a tool bug must not end the review
            if self.strict:
                raise
            log.debug("tool %s crashed", call.name, exc_info=True)
            return ToolResult.error(f"Error executing tool {call.name}: {type(e).__name__}")


class ExternalTool(NamedTuple):
    """A tool offered by an MCP server: ``source`` names it (``mcp:<server>``); ``alive`` is
    False once its server has stopped (see :class:`Tool`)."""

    spec: ToolSpec
    handler: Handler
    source: str
    alive: Callable[[], bool] | None = None


def _unavailable(name: str) -> Handler:
    def handler(_args: dict[str, Any]) -> ToolResult:
        return ToolResult.error(f"Error: tool {name} is not available here")

    return handler


def build_registry(
    defs: Mapping[str, ToolDef],
    handlers: Mapping[str, Handler],
    external: Iterable[ExternalTool] = (),
    *,
    reserved: Iterable[str] = (),
    warn: Callable[[str], None] = lambda msg: None,
    strict: bool = False,
) -> Registry:
    """Fill and freeze a registry (spec §7.2, §7.3): the built-in ``defs`` with their
    ``handlers`` (a definition without a handler answers "not available here"; per-group
    handlers come through ``dispatch(local=…)``), then the ``external`` (MCP) tools, offered
    in both phases as OCR does. An external tool is skipped, with ``warn(message)``, when its
    name is reserved (every shipped built-in name, even one a tools file dropped), already
    registered (first registration wins) or not a valid provider tool name."""
    reg = Registry(strict=strict)
    for name, d in defs.items():
        reg.add(Tool(d.spec, handlers.get(name) or _unavailable(name), d.plan, d.main))
    taken = set(reserved) | set(defs)
    for ext in external:
        name = ext.spec.name
        if not TOOL_NAME_RE.match(name):
            warn(f"{ext.source} tool {name!r} skipped: tool names must match [A-Za-z0-9_-]{{1,64}}")
        elif name in taken:
            warn(f"{ext.source} tool {name!r} skipped: the name is reserved for a built-in tool")
        elif reg.get(name) is not None:
            first = reg.get(name)
            warn(
                f"{ext.source} tool {name!r} skipped: already registered by"
                f" {first.source if first else 'another server'}"
            )
        else:
            reg.add(Tool(ext.spec, ext.handler, True, True, ext.source, ext.alive))
    return reg.freeze()
