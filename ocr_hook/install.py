"""Native git hooks: ``git ocr install [--pre-commit] [--pre-merge-commit] [--pre-push]
[--force]`` / ``uninstall``.

Hooks go to ``$(git rev-parse --git-path hooks)``, which already honours ``core.hooksPath``
and linked worktrees (githooks(5)). An existing hook is never overwritten: it is renamed to
``<hook>.ocr-hook-orig`` and our hook runs it first with the same arguments and standard input,
stopping if it fails (chaining). ``--force`` replaces it instead (it is still kept under that
name, and put back by ``uninstall``, but no longer run). Installing twice changes nothing;
``uninstall`` removes our hook and renames the original back, leaving no file behind.

A managed hook is recognised by ``MARKER``. It runs the ``git-ocr`` that installed it by
absolute path (the console script next to the running interpreter), so a different ``PATH`` in
the committing shell, an IDE or a GUI client does not matter; if that program is gone it falls
back to ``git-ocr`` on ``PATH``, and if there is none it lets the commit through with one line
on stderr (an uninstalled reviewer must not lock the user out of git).

Hooks that belong to the repository or to a hook manager are never rewritten (issue 16): a
``core.hooksPath`` inside the work tree (husky's ``.husky/_``, a tracked ``.githooks``) or a
lefthook/husky script is refused with the one line to add to that tool's configuration.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import atomicfile, gitio
from .errors import UsageError

HOOK_TYPES = ("pre-commit", "pre-merge-commit", "pre-push")
LEFTHOOK_FILES = ("lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml")
MARKER = "# ocr-hook-managed-hook v1"
ORIG_SUFFIX = ".ocr-hook-orig"


@dataclass(frozen=True, slots=True)
class HookChange:
    """What install/uninstall did to one hook. ``action`` is one of: installed, chained,
    replaced, updated, unchanged, removed, restored, absent, foreign."""

    hook: str
    path: Path
    action: str

    def describe(self) -> str:
        orig = f"{self.path.name}{ORIG_SUFFIX}"
        return {
            "installed": f"installed {self.hook} hook: {self.path}",
            "chained": f"installed {self.hook} hook: {self.path} (the existing hook, kept as "
            f"{orig}, runs first)",
            "replaced": f"installed {self.hook} hook: {self.path} (the existing hook is kept as "
            f"{orig} and not run; `git ocr uninstall` puts it back)",
            "updated": f"updated {self.hook} hook: {self.path}",
            "unchanged": f"{self.hook} hook already installed: {self.path}",
            "removed": f"removed {self.hook} hook: {self.path}",
            "restored": f"removed {self.hook} hook and restored the original: {self.path}",
            "absent": f"{self.hook} hook not installed",
            "foreign": f"{self.hook} hook {self.path} was not installed by ocr-hook; left alone",
        }[self.action]


def hooks_dir(repo: Path) -> Path:
    """Where git looks for hooks in ``repo`` (``core.hooksPath`` and worktrees honoured)."""
    return gitio.git_path(repo, "hooks")


def hook_command(
    argv0: str | None = None, executable: str | None = None
) -> tuple[str, ...]:
    """The absolute command that runs this installation of ocr-hook: the console script that
    is running (``argv0`` when it is ``git-ocr``/``ocr-hook``), else the ``git-ocr`` script next
    to the interpreter, else ``<interpreter> -m ocr_hook.cli``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if argv0 and os.path.basename(argv0) in ("git-ocr", "ocr-hook") and os.path.isfile(argv0):
        return (os.path.abspath(argv0),)
    script = Path(executable).parent / "git-ocr"
    if script.is_file():
        return (str(script),)
    return (os.path.abspath(executable), "-m", "ocr_hook.cli")


def hook_line(hook: str) -> str:
    """The command a hook manager's config runs for ``hook`` (``git ocr`` from ``PATH``, never
    a path into one user's virtualenv): pre-push passes git's two arguments on."""
    return f'git ocr hook {hook} "$@"' if hook == "pre-push" else f"git ocr hook {hook}"


def _lefthook_entry(hook: str) -> str:
    """One lefthook.yml entry (flow style, so it is one line) that runs ``hook``; pre-push needs
    git's stdin ref lines (``use_stdin``) and arguments (``{1} {2}``)."""
    if hook == "pre-push":
        return ("pre-push: {commands: {ocr-review: {run: 'git ocr hook pre-push {1} {2}',"
                " use_stdin: true}}}")
    return f"{hook}: {{commands: {{ocr-review: {{run: 'git ocr hook {hook}'}}}}}}"


def managed_elsewhere(repo: Path, directory: Path, hook: str) -> str:
    """Why ``hook`` must not be written into ``directory``, with the one line to add instead,
    or "" when it may. Hooks directories inside the work tree (``core.hooksPath`` of husky,
    lefthook or a team's tracked hooks folder) are shared through the repository, and a
    lefthook/husky script in ``.git/hooks`` is regenerated by its tool: writing our hook there
    would put a path into this machine's virtualenv into shared files, or be lost."""
    top, where = repo.resolve(), directory.resolve()
    lefthook = next((n for n in LEFTHOOK_FILES if (top / n).is_file()), "")
    try:
        head = (directory / hook).read_bytes()[:4096]
    except OSError:
        head = b""
    inside = where.is_relative_to(top) and not where.is_relative_to(
        gitio.git_common_dir(repo).resolve())
    if not inside and b"lefthook" not in head and b"husky" not in head:
        return ""
    rel = where.relative_to(top).as_posix() if inside else str(directory)
    if lefthook and (b"lefthook" in head or inside):
        return f"{hook} hooks here are managed by lefthook: add to {lefthook}: " + \
            _lefthook_entry(hook)
    if (inside and rel.split("/")[0] == ".husky") or b"husky" in head:
        return f"{hook} hooks here are managed by husky: add this line to .husky/{hook}: " + \
            hook_line(hook)
    return (f"the hooks directory {rel} (core.hooksPath) is inside the work tree, shared"
            f" through the repository: add this line to {rel}/{hook}: {hook_line(hook)}")


def render_hook(hook: str, command: Sequence[str], chain: bool = True) -> str:
    """The POSIX sh script of a managed ``hook`` (``pre-commit``, ``pre-merge-commit`` or
    ``pre-push``).

    pre-push reads its ref lines once and hands the same lines to the chained hook and to us.
    """
    exe = shlex.quote(command[0])
    cmd = " ".join(shlex.quote(c) for c in command)
    orig = f'"$hook_dir/{hook}{ORIG_SUFFIX}"'
    lines = [
        "#!/bin/sh",
        f"# ocr-hook: AI code review ({hook}). Installed by `git ocr install`;",
        "# remove with `git ocr uninstall` (it restores any hook that was here before).",
        MARKER,
        f"ocr_hook_chain={1 if chain else 0}",
        'hook_dir=$(dirname -- "$0")',
    ]
    if hook == "pre-push":
        lines += [
            "ocr_hook_refs=$(cat)",
            "ocr_hook_stdin() {",
            '    if [ -n "$ocr_hook_refs" ]; then printf \'%s\\n\' "$ocr_hook_refs"; fi',
            "}",
            f'if [ "$ocr_hook_chain" = 1 ] && [ -x {orig} ]; then',
            f'    ocr_hook_stdin | {orig} "$@" || exit $?',
            "fi",
            f"if [ -x {exe} ]; then",
            f'    ocr_hook_stdin | {cmd} hook {hook} "$@"',
            "    exit $?",
            "fi",
            "if command -v git-ocr >/dev/null 2>&1; then",
            f'    ocr_hook_stdin | git-ocr hook {hook} "$@"',
            "    exit $?",
            "fi",
        ]
    else:
        lines += [
            f'if [ "$ocr_hook_chain" = 1 ] && [ -x {orig} ]; then',
            f'    {orig} "$@" || exit $?',
            "fi",
            f"if [ -x {exe} ]; then",
            f'    exec {cmd} hook {hook} "$@"',
            "fi",
            "if command -v git-ocr >/dev/null 2>&1; then",
            f'    exec git-ocr hook {hook} "$@"',
            "fi",
        ]
    lines += [
        f"echo \"ocr-hook: git-ocr not found (installed from {shlex.quote(command[0])}); not "
        f"reviewed. Reinstall ocr-hook or run 'git ocr uninstall'.\" >&2",
        "exit 0",
    ]
    return "\n".join(lines) + "\n"


def is_managed(path: Path) -> bool:
    """True when ``path`` is a hook written by ``render_hook``."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return MARKER.encode() in head


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def install(
    repo: Path,
    hooks: Sequence[str] = ("pre-commit",),
    *,
    force: bool = False,
    command: Sequence[str] | None = None,
) -> list[HookChange]:
    """Install the managed ``hooks``. Raises UsageError for an unknown hook type, when an
    existing hook cannot be set aside (a foreign hook *and* a saved original both exist), and
    before writing anything when the hooks belong to a hook manager or a directory inside the
    work tree (:func:`managed_elsewhere`; the message says what line to add where); OSError
    from the file system is turned into UsageError with the path."""
    cmd = tuple(command) if command else hook_command()
    directory = hooks_dir(repo)
    for hook in hooks:
        if hook not in HOOK_TYPES:
            raise UsageError(f"unknown hook type {hook!r}; allowed: {', '.join(HOOK_TYPES)}")
    refusals = [why for hook in hooks if (why := managed_elsewhere(repo, directory, hook))]
    if refusals:
        raise UsageError("not installed: " + "; ".join(refusals))
    changes = []
    for hook in hooks:
        path = directory / hook
        orig = directory / f"{hook}{ORIG_SUFFIX}"
        text = render_hook(hook, cmd, chain=not force).encode()
        try:
            if is_managed(path):
                if path.read_bytes() == text:
                    changes.append(HookChange(hook, path, "unchanged"))
                    continue
                atomicfile.write_bytes(path, text, mode=0o755)
                changes.append(HookChange(hook, path, "updated"))
                continue
            action = "installed"
            if _exists(path):
                if _exists(orig):
                    raise UsageError(
                        f"cannot install the {hook} hook: both {path} and {orig} exist; "
                        "move one of them away"
                    )
                os.replace(path, orig)
                action = "replaced" if force else "chained"
            directory.mkdir(parents=True, exist_ok=True)
            atomicfile.write_bytes(path, text, mode=0o755)
        except OSError as e:
            raise UsageError(f"cannot install the {hook} hook in {directory}: {e.strerror}") from e
        changes.append(HookChange(hook, path, action))
    return changes


def uninstall(repo: Path, hooks: Sequence[str] = HOOK_TYPES) -> list[HookChange]:
    """Remove the managed ``hooks`` and put saved originals back. A hook that ocr-hook did
    not write is left alone. Raises UsageError on an unknown hook type or a file-system error."""
    directory = hooks_dir(repo)
    changes = []
    for hook in hooks:
        if hook not in HOOK_TYPES:
            raise UsageError(f"unknown hook type {hook!r}; allowed: {', '.join(HOOK_TYPES)}")
        path = directory / hook
        orig = directory / f"{hook}{ORIG_SUFFIX}"
        try:
            if is_managed(path):
                path.unlink()
                if _exists(orig):
                    os.replace(orig, path)
                    changes.append(HookChange(hook, path, "restored"))
                else:
                    changes.append(HookChange(hook, path, "removed"))
            elif _exists(path):
                changes.append(HookChange(hook, path, "foreign"))
            elif _exists(orig):  # our hook was deleted by hand: put the original back
                os.replace(orig, path)
                changes.append(HookChange(hook, path, "restored"))
            else:
                changes.append(HookChange(hook, path, "absent"))
        except OSError as e:
            raise UsageError(
                f"cannot uninstall the {hook} hook in {directory}: {e.strerror}"
            ) from e
    return changes
