"""Small helpers every stage uses: atomic files, shipped data, templates, token counts, worker threads, shape checks, text for people."""

from __future__ import annotations

from .lazy import TYPE_CHECKING, lazy_exports

if TYPE_CHECKING:
    from .atomicfile import TEMP_PREFIX, create_unique, read_bytes, sweep_stale_temps, write_bytes
    from .pathtext import has_raw_bytes, path_bytes_b64, real_path, shown
    from .resources import list_dir, load_json, read_text, user_config_dir
    from .shapes import Bound, Check, check, field_types, plain_type
    from .templates import render, unescape_prompt_path, xml_attr
    from .text import one_line
    from .tokens import count_tokens
    from .workers import WorkerPool

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "atomicfile": (
        "TEMP_PREFIX",
        "create_unique",
        "read_bytes",
        "sweep_stale_temps",
        "write_bytes",
    ),
    "pathtext": ("has_raw_bytes", "path_bytes_b64", "real_path", "shown",),
    "resources": ("list_dir", "load_json", "read_text", "user_config_dir",),
    "shapes": ("Bound", "Check", "check", "field_types", "plain_type",),
    "templates": ("render", "unescape_prompt_path", "xml_attr",),
    "text": ("one_line",),
    "tokens": ("count_tokens",),
    "workers": ("WorkerPool",),
})
