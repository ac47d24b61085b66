"""The optional detect-secrets pass (``security.detect_secrets``, extra
``ocr-hook[detect-secrets]``): Yelp's detect-secrets run next to our rules, never instead.

Input: the lines our own scan reports on (:func:`added_rows`: the added lines of each
hunk, or every line of a file scanned whole), per path; never a file read from the repository.
detect-secrets runs with its default settings (every plugin, its default filters, no
verification: it makes no network call) over those lines as one file named by its path (its
filters and keyword rules depend on the file name), numbered in that order and mapped back to
new-side line numbers. Its settings are process-global: the pass holds a lock and restores them
(``default_settings``). It uses detect-secrets 1.x's line scanner
(``detect_secrets.core.scan._process_line_based_plugins``, what its ``scan_file`` and
``scan_diff`` run on lines), so a version without it counts as not installed.

Each value it reports that our redaction did not already replace on that line (the value is
still in the redacted row) becomes a ``critical`` ``security`` finding on its line, typed
``detect-secrets:<plugin type>`` (``Hex High Entropy String`` → ``hex-high-entropy-string``),
and a literal for the run's ``Redactor``: every occurrence of the value in anything sent to the
model becomes ``[REDACTED:detect-secrets:<plugin type>]``. As for our rules, a value in
``security.allow_secrets`` or on a line carrying ``ocr-hook: allow-secret`` is no finding but is
still redacted. A line with detect-secrets' own ``pragma: allowlist secret`` is skipped by its
default filter: it reports nothing there, so nothing there is redacted by this pass.

Imported only when the setting is on; ``detect_secrets`` itself is imported inside
:func:`detect_secrets_hits`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..diff import FileDiff
from ..findings import Finding, finding_id
from ..vocabulary import AnchorMethod, Category, Severity
from .diff_scan import SECRET_CONTENT, hunk_text, unmarked
from .redaction import ALLOW_MARKER, is_allowed, redact

INSTALL_HINT = "pip install 'ocr-hook[detect-secrets]'"  # the extra (pyproject.toml)
SOURCE = "detect-secrets"  # Finding.source, and the prefix of the placeholder types
NOT_INSTALLED = (
    "security.detect_secrets is on but detect-secrets is not installed (or not version 1.x): "
    f"{INSTALL_HINT}; secrets were looked for with ocr-hook's own rules only"
)

_LOCK = threading.Lock()  # detect-secrets' settings are a process-wide global


@dataclass(frozen=True)
class LibraryHit:
    """One value detect-secrets reported that our rules did not cover: ``path``, 1-based
    new-side ``line``, ``type`` the placeholder type (``detect-secrets:<plugin-type>``),
    ``value`` the secret itself (keep it in memory, never log it)."""

    path: str
    line: int
    type: str
    value: str


@dataclass(frozen=True)
class AddedRow:
    """One line the scan treats as added: its new-side line number, its text (no diff marker,
    a ``\r`` kept), whether it is in a hunk (else a line of a file scanned whole), and where it
    was scanned: row ``index`` of ``context``, its hunk as ``hunk_text`` (``marked``: rows
    start with their diff marker) or the whole file. The context string is shared by its rows,
    not copied."""

    new_line: int
    text: str
    in_hunk: bool
    context: str
    index: int
    marked: bool

    def redacted(self, memo: dict[int, list[str]]) -> str:
        """The row after ``redaction.redact`` of its whole context (so a PEM body line is already
        a placeholder), without a diff marker. ``memo``: the caller's redacted contexts by
        ``id(context)``, filled here (one redaction per hunk or file)."""
        rows = memo.get(id(self.context))
        if rows is None:
            rows = memo[id(self.context)] = redact(self.context)[0].split("\n")
        return unmarked(rows[self.index], "+") if self.marked else rows[self.index]


def added_rows(files: Sequence[FileDiff], full_texts: Mapping[str, str] | None = None
               ) -> dict[str, list[AddedRow]]:
    """path → the lines ``secret_findings`` can report, in order: the added lines of each
    hunk, or every line of a file in ``full_texts``. Files without such lines are left out.
    Nothing is redacted until ``AddedRow.redacted`` is asked."""
    full = full_texts or {}
    out: dict[str, list[AddedRow]] = {}
    for fd in files:
        text = full.get(fd.path)
        rows: list[AddedRow] = []
        if text is not None:
            added = {ln.new_line for h in fd.hunks for ln in h.lines if ln.kind == "+"}
            rows = [AddedRow(n, t, n in added, text, n - 1, False)
                    for n, t in enumerate(text.split("\n"), 1)]
        for h in fd.hunks if text is None else ():
            if not any(ln.kind == "+" for ln in h.lines):
                continue
            context = hunk_text(h)
            rows.extend(AddedRow(ln.new_line, ln.text, True, context, i, True)
                        for i, ln in enumerate(h.lines)
                        if ln.kind == "+" and ln.new_line is not None)
        if rows:
            out[fd.path] = rows
    return out


def placeholder_type(plugin_type: str) -> str:
    """``Hex High Entropy String`` → ``detect-secrets:hex-high-entropy-string``."""
    slug = re.sub(r"[^a-z0-9]+", "-", plugin_type.lower()).strip("-") or "secret"
    return f"{SOURCE}:{slug}"


def detect_secrets_hits(rows: Mapping[str, Sequence[AddedRow]]) -> list[LibraryHit]:
    """The values detect-secrets reports on ``rows`` (path → the lines to scan, in order) that
    our redaction left in place, ordered by path and line. Raises ImportError when
    detect-secrets 1.x is not installed."""
    from detect_secrets.core.scan import _is_filtered_out, _process_line_based_plugins
    from detect_secrets.settings import default_settings, get_filters

    hits: list[LibraryHit] = []
    memo: dict[int, list[str]] = {}  # our redaction of each hunk or file, made on a first hit
    with _LOCK, default_settings() as settings:
        # our paths are repository paths, not files on disk: skip its "file exists" filter
        settings.disable_filters("detect_secrets.filters.common.is_invalid_file")
        get_filters.cache_clear()
        for path, file_rows in rows.items():
            if _is_filtered_out(required_filter_parameters=["filename"], filename=path):
                continue  # lock files, binary names, swagger files: as its scan_file does
            numbered = [(i, r.text) for i, r in enumerate(file_rows, 1)]
            for secret in _process_line_based_plugins(numbered, filename=path):
                value = secret.secret_value
                if not value or not 1 <= secret.line_number <= len(file_rows):
                    continue
                row = file_rows[secret.line_number - 1]
                if value in row.text and value not in row.redacted(memo):
                    continue  # our rules already replace it
                hits.append(LibraryHit(path, row.new_line, placeholder_type(secret.type), value))
    hits.sort(key=lambda h: (h.path, h.line))
    return list(dict.fromkeys(hits))


def library_findings(
    hits: Sequence[LibraryHit], rows: Mapping[str, Sequence[AddedRow]], allow: Sequence[str]
) -> tuple[list[Finding], dict[str, str]]:
    """(findings, literals) of ``hits``: one ``critical``/``security`` finding per line and
    type whose value is not allow-listed (``allow``, or ALLOW_MARKER on the line), quoting the
    line with every secret redacted; and value → placeholder type for every hit, allowed ones
    included (the run's ``Redactor``)."""
    literals = {h.value: h.type for h in hits}
    memo: dict[int, list[str]] = {}
    by_line = {(path, r.new_line): r for path, rs in rows.items() for r in rs}
    out: list[Finding] = []
    seen: set[tuple[str, int, str]] = set()
    for h in hits:
        row = by_line.get((h.path, h.line))
        if row is None or ALLOW_MARKER in row.text or is_allowed(h.value, allow):
            continue
        if (h.path, h.line, h.type) in seen:
            continue
        seen.add((h.path, h.line, h.type))
        quote = redact(row.redacted(memo), literals)[0]
        content = SECRET_CONTENT.format(type=h.type)
        out.append(Finding(
            id=finding_id(h.path, "new", quote, content), path=h.path, side="new",
            start_line=h.line, end_line=h.line, severity=Severity.CRITICAL,
            category=Category.SECURITY, content=content, existing_code=quote, suggestion_code="",
            anchor=AnchorMethod.HUNK_NEW if row.in_hunk else AnchorMethod.FILE, source=SOURCE,
        ))
    return out, literals
