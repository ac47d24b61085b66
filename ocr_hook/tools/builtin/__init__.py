"""The built-in tools (spec §7.1): one module per tool, and :data:`TOOLS`, the one list of them in
code (tool name → handler factory), which :func:`builtin_handlers` reads for the registry.

The context tools (``file_read``, ``file_read_diff``, ``file_find``, ``code_search``) read
``<head>:<path>`` through the snapshot (``tools.snapshot.SnapshotView``; ``head`` is the staged
snapshot tree, or the reviewed commit; ``file_read_diff`` reads a diff the change set did not
load from ``base..head``), never the work tree, and are confined to the
repository: paths with ``..``, absolute paths and drive letters are refused before git runs,
and git's own ``<tree>:<path>`` lookup never follows a symlink, so a symlink reads as its link
text and nothing behind it (a path through a symlinked directory is "not found"). Files on the
secret-path list of spec §4 (``config/path_lists.json``: ``.env``, keys, ``.netrc`` …) are never
returned, since they are excluded from the review for exactly that reason. Output formats and
strings follow spec §7.1, which keeps those of the reference tool (OCR). Every failure is a
``ToolResult`` starting with ``Error:``; no handler raises for bad arguments or git failures
(timeouts included).

Adding a built-in tool ``my_tool``:

1. ``tools/builtin/my_tool.py``: the tool, ``my_tool(view, args) -> ToolResult``, answering bad
   arguments with ``ToolResult.error("Error: …")``, and ``make_handler(env: ToolEnv) ->
   Handler`` binding it to what it needs (``env.view``, the snapshot; repository reads go
   through it). Shared helpers are in ``common.py``.
2. Its line in :data:`TOOLS` below.
3. Its spec in ``config/tools.json``: name, description and JSON Schema parameters (what the
   model sees; a user's tools file may rewrite descriptions) and the phases that offer it
   (``plan_task``, ``main_task``).

``tests/tools/builtin/test_table.py`` checks that TOOLS and ``config/tools.json`` name the same
tools and that every handler answers a bad-argument call with a result; the other tests take
the list of tools from TOOLS, so only the new tool's own tests and its documentation (spec
§7.1, the README's tool list) are added beside it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Handler
from ..snapshot import SnapshotView
from . import code_comment, code_search, file_find, file_read, file_read_diff, task_done
from .common import ToolEnv

# Tool name → the factory of its handler; in the order of config/tools.json.
TOOLS: dict[str, Callable[[ToolEnv], Handler | None]] = {
    "task_done": task_done.make_handler,
    "code_comment": code_comment.make_handler,
    "file_read": file_read.make_handler,
    "file_read_diff": file_read_diff.make_handler,
    "file_find": file_find.make_handler,
    "code_search": code_search.make_handler,
}


def builtin_handlers(view: SnapshotView) -> dict[str, Handler]:
    """The run's handlers of the built-in tools bound to ``view``: tool name → handler. A
    tool whose factory needs more than the run gives (``code_comment``, bound per group) is
    left out; the registry answers it "not available here" unless a dispatch supplies it."""
    env = ToolEnv(view)
    handlers = {name: make(env) for name, make in TOOLS.items()}
    return {name: h for name, h in handlers.items() if h is not None}
