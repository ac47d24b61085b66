"""Comparing the findings of two reviews (spec §12.2 ``git ocr session compare``, §12.3 since
the last blocked review). Pure.

Findings are matched on their dismissal key (``dismissals.finding_key``: path, normalised
anchored code, category), never on line numbers or wording, so a finding whose lines moved or
that the model worded differently is the same finding. Keys may repeat (two claims on the same
lines and category); they are paired in order, and the unpaired ones are resolved or new.

- :func:`compare_by_key`: resolved (only in A: its code changed or is gone), persisting (in
  both), new (only in B).
- :func:`compare_since`: the re-review of :func:`compare_by_key` with the model asked about
  each earlier finding: an earlier finding persists when the re-review has it by key, or the
  model raised it again (same path and claim, ``findings.same_claim``, on changed code), or its
  code is still in the file (``still_there``: unchanged code is not fixed because the model was
  silent); otherwise it is resolved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..findings import Finding, same_claim
from ..vocabulary import Severity
from .dismissals import finding_key


class Comparison(NamedTuple):
    """Findings of review A against review B: ``resolved`` (A's findings B no longer has),
    ``persisting`` ((A's finding, B's finding) pairs; B's is None when the earlier finding
    persists only because its code is unchanged, :func:`compare_since`), ``new`` (B's findings
    A did not have). Each list in the order of its review."""

    resolved: list[Finding]
    persisting: list[tuple[Finding, Finding | None]]
    new: list[Finding]

    def counts(self) -> str:
        """``1 resolved, 0 persisting, 0 new``."""
        return (f"{len(self.resolved)} resolved, {len(self.persisting)} persisting,"
                f" {len(self.new)} new")

    def ids(self) -> dict[str, list[str]]:
        """``{"resolved": [A ids], "persisting": [B ids, else A's], "new": [B ids]}`` (the
        JSON ``since_last`` lists, spec §11.2)."""
        return {"resolved": [f.id for f in self.resolved],
                "persisting": [(b or a).id for a, b in self.persisting],
                "new": [f.id for f in self.new]}


def finding_from_record(rec: Mapping[str, Any]) -> Finding | None:
    """The finding of a session ``comment`` record (spec §12: id, path, side, start_line,
    end_line, severity, category, anchor, content, source, code); None when a field it needs
    (id, path, a known severity) is missing or of the wrong type (a hand-edited file)."""
    sev = Severity.parse(rec.get("severity"))
    fid, path = rec.get("id"), rec.get("path")
    if sev is None or not isinstance(fid, str) or not isinstance(path, str) or not fid:
        return None

    def num(key: str) -> int:
        v = rec.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    def text(key: str) -> str:
        v = rec.get(key)
        return v if isinstance(v, str) else ""

    code = text("code")
    return Finding(id=fid, path=path, side=text("side") or "new", start_line=num("start_line"),
                   end_line=num("end_line"), severity=sev, category=text("category"),
                   content=text("content"), existing_code=code, suggestion_code="",
                   anchor=text("anchor"), source=text("source") or "llm", code=code)


def compare_by_key(a: Sequence[Finding], b: Sequence[Finding]) -> Comparison:
    """A's findings against B's, matched by dismissal key (see the module docstring)."""
    waiting: dict[str, list[Finding]] = {}
    for f in b:
        waiting.setdefault(finding_key(f), []).append(f)
    resolved: list[Finding] = []
    persisting: list[tuple[Finding, Finding | None]] = []
    for f in a:
        same = waiting.get(finding_key(f))
        if same:
            persisting.append((f, same.pop(0)))
        else:
            resolved.append(f)
    paired = {id(y) for _x, y in persisting}
    return Comparison(resolved, persisting, [f for f in b if id(f) not in paired])


def compare_since(earlier: Sequence[Finding], current: Sequence[Finding],
                  still_there: Callable[[Finding], bool]) -> Comparison:
    """The re-review ``current`` against the ``earlier`` findings it was shown: by key first
    (:func:`compare_by_key`); then an earlier finding left over persists when a current
    finding on its path makes the same claim (the model raised it again on the changed code),
    else when ``still_there(finding)`` (its anchored code is still in the file: persisting
    with no current finding); otherwise it is resolved. ``still_there`` is called only for
    the earlier findings that neither matched by key nor were raised again."""
    by_key = compare_by_key(earlier, current)
    persisting = list(by_key.persisting)
    new = list(by_key.new)
    resolved: list[Finding] = []
    for e in by_key.resolved:
        again = next((f for f in new if f.path == e.path and same_claim(e, f)), None)
        if again is not None:
            new.remove(again)
            persisting.append((e, again))
        elif still_there(e):
            persisting.append((e, None))
        else:
            resolved.append(e)
    return Comparison(resolved, persisting, new)
