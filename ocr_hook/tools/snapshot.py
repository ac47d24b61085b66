"""The reviewed snapshot as the context tools read it (spec §7.1, §14): repository-confined
paths, the secret-path list, blob reads through git, and file lines redacted in their file
context.

Reads go to ``<head>:<path>`` through git (``head`` is the staged snapshot tree, or the reviewed
commit), never the work tree. ``confine`` refuses paths with ``..``, absolute paths and drive
letters before git runs, and git's own ``<tree>:<path>`` lookup never follows a symlink. Files on
the secret-path list of spec §4 (``config/path_lists.json``: ``.env``, keys, ``.netrc`` …) are
``SnapshotView.is_secret``.

Secrets are redacted in their file context before lines are numbered, since a secret can span
lines (a PEM body, a key split over two string literals, a JSON value on the line after its key):
``SnapshotView.redacted_rows`` redacts the whole file up to REDACT_WHOLE_FILE_MAX_CHARS, larger
files (or a caller's narrower window) in windows of lines either side of the lines wanted.
``SnapshotView.chunk_rows`` redacts in fixed chunks instead, so that a line reads the same
whatever else was asked (what ``code_search`` needs to answer only what the redacted text shows),
and ``SnapshotView.shown_paths`` gives the tree's paths as redacted (what ``file_find`` matches).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import git, util
from ..diff import FileDiff
from ..errors import OcrError
from ..util import real_path

GREP_TIMEOUT_S = 10.0  # git grep / ls-tree (OCR code_search, file_find: 10 s)
READ_TIMEOUT_S = 30.0  # git cat-file (OCR file_read `git show`: 30 s)
REDACT_WHOLE_FILE_MAX_CHARS = 2 * 1024 * 1024  # redact a file whole up to this size (ours)
REDACT_WINDOW_LINES = 200  # else lines either side of those shown (ours)
CHUNKS_KEPT_MAX = 4096  # redacted chunks (SnapshotView.chunk_rows) kept per view (ours)


def confine(path: object) -> str | None:
    """Normalise a model-supplied repository path (``\\xNN`` → the non-UTF-8 byte it shows,
    :func:`ocr_hook.util.text.real_path`; then ``\\`` → ``/``, leading ``./`` dropped,
    duplicate slashes folded); None when it is not a string, empty, absolute, a drive path or
    contains a ``..`` segment anywhere."""
    if not isinstance(path, str):
        return None
    p = real_path(path.strip()).replace("\\", "/")
    if not p or p.startswith("/") or (len(p) > 1 and p[1] == ":") or "\0" in p:
        return None
    parts = [s for s in p.split("/") if s not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


@functools.cache
def _secret_spec() -> Any:
    import pathspec

    patterns = util.load_builtin_json("path_lists.json")["secret_paths"]
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def is_secret_path(path: str) -> bool:
    """True for paths on the secret-path list of spec §4 gate 3 (``config/path_lists.json``)."""
    return bool(_secret_spec().match_file(path))


def _same(text: str) -> str:
    return text


def _grep_flags(ignore_case: bool, perl: bool, max_per_file: int | None) -> list[str]:
    """git grep and its flags up to the pattern: ``-n -z``, no colour, binary files skipped,
    ``--max-count`` unless None, ``-i`` when ``ignore_case``, ``-P`` or ``-F``."""
    cmd = ["--no-pager", "-c", "core.quotePath=false", "grep", "-n", "-z", "--no-color", "-I"]
    if max_per_file is not None:
        cmd += ["--max-count", str(max_per_file)]
    if ignore_case:
        cmd.append("-i")
    cmd.append("-P" if perl else "-F")
    return cmd


class SnapshotView:
    """The files a review may read: tree-ish ``head`` in ``repo`` and the change set's diffs.

    ``head`` is a tree or commit id (the snapshot tree in staged mode); ``base`` the tree-ish
    the change is diffed against ("" when unknown: then a diff the change set did not load
    cannot be read). ``redact`` is applied to every file text a tool returns (the secret
    redaction choke point of spec §14). Shared by the worker threads; the path list is loaded
    once, under a lock.
    """

    def __init__(self, repo: Path, head: str, files: Sequence[FileDiff],
                 redact: Callable[[str], str] = _same, *, base: str = "") -> None:
        self.repo = repo
        self.head = head
        self.base = base
        self.files = files
        self.redact = redact
        self._tree: list[str] | None = None
        self._shown: list[str] | None = None
        self._chunks: dict[tuple[str, int, int], tuple[str, ...]] = {}
        self._lines: dict[str, list[str] | None] = {}
        self._lock = threading.Lock()
        self._by_path: dict[str, FileDiff] = {}
        for f in self.files:
            self._by_path.setdefault(f.new_path, f)
            self._by_path.setdefault(f.old_path, f)

    def is_secret(self, path: str) -> bool:
        """Whether ``path``'s content must never be shared: a secret path (spec §4 gate 3), or a
        changed file renamed or copied from one (``git mv .env notes.txt``)."""
        if is_secret_path(path):
            return True
        fd = self._by_path.get(path)
        return fd is not None and (is_secret_path(fd.old_path) or is_secret_path(fd.new_path))

    def diff_for(self, path: str) -> FileDiff | None:
        """The diff of changed path ``path`` (new or old name), None when unchanged."""
        return self._by_path.get(path)

    @property
    def changed(self) -> Mapping[str, FileDiff]:
        """Every changed file by its new and its old path (the first file wins a path)."""
        return self._by_path

    def new_file_lines(self, path: str) -> list[str] | None:
        """The redacted lines (split on ``\\n``) of changed path ``path`` in ``head``, read once
        per view; None when the file is unchanged, deleted or unreadable. The blob comes from
        this command's memory when the change set's reader kept it (``git.known_blob``: its
        ``new_oid`` is the blob at ``head``), else from git. Raises GitError as :meth:`read`
        does."""
        with self._lock:
            if path in self._lines:
                return self._lines[path]
        fd = self._by_path.get(path)
        data = None
        if fd is not None and fd.status != "deleted":
            data = git.known_blob(fd.new_oid)
            if data is None:
                data = self.read(fd.new_path)
        lines = None if data is None else self.redact(git.decode_text(data)).split("\n")
        with self._lock:
            self._lines[path] = lines
        return lines

    def line_count(self, path: str) -> int | None:
        """Lines of changed file ``path`` after the change (:meth:`new_file_lines` without a
        final empty piece); None when unchanged, deleted or unreadable (an OcrError too)."""
        try:
            lines = self.new_file_lines(path)
        except OcrError:
            return None
        if lines is None:
            return None
        return len(lines) - (1 if lines and lines[-1] == "" else 0)

    def read_patch(self, fd: FileDiff, max_bytes: int) -> tuple[str | None, int]:
        """(the patch of changed file ``fd``, unredacted; its size in bytes): ``fd.patch`` when
        the change set loaded it, else read now (``git.read_file_patch``, ``base..head``
        limited to the file's paths; nothing kept). (None, size) when an unloaded patch is
        larger than ``max_bytes``, (None, 0) when the view has no ``base`` or git lists no
        section. Raises GitError / DiffParseError (a timeout after 30 s)."""
        if fd.loaded:
            return fd.patch, len(fd.patch.encode("utf-8", "replace"))
        if not self.base:
            return None, 0
        got, size = git.read_file_patch(self.repo, self.base, self.head, fd, max_bytes,
                                        timeout_s=READ_TIMEOUT_S)
        return (got.patch if got is not None else None), size

    def preload(self, paths: Sequence[str]) -> None:
        """Read the new blobs of the changed ``paths`` that :meth:`new_file_lines` would have
        to ask git for (not read yet, not kept by this command's readers) with one ``git
        cat-file --batch`` by blob id (``git.read_objects``), so a run that needs every
        reviewed file's lines (``diff.context``) starts one git process, not one per file.
        Raises GitError."""
        with self._lock:
            todo = [p for p in dict.fromkeys(paths) if p not in self._lines]
        want: dict[str, str] = {}
        for p in todo:
            fd = self._by_path.get(p)
            if (fd is not None and fd.status != "deleted" and fd.new_oid and not fd.submodule
                    and git.known_blob(fd.new_oid) is None):
                want[p] = fd.new_oid
        if not want:
            return
        for p, obj in zip(want, git.read_objects(self.repo, list(want.values()), READ_TIMEOUT_S),
                          strict=True):
            if obj is not None and obj[0] == "blob":
                lines = self.redact(git.decode_text(obj[1])).split("\n")
                with self._lock:
                    self._lines.setdefault(p, lines)

    def read(self, path: str) -> bytes | None:
        """Blob bytes of ``<head>:<path>``; None when there is no blob there (absent, a
        directory, a submodule). Raises GitError on a timeout (30 s) or when git cannot run."""
        rc, out, _ = git.run_git_full(
            self.repo, "cat-file", "blob", f"{self.head}:{path}", timeout_s=READ_TIMEOUT_S,
            ok_codes=(0, 128),
        )
        return out if rc == 0 else None

    def read_many(self, paths: Sequence[str], max_bytes: int) -> dict[str, bytes]:
        """Blob bytes of ``<head>:<path>`` for each of ``paths`` that names a blob, in order
        until ``max_bytes`` would be passed, with two git processes: ``cat-file --batch-check``
        for the sizes, then ``cat-file --batch`` (git-cat-file(1): per name ``<oid> <type>
        <size>\\n`` and, with --batch, the content and ``\\n``; ``<name> missing\\n`` when
        absent). Paths with a line break are left out (the input is one name per line).
        Raises GitError on a timeout (30 s) or when git cannot run."""
        names = [p for p in paths if "\n" not in p and "\r" not in p]
        if not names:
            return {}
        query = "".join(f"{self.head}:{p}\n" for p in names).encode()
        _, out, _ = git.run_git_full(self.repo, "cat-file", "--batch-check", stdin=query,
                                       timeout_s=READ_TIMEOUT_S)
        wanted: list[str] = []
        total = 0
        for name, line in zip(names, out.split(b"\n"), strict=False):
            parts = line.split(b" ")
            if len(parts) != 3 or parts[1] != b"blob" or not parts[2].isdigit():
                continue  # missing, ambiguous, a tree or a submodule
            total += int(parts[2])
            if total > max_bytes:
                break
            wanted.append(name)
        if not wanted:
            return {}
        query = "".join(f"{self.head}:{p}\n" for p in wanted).encode()
        _, out, _ = git.run_git_full(self.repo, "cat-file", "--batch", stdin=query,
                                       timeout_s=READ_TIMEOUT_S)
        blobs: dict[str, bytes] = {}
        pos = 0
        for name in wanted:
            end = out.find(b"\n", pos)
            if end == -1:
                break
            parts = out[pos:end].split(b" ")
            pos = end + 1
            if len(parts) != 3 or not parts[2].isdigit():
                continue  # changed since --batch-check: missing now
            size = int(parts[2])
            if parts[1] == b"blob":
                blobs[name] = out[pos:pos + size]
            pos += size + 1
        return blobs

    def redacted_rows(self, lines: Sequence[str], numbers: Iterable[int],
                      window_lines: int | None = None) -> dict[int, str]:
        """``{n: line n of the file, redacted}`` for each 1-based ``n`` in ``numbers`` (others
        ignored), where ``lines`` are all the file's lines (``\\r`` kept). Each line is
        redacted in its file context, so a secret written over several lines is replaced on
        each of them: the whole file when it has at most REDACT_WHOLE_FILE_MAX_CHARS
        characters and no ``window_lines`` is given, else a window of ``window_lines``
        (default REDACT_WINDOW_LINES) lines either side of each run of wanted lines."""
        nums = sorted({n for n in numbers if 1 <= n <= len(lines)})
        if not nums:
            return {}
        width = REDACT_WINDOW_LINES if window_lines is None else window_lines
        runs: list[list[int]] = []  # wanted lines, cut where they are two windows apart
        for n in nums:
            if runs and n - runs[-1][-1] <= 2 * width:
                runs[-1].append(n)
            else:
                runs.append([n])
        if window_lines is None and sum(len(ln) + 1 for ln in lines) <= (
                REDACT_WHOLE_FILE_MAX_CHARS):
            windows = [(1, len(lines), nums)]
        else:
            windows = [(max(1, run[0] - width), min(len(lines), run[-1] + width), run)
                       for run in runs]
        out: dict[int, str] = {}
        for first, last, wanted in windows:
            red = self.redact("\n".join(lines[first - 1:last])).split("\n")
            if len(red) != last - first + 1:  # never expected (redaction keeps line breaks)
                red = ["[REDACTED:line]"] * (last - first + 1)  # fail closed
            out.update((n, red[n - first]) for n in wanted)
        return out

    def chunk_rows(self, path: str, numbers: Iterable[int],
                   read: Callable[[], Sequence[str] | None], width: int) -> dict[int, str]:
        """``{n: line n of file path, redacted in context}`` for each wanted 1-based ``n`` (lines
        past the end are left out), where a line's redaction never depends on what else is
        asked: the file is cut into fixed chunks of ``width`` lines (``c*width+1`` …
        ``(c+1)*width``), each redacted with ``width`` lines either side, and the chunks are
        kept in the view (up to CHUNKS_KEPT_MAX). ``read`` gives all the file's lines (``\r``
        kept); it is called at most once, and only when a wanted chunk is not kept; when it
        gives None (the file cannot be read) the lines of chunks not kept are left out."""
        wanted: dict[int, list[int]] = {}
        for n in numbers:
            if n >= 1:
                wanted.setdefault((n - 1) // width, []).append(n)
        lines: Sequence[str] | None = None
        tried = False
        out: dict[int, str] = {}
        for chunk, ns in sorted(wanted.items()):
            key = (path, width, chunk)
            with self._lock:
                rows = self._chunks.get(key)
            if rows is None:
                if not tried:
                    lines, tried = read(), True
                if lines is None or chunk * width >= len(lines):
                    continue
                nums = range(chunk * width + 1, min(len(lines), (chunk + 1) * width) + 1)
                red = self.redacted_rows(lines, nums, window_lines=width)
                rows = tuple(red[n] for n in nums)
                with self._lock:
                    if len(self._chunks) >= CHUNKS_KEPT_MAX:
                        self._chunks.clear()
                    self._chunks[key] = rows
            out.update((n, rows[n - 1 - chunk * width]) for n in ns
                       if n - 1 - chunk * width < len(rows))
        return out

    def grep(self, text: str, pathspecs: Sequence[str], *, ignore_case: bool, perl: bool,
             max_per_file: int | None) -> tuple[int, bytes, bytes]:
        """``git grep`` of ``text`` in ``head``: (exit code 0 | 1 none | 128 bad pattern or a
        match git could not finish, stdout, stderr). Records are ``<head>:<path>\0<n>\0<line>``
        (``-n -z``), binary files skipped (``-I``), at most ``max_per_file`` per file (None:
        all); literal (``-F``) unless ``perl`` (``-P``). The text goes after ``-e`` and the
        pathspecs after ``--``, so neither can be read as an option. Raises GitError on a
        timeout (10 s) or when git cannot run."""
        cmd = [*_grep_flags(ignore_case, perl, max_per_file), "-e", text, self.head, "--",
               *pathspecs]  # head is our object id, never user text
        return git.run_git_full(self.repo, *cmd, timeout_s=GREP_TIMEOUT_S, ok_codes=(0, 1, 128))

    def grep_files(self, pathspecs: Sequence[str]) -> list[bytes]:
        """The paths (as git writes them, without ``<head>:``) of the text files of ``head``
        that :meth:`grep` with ``pathspecs`` searches and that have a line, in git's order.
        Raises GitError on a timeout (10 s)."""
        cmd = ["--no-pager", "-c", "core.quotePath=false", "grep", "-l", "-z", "-I", "-F",
               "-e", "", self.head, "--", *pathspecs]
        _, out, _ = git.run_git_full(self.repo, *cmd, timeout_s=GREP_TIMEOUT_S, ok_codes=(0, 1))
        prefix = f"{self.head}:".encode()
        return [p.removeprefix(prefix) for p in out.split(b"\0") if p]

    def grep_lines(self, lines: Sequence[bytes], text: str, *, ignore_case: bool,
                   perl: bool) -> tuple[int, bytes, bytes]:
        """:meth:`grep` of ``text`` in ``lines`` instead of the snapshot (``git grep
        --no-index`` of a private temporary file holding them, one per line): records are
        ``f\0<n>\0<line>``, ``n`` counting ``lines`` from 1. Raises GitError as
        :meth:`grep`."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="ocr-hook-grep-") as tmp:
            Path(tmp, "f").write_bytes(b"".join(line + b"\n" for line in lines))
            cmd = [*_grep_flags(ignore_case, perl, None), "--no-index", "-e", text, "--", "f"]
            return git.run_git_full(tmp, *cmd, timeout_s=GREP_TIMEOUT_S, ok_codes=(0, 1, 128))

    def tree_paths(self) -> list[str]:
        """Every file path of ``head`` (``ls-tree -r -z``, git's order), cached. Raises
        GitError on a timeout (10 s)."""
        with self._lock:
            if self._tree is None:
                out = git.run_git(
                    self.repo, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "-z",
                    "--end-of-options", self.head, timeout_s=GREP_TIMEOUT_S,
                )
                self._tree = git.zsplit(out)
            return self._tree

    def shown_paths(self) -> list[str]:
        """:meth:`tree_paths` as the model may see them, in the same order: each path with its
        non-UTF-8 bytes as ``\\xNN`` (``util.shown_text``) and redacted (``redact``), all of
        them together one per line (a path holding a line break on its own), cached. Raises
        GitError as :meth:`tree_paths`."""
        with self._lock:
            if self._shown is not None:
                return self._shown
        paths = [util.shown_text(p) for p in self.tree_paths()]
        plain = [p for p in paths if "\n" not in p and "\r" not in p]
        red = self.redact("\n".join(plain)).split("\n") if plain else []
        if len(red) != len(plain):  # never expected (redaction keeps line breaks)
            red = [self.redact(p) for p in plain]
        rest = iter(red)  # the redacted plain paths, in order
        shown = [next(rest) if "\n" not in p and "\r" not in p else self.redact(p)
                 for p in paths]
        with self._lock:
            self._shown = shown
        return shown
