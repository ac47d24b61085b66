"""The tools the model calls: the registry, the built-in tools (one module each, in ``builtin/``),
the snapshot they read, the second search of a Perl regexp git gave up on (``search_retry``), and
MCP servers (``mcp/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .builtin import builtin_handlers
    from .builtin.code_comment import code_comment_handler
    from .builtin.task_done import parse_task_done
    from .mcp.bridge import McpBridge, describe_server, parse_servers
    from .registry import (
        Handler,
        Registry,
        ToolResult,
        apply_tools_file,
        build_registry,
        load_tool_specs,
        parse_tools_json,
        read_tools_file,
    )
    from .snapshot import SnapshotView

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "builtin": ("builtin_handlers",),
    "builtin.code_comment": ("code_comment_handler",),
    "builtin.task_done": ("parse_task_done",),
    "mcp.bridge": ("McpBridge", "describe_server", "parse_servers",),
    "registry": (
        "Handler",
        "Registry",
        "ToolResult",
        "apply_tools_file",
        "build_registry",
        "load_tool_specs",
        "parse_tools_json",
        "read_tools_file",
    ),
    "snapshot": ("SnapshotView",),
})
