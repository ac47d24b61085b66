"""Real git repositories in temporary folders, with repo-local GIT_* variables scrubbed so a
test run inside a git hook never touches the outer repository."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

SCRUB = (
    "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
    "GIT_PREFIX", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update({
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
        "HOME": str(home),
    })
    return env


def home_repo(path: Path, object_format: str = "sha1") -> GitRepo:
    """A new repository at ``path`` whose git runs with the test's isolated ``HOME`` (set by
    conftest): what the ``repo`` fixture gives, for a second repository or another object
    format."""
    return GitRepo(path, git_env(Path(os.environ["HOME"])), object_format)


def init_bare(path: Path, env: Mapping[str, str], object_format: str = "sha1") -> Path:
    """A new bare repository at ``path`` (a remote to push to); returns ``path``."""
    args = ["git", "init", "-q", "--bare", str(path)]
    if object_format != "sha1":
        args.insert(3, f"--object-format={object_format}")
    subprocess.run(args, env=dict(env), check=True)
    return path


class GitRepo:
    """A repository at ``path``; helpers write, stage and commit files. ``init`` False wraps a
    work tree that exists already (a linked worktree)."""

    def __init__(self, path: Path, env: dict[str, str], object_format: str = "sha1", *,
                 init: bool = True) -> None:
        self.path = path
        self.env = env
        if not init:
            return
        path.mkdir(parents=True, exist_ok=True)
        args = ["init", "-q", "-b", "main"]
        if object_format != "sha1":
            args.append(f"--object-format={object_format}")
        self.git(*args)

    def linked_worktree(self, path: Path, branch: str = "side") -> GitRepo:
        """``git worktree add -b BRANCH PATH``: the new linked worktree, with this repository's
        environment."""
        self.git("worktree", "add", "-q", "-b", branch, str(path))
        return GitRepo(path, self.env, init=False)

    def git(self, *args: str, input: bytes | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> str:
        p = subprocess.run(["git", *args], cwd=self.path, env=env or self.env, input=input,
                           capture_output=True, check=False)
        if check and p.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {p.stderr.decode()}")
        return p.stdout.decode("utf-8", "replace")

    def write(self, files: dict[str, str | bytes]) -> None:
        for name, content in files.items():
            p = self.path / name
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8", newline="")

    def stage(self, files: dict[str, str | bytes]) -> None:
        self.write(files)
        self.git("add", "--", *files)

    def commit(self, files: dict[str, str | bytes] | None = None, message: str = "change") -> str:
        if files:
            self.stage(files)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def state(self) -> dict[str, str]:
        """Fingerprint of everything a review must not change: index bytes, HEAD, refs,
        stash, work-tree files, status."""
        gitdir = self.path / ".git"
        files = {}
        for p in sorted(self.path.rglob("*")):
            if ".git" in p.relative_to(self.path).parts or not p.is_file():
                continue
            files[str(p.relative_to(self.path))] = hashlib.sha256(p.read_bytes()).hexdigest()
        index = gitdir / "index"
        return {
            "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "",
            "head": self.git("rev-parse", "-q", "--verify", "HEAD", check=False).strip(),
            "refs": self.git("for-each-ref"),
            "stash": self.git("stash", "list"),
            "status": self.git("status", "--porcelain"),
            "worktree": repr(files),
        }
