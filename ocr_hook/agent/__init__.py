"""The model's side of a review: grouping, prompts, the tool loop with its stop reasons,
compression, single-shot tasks, the token budget and the redaction choke point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .budget import BudgetedClient
    from .filtering import relocate_snippet, review_filter
    from .grouping import Group, build_groups
    from .loop import ContextPolicy, run_loop, stop_reason_for, text_tool_calls
    from .meter import Meter
    from .prompts import (
        CONFIRMED_CAP,
        EARLIER_CAP,
        PROMPT_CONTEXT_FRACTION,
        confirmed_block,
        earlier_block,
        exceeds_tokens,
        group_fields,
        group_messages,
    )
    from .redactor import RedactingClient, Redactor
    from .tasks import grouping_call, summary_call

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "budget": ("BudgetedClient",),
    "filtering": ("relocate_snippet", "review_filter",),
    "grouping": ("Group", "build_groups",),
    "loop": ("ContextPolicy", "run_loop", "stop_reason_for", "text_tool_calls",),
    "meter": ("Meter",),
    "prompts": (
        "CONFIRMED_CAP",
        "PROMPT_CONTEXT_FRACTION",
        "confirmed_block",
        "EARLIER_CAP", "earlier_block",
        "exceeds_tokens",
        "group_fields",
        "group_messages",
    ),
    "redactor": ("RedactingClient", "Redactor",),
    "tasks": ("grouping_call", "summary_call",),
})
