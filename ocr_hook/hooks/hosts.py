"""Which program runs this hook, and the one way to bypass it there (a blocked gate, a hook
stopped by a bad setting).

Hosts, as seen from the hook's own process:

* ``framework``: the pre-commit framework, which exports ``PRE_COMMIT=1`` to every hook
  (pre-commit's ``run.py``); skipped with ``SKIP=<hook id>``.
* ``range``: the framework reviewing a range nobody commits or pushes: ``pre-commit run
  --from-ref A --to-ref B`` sets ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` without the
  remote variables (``PRE_COMMIT_REMOTE_NAME`` …) that its pre-push hook always sets.
* ``lefthook``: lefthook exports nothing that marks its commands (its documented variables,
  ``LEFTHOOK=0``, ``LEFTHOOK_EXCLUDE=<names>``, are read, not set), so it is recognised by
  its process (``lefthook`` among the hook's parent processes, read from ``/proc``) or, without
  ``/proc``, by the hook file git runs (``lefthook`` in it). A command is skipped with
  ``LEFTHOOK_EXCLUDE=<command name>``; ``SKIP`` does nothing there.
* ``husky``: husky 9 runs ``.husky/<hook>`` through ``core.hooksPath=.husky/_`` and exports
  nothing either (husky 4 set ``HUSKY_GIT_PARAMS``): recognised by a ``.husky/`` script among
  the parent processes, or by a hooks path under ``.husky``. ``HUSKY=0`` disables every husky
  hook for one command.
* ``ci``: ``CI`` is set (``true``/``1``; GitHub Actions, GitLab CI and most services set it)
  and git is neither committing nor pushing: no ``GIT_INDEX_FILE`` (which git sets for its
  commit hooks) and no ``git commit``/``merge``/``push`` among the parent processes, e.g.
  ``pre-commit run --all-files`` in a CI job. A commit a CI job makes gets the host's advice.
* ``native``: anything else, e.g. the hook ``git ocr install`` writes (``--no-verify``).

``OCR_HOOK_SKIP=1`` works under every host and is always offered.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

HOSTS = ("native", "framework", "range", "lefthook", "husky", "ci")
LEFTHOOK_COMMAND = "ocr-review"  # the command name `git ocr install` suggests for lefthook.yml
MAX_ANCESTORS = 8  # parent processes looked at, up to and including git
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
_ID = re.compile(r"^[ \t-]*id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)
_WRITING = frozenset(("commit", "merge", "push", "am", "rebase", "cherry-pick", "revert"))
_OURS = re.compile(r"ocr_hook|git-ocr|git ocr|ocr-hook")


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(65536)
    except OSError:
        return b""


def ancestors(proc: str = "/proc", start: int | None = None) -> list[list[str]] | None:
    """The command lines (argv, the process's ``comm`` first) of this process's parents,
    nearest first, up to and including the first ``git`` that is not a ``git ocr …`` (which
    only started this program) and at most MAX_ANCESTORS; None when ``proc`` cannot be read
    (not Linux)."""
    if not os.path.isdir(os.path.join(proc, "self")):
        return None
    pid, found = os.getppid() if start is None else start, []
    while pid > 1 and len(found) < MAX_ANCESTORS:
        stat = _read(f"{proc}/{pid}/stat").decode("utf-8", "replace")
        argv = [a for a in _read(f"{proc}/{pid}/cmdline").decode("utf-8", "replace").split("\0")
                if a]
        if not stat:
            break
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        found.append([comm, *argv])
        # the git that ran the hook ends the walk; a `git ocr …` that only started this
        # program (a hook manager's command line) does not
        dispatcher = len(argv) > 1 and argv[1] == "ocr"
        if (comm == "git" or (argv and os.path.basename(argv[0]) == "git")) and not dispatcher:
            break
        try:
            pid = int(stat[stat.rfind(")") + 1:].split()[1])
        except (IndexError, ValueError):
            break
    return found


def _host_of_process(lines: list[list[str]]) -> str:
    for argv in lines:
        if any(os.path.basename(a).startswith("lefthook") for a in argv[:3]):
            return "lefthook"
        if any(".husky/" in a for a in argv[:4]):
            return "husky"
    return ""


def _git_is_writing(lines: list[list[str]]) -> bool:
    """Whether a parent ``git`` (``comm`` first, as :func:`ancestors` gives) is committing,
    merging or pushing (``git -C dir commit`` too)."""
    return any(argv and argv[0] == "git" and _WRITING.intersection(argv[2:]) for argv in lines)


def _host_of_hook_file(stage: str, environ: Mapping[str, str]) -> str:
    """``lefthook``/``husky`` from the hook file git runs for ``stage`` (``git rev-parse
    --git-path hooks/<stage>`` in the working directory), or ""."""
    try:
        p = subprocess.run(["git", "rev-parse", "--git-path", f"hooks/{stage}"],
                           capture_output=True, env=dict(environ), timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    path = os.fsdecode(p.stdout.strip())
    if p.returncode != 0 or not path:
        return ""
    head = _read(path)
    if b"lefthook" in head:
        return "lefthook"
    if ".husky" in Path(path).parts or b"husky" in head:
        return "husky"
    return ""


def hook_host(stage: str, environ: Mapping[str, str],
              processes: list[list[str]] | None = None, *, look: bool = True) -> str:
    """The host (one of HOSTS) running the hook of ``stage`` (``pre-commit``,
    ``pre-merge-commit``, ``pre-push``). ``processes``: the parent command lines
    (:func:`ancestors` when None and ``look``); ``look`` False reads neither processes nor
    the hook file (pure: the environment only)."""
    ci = (environ.get("CI", "").strip().lower() in ("true", "1", "yes")
          and not environ.get("GIT_INDEX_FILE"))  # git sets it for its commit hooks
    if environ.get("PRE_COMMIT") == "1":
        ranged = environ.get("PRE_COMMIT_FROM_REF") and environ.get("PRE_COMMIT_TO_REF")
        if environ.get("PRE_COMMIT_REMOTE_NAME"):  # its pre-push hook, on a real push
            return "framework"
        if ranged:
            return "range"
        return "ci" if ci else "framework"  # `pre-commit run --all-files` in a CI job
    if environ.get("HUSKY_GIT_PARAMS") is not None:
        return "husky"
    if processes is None and look:
        processes = ancestors()
        if processes is None:  # no /proc: the hook file git runs tells instead
            return _host_of_hook_file(stage, environ) or ("ci" if ci else "native")
    lines = processes or []
    return _host_of_process(lines) or ("ci" if ci and not _git_is_writing(lines) else "native")


def framework_all_files(environ: Mapping[str, str],
                        processes: list[list[str]] | None = None) -> bool:
    """Whether the pre-commit framework (``PRE_COMMIT=1``) runs this hook for ``pre-commit run
    --all-files`` (``-a``): the framework exports nothing that says so, so its command line
    among the parent processes (``processes``, :func:`ancestors` when None) tells. A slice of
    that run may hold only changed names (every file staged) and cannot see that another slice
    was handed unchanged ones."""
    if environ.get("PRE_COMMIT") != "1":
        return False
    lines = ancestors() if processes is None else processes
    for argv in lines or []:
        words = argv[1:]
        if "run" in words and any(os.path.basename(w) in ("pre-commit", "pre_commit")
                                  for w in words[:words.index("run")]):
            rest = words[words.index("run") + 1:]
            return "--all-files" in rest or "-a" in rest
    return False


def framework_hook_ids(default: str, stage: str, config_text: str) -> str:
    """The ``SKIP`` value for this hook under the pre-commit framework: ``default`` (the id in
    this repository's ``.pre-commit-hooks.yaml``) when ``config_text`` (the user's
    ``.pre-commit-config.yaml``) lists it or names no hook of ours; else the ids of the
    ``repo: local`` hooks whose ``entry`` runs ocr-hook for ``stage`` (``hook <stage>``), or
    failing that any of ours, comma-separated as ``SKIP`` takes them. A line scan, not YAML
    (the framework does not tell a hook its id)."""
    found = list(_ID.finditer(config_text))
    ids = [m.group(1) for m in found]
    if default in ids:
        return default
    blocks = [(m.group(1), config_text[m.end():found[i + 1].start() if i + 1 < len(found)
                                       else len(config_text)]) for i, m in enumerate(found)]
    ours = [(i, b) for i, b in blocks if _OURS.search(b)]
    staged = [i for i, b in ours if f"hook {stage}" in b]
    chosen = list(dict.fromkeys(staged or [i for i, _ in ours]))
    return ",".join(chosen) if chosen else default


def framework_skip_id(default: str, stage: str) -> str:
    """:func:`framework_hook_ids` for the ``.pre-commit-config.yaml`` in the working
    directory (the framework runs hooks at the top of the work tree); ``default`` when it
    cannot be read."""
    try:
        text = Path(PRE_COMMIT_CONFIG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return default
    return framework_hook_ids(default, stage, text)


def bypass_command(host: str, what: str, hook_id: str) -> str:
    """The host's own way to let one ``git <what>`` through (``what``: commit/merge/push),
    in backquotes with the host named, or "" for ``range``/``ci`` (nothing is committed)."""
    if host == "framework":
        return f"`SKIP={hook_id} git {what}` (pre-commit framework)"
    if host == "lefthook":
        return f"`LEFTHOOK_EXCLUDE={LEFTHOOK_COMMAND} git {what}` (lefthook)"
    if host == "husky":
        return f"`HUSKY=0 git {what}` (husky; skips every husky hook)"
    if host == "native":
        return f"`git {what} --no-verify`"
    return ""


def bypass_clause(host: str, what: str, hook_id: str, lead: str = "bypass once with") -> str:
    """How to bypass the hook once: ``<lead> `git commit --no-verify` or `OCR_HOOK_SKIP=1 git
    commit``` (the host's own way, then the one that works everywhere); for ``range``/``ci``,
    where nothing is committed: how to let this run pass."""
    own = bypass_command(host, what, hook_id)
    if not own:
        return "let this run pass with `OCR_HOOK_SKIP=1` in its environment"
    return f"{lead} {own} or `OCR_HOOK_SKIP=1 git {what}`"
