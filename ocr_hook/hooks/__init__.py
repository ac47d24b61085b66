"""Native git hooks: install, chain an existing hook, uninstall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .hosts import HOSTS, bypass_clause, framework_skip_id, hook_host
    from .native import HOOK_TYPES, hook_command, install, uninstall

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "native": ("HOOK_TYPES", "hook_command", "install", "uninstall",),
    "hosts": ("HOSTS", "bypass_clause", "framework_skip_id", "hook_host",),
})
