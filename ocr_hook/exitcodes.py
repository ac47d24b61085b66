"""The one exit-code table of ocr-hook (spec §9). Imports nothing from ocr_hook.

``gate`` maps a verdict to one of these; only ``cli.main`` turns exceptions into them.
``git ocr config get`` and ``git ocr llm test`` reuse 1 and 3 with their own meaning (aliases).
"""

from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    """Process exit codes: 0 pass, 1 blocked by findings, 2 usage or configuration error,
    3 incomplete review with ``gate.on_error = block``, 130 interrupted (^C, as pre-commit)."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    INCOMPLETE = 3
    INTERRUPTED = 130
    # `git ocr config get KEY`: the key is unset (as `git config --get` reports it)
    NOT_SET = 1
    # `git ocr llm test` (spec §13): the model does not call tools; the request failed
    NO_TOOLS = 1
    LLM_FAILED = 3
