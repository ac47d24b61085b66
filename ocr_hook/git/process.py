"""The only module that starts processes (with :mod:`git.stream`, its streaming reader): git,
run as ``git <args>`` with list arguments, and the few commands a user configures
(:func:`run_command`). What a run asks git about the repository is in :mod:`git.repository`.

spec §3.1: cwd = top of the work tree, bytes out, explicit decoding by the caller, a timeout,
git's stderr in the error, and a limiter on concurrent git processes (16, as OCR's
``--max-git-procs``). Same-repo calls inherit the environment unchanged (``GIT_INDEX_FILE`` of
``git commit -a`` / ``git commit <paths>`` must reach git); calls into other repositories drop
the repo-local ``GIT_*`` variables (githooks(5)).

Two variables are dropped from every call because they would change git's output behind our
flags: ``GIT_DIFF_OPTS`` (overrides ``-U3``: measured on git 2.39, ``GIT_DIFF_OPTS=-u10`` wins
over ``-U3``) and ``GIT_EXTERNAL_DIFF``. ``LC_ALL=C`` keeps git's messages stable, and
``GIT_OPTIONAL_LOCKS=0`` stops read commands from refreshing the index (spec §3.2).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import GitError, OcrError

MAX_GIT_PROCS = 16  # spec §3.1 (OCR --max-git-procs)
DEFAULT_TIMEOUT_S = 60.0

limiter = threading.BoundedSemaphore(MAX_GIT_PROCS)

# What `git rev-parse --local-env-vars` prints on git 2.39 (git-rev-parse(1)).
LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


# Variables that would change the bytes git prints behind our explicit flags.
OUTPUT_ENV_VARS = ("GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF")


def foreign_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Copy of ``environ`` without the repo-local git variables, for calls into another repo."""
    return {k: v for k, v in environ.items() if k not in LOCAL_ENV_VARS}


def git_env(env: Mapping[str, str] | None,
            extra_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git process: ``env`` (None = ``os.environ``) without
    OUTPUT_ENV_VARS, with ``GIT_OPTIONAL_LOCKS=0`` unless set (spec §3.2: never refresh the
    index), ``LC_ALL=C``, then ``extra_env``."""
    full_env = dict(os.environ if env is None else env)
    for name in OUTPUT_ENV_VARS:
        full_env.pop(name, None)
    full_env.setdefault("GIT_OPTIONAL_LOCKS", "0")
    full_env["LC_ALL"] = "C"
    if extra_env:
        full_env.update(extra_env)
    return full_env


def run_git(
    repo: Path | str,
    *args: str,
    stdin: bytes = b"",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    ok_codes: Sequence[int] = (0,),
) -> bytes:
    """Run ``git <args>`` with cwd ``repo`` and return stdout bytes.

    ``env`` replaces the inherited environment (None = inherit ``os.environ`` unchanged, which
    is right for the repository under review: ``GIT_INDEX_FILE`` must reach git); pass
    ``env=foreign_env(os.environ)`` for any other repository. ``extra_env`` is laid on top.
    ``stdin`` is written to git's standard input. Raises
    GitError("git <sub>: <first stderr line> (exit N)") on an exit code not in ``ok_codes``,
    on a timeout, or when git cannot be started.
    """
    return run_git_full(
        repo, *args, stdin=stdin, timeout_s=timeout_s, env=env, extra_env=extra_env,
        ok_codes=ok_codes,
    )[1]


def run_git_full(
    repo: Path | str,
    *args: str,
    stdin: bytes = b"",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    ok_codes: Sequence[int] = (0,),
) -> tuple[int, bytes, bytes]:
    """Like :func:`run_git` but returns ``(returncode, stdout, stderr)``."""
    cmd = ["git", *args]
    full_env = git_env(env, extra_env)
    with limiter:
        try:
            proc = subprocess.run(
                cmd,
                cwd=str(repo),
                input=stdin,
                capture_output=True,
                timeout=timeout_s,
                env=full_env,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise GitError(f"git {sub_name(args)}: timed out after {timeout_s:g}s") from e
        except OSError as e:
            raise GitError(f"git {sub_name(args)}: cannot run git: {e}") from e
    if proc.returncode not in ok_codes:
        raise GitError.from_process(cmd, proc.returncode, proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr


def sub_name(args: Sequence[str]) -> str:
    """The git subcommand in ``args`` (skipping ``-c X`` pairs and options), for messages."""
    skip_next = False
    for a in args:
        if skip_next:
            skip_next = False
            continue
        if a == "-c":
            skip_next = True
            continue
        if not a.startswith("-"):
            return a
    return ""


def zsplit(raw: bytes) -> list[str]:
    """Split NUL-delimited git output (``-z``) into decoded strings (filesystem encoding)."""
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def decode_text(data: bytes) -> str:
    """Decode file or diff bytes: UTF-8, undecodable bytes replaced (never the locale)."""
    return data.decode("utf-8", "replace")


def run_command(
    argv_or_shell: str | Sequence[str],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> tuple[int, bytes, bytes]:
    """Run a user-configured command that is not git (e.g. ``llm.api_key_cmd``) and return
    ``(returncode, stdout, stderr)`` bytes; the caller judges the exit code.

    A string is a shell command line run by ``/bin/sh -c`` (the user wrote it for a shell:
    ``pass show openai``, ``op read …``); a sequence is an argv run directly. The environment
    is ``env`` (None = ``os.environ``) minus the repo-local git variables (:data:`LOCAL_ENV_VARS`,
    githooks(5)): inside a hook ``GIT_DIR``/``GIT_INDEX_FILE`` name the user's repository and
    the index being committed, and a helper that runs git elsewhere must not write there.
    stdin is empty. Raises OcrError("<first word>:
    timed out after Ns" / "cannot run: …") — its text never includes the command's output,
    which may be a secret.
    """
    argv = ["/bin/sh", "-c", argv_or_shell] if isinstance(argv_or_shell, str) else list(
        argv_or_shell)
    words = argv_or_shell.split() if isinstance(argv_or_shell, str) else argv
    if not words:
        raise OcrError("empty command")
    shown = words[0]
    try:
        proc = subprocess.run(argv, input=b"", capture_output=True, timeout=timeout_s,
                              env=foreign_env(os.environ if env is None else env), cwd=cwd,
                              check=False)
    except subprocess.TimeoutExpired as e:
        raise OcrError(f"{shown}: timed out after {timeout_s:g}s") from e
    except OSError as e:
        raise OcrError(f"{shown}: cannot run: {e.strerror or e}") from e
    return proc.returncode, proc.stdout, proc.stderr
