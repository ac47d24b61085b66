"""Gate (spec §9): structured findings + gate options → verdict and exit code. Pure.

Verdict: ``pass``, ``findings`` (≥ 1 finding at or above ``fail_on``) or ``incomplete`` (some
selected file was not reviewed). Exit codes: 0 pass (always in advisory mode), 1 blocked by
findings, 2 usage/configuration error, 3 incomplete with ``on_error = block``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .exitcodes import Exit
from .findings import Finding, advisory_reason
from .vocabulary import Severity

__all__ = ["Exit", "GateDecision", "GateOptions", "blocks", "decide", "would_block"]


class GateOptions(NamedTuple):
    """The ``[gate]`` settings of a run."""

    mode: str = "blocking"  # blocking | advisory
    fail_on: str = "high"  # critical | high | medium | low
    on_error: str = "allow"  # allow | block
    block_preexisting: bool = False  # True: pre-existing and moved findings block too


class GateDecision(NamedTuple):
    verdict: str  # pass | findings | incomplete
    blocking_findings: int
    exit_code: int
    blocked: bool


def decide(findings: Sequence[Finding], incomplete: bool, opts: GateOptions) -> GateDecision:
    """Apply the gate. Findings take precedence over incompleteness for the verdict: a
    blocking finding blocks even when other files could not be reviewed. Unanchored findings
    count (spec §9); advisory ones (:func:`blocks`: pre-existing or moved unchanged) do not,
    unless ``opts.block_preexisting``."""
    hits = sum(1 for f in findings if blocks(f, opts))
    if hits:
        verdict = "findings"
    elif incomplete:
        verdict = "incomplete"
    else:
        verdict = "pass"
    if opts.mode == "advisory":
        code = Exit.OK
    elif verdict == "findings":
        code = Exit.FINDINGS
    elif verdict == "incomplete" and opts.on_error == "block":
        code = Exit.INCOMPLETE
    else:
        code = Exit.OK
    return GateDecision(verdict, hits, int(code), code != Exit.OK)


def would_block(f: Finding, opts: GateOptions) -> bool:
    """Whether ``f`` is at or above ``opts.fail_on`` in blocking mode, whatever its advisory
    reason (the findings worth asking git about moved code, ``pipeline.prepare``)."""
    return opts.mode != "advisory" and f.severity >= Severity[opts.fail_on.upper()]


def blocks(f: Finding, opts: GateOptions) -> bool:
    """Whether ``f`` counts toward the ``findings`` verdict: at or above ``opts.fail_on`` and not
    advisory (``findings.advisory_reason``: the model's ``preexisting`` flag or code moved
    unchanged), unless ``opts.block_preexisting`` (spec §9)."""
    if f.severity < Severity[opts.fail_on.upper()]:
        return False
    return opts.block_preexisting or not advisory_reason(f)
