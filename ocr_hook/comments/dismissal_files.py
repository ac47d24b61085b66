"""Where dismissals live and how they are read and written.

- personal: ``<git common dir>/ocr-hook/dismissed.json`` (shared by linked worktrees, never
  committed), written atomically with mode 0600;
- shared: ``.ocr-hook-dismissed.json`` at the top of the repository. ``git ocr dismiss
  --shared`` writes the work-tree file (mode 0644) for the user to commit; reviews read it from
  ``HEAD`` like ``.ocr-hook.toml``, so a dismissal staged in a commit does not apply to that
  commit's own review.

File format (both): ``{"version": 1, "dismissed": [{"key", "path", "category", "code",
"reason", "author", "date", "finding_id", "message"}, …]}`` sorted by key, UTF-8 JSON with
two-space indentation (a stable diff when the shared file is edited by several people).
Parsed with the standard library: a review that only reads dismissals imports no pydantic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from .. import git
from ..errors import OcrError, UsageError
from ..util import write_atomic
from .dismissals import SHARED_FILE, Dismissal

FILE_VERSION = 1
_FIELDS = ("key", "path", "category", "code", "reason", "author", "date", "finding_id",
           "message")
SHARED_FILE_MODE = 0o644  # a committed file, readable like any other


def personal_path(common_dir: Path) -> Path:
    """``<git common dir>/ocr-hook/dismissed.json``."""
    return common_dir / "ocr-hook" / "dismissed.json"


def shared_path(repo: Path) -> Path:
    """The work-tree copy of the shared file (``<top>/.ocr-hook-dismissed.json``)."""
    return repo / SHARED_FILE


def parse(text: str, scope: str, source: str) -> list[Dismissal]:
    """The dismissals of one file's ``text``. Raises UsageError (one line naming ``source``)
    for invalid JSON or an entry without a 64-hex ``key`` or with non-string fields."""
    try:
        data = json.loads(text) if text.strip() else {"dismissed": []}
    except ValueError as e:
        raise UsageError(f"{source}: invalid JSON: {e}") from e
    items = data.get("dismissed") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise UsageError(f"{source}: expected an object with a \"dismissed\" list")
    out: list[Dismissal] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise UsageError(f"{source}: dismissed[{i}] is not an object")
        values = {k: item.get(k, "") for k in _FIELDS}
        if not all(isinstance(v, str) for v in values.values()):
            raise UsageError(f"{source}: dismissed[{i}]: every field must be a string")
        key = values["key"]
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise UsageError(f"{source}: dismissed[{i}]: key must be 64 lower-case hex digits")
        out.append(Dismissal(**values, scope=scope))
    return out


def dump(items: Sequence[Dismissal]) -> bytes:
    """The file content for ``items`` (sorted by key, one entry per key)."""
    unique = {d.key: d for d in items}
    entries = [{k: getattr(unique[key], k) for k in _FIELDS} for key in sorted(unique)]
    text = json.dumps({"version": FILE_VERSION, "dismissed": entries}, indent=2,
                      ensure_ascii=False)
    return (text + "\n").encode("utf-8", "surrogatepass")


def load_personal(common_dir: Path) -> list[Dismissal]:
    """The personal dismissals ([] when the file does not exist). Raises UsageError for an
    unreadable or invalid file."""
    path = personal_path(common_dir)
    return _load_file(path, "personal", str(path))


def load_shared_at_head(repo: Path) -> list[Dismissal]:
    """The shared dismissals committed at HEAD ([] when there is no such file or no HEAD).
    Raises UsageError for an invalid file."""
    [data] = git.head_blobs(repo, [SHARED_FILE])  # prefetched with the settings (config.load)
    if data is None:
        return []
    return parse(git.decode_text(data), "shared", f"{SHARED_FILE} (HEAD)")


def load_shared_worktree(repo: Path) -> list[Dismissal]:
    """The shared file as it is in the work tree (what ``--shared`` edits). Raises UsageError
    for an unreadable or invalid file."""
    return _load_file(shared_path(repo), "shared", SHARED_FILE)


def _load_file(path: Path, scope: str, source: str) -> list[Dismissal]:
    """The dismissals in the file at ``path`` ([] when it does not exist), of ``scope``
    (personal | shared); ``source`` names the file in errors. Raises UsageError for an
    unreadable or invalid file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from e
    return parse(text, scope, source)


def load_for_review(repo: Path, common_dir: Path) -> tuple[list[Dismissal], list[str]]:
    """Every dismissal a review applies (shared at HEAD, then personal) and a problem line for
    each file that could not be used (its dismissals are then not applied: a broken file
    makes the gate stricter, never looser)."""
    found: list[Dismissal] = []
    problems: list[str] = []
    for scope in ("shared", "personal"):
        try:
            found.extend(load_shared_at_head(repo) if scope == "shared"
                         else load_personal(common_dir))
        except OcrError as e:
            problems.append(f"{scope} dismissals not applied: {e}")
    return found, problems


def save_personal(common_dir: Path, items: Sequence[Dismissal]) -> Path:
    """Replace the personal file with ``items`` atomically (mode 0600); returns its path.
    Raises UsageError when it cannot be written."""
    path = personal_path(common_dir)
    try:
        write_atomic(path, dump(items))
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
    return path


def save_shared(repo: Path, items: Sequence[Dismissal]) -> Path:
    """Replace the work-tree shared file with ``items`` atomically (mode 0644); returns its
    path. Raises UsageError when it cannot be written."""
    path = shared_path(repo)
    try:
        write_atomic(path, dump(items), mode=SHARED_FILE_MODE)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
    return path


def git_author(repo: Path) -> str:
    """``Name <email>`` of the git identity (``git var GIT_AUTHOR_IDENT``), "" when none is
    configured."""
    rc, out, _ = git.run_git_full(repo, "var", "GIT_AUTHOR_IDENT", ok_codes=(0, 128),
                                    timeout_s=10)
    if rc != 0:
        return ""
    ident = os.fsdecode(out.strip())
    return ident.rsplit(">", 1)[0] + ">" if ">" in ident else ident


def now_iso() -> str:
    """The current UTC time, ``YYYY-MM-DDTHH:MM:SSZ``."""
    import datetime as _dt  # here: only a new dismissal needs the date (start-up cost)

    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
