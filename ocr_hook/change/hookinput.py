"""What a hook run under the pre-commit framework is asked to review, beyond git's own input:
file-name arguments as a filter on the changed paths, and the plain notice when the framework hands
the hook files instead of changes (``pre-commit run --all-files``).

pre-commit passes file names unless a hook sets ``pass_filenames: false`` (pre-commit's hook
options: the default is true, so a ``repo: local`` hook with the defaults gets names), and splits
long lists into slices run in parallel. In the pre-commit stage the names are
``git diff --staged --name-only`` minus deletions, so each is a changed path of the staged
snapshot; with ``--all-files`` they are ``git ls-files``, mostly unchanged files. A name that is
not a changed path therefore means the hook was given files, not changes. Pure: no git, no
environment reads.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..diff import FileDiff

CI_HINT = (
    "in CI review a range instead: `pre-commit run ocr-review --hook-stage manual --from-ref"
    " origin/main --to-ref HEAD` or `git ocr review --from origin/main --to HEAD`"
)


class Filtered(NamedTuple):
    """The changed files a run reviews after the file-name filter, and the names given that
    are not changed paths (in the order given)."""

    files: list[FileDiff]
    unchanged_names: list[str]


def normalise_name(name: str) -> str:
    """A repository-relative file name as git prints it: ``./a//b`` → ``a/b``."""
    return posixpath.normpath(name.replace("\\", "/")).removeprefix("./")


def filter_paths(files: Sequence[FileDiff], names: Sequence[str]) -> Filtered:
    """Keep the changed ``files`` whose path (new path; old path for a deletion) is one of
    ``names``. An empty ``names`` keeps nothing: a filter never widens to "everything". When
    some name is not a changed path, the hook was handed files, not changes (``pre-commit run
    --all-files`` / ``--files``), and the framework may split that list into parallel slices
    that cannot see each other's names: every changed file is kept, so each slice reviews the
    same changes (one review through the lock and the cache) and prints the same verdict."""
    wanted = {normalise_name(n) for n in names if n}
    kept = [f for f in files if (f.path in wanted or f.old_path in wanted)]
    changed = {p for f in files for p in (f.path, f.old_path)}
    unchanged = [n for n in dict.fromkeys(normalise_name(n) for n in names if n)
                 if n not in changed]
    return Filtered(list(files) if unchanged else kept, unchanged)


def changes_only_notice(unchanged_names: Sequence[str], changed_files: int,
                        environ: Mapping[str, str], mode: str) -> str:
    """The one line telling the user that this hook reviews changes, not files, or "" when
    it does not apply: file names were given that are not changed paths
    (``pre-commit run --all-files`` / ``--files``), or the pre-commit framework ran the hook
    (``PRE_COMMIT=1``) in the staged mode with nothing staged (``--all-files`` with
    ``pass_filenames: false`` passes no names)."""
    if unchanged_names:
        n = len(unchanged_names)
        return (f"this hook reviews changes, not files: {n} of the file names it was given"
                f" {'is' if n == 1 else 'are'} not changed here (e.g. {unchanged_names[0]}),"
                f" as with `pre-commit run --all-files`; only changed files are reviewed;"
                f" {CI_HINT}")
    if mode == "staged" and changed_files == 0 and environ.get("PRE_COMMIT") == "1":
        return f"this hook reviews changes, not files, and nothing is staged; {CI_HINT}"
    return ""


def narrow(files: list[FileDiff], names: Sequence[str] | None, environ: Mapping[str, str],
           mode: str) -> tuple[list[FileDiff], str]:
    """(the files a run reviews, the changes-only notice or ""): ``files`` filtered by
    ``names`` when a list was given (None = none given)."""
    unchanged: list[str] = []
    if names is not None:
        files, unchanged = filter_paths(files, names)
    return files, changes_only_notice(unchanged, len(files), environ, mode)
