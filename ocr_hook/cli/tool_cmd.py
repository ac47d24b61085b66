"""``git ocr tool NAME ARG…`` (README "Delegation (no API key)"): one call of a built-in
context tool on the reviewed snapshot, as a delegated reviewer runs it from a shell. The
staged snapshot by default (``--commit``/``--from --to`` as ``git ocr delegate``), never the
work tree; the output is the tool result a model gets (``pipeline.run_tool``). Exit 0, 1 when
the tool answered with an error, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .. import pipeline
from ..errors import UsageError
from ..exitcodes import Exit
from .review_cmd import _build_request

USAGE = {
    "file_read": "git ocr tool file_read PATH [START END]",
    "code_search": "git ocr tool code_search TEXT [PATHSPEC ...]",
    "file_find": "git ocr tool file_find NAME",
}


def tool_arguments(name: str, words: Sequence[str]) -> dict[str, Any]:
    """The JSON arguments of tool ``name`` from its shell words. Raises UsageError (naming the
    usage) for an unknown tool or the wrong words."""
    if name not in USAGE:
        raise UsageError(f"unknown tool {name!r}; one of: {', '.join(USAGE)}")
    bad = UsageError(f"usage: {USAGE[name]}")
    if name == "file_read":
        if len(words) not in (1, 3):
            raise bad
        args: dict[str, Any] = {"file_path": words[0]}
        if len(words) == 3:
            try:
                args["start_line"], args["end_line"] = int(words[1]), int(words[2])
            except ValueError:
                raise bad from None
        return args
    if name == "code_search":
        if not words:
            raise bad
        return {"search_text": words[0], "file_patterns": list(words[1:])}
    if len(words) != 1:
        raise bad
    return {"query_name": words[0]}


def run_tool_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run the tool and print its result on stdout. Raises OcrError for bad input."""
    targs = tool_arguments(args.name, args.args)
    req, _layers = _build_request(args, environ, "review")
    if req.mcp is not None:
        req.mcp.close()
    result = pipeline.run_tool(req, args.name, targs)
    text = result.text
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return Exit.FINDINGS if result.is_error else Exit.OK
