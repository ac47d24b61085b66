"""Files that git calls binary only because of ``.gitattributes``.

A ``-diff`` or ``binary`` attribute (also a ``diff=<driver>`` whose ``diff.<driver>.binary`` is
true) makes ``git diff`` print ``Binary files … differ`` for any content, so a file marked in
the same commit would pass unreviewed and unscanned. ocr-hook decides by content instead, as
git does without attributes (``buffer_is_binary``: a NUL byte in the first 8000 bytes): a
file that git reported binary but whose blobs hold no NUL there is re-diffed with ``--text``
by :func:`ocr_hook.git.target.load_diff`, and the attribute is named in a run warning.

Blobs larger than :data:`TEXT_SNIFF_MAX_BYTES` are not read and stay binary (such a diff
would exceed the context budget anyway). I/O: ``git cat-file --batch-check`` / ``--batch`` and
``git check-attr --cached`` through :mod:`git.process`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ..diff import FileDiff
from . import process

BINARY_SNIFF_BYTES = 8000  # git's buffer_is_binary(): a NUL in the first 8000 bytes
TEXT_SNIFF_MAX_BYTES = 2 * 1024 * 1024  # larger blobs are not read to test for text
_ZERO = frozenset("0")


def _present(oid: str) -> bool:
    return bool(oid) and set(oid) != _ZERO


ObjectReader = Callable[[Path, Sequence[str]], list[tuple[str, bytes] | None]]


def text_marked_binary(
    repo: Path, files: Sequence[FileDiff], read_objects: ObjectReader
) -> list[tuple[FileDiff, str]]:
    """(file, attribute) for each file git reported binary (``FileDiff.binary``) because of a
    ``.gitattributes`` entry (:func:`binary_attributes`) whose every present blob is text: no
    NUL byte in the first 8000 bytes, at most TEXT_SNIFF_MAX_BYTES. Files binary without an
    attribute (git found a NUL), submodules and symlinks are never read. ``read_objects(repo,
    oids)`` returns ``(type, bytes)`` or None per oid (``target.read_objects``). Keeps the
    order of ``files``. Raises GitError."""
    cands = [f for f in files if f.binary and not f.submodule and not f.symlink]
    if not cands:
        return []
    attrs = binary_attributes(repo, [f.path for f in cands])
    cands = [f for f in cands if attrs.get(f.path)]
    oids = sorted({o for f in cands for o in (f.old_oid, f.new_oid) if _present(o)})
    if not oids:
        return []
    sizes = _blob_sizes(repo, oids)
    small = [o for o in oids if 0 <= sizes.get(o, -1) <= TEXT_SNIFF_MAX_BYTES]
    text = {
        o for o, obj in zip(small, read_objects(repo, small), strict=True)
        if obj is not None and obj[0] == "blob" and b"\0" not in obj[1][:BINARY_SNIFF_BYTES]
    }
    return [(f, attrs[f.path]) for f in cands
            if all(o in text for o in (f.old_oid, f.new_oid) if _present(o))]


def _blob_sizes(repo: Path, oids: Sequence[str]) -> dict[str, int]:
    """oid → size of each blob (``git cat-file --batch-check``: ``<oid> <type> <size>``)."""
    data = "".join(f"{o}\n" for o in oids).encode("ascii")
    out = process.run_git(repo, "cat-file", "--batch-check", stdin=data)
    sizes: dict[str, int] = {}
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def binary_attributes(repo: Path, paths: Sequence[str]) -> dict[str, str]:
    """path → the attribute that makes git treat it as binary, as written in
    ``.gitattributes``: ``binary`` (the macro), ``-diff`` or ``diff=<driver>`` (a driver
    with ``diff.<driver>.binary``); "" when none applies. The index's ``.gitattributes``
    (``git check-attr --cached``: a marking staged in the same commit counts) is asked first,
    then the work tree's (what ``git diff`` itself reads first). Raises GitError."""
    if not paths:
        return {}
    found = _check_attr(repo, paths, cached=True)
    missing = [p for p in paths if not found.get(p)]
    if missing:
        found.update(_check_attr(repo, missing, cached=False))
    return found


def _check_attr(repo: Path, paths: Sequence[str], *, cached: bool) -> dict[str, str]:
    """One ``git check-attr -z --stdin [--cached] binary diff`` call, which prints
    ``<path>\\0<attr>\\0<value>\\0`` triples, reduced to the marking per path ("" for none)."""
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    args = ["check-attr", "-z", "--stdin", *(["--cached"] if cached else []), "binary", "diff"]
    fields = process.run_git(repo, *args, stdin=data).split(b"\0")
    values: dict[str, dict[str, str]] = {}
    for i in range(0, len(fields) - 2, 3):
        path = os.fsdecode(fields[i])
        values.setdefault(path, {})[fields[i + 1].decode()] = fields[i + 2].decode()
    found: dict[str, str] = {}
    for p in paths:
        v = values.get(p, {})
        if v.get("binary") == "set":
            found[p] = "binary"
        elif v.get("diff") == "unset":
            found[p] = "-diff"
        elif v.get("diff") not in (None, "unspecified", "set", "unset"):
            found[p] = f"diff={v['diff']}"
        else:
            found[p] = ""
    return found
