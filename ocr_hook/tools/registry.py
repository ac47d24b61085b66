"""Tool registry (SPEC §7.2): one interface for built-in and MCP tools, filled at start-up and
then frozen; dispatch turns every failure into a result the model can read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import resources
from ..errors import ConfigError
from ..llm.types import ToolCall, ToolSpec

log = logging.getLogger(__name__)

NOT_AVAILABLE = (
    "Error: Tool not found. The tool {name!r} does not exist or is not available in this phase."
    " Available tools: {names}."
)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model sees for one tool call. ``is_error`` marks "Error: …" results."""

    text: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(message if message.startswith("Error") else f"Error: {message}", True)


Handler = Callable[[dict[str, Any]], ToolResult]


@dataclass(frozen=True, slots=True)
class Tool:
    """A registered tool: its definition, phases and handler (arguments dict → ToolResult)."""

    spec: ToolSpec
    handler: Handler
    plan: bool = False
    main: bool = True
    source: str = "builtin"


def load_tool_specs(path_text: str | None = None) -> dict[str, tuple[ToolSpec, bool, bool]]:
    """Tool definitions from ``config/tools.json`` (or a user file's text in the same format):
    name → (spec, in plan phase, in main phase). Raises ConfigError on malformed input."""
    try:
        data = json.loads(path_text) if path_text is not None else resources.load_json("tools.json")
        entries = data["tools"] if isinstance(data, dict) else data
        out: dict[str, tuple[ToolSpec, bool, bool]] = {}
        for e in entries:
            d = e["definition"]
            out[e["name"]] = (
                ToolSpec(d.get("name", e["name"]), d.get("description", ""), d["parameters"]),
                bool(e.get("plan_task", False)),
                bool(e.get("main_task", True)),
            )
        return out
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"tools file: malformed tool definition ({e})") from e


class Registry:
    """Name → Tool. ``add`` until ``freeze``; first registration of a name wins."""

    def __init__(self, strict: bool = False) -> None:
        self._tools: dict[str, Tool] = {}
        self._frozen = False
        self.strict = strict

    def add(self, tool: Tool) -> bool:
        """Register ``tool``; returns False (and keeps the first) when the name is taken."""
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

    def specs(self, phase: str = "main", only: tuple[str, ...] = ()) -> list[ToolSpec]:
        """Definitions offered in ``phase`` (plan | main), optionally limited to ``only``."""
        out = []
        for t in self._tools.values():
            if only and t.spec.name not in only:
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
        """Run one tool call. Unknown or disallowed names, undecodable or non-object arguments
        and empty names are answered with an error result naming the expected schema; a
        handler's crash becomes an error result (unless ``strict``, used by tests).
        ``local`` overrides handlers for this call (per-group ``code_comment``/``task_done``)."""
        tool = self._tools.get(call.name)
        if tool is None or (allowed and call.name not in allowed):
            names = ", ".join(allowed or tuple(self._tools))
            return ToolResult(NOT_AVAILABLE.format(name=call.name or "", names=names), True)
        if call.parse_error is not None:
            return ToolResult.error(
                f"Error parsing tool arguments for {call.name}: {call.parse_error}. Expected a JSON"
                f" object matching: {json.dumps(tool.spec.parameters, separators=(',', ':'))}"
            )
        args: Mapping[str, Any] | Any = call.arguments
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
