"""git output of any size read as a stream (:func:`stream_git`), with bounded memory: the same
rules as :func:`git.process.run_git` (environment, limiter, error text), but stdout handed out piece
by piece, and a reader that stops early kills the process instead of waiting for the rest.
"""

from __future__ import annotations

import contextlib
import select
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from ..errors import GitError
from .process import DEFAULT_TIMEOUT_S, git_env, limiter, sub_name

SMALL_STDIN_BYTES = select.PIPE_BUF  # written at once to an empty pipe, never blocking
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

    ``stdin`` is written by a helper thread (git may answer before it has read it all), unless
    it fits the empty pipe (SMALL_STDIN_BYTES, POSIX ``PIPE_BUF``: such a write never blocks);
    no input at all is ``/dev/null``. At the
    end of the ``with`` block a process whose output was read to the end is waited for and its
    exit code checked; one that was left early is killed (not an error). Raises
    GitError("git <sub>: …") on a non-zero exit after a complete read, on a timeout (the
    process is killed after ``timeout_s``) or when git cannot be started."""
    cmd = ["git", *args]
    full_env = git_env(env, extra_env)
    with limiter:
        try:
            proc = subprocess.Popen(cmd, cwd=str(repo),
                                    stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=full_env)
        except OSError as e:
            raise GitError(f"git {sub_name(args)}: cannot run git: {e}") from e
        stream = GitStream(proc, args)

        def kill_at_deadline() -> None:
            stream.timed_out = True
            proc.kill()

        timer = threading.Timer(timeout_s, kill_at_deadline)
        timer.daemon = True
        helpers = [threading.Thread(target=_drain, args=(proc.stderr, stream.stderr),
                                    daemon=True)]
        if len(stdin) <= SMALL_STDIN_BYTES:  # fits the empty pipe: written without a thread
            _feed(proc.stdin, stdin)
        else:
            helpers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
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
            raise GitError(f"git {sub_name(args)}: timed out after {timeout_s:g}s")
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
