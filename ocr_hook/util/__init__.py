"""Small helpers every stage uses: atomic files, shipped data, templates, token counts, worker
threads, shape checks, text for people.
"""

from __future__ import annotations

from .lazy import TYPE_CHECKING, lazy_exports

if TYPE_CHECKING:
    from .atomicfile import (
        TEMP_PREFIX,
        create_unique,
        read_if_present,
        sweep_stale_temps,
        write_atomic,
    )
    from .pathtext import has_raw_bytes, path_bytes_b64, real_path, shown_text
    from .resources import list_builtin_dir, load_builtin_json, read_builtin_text, user_config_dir
    from .shapes import Bound, Check, check_shape, field_types, plain_type
    from .templates import render_template, unescape_prompt_path, xml_attr
    from .text import human_bytes, one_line
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
    "pathtext": ("has_raw_bytes", "path_bytes_b64", "real_path", "shown_text",),
    "resources": ("list_builtin_dir", "load_builtin_json", "read_builtin_text", "user_config_dir",),
    "shapes": ("Bound", "Check", "check_shape", "field_types", "plain_type",),
    "templates": ("render_template", "unescape_prompt_path", "xml_attr",),
    "text": ("human_bytes", "one_line",),
    "tokens": ("count_tokens",),
    "workers": ("WorkerPool",),
})
