"""Comparing the findings of two reviews (spec §12.2 ``git ocr session compare``, §12.3 since
the last blocked review). Pure.

A later finding matches an earlier one first by its explicit reference (``Finding.repeats``:
the model filed that earlier finding again, ``E2`` in the prompt, the earlier id in a session
record; a reference to an earlier finding on another path is ignored, :func:`same_path_refs`),
then by dismissal key (``dismissals.finding_key``: path, normalised anchored code,
category), never by line numbers, so moved lines stay the same finding. Keys may repeat; they
pair in order.

- :func:`compare_by_key` (``session compare``): reference, then key. Resolved: A's findings B
  has not (B's dismissed ones aside: **dismissed**); persisting: in both; new: B's others. No
  model looked, so "resolved" only means "not in B".
- :func:`compare_since` (the re-review): as above, then ``findings.same_claim`` on the same
  path; an earlier finding left over is **resolved** only when its file was reviewed (the model
  was shown it and did not file it again), **carried** when its file was not reviewed (the
  chain keeps it), **dismissed** when this review dismissed it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NamedTuple

from ..findings import Finding, same_claim
from ..vocabulary import Severity
from .dismissals import finding_key


class Comparison(NamedTuple):
    """Findings of review A against review B: ``resolved`` (A's findings B no longer has),
    ``persisting`` ((A's finding, B's finding) pairs), ``new`` (B's findings A did not have),
    ``carried`` (A's findings on files B did not review, :func:`compare_since` only),
    ``dismissed`` (A's findings B dismissed). Each list in the order of its review."""

    resolved: list[Finding]
    persisting: list[tuple[Finding, Finding]]
    new: list[Finding]
    carried: Sequence[Finding] = ()
    dismissed: Sequence[Finding] = ()

    def counts(self) -> str:
        """``1 resolved, 0 persisting, 0 new``, then ``, 1 carried`` and ``, 1 dismissed``
        when there are any."""
        text = (f"{len(self.resolved)} resolved, {len(self.persisting)} persisting,"
                f" {len(self.new)} new")
        for word, items in (("carried", self.carried), ("dismissed", self.dismissed)):
            if items:
                text += f", {len(items)} {word}"
        return text

    def ids(self) -> dict[str, list[str]]:
        """``{"resolved": [A ids], "persisting": [B ids], "new": [B ids], "carried": [A ids],
        "dismissed": [A ids]}`` (the JSON ``since_last`` lists, spec §12.3)."""
        return {"resolved": [f.id for f in self.resolved],
                "persisting": [b.id for _a, b in self.persisting],
                "new": [f.id for f in self.new],
                "carried": [f.id for f in self.carried],
                "dismissed": [f.id for f in self.dismissed]}


def finding_from_record(rec: Mapping[str, Any]) -> Finding | None:
    """The finding of a session ``comment`` (or ``dismissed``) record (spec §12: id, path,
    side, start_line, end_line, severity, category, anchor, content, source, code, repeats);
    None when a field it needs (id, path, a known severity) is missing or of the wrong type (a
    hand-edited file)."""
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
                   anchor=text("anchor"), source=text("source") or "llm", code=code,
                   repeats=text("repeats"))


def _refers(later: Finding, i: int, earlier: Finding) -> bool:
    """``later`` names ``earlier`` (the ``i``-th, 0-based): ``E<i+1>`` or its id."""
    return bool(later.repeats) and later.repeats in (f"E{i + 1}", earlier.id)


def _pair(a: Sequence[tuple[int, Finding]], b: Sequence[Finding], *, claims: bool = False,
          ) -> tuple[dict[int, Finding], list[Finding]]:
    """A's (index, finding) pairs against B: A's index → its B finding (by reference, then
    key, then with ``claims`` same path and ``same_claim``), and B's findings left unpaired,
    in order."""
    left = list(b)
    paired: dict[int, Finding] = {}
    tests: list[Callable[[int, Finding, Finding], bool]] = [
        lambda i, e, f: _refers(f, i, e),
        lambda _i, e, f: not f.repeats and finding_key(e) == finding_key(f)]
    if claims:
        tests.append(lambda _i, e, f: not f.repeats and f.path == e.path and same_claim(e, f))
    for test in tests:
        for i, e in a:
            if i in paired:
                continue
            again = next((f for f in left if test(i, e, f)), None)
            if again is not None:
                paired[i] = again
                left.remove(again)
    return paired, left


def same_path_refs(earlier: Sequence[Finding], later: Sequence[Finding]) -> list[Finding]:
    """``later`` with each ``repeats`` that does not name an earlier finding (``E<n>`` or its
    id) on its own path cleared: an unknown label, or another file's finding (one file's
    finding cannot be another's filed again); such a finding is matched by key and claim like
    any other."""
    out = []
    for f in later:
        if f.repeats:
            named = next((e for i, e in enumerate(earlier)
                          if f.repeats in (f"E{i + 1}", e.id)), None)
            if named is None or named.path != f.path:
                f = f._replace(repeats="")
        out.append(f)
    return out


def _split(earlier: Sequence[Finding], later: Sequence[Finding], dismissed: Sequence[Finding],
           claims: bool) -> tuple[list[tuple[Finding, Finding]], list[Finding],
                                  list[tuple[int, Finding]], set[int]]:
    """(persisting pairs, new, the earlier (index, finding) left over, the indexes of those
    that pair with a dismissed finding)."""
    later, dismissed = same_path_refs(earlier, later), same_path_refs(earlier, dismissed)
    numbered = list(enumerate(earlier))
    paired, new = _pair(numbered, later, claims=claims)
    rest = [(i, e) for i, e in numbered if i not in paired]
    gone, _ = _pair(rest, dismissed, claims=claims)
    return [(e, paired[i]) for i, e in numbered if i in paired], new, rest, set(gone)


def compare_by_key(a: Sequence[Finding], b: Sequence[Finding],
                   b_dismissed: Sequence[Finding] = ()) -> Comparison:
    """A's findings against B's (``session compare``): by reference, then key (see the module
    docstring); an A finding that pairs only with one of ``b_dismissed`` (B's dismissed
    findings) is dismissed, not resolved."""
    persisting, new, rest, gone = _split(a, b, b_dismissed, False)
    return Comparison([e for i, e in rest if i not in gone], persisting, new, [],
                      [e for i, e in rest if i in gone])


def compare_since(earlier: Sequence[Finding], current: Sequence[Finding],
                  reviewed: Collection[str], dismissed: Sequence[Finding] = ()) -> Comparison:
    """The re-review ``current`` against the ``earlier`` findings it was shown (labels ``E1``…
    are positions in ``earlier``): paired by reference, key, then same path and claim. An
    earlier finding left over is dismissed when it pairs with one of ``dismissed`` (this
    review's dismissed findings), else resolved when its path is in ``reviewed`` (the files
    this review reviewed, complete: the model was asked about it and did not file it again),
    else carried (its file was not reviewed: nothing is known)."""
    persisting, new, rest, gone = _split(earlier, current, dismissed, True)
    left = [e for i, e in rest if i not in gone]
    return Comparison([e for e in left if e.path in reviewed], persisting, new,
                      [e for e in left if e.path not in reviewed],
                      [e for i, e in rest if i in gone])
