"""A review run: the request, input, run-level preparation, the LLM stage with its group pool and
deadline, ranges, the lock, the result cache, the services around a run, delegation
(``delegated``), the money caps (``spend``) and review notes (``review_notes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .cache.store import ResultCache
    from .delegated import Delegation, parse_findings, run_submitted, run_tool, task_text
    from .request import ReviewRequest
    from .review_notes import (
        notes_warning,
        record_review,
        settings_fingerprint,
        trusted_patches,
    )
    from .services import mcp_bridge, run_with_services, tool_defs
    from .spend import LedgerUnreadable, ledger_path, price_of, read_ledger, record_run, spent, usd

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "cache.store": ("ResultCache",),
    "delegated": ("Delegation", "parse_findings", "run_submitted", "run_tool", "task_text",),
    "request": ("ReviewRequest",),
    "review_notes": ("notes_warning", "record_review", "settings_fingerprint",
                     "trusted_patches",),
    "services": ("mcp_bridge", "run_with_services", "tool_defs",),
    "spend": ("LedgerUnreadable", "ledger_path", "price_of", "read_ledger", "record_run",
              "spent", "usd",),
})
