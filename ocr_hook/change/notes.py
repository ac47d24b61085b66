"""Warnings about a run's input, made before any LLM call and logged on stderr as they are
made: the hook was given files, not changes (``hookinput``), detect-secrets notes,
deleted files the snapshot still refers to, and files marked binary in ``.gitattributes``
that hold text."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..diff import FileDiff
from ..findings import RunWarning

log = logging.getLogger(__name__)


def input_warnings(files: Sequence[FileDiff], changes_only: str,
                   detect_secrets: Sequence[str]) -> list[RunWarning]:
    """The run warnings of the input, in this order: ``changes_only`` (not logged here: the
    command prints it in every output format), ``detect_secrets``, then per file
    ``deleted_referenced`` and ``binary_attribute``."""
    out = [RunWarning("changes_only", "", changes_only)] if changes_only else []
    for msg in detect_secrets:
        log.warning("%s", msg)
        out.append(RunWarning("detect_secrets", "", msg))
    for f in files:
        if f.referenced_by:
            msg = (f"{f.path}: deleted but still referenced by {len(f.referenced_by)} line(s)"
                   f" (first: {f.referenced_by[0].split(': ', 1)[0]}); deletion reviewed")
            log.warning("%s", msg)
            out.append(RunWarning("deleted_referenced", f.path, msg))
        if f.binary_attribute:  # binary by content, not by attribute
            msg = (f"{f.path}: marked {f.binary_attribute} in .gitattributes but holds text"
                   " (no NUL byte); reviewed and scanned as text")
            log.warning("%s", msg)
            out.append(RunWarning("binary_attribute", f.path, msg))
    return out
