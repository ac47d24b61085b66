"""Small helpers every stage uses: atomic files, shipped data, templates, token counts, worker
threads, shape checks, text for people, the telemetry facade (``tracing``); and
:func:`lazy_exports`, which every package's ``__init__.py`` uses to name its public API.

A package's public names load on first use: each stage package lists them in its ``__init__.py``
as ``{module: names}`` and hands that table to :func:`lazy_exports`. ``from ocr_hook.change
import load_change_set`` then imports ``ocr_hook.change.changeset`` at that moment and nothing
else of the package, so a hook run loads only the modules its path uses (PEP 562 module
``__getattr__``). The same names are imported under ``if TYPE_CHECKING:`` in each
``__init__.py`` for type checkers and editors; ``tests/test_layers.py`` checks that the two
lists agree and that every name exists.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ``git ocr -h`` loads this
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any


def lazy_exports(package: str, table: Mapping[str, Sequence[str]]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` from ``table``, which maps a module
    path relative to the package (``"selection"``, ``"mcp.bridge"``) to the names it provides.
    A name is looked up once: its value is stored in the package's namespace. An unknown name
    raises AttributeError, as for any module (so ``from pkg import submodule`` still imports
    the submodule)."""
    where = {name: module for module, names in table.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        full = f"{package}.{module}"
        __import__(full)
        value = getattr(sys.modules[full], name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, __dir__, sorted(where)


if TYPE_CHECKING:
    from .atomicfile import (
        TEMP_PREFIX,
        create_unique,
        read_if_present,
        sweep_stale_temps,
        write_atomic,
    )
    from .resources import list_builtin_dir, load_builtin_json, read_builtin_text, user_config_dir
    from .shapes import Bound, Check, check_shape, field_types, plain_type
    from .telemetry import tracing
    from .templates import render_template
    from .text import (
        display_path,
        display_text,
        escape_char,
        has_raw_bytes,
        human_bytes,
        one_line,
        path_bytes_b64,
        prompt_path,
        prompt_text,
        real_path,
        shown_text,
        unescape_prompt_path,
        xml_attr,
    )
    from .tokens import count_tokens
    from .workers import WorkerPool

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "atomicfile": (
        "TEMP_PREFIX",
        "create_unique",
        "read_if_present",
        "sweep_stale_temps",
        "write_atomic",
    ),
    "resources": ("list_builtin_dir", "load_builtin_json", "read_builtin_text", "user_config_dir",),
    "shapes": ("Bound", "Check", "check_shape", "field_types", "plain_type",),
    "templates": ("render_template",),
    "text": (
        "display_path", "display_text", "escape_char", "has_raw_bytes", "human_bytes", "one_line",
        "path_bytes_b64", "prompt_path", "prompt_text", "real_path", "shown_text",
        "unescape_prompt_path", "xml_attr",
    ),
    "telemetry": ("tracing",),
    "tokens": ("count_tokens",),
    "workers": ("WorkerPool",),
})
