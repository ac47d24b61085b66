"""Gate (spec §9): structured findings + gate options → verdict and exit code. Pure.

Verdict: ``pass``, ``findings`` (≥ 1 finding at or above ``fail_on``) or ``incomplete`` (some
selected file was not reviewed). Exit codes: 0 pass (always in advisory mode), 1 blocked by
findings, 2 usage/configuration error, 3 incomplete with ``on_error = block``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .exitcodes import Exit
from .findings import Finding
from .vocabulary import Severity

__all__ = ["Exit", "GateDecision", "GateOptions", "decide"]


class GateOptions(NamedTuple):
    """The ``[gate]`` settings of a run."""

    mode: str = "blocking"  # blocking | advisory
    fail_on: str = "high"  # critical | high | medium | low
    on_error: str = "allow"  # allow | block


class GateDecision(NamedTuple):
    verdict: str  # pass | findings | incomplete
    blocking_findings: int
    exit_code: int
    blocked: bool


def decide(findings: Sequence[Finding], incomplete: bool, opts: GateOptions) -> GateDecision:
    """Apply the gate. Findings take precedence over incompleteness for the verdict: a
    blocking finding blocks even when other files could not be reviewed. Unanchored findings
    count (spec §9)."""
    threshold = Severity[opts.fail_on.upper()]
    hits = sum(1 for f in findings if f.severity >= threshold)
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
