"""The only module that starts processes: git, run as ``git <args>`` with list arguments.

SPEC §3.1: cwd = top of the work tree, bytes out, explicit decoding by the caller, a timeout,
git's stderr in the error, and a limiter on concurrent git processes (16, as OCR's
``--max-git-procs``). Same-repo calls inherit the environment unchanged (``GIT_INDEX_FILE`` of
``git commit -a`` / ``git commit <paths>`` must reach git); calls into other repositories drop
the repo-local ``GIT_*`` variables (githooks(5)).

Two variables are dropped from every call because they would change git's output behind our
flags: ``GIT_DIFF_OPTS`` (overrides ``-U3``: measured on git 2.39, ``GIT_DIFF_OPTS=-u10`` wins
over ``-U3``) and ``GIT_EXTERNAL_DIFF``. ``LC_ALL=C`` keeps git's messages stable, and
``GIT_OPTIONAL_LOCKS=0`` stops read commands from refreshing the index (SPEC §3.2).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from .errors import GitError

MAX_GIT_PROCS = 16  # SPEC §3.1 (OCR --max-git-procs)
DEFAULT_TIMEOUT_S = 60.0

_limiter = threading.BoundedSemaphore(MAX_GIT_PROCS)

# `git rev-parse --local-env-vars` on git 2.39 (ecosystem.md §2.1).
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
    full_env = dict(os.environ if env is None else env)
    for name in OUTPUT_ENV_VARS:
        full_env.pop(name, None)
    full_env.setdefault("GIT_OPTIONAL_LOCKS", "0")  # SPEC §3.2: never refresh the index
    full_env["LC_ALL"] = "C"
    if extra_env:
        full_env.update(extra_env)
    with _limiter:
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
            raise GitError(f"git {_sub(args)}: timed out after {timeout_s:g}s") from e
        except OSError as e:
            raise GitError(f"git {_sub(args)}: cannot run git: {e}") from e
    if proc.returncode not in ok_codes:
        raise GitError.from_process(cmd, proc.returncode, proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr


STDERR_KEEP_BYTES = 64 * 1024  # git's stderr kept for the error message of a streamed call


class GitStream:
    """The stdout of a running git process (:func:`stream_git`), read incrementally.

    ``read(n)`` returns up to ``n`` bytes (b"" at the end); ``chunks(size)`` iterates over
    pieces of at most ``size`` bytes. Whoever stops before the end just leaves the ``with``
    block: the process is then killed, so a bounded reader never waits for the rest."""

    def __init__(self, proc: subprocess.Popen[bytes], args: Sequence[str]) -> None:
        self._proc = proc
        self._args = args
        self.at_eof = False
        self.timed_out = False
        self.stderr = bytearray()

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes of stdout (fewer only at the end; b"" once it is reached)."""
        out = self._proc.stdout
        assert out is not None
        if n <= 0:
            return b""
        data = out.read(n)
        if not data:
            self.at_eof = True
        return data

    def readline(self, limit: int = 1 << 16) -> bytes:
        """One line of stdout with its ``\n`` (at most ``limit`` bytes; b"" at the end)."""
        out = self._proc.stdout
        assert out is not None
        data = out.readline(limit)
        if not data:
            self.at_eof = True
        return data

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """stdout in pieces of at most ``size`` bytes, until the end."""
        while True:
            data = self.read(size)
            if not data:
                return
            yield data


@contextlib.contextmanager
def stream_git(
    repo: Path | str,
    *args: str,
    stdin: bytes = b"",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Iterator[GitStream]:
    """Run ``git <args>`` like :func:`run_git`, but hand its stdout out as a :class:`GitStream`
    instead of collecting it, so output of any size is read with bounded memory.

    ``stdin`` is written by a helper thread (git may answer before it has read it all). At the
    end of the ``with`` block a process whose output was read to the end is waited for and its
    exit code checked; one that was left early is killed (not an error). Raises
    GitError("git <sub>: …") on a non-zero exit after a complete read, on a timeout (the
    process is killed after ``timeout_s``) or when git cannot be started."""
    cmd = ["git", *args]
    full_env = dict(os.environ if env is None else env)
    for name in OUTPUT_ENV_VARS:
        full_env.pop(name, None)
    full_env.setdefault("GIT_OPTIONAL_LOCKS", "0")
    full_env["LC_ALL"] = "C"
    if extra_env:
        full_env.update(extra_env)
    with _limiter:
        try:
            proc = subprocess.Popen(cmd, cwd=str(repo), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=full_env)
        except OSError as e:
            raise GitError(f"git {_sub(args)}: cannot run git: {e}") from e
        stream = GitStream(proc, args)

        def kill_at_deadline() -> None:
            stream.timed_out = True
            proc.kill()

        timer = threading.Timer(timeout_s, kill_at_deadline)
        timer.daemon = True
        helpers = [
            threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, stream.stderr), daemon=True),
        ]
        timer.start()
        for t in helpers:
            t.start()
        try:
            yield stream
        finally:
            timer.cancel()
            if not stream.at_eof and proc.poll() is None:
                proc.kill()
            proc.wait()
            for t in helpers:
                t.join(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
        if stream.timed_out:
            raise GitError(f"git {_sub(args)}: timed out after {timeout_s:g}s")
        if stream.at_eof and proc.returncode != 0:
            raise GitError.from_process(cmd, proc.returncode, bytes(stream.stderr))


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    """Write ``data`` to git's stdin and close it; a git that exits early is not an error."""
    if pipe is None:
        return
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def _drain(pipe: IO[bytes] | None, keep: bytearray) -> None:
    """Read git's stderr to the end (so git never blocks on it), keeping the first bytes."""
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        while chunk := pipe.read(8192):
            if len(keep) < STDERR_KEEP_BYTES:
                keep.extend(chunk[: STDERR_KEEP_BYTES - len(keep)])
    with contextlib.suppress(OSError):
        pipe.close()


def _sub(args: Sequence[str]) -> str:
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


def find_toplevel(cwd: Path | str) -> Path:
    """Top of the work tree containing ``cwd``. Raises GitError when not in a repository."""
    out = run_git(cwd, "rev-parse", "--show-toplevel", timeout_s=10)
    top = os.fsdecode(out.strip())
    if not top:
        raise GitError("git rev-parse: not inside a work tree (bare repository?)")
    return Path(top)


def git_path(repo: Path, name: str) -> Path:
    """``git rev-parse --git-path <name>`` as an absolute path (honours worktrees/hooksPath)."""
    out = os.fsdecode(run_git(repo, "rev-parse", "--git-path", name, timeout_s=10).strip())
    p = Path(out)
    return p if p.is_absolute() else repo / p


def git_common_dir(repo: Path) -> Path:
    """``git rev-parse --git-common-dir`` as an absolute path (shared by linked worktrees)."""
    out = os.fsdecode(run_git(repo, "rev-parse", "--git-common-dir", timeout_s=10).strip())
    p = Path(out)
    return p if p.is_absolute() else (repo / p).resolve()


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
    from .errors import OcrError

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
