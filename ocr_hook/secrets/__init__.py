"""Secrets: the patterns, scanning (whole texts, pieces, blobs that are not loaded), redaction,
and the optional detect-secrets pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .blobs import SCANNED_KINDS, blob_kind, read_heads, read_prefix, scan_blob
    from .detect_secrets_pass import (
        NOT_INSTALLED,
        added_rows,
        detect_secrets_hits,
        library_findings,
    )
    from .diff_scan import (
        injection_findings,
        redact_file_diff,
        secret_findings,
        worded_for_scan,
    )
    from .redaction import redact

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "blobs": ("SCANNED_KINDS", "blob_kind", "read_heads", "read_prefix", "scan_blob",),
    "detect_secrets_pass": (
        "NOT_INSTALLED", "added_rows", "library_findings", "detect_secrets_hits",
    ),
    "diff_scan": ("injection_findings", "redact_file_diff", "secret_findings",
                  "worded_for_scan",),
    "redaction": ("redact",),
})
