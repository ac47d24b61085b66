"""Tool calls written as text (spec §6.2 fallback, for servers without a tool-call parser).

Parses the formats models write when the server does not turn them into native tool calls
(Qwen3-Coder XML, Llama 3.1 ``<function=…>``, Hermes/Qwen JSON objects) into
:class:`~ocr_hook.llm.types.ToolCall` values, and strips a leading ``<think>`` block from
answers. Pure: no I/O.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..llm import ToolCall, decode_arguments, split_think

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)


def strip_think(text: str) -> str:
    """Drop a leading ``<think>…</think>`` block (reasoning models without a parser)."""
    return _THINK.sub("", text or "", count=1)


def _json_objects(text: str) -> list[Any]:
    """Every top-level JSON object in ``text`` (prose, markdown fences and markup around them
    are skipped), in order."""
    dec = json.JSONDecoder()
    out: list[Any] = []
    i = 0
    while True:
        j = text.find("{", i)
        if j < 0:
            return out
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            i = j + 1
            continue
        out.append(obj)
        i = end


# compiled on first use (re's cache): most replies carry native tool calls; both re.S
_FUNCTION_TAG = r"<function=([\w.-]+)>(.*?)(?:</function>|$)"
_PARAMETER_TAG = r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>"
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "input", "args")


def _xml_parameter(value: str) -> Any:
    """A ``<parameter=…>`` value: JSON when it parses (arrays, objects, numbers, booleans), else
    the text itself (Qwen3-Coder writes strings unquoted)."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def _calls_in(text: str, known: set[str]) -> list[tuple[str, Any]]:
    """(name, arguments as written) of the tool calls written in ``text``; ``...`` stands for
    absent arguments. Formats: ``<function=NAME><parameter=K>V</parameter></function>``
    (Qwen3-Coder XML, also inside ``<tool_call>``), ``<function=NAME>{json}</function>``
    (Llama 3.1), and JSON objects — bare, fenced or inside ``<tool_call>`` (Hermes/Qwen) — of
    the shapes ``{"name", "arguments"|"parameters"|"input"|"args"}``, ``{"function": {…}}`` and
    ``{"tool_calls": [...]}``. Names not in ``known`` are ignored."""
    found: list[tuple[str, Any]] = []
    for m in re.finditer(_FUNCTION_TAG, text, re.S):
        name, body = m.group(1), m.group(2)
        if name not in known:
            continue
        params = re.findall(_PARAMETER_TAG, body, re.S)
        if params:
            found.append((name, {k: _xml_parameter(v) for k, v in params}))
        elif body.strip():
            found.append((name, body.strip()))
        else:
            found.append((name, ...))
    if found:
        return found
    queue = _json_objects(text)
    while queue:
        obj = queue.pop(0)
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("tool_calls"), list):
            queue[:0] = obj["tool_calls"]
            continue
        fn = obj["function"] if isinstance(obj.get("function"), dict) else obj
        name = next((fn[k] for k in _NAME_KEYS if isinstance(fn.get(k), str)), None)
        if name not in known:
            continue
        key = next((k for k in _ARG_KEYS if k in fn), None)
        found.append((name, fn[key] if key else ...))
    return found


def text_tool_calls(content: str, known: set[str]) -> list[ToolCall]:
    """Tool calls written as text in ``content`` (spec §6.2 fallback, for servers without a
    tool-call parser): see :func:`_calls_in` for the formats. Calls in the answer win; calls
    only written inside a leading ``<think>`` block are taken when the answer has none. Only
    names in ``known`` are accepted. Arguments are decoded as native tool calls are
    (``llm.types.decode_arguments``): anything but a JSON object carries a ``parse_error``, so
    the registry answers with the expected schema instead of running on coerced arguments.
    Ids are synthetic."""
    think, answer = split_think(content or "")
    found = _calls_in(answer, known)
    if not found and think:
        found = _calls_in(think, known)
    calls: list[ToolCall] = []
    for name, args in found:
        raw = "" if args is ... else args if isinstance(args, str) else json.dumps(
            args, ensure_ascii=False)
        value, err = decode_arguments(None if args is ... else raw)
        # 48 random bits as 12 hex digits (no uuid import: it loads platform, slow at start-up)
        calls.append(ToolCall(f"call_{os.urandom(6).hex()}", name, raw, value, err, True))
    return calls
