"""The deterministic findings of a change, made without the LLM and so also without an
endpoint or a reviewable file: secrets and prompt-injection phrases (spec §14, through
``secrets.diff_scan``) and edits to review-configuration files (spec §5); and, for the loader
(``changeset``), the first bytes and the secret scan of the blobs that are not loaded as diffs
(``secrets.blobs``).

The I/O is ``git cat-file``: of a renamed or copied secret file (``git.run_git_full``), and the
streams of the blobs not loaded. With ``security.detect_secrets`` on, detect-secrets also scans
the lines our secret scan reports on (``secrets.detect_secrets_pass``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import git, secrets, util
from ..diff import FileDiff
from ..findings import Finding, finding_id
from ..git import GENERATED_SCAN_BYTES
from ..vocabulary import AnchorMethod, Category, Severity
from .selection import Decision, SelectionReason, looks_generated, marker_head, needs_head

BINARY_SNIFF_BYTES = 8000  # a NUL in this prefix marks a blob as binary (as git does)
MIN_SCAN_SHARE_BYTES = 64 * 1024  # a blob's scan reads at least this much, if left


@dataclass
class ChangeScan:
    """The deterministic part of a run: ``findings``; ``literals``, values found by the
    optional detect-secrets pass → placeholder type, for the run's ``Redactor`` (empty when
    the pass is off); ``warnings``, one line each for people (the pass is on but detect-secrets
    is not installed)."""

    findings: list[Finding]
    literals: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def change_findings(
    repo: Path, decisions: Sequence[Decision], protected: Sequence[str], allow: Sequence[str],
    *, scan: bool = True, detect_secrets: bool = False,
    listed: Sequence[FileDiff] | None = None,
) -> ChangeScan:
    """Every deterministic finding of the change: ``protected_path_findings`` of all changed
    files (``listed``, default the decisions' files: a caller that scans only some of them
    passes them all), then (when ``scan``; a preview does not scan) ``scan_findings``."""
    found = protected_path_findings(
        [d.file for d in decisions] if listed is None else listed, protected)
    if not scan:
        return ChangeScan(found)
    scanned = scan_findings(repo, decisions, allow, detect_secrets=detect_secrets)
    return ChangeScan([*found, *scanned.findings], scanned.literals, scanned.warnings)


def scan_findings(
    repo: Path, decisions: Sequence[Decision], allow: Sequence[str], *,
    detect_secrets: bool = False,
) -> ChangeScan:
    """Deterministic security findings of the change (``secrets.diff_scan``): secrets added to
    any changed file, scanned whole for a rename or copy away from a secret path
    (``git mv .env notes.txt`` has no hunks), and prompt-injection phrases in the files sent to
    the LLM. With ``detect_secrets``, the detect-secrets pass runs over the same lines
    (``secrets.detect_secrets_pass``): its findings follow ours, and without the package the result
    carries a warning instead. Raises GitError when ``git cat-file`` times out, cannot run or
    fails other than with exit code 128 (object missing: the file is then scanned by its hunks
    only)."""
    if not decisions:
        return ChangeScan([])
    full: dict[str, str] = {}
    for d in decisions:
        f = d.file
        if (d.reason == SelectionReason.SECRET_PATH and f.status in ("renamed", "copied")
                and f.new_oid):
            rc, out, _ = git.run_git_full(repo, "cat-file", "blob", f.new_oid, ok_codes=(0, 128))
            if rc == 0 and b"\0" not in out[:BINARY_SNIFF_BYTES]:
                full[f.path] = git.decode_text(out)
    files = [d.file for d in decisions]
    library = _library_pass(files, full, allow) if detect_secrets else ChangeScan([])
    return ChangeScan(
        [*secrets.secret_findings(files, allow, full, library.literals), *library.findings,
         *secrets.injection_findings([d.file for d in decisions if d.reviewed])],
        library.literals, library.warnings)


def _library_pass(files: Sequence[FileDiff], full: dict[str, str], allow: Sequence[str]
                  ) -> ChangeScan:
    """The detect-secrets pass over the lines our scan reports on; a warning when the package
    is missing (imported by ``secrets.detect_secrets_hits``, only when the setting is on)."""
    rows = secrets.added_rows(files, full)
    try:
        hits = secrets.detect_secrets_hits(rows)
    except ImportError:
        return ChangeScan([], warnings=[secrets.NOT_INSTALLED])
    found, literals = secrets.library_findings(hits, rows, allow)
    return ChangeScan(found, literals)


def protected_path_findings(
    files: Sequence[FileDiff], protected: Sequence[str]
) -> list[Finding]:
    """A ``medium``/``security`` finding for each staged change to a file that configures the
    review (``.ocr-hook.toml``, rule files): it does not take effect for this review, which uses
    the rules at HEAD (spec §5). Anchored to the first changed line of the file."""
    wanted = set(protected)
    out: list[Finding] = []
    for f in files:
        if f.path not in wanted and f.old_path not in wanted:
            continue
        first = next(
            ((ln.new_line, ln.text) for h in f.hunks for ln in h.lines
             if ln.kind == "+" and ln.new_line is not None),
            None,
        )
        content = (
            f"This change edits review configuration ({f.path}). The change does not apply to "
            "the review of this commit, which used the rules committed at HEAD; make sure the "
            "edit is intended, since it changes how future commits are reviewed."
        )
        quote = first[1] if first else ""
        out.append(Finding(
            id=finding_id(f.path, "new", quote, content), path=f.path, side="new",
            start_line=first[0] if first else 0, end_line=first[0] if first else 0,
            severity=Severity.MEDIUM, category=Category.SECURITY, content=content,
            existing_code=quote, suggestion_code="",
            anchor=AnchorMethod.HUNK_NEW if first else AnchorMethod.NONE,
            source="config-guard", code=quote if first else "",
        ))
    return out


def sniff_blobs(repo: Path, files: Sequence[FileDiff], wanted: Sequence[int]
                ) -> dict[int, tuple[str, bool]]:
    """For each index in ``wanted`` of a file whose new blob exists (not deleted, not a
    submodule): (``secrets.blob_kind`` of its first BINARY_SNIFF_BYTES, whether its first
    GENERATED_SCAN_LINES lines say it is generated). The blobs known to be large (``size_bytes``
    set: above ``select.max_file_bytes``) are read one stream each, stopped after those bytes
    (``secrets.read_prefix``); the others in one ``git cat-file --batch``
    (``secrets.read_heads``, which reads past the rest of each). A missing blob is left out.
    Raises GitError."""
    idx = [i for i in wanted if files[i].status != "deleted" and not files[i].submodule
           and files[i].new_oid and set(files[i].new_oid) != {"0"}]
    small = [i for i in idx if files[i].size_bytes is None]
    heads = dict(zip(small, secrets.read_heads(repo, [files[i].new_oid for i in small],
                                               BINARY_SNIFF_BYTES), strict=True))
    heads.update((i, secrets.read_prefix(repo, files[i].new_oid, BINARY_SNIFF_BYTES))
                 for i in idx if files[i].size_bytes is not None)
    return {i: (secrets.blob_kind(head), looks_generated(marker_head(git.decode_text(head))))
            for i in idx if (head := heads.get(i)) is not None}


def scanned_as_text(kind: str) -> bool:
    """Whether a blob of ``secrets.blob_kind`` ``kind`` that git calls binary is secret-scanned
    as text: text with a stray NUL byte, or UTF-16 text (``secrets.SCANNED_KINDS``)."""
    return kind in secrets.SCANNED_KINDS


class BlobScans(NamedTuple):
    """What :func:`scan_blobs` found: the findings, a statement per file index, the indices of
    the files whose blob was not scanned to its end, and the bytes read."""

    findings: list[Finding]
    notes: dict[int, str]
    gaps: set[int]
    used: int


def scan_blobs(repo: Path, files: Sequence[FileDiff], todo: Sequence[int],
               allow: Sequence[str], budget: int) -> BlobScans:
    """The secret scan of the new blobs of ``files[i]`` for ``i`` in ``todo``, each streamed to
    its end within its share of ``budget`` bytes (``secrets.scan_blob``): what is left, split
    evenly over the files not scanned yet, smallest first (so as many as possible are read
    whole), at least MIN_SCAN_SHARE_BYTES while anything is left."""
    out = BlobScans([], {}, set(), 0)
    left = budget
    order = sorted(todo, key=lambda i: (files[i].size_bytes or 0, i))
    for n, i in enumerate(order):
        share = left // (len(order) - n) if left > 0 else 0
        share = min(left, max(share, MIN_SCAN_SHARE_BYTES))
        result = secrets.scan_blob(repo, files[i], allow, share)
        left -= result.scanned_bytes
        out.findings.extend(result.findings)
        out.notes[i] = result.statement
        if not result.complete:
            out.gaps.add(i)
    return out._replace(used=budget - left)


def not_scanned(max_bytes: int, size: int | None) -> str:
    """The statement for a file whose added lines the secret scan did not read: its diff of
    ``size`` bytes was more than what was left of ``max_bytes`` (``security.max_scan_bytes``),
    or (``size`` None) nothing was left."""
    budget = f"security.max_scan_bytes ({util.human_bytes(max_bytes)})"
    if size is None:
        return f"secret scan: not scanned, {budget} was used up"
    return (f"secret scan: not scanned, its {util.human_bytes(size)} diff is more than what was"
            f" left of {budget}")


def read_head_texts(repo: Path, files: Sequence[FileDiff]) -> None:
    """First bytes of the new blob of each kept file whose first hunk does not show its first
    lines (``selection.needs_head``: it starts below line 1, or shows fewer lines and does not
    reach the end of the file), for the generated-file markers of spec §4 gate 8
    (``FileDiff.head_text``); each blob is read only up to GENERATED_SCAN_BYTES, one
    ``git cat-file --batch`` for all."""
    need = [f for f in files if needs_head(f) and not (f.binary or f.submodule or f.symlink)]
    for f, head in zip(need, secrets.read_heads(repo, [f.new_oid for f in need],
                                                GENERATED_SCAN_BYTES), strict=True):
        if head is not None:
            f.head_text = git.decode_text(head)
