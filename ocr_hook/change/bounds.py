"""Which candidate files a bounded change set keeps (spec §3.1 ``select.max_files``, §3.9 for a
scan): the order in which ``select.max_files`` and, for a scan, ``select.max_total_bytes`` are
filled.

- A change (``git ocr review``, the hooks): files matching ``select.include`` first, then git's
  path order; ``select.max_total_bytes`` is applied later, while the patch is read in path
  order (``changeset``).
- A scan (``git ocr scan``): both bounds are filled here, before any content is read, in this
  order: files matching ``select.include``; source files before data and configuration files
  (DATA_EXTENSIONS: ``.json``, ``.yaml``, ``.xml``, ``.toml`` …); smaller files first (by
  their blob size); then path. A file whose estimated diff section (SECTION_OVERHEAD_BYTES and
  PATH_COPIES × its path for the headers, its blob, one ``+`` per line) would pass what is left
  of ``select.max_total_bytes`` is ``over_max_total_bytes`` and the next ones are still tried,
  so one large data file does not take the budget of many source files.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from ..diff import FileDiff
from .selection import SelectionPolicy, SelectionReason

# supported file types (config/supported_file_types.json) that hold data or settings rather
# than code: a bounded scan reviews them after the source files
DATA_EXTENSIONS = frozenset({
    ".json", ".json5", ".ipynb", ".xml", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf",
    ".properties", ".po", ".pot", ".tfvars",
})
# the header lines of an added file's section (diff --git, new file mode, index, ---, +++, @@,
# "\ No newline at end of file"): at most this much beside PATH_COPIES times its path (three
# copies, each up to four times longer when git quotes its bytes as octal escapes)
SECTION_OVERHEAD_BYTES = 512
PATH_COPIES = 12


def is_data(path: str) -> bool:
    """Whether ``path``'s extension (case-insensitive) is one of DATA_EXTENSIONS."""
    return posixpath.splitext(path)[1].lower() in DATA_EXTENSIONS


def section_bytes(f: FileDiff, blob_size: int) -> int:
    """An upper bound of the bytes of the diff section of ``f`` added whole: its blob of
    ``blob_size`` bytes, one ``+`` per added line, its headers."""
    return (blob_size + f.insertions + PATH_COPIES * len(os.fsencode(f.path))
            + SECTION_OVERHEAD_BYTES)


def bound(files: Sequence[FileDiff], candidates: Sequence[int], include: Any,
          policy: SelectionPolicy, sizes: Mapping[str, int] | None
          ) -> tuple[list[int], dict[int, str]]:
    """(the kept candidates in path order, the reason of each one left out) for the indices
    ``candidates`` of ``files``. ``include``: the ``select.include`` globs (a
    ``selection.GlobList``) or None; ``sizes``: blob id → size in bytes for a scan (see the
    module docstring), None for a change (only ``select.max_files``, include first)."""
    def included(i: int) -> bool:
        return include is not None and bool(include.match_file(files[i].path))

    if sizes is None:
        ranked = sorted(candidates, key=lambda i: not included(i))
    else:
        ranked = sorted(candidates, key=lambda i: (
            not included(i), is_data(files[i].path), sizes.get(files[i].new_oid, 0),
            files[i].path))
    kept: list[int] = []
    over: dict[int, str] = {}
    left = policy.max_total_bytes if policy.max_total_bytes > 0 else -1
    for i in ranked:
        if policy.max_files > 0 and len(kept) >= policy.max_files:
            over[i] = SelectionReason.OVER_MAX_FILES
            continue
        if sizes is not None and left >= 0:
            need = section_bytes(files[i], sizes.get(files[i].new_oid, 0))
            if need > left:
                over[i] = SelectionReason.OVER_MAX_TOTAL_BYTES
                continue
            left -= need
        kept.append(i)
    return sorted(kept), over
