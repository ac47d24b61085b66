"""Load a change set with bounded time and memory: metadata first, content only where needed.

One ``git diff --raw --numstat -p -z`` process (the flags of ``git.diff_command``, one
diffcore run, so paths, renames and sections agree) is read as a stream:

1. The NUL-delimited ``--raw``/``--numstat`` records come first: every changed path, its
   status, modes, blob ids and line counts. ``-c core.bigFileThreshold=<select.max_file_bytes>``
   makes git report a larger blob as binary (numstat ``-``) without reading it; for those
   files alone ``git cat-file --batch-check`` gives the blob sizes (``FileDiff.size_bytes``).
2. Selection gates that need no content (``selection.metadata_reason``) decide most files,
   a too-large file among them, before any of their content is read. The files left (the
   candidates) are bounded (``bounds``: ``select.include`` first, then path order; a scan
   also by ``select.max_total_bytes``, source and smaller files first).
3. The patch that follows is walked section by section (``diff.PatchStream``): a candidate's
   section is kept and parsed while the kept sections stay within ``select.max_total_bytes``
   (then that file and every later candidate are ``over_max_total_bytes``); the sections of
   excluded or over-bound files are parsed only for the caller's secret scan, as copies
   (``ChangeSet.probes``; the files stay ``FileDiff.loaded`` False), while the scan budget
   lasts; every other section is passed over unread. Once no later section can be needed the
   process is stopped.
4. Kept files go through every gate (``selection.select``: content gates and the token gate).
5. The first bytes of the blobs git did not diff are read (``scan.sniff_blobs``: one
   ``git cat-file --batch`` for those within ``select.max_file_bytes``, a stream stopped after
   those bytes for each larger one): a file too large to load that holds binary content is
   ``binary``, one whose first lines say it is generated is ``default_path`` (gate 8), and a
   binary file whose content is text with a stray NUL byte or UTF-16 text
   (``secrets.blob_kind``) is secret-scanned like a too-large one.
6. The secret scan of each file too large to load, and of each such text file,
   streams its blob to its end (``secrets.blobs``) while the budget lasts; the outcome is
   stated in the file's ``Decision.detail``.

``security.max_scan_bytes`` bounds the bytes the secret scan reads for files that are not
reviewed (reviewed files are always scanned whole: their diffs are redacted anyway); blobs
share what the sections leave, smallest first, so as many as possible are read to their end.
A text file whose added content the scan did not read to its end says so in its detail and
has ``Decision.scan_gap`` (unless the user's own ``select.exclude`` names it): the review is
then incomplete.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from .. import git, util
from ..diff import (
    DiffParseError,
    FileDiff,
    PatchStream,
    RawEntry,
    fill_from_sections,
    parse_raw_numstat_z,
)
from ..errors import GitError
from ..findings import Finding
from ..git import (
    CONTEXT_LINES,
    Target,
    diff_command,
    read_objects,
    rediff_as_text,
)
from . import bounds, hookinput, selection, whole
from .deleted_refs import EarlySearch, mark_referenced
from .scan import not_scanned, read_head_texts, scan_blobs, scanned_as_text, sniff_blobs
from .selection import SelectionReason

log = logging.getLogger(__name__)

RECORDS_READ_BYTES = 1 << 20  # stdout is read in pieces of this size
EARLY_GATES_MIN_PATHS = 4000  # from this many changed paths the path gates overlap --numstat


class ScanPolicy(NamedTuple):
    """The secret scan of files that are not reviewed: ``allow`` as in
    ``secrets.redaction.find_secrets``; ``max_bytes`` is ``security.max_scan_bytes``, the bytes
    read for them in all (0: none, so each such file that adds text is a ``scan_gap``).
    The sections read for the scan are parsed and handed to the caller (``ChangeSet.probes``),
    so the caller's scan (``scan``, with the optional detect-secrets pass and the
    protected-path check) sees them like loaded files."""

    allow: tuple[str, ...] = ()
    max_bytes: int = 0


@dataclass
class ChangeSet:
    """Every changed path of a target with its decision, in git's order.

    ``decisions[i].file`` is ``files[i]``. Only files with ``loaded`` True hold hunks.
    ``findings`` are the secrets found in the scan of blobs that were not loaded (too large,
    text with a NUL byte);
    loaded files and ``probes`` are for the caller to scan. ``unchanged_names``: the file
    names given (``names``) that are not changed paths here (``hookinput.filter_paths``), or
    None. ``probes``: the files not loaded whose sections were parsed for the caller's secret
    scan, with their reasons (copies: ``files`` keeps them unloaded). ``text_now``: the new
    paths of files git calls binary whose new blob is text (``_Loader._sniff``), so the old
    one was binary: reviewed whole when their paths pass the gates (``whole``)."""

    files: list[FileDiff]
    decisions: list[selection.Decision]
    findings: list[Finding] = field(default_factory=list)
    unchanged_names: list[str] | None = None
    probes: list[selection.Decision] = field(default_factory=list)
    text_now: set[str] = field(default_factory=set)


def _file_from_entry(e: RawEntry) -> FileDiff:
    return FileDiff(
        status=e.status, old_path=e.old_path, new_path=e.new_path, old_mode=e.old_mode,
        new_mode=e.new_mode, old_oid=e.old_oid, new_oid=e.new_oid, similarity=e.similarity,
        binary=e.insertions is None, insertions=e.insertions or 0, deletions=e.deletions or 0,
        loaded=False,
    )


def _read_records(chunks: Iterator[bytes]) -> tuple[bytes, bytes]:
    r"""Read the ``--raw``/``--numstat`` records up to the ``\0\0`` that ends them (see
    ``diff.patch.split_raw_and_patch``); returns (records, the patch bytes read past them)."""
    buf = bytearray()
    for chunk in chunks:
        start = max(0, len(buf) - 1)
        buf += chunk
        cut = buf.find(b"\0\0", start)
        if cut >= 0:
            return bytes(buf[: cut + 1]), bytes(buf[cut + 2 :])
    return bytes(buf), b""


def _early_path_reasons(
    repo: Path, target: Target, policy: selection.SelectionPolicy,
    user_ex: selection.GlobList | None, user_in: selection.GlobList | None, min_paths: int,
) -> list[tuple[tuple[str, str, str], str]]:
    """((status, old path, new path), ``selection.path_reason``) of every path of ``git diff
    --raw -z`` with the pinned flags (same diffcore run as the main call: same renames, same
    order). [] below ``min_paths`` paths, where overlapping git's work is not worth another
    process."""
    args = diff_command(target, "--raw", "-z", "--no-abbrev")
    out = git.run_git(repo, *args)
    if out.count(b"\0") < 2 * min_paths:  # at least two NUL-ended fields per path
        return []
    return [((e.status, e.old_path, e.new_path),
             selection.path_reason(e, policy, user_ex, user_in))
            for e in parse_raw_numstat_z(out)]


def blob_sizes(repo: Path, oids: Sequence[str]) -> dict[str, int]:
    """Sizes in bytes of the objects ``oids`` (``git cat-file --batch-check``: one
    ``<oid> <type> <size>`` or ``<oid> missing`` line per input line); missing ones are left
    out. Raises GitError."""
    wanted = list(dict.fromkeys(o for o in oids if o and set(o) != {"0"}))
    if not wanted:
        return {}
    out = git.run_git(repo, "cat-file", "--batch-check",
                        stdin="".join(f"{o}\n" for o in wanted).encode("ascii"))
    sizes: dict[str, int] = {}
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def load_change_set(
    repo: Path, target: Target, policy: selection.SelectionPolicy, *,
    count_tokens: Callable[[str], int] | None = None, scan: ScanPolicy | None = None,
    names: Sequence[str] | None = None, early_gates_min_paths: int = EARLY_GATES_MIN_PATHS,
) -> ChangeSet:
    """Changed files of ``target`` with their decisions (spec §3.1, §4), loading content only
    where a decision or the secret scan needs it, within the bounds of ``policy`` (see the
    module docstring). ``count_tokens`` as in ``selection.select``. ``scan`` None: no secret
    scan (``--preview``). ``names``: the hook's file names (``hookinput.filter_paths``; None =
    none given): other paths are left out of the change set. From ``early_gates_min_paths``
    changed paths on, the path gates run on a ``--raw``-only listing while git computes
    ``--numstat``. Files binary only by ``.gitattributes`` are re-diffed as text
    (``git.attributes``, ``git.rediff_as_text``); a deleted file the snapshot still refers to is
    reviewed (``deleted_refs``); one whose old side a path or marker gate kept out, whole
    (``whole``). A head equal to the base (a staged snapshot that matches HEAD) has no change:
    no git process. Raises GitError / DiffParseError."""
    if target.base == target.head:
        return ChangeSet([], [], unchanged_names=None if names is None
                         else hookinput.filter_paths([], names)[1])
    user_ex = selection.GlobList(policy.exclude) if policy.exclude else None
    user_in = selection.GlobList(policy.include) if policy.include else None
    args = diff_command(target, "--raw", "--numstat", "-p", "-z", "--no-abbrev",
                        f"-U{CONTEXT_LINES}")
    if policy.max_file_bytes > 0:
        args = ["-c", f"core.bigFileThreshold={policy.max_file_bytes}", *args]
    with git.stream_git(repo, *args, timeout_s=300.0) as stream:
        # git spends most of its time on --numstat before it prints any record: meanwhile the
        # path gates are decided on the paths of a --raw-only run of the same diff
        early = _early_path_reasons(repo, target, policy, user_ex, user_in,
                                    early_gates_min_paths)
        likely = [(target.head, key[1]) for key, r in early if r == SelectionReason.DELETED]
        search = EarlySearch(repo, likely) if likely else None
        chunks = stream.chunks(RECORDS_READ_BYTES)
        records, rest = _read_records(chunks)
        files = [_file_from_entry(e) for e in parse_raw_numstat_z(records)]
        known: list[str | None] = [None] * len(files)
        if [key for key, _ in early] == [(f.status, f.old_path, f.new_path) for f in files]:
            known = [r for _, r in early]
        loader = _Loader(repo, target, policy, scan, files, (user_ex, user_in))
        loader.decide_metadata(known, names, search)
        loader.walk(PatchStream(chunks, rest))
    loader.rediff_forced()
    return whole.review_whole(
        repo, target, loader.finish(count_tokens), policy, (user_ex, user_in),
        lambda t: load_change_set(repo, t, policy, count_tokens=count_tokens, scan=scan))


DROPPED = "\0dropped"  # pre-reason of a path the hook's file names leave out


class _Loader:
    """The state of one :func:`load_change_set`: the files in git's order, their reason so far
    (``pre``; "" = a candidate), the secret scan's findings, statements and budget."""

    def __init__(self, repo: Path, target: Target, policy: selection.SelectionPolicy,
                 scan: ScanPolicy | None, files: list[FileDiff],
                 globs: tuple[selection.GlobList | None, selection.GlobList | None]) -> None:
        self.repo, self.target, self.policy, self.scan = repo, target, policy, scan
        self.files = files
        self.globs = globs
        self.pre: list[str] = []
        self.candidates: list[int] = []
        self.n_selected = 0
        self.forced: dict[int, str] = {}  # index → the .gitattributes entry (git.attributes)
        self.unchanged_names: list[str] | None = None
        self.scan_left = scan.max_bytes if scan is not None else 0
        self.findings: list[Finding] = []
        self.notes: dict[int, str] = {}  # index → secret scan statement
        self.scanned: set[int] = set()
        self.gaps: set[int] = set()  # files whose added text the scan left partly unread
        self.nul_text: set[int] = set()  # binary to git, text with a NUL byte: scanned whole
        self.probes: list[selection.Decision] = []
        self.text_now: set[int] = set()  # binary to git, its new blob text: the old one was not

    def _reason(self, f: FileDiff, known: str | None = None) -> str:
        return selection.metadata_reason(f, self.policy, *self.globs, known)

    def decide_metadata(self, known: Sequence[str | None], names: Sequence[str] | None,
                        search: EarlySearch | None = None) -> None:
        """Sizes of big blobs, the gates that need no content, the attribute-binary files
        that hold text, deleted files still referred to (``search``: started early), and the
        max_files bound."""
        files, policy = self.files, self.policy
        if policy.max_file_bytes > 0:
            sizes = blob_sizes(self.repo, [o for f in files if f.binary and not f.submodule
                                           for o in (f.old_oid, f.new_oid)])
            for f in files:
                found = [sizes[o] for o in (f.old_oid, f.new_oid) if o in sizes]
                if found and max(found) > policy.max_file_bytes:
                    f.size_bytes = max(found)
        shown = None
        if names is not None:
            kept, self.unchanged_names = hookinput.filter_paths(files, names)
            shown = {id(f) for f in kept}
        forced = {id(f): attr for f, attr in git.text_marked_binary(
            self.repo, [f for f in files if f.size_bytes is None
                        and (shown is None or id(f) in shown)], read_objects)}
        self.pre = []
        for i, (f, k) in enumerate(zip(files, known, strict=True)):
            if shown is not None and id(f) not in shown:
                self.pre.append(DROPPED)
            elif id(f) in forced:  # decided as text; its content comes from a --text diff
                self.forced[i] = forced[id(f)]
                self.pre.append(self._reason(replace(f, binary=False, insertions=1)))
            else:
                self.pre.append(self._reason(f, k))
        gone = [i for i, r in enumerate(self.pre) if r == SelectionReason.DELETED]
        if gone and mark_referenced(self.repo, [(self.target.head, files[i]) for i in gone],
                                    search):
            for i in gone:  # deleted but still used, so reviewed
                if files[i].referenced_by:
                    self.pre[i] = self._reason(files[i])
        self._bound_files()

    def _bound_files(self) -> None:
        """``select.max_files`` (a scan: and ``select.max_total_bytes``), in ``bounds``' order."""
        candidates = [i for i, r in enumerate(self.pre) if not r]
        self.n_selected = len(candidates)
        sizes = (blob_sizes(self.repo, [self.files[i].new_oid for i in candidates])
                 if self.target.mode == "scan" else None)
        self.candidates, over = bounds.bound(self.files, candidates, self.globs[1],
                                             self.policy, sizes)
        for i, why in over.items():
            self.pre[i] = why

    def scan_wanted(self, i: int) -> bool:
        """Whether file ``i``'s section is read for the secret scan when it is not kept."""
        f, reason = self.files[i], self.pre[i]
        if (self.scan is None or f.status == "deleted"
                or reason in (SelectionReason.TOO_LARGE, DROPPED)):
            return False
        if f.binary:
            return False
        return bool(f.insertions) or (reason == SelectionReason.SECRET_PATH
                                      and f.status in ("renamed", "copied"))

    def walk(self, sections: PatchStream) -> None:
        """Read the patch: keep candidates' sections within select.max_total_bytes, scan the
        sections of the other files within the scan budget, stop once nothing is needed."""
        files, policy, pre = self.files, self.policy, self.pre
        last_needed = max([*self.candidates,
                           *(i for i in range(len(files)) if self.scan_wanted(i))], default=-1)
        last_candidate = max(self.candidates, default=-1)
        wanted = set(self.candidates) - set(self.forced)
        kept_bytes = 0
        over_bytes = False
        for i, f in enumerate(files):
            if i > last_needed or (self.scan_left <= 0 and (over_bytes or i > last_candidate)):
                break
            review_left = -1
            if i in wanted and not over_bytes:
                review_left = (policy.max_total_bytes - kept_bytes
                               if policy.max_total_bytes > 0 else 1 << 62)
            scan_this = self.scan_wanted(i) and self.scan_left > 0
            got = _take_sections(sections, f,
                                 max(review_left, self.scan_left if scan_this else 0))
            if got is None:
                raise GitError(f"git diff: no patch section for {f.path!r}")
            parts, size = got
            if review_left >= 0:
                if parts is not None and size <= review_left:
                    kept_bytes += size
                    fill_from_sections(f, parts)
                    continue
                over_bytes = True  # this diff would pass select.max_total_bytes
                for j in self.candidates:
                    if j >= i:
                        pre[j] = SelectionReason.OVER_MAX_TOTAL_BYTES
            if scan_this:
                self._scan_section(i, parts, size)

    def _scan_section(self, i: int, parts: Sequence[bytes] | None, size: int) -> None:
        """The secret scan of a section that is not kept, within the budget."""
        if parts is None or size > self.scan_left:
            self.notes[i] = not_scanned(self.scan.max_bytes if self.scan else 0, size)
            self.gaps.add(i)
            self.scan_left = 0
            return
        self.scan_left -= size
        self.scanned.add(i)
        probe = replace(self.files[i], notes=[])
        fill_from_sections(probe, parts)
        self.probes.append(selection.Decision(probe, False, self.pre[i]))

    def rediff_forced(self) -> None:
        """Files binary only by ``.gitattributes`` get their ``git diff --text`` entry (loaded,
        so reviewed when selected and secret-scanned like any loaded file); one git still
        calls binary stays ``binary``."""
        if not self.forced:
            return
        idx = sorted(self.forced)
        texts = rediff_as_text(self.repo, self.target, [self.files[i] for i in idx],
                               [(self.files[i], self.forced[i]) for i in idx])
        for i, text in zip(idx, texts, strict=True):
            if text is self.files[i] or text.binary:
                self.pre[i] = SelectionReason.BINARY
                continue
            self.files[i] = text

    def finish(self, count_tokens: Callable[[str], int] | None) -> ChangeSet:
        """Every gate for the kept files, the first bytes of the blobs not diffed, the scan of
        the blobs not loaded, the details."""
        files, pre, scan, policy = self.files, self.pre, self.scan, self.policy
        self._sniff()
        if scan is not None:
            for i in range(len(files)):
                if (self.scan_wanted(i) and i not in self.scanned and i not in self.notes
                        and not files[i].loaded):
                    self.notes[i] = not_scanned(scan.max_bytes, None)
                    self.gaps.add(i)
        kept = [files[i] for i in self.candidates if pre[i] == ""]
        read_head_texts(self.repo, kept)
        final = {id(d.file): d for d in selection.select(kept, policy, count_tokens)}
        decisions: list[selection.Decision] = []
        for i, f in enumerate(files):
            d = final.get(id(f)) if f.loaded else None
            decisions.append(d or selection.Decision(
                f, False, pre[i] or SelectionReason.NO_CONTENT_CHANGE))
        self._scan_blobs()
        out_files: list[FileDiff] = []
        out: list[selection.Decision] = []
        for i, d in enumerate(decisions):
            if pre[i] == DROPPED:
                continue
            text = "; ".join(x for x in (d.detail or _detail(d, policy, self.n_selected),
                                         self.notes.get(i, "")) if x)
            gap = i in self.gaps and d.reason != SelectionReason.USER_EXCLUDE
            if text != d.detail or gap:
                d = d._replace(detail=text, scan_gap=gap)
            out_files.append(d.file)
            out.append(d)
        return ChangeSet(out_files, out, self.findings, self.unchanged_names, self.probes,
                         {files[i].new_path for i in self.text_now if pre[i] != DROPPED})

    def _sniff(self) -> None:
        """The first bytes of the new blob of each file git did not diff whose decision depends
        on its content (``scan.sniff_blobs``): a too-large file that holds binary content is
        ``binary``, one whose first lines say it is generated is ``default_path`` unless
        ``select.include`` names it (gate 6 skips gate 8); a binary file that is text with a
        NUL byte is scanned (with a scan: ``nul_text``); one whose new blob is text
        (``text_now``: git read it, so within its 8,000-byte test, the old blob was binary)."""
        files, pre = self.files, self.pre
        wanted = {SelectionReason.TOO_LARGE, SelectionReason.BINARY}
        user_in = self.globs[1]
        for i, (kind, generated) in sniff_blobs(
                self.repo, files, [i for i, r in enumerate(pre) if r in wanted]).items():
            if scanned_as_text(kind) and self.scan is not None:
                self.nul_text.add(i)
            if kind == "text" and pre[i] == SelectionReason.BINARY and i not in self.forced:
                self.text_now.add(i)
            if pre[i] != SelectionReason.TOO_LARGE:
                continue
            if kind != "text":
                pre[i] = SelectionReason.BINARY
            elif generated and (user_in is None or not user_in.match_file(files[i].path)):
                pre[i] = SelectionReason.DEFAULT_PATH

    def _scan_blobs(self) -> None:
        """The secret scan of the blobs that were not loaded (``scan.scan_blobs``): files too
        large to load and text files with a NUL byte, within what is left of the budget."""
        scan, policy = self.scan, self.policy
        if scan is None:
            return
        todo = [i for i, f in enumerate(self.files)
                if f.status != "deleted" and not f.loaded and self.pre[i] != DROPPED
                and not f.submodule and f.old_oid != f.new_oid
                and (i in self.nul_text or (
                    self.pre[i] != SelectionReason.BINARY and policy.max_file_bytes > 0
                    and f.size_bytes is not None and f.size_bytes > policy.max_file_bytes))]
        done = scan_blobs(self.repo, self.files, todo, scan.allow, self.scan_left)
        self.scan_left -= done.used
        self.findings.extend(done.findings)
        self.notes.update(done.notes)
        self.gaps |= done.gaps


def _take_sections(
    sections: PatchStream, f: FileDiff, keep_max: int
) -> tuple[list[bytes] | None, int] | None:
    """Consume ``f``'s section(s): a type change may be printed as two sections with the same
    ``diff --git`` line (``diff.patch.build_file_diffs``). Returns (the sections' bytes, or None
    when not kept; their size), or None when the stream has no section left."""
    header = sections.peek_header()
    if header is not None and not _header_matches(header, f):
        raise DiffParseError(f"git diff: patch section {header[:80]!r} does not belong to "
                             f"{f.path!r}")
    first = sections.next_section(keep_max)
    if first is None:
        return None
    data, size = first
    parts = None if data is None else [data]
    if f.status == "type_changed" and header is not None and sections.peek_header() == header:
        second = sections.next_section(max(keep_max - size, 0) if data is not None else 0)
        if second is not None:
            size += second[1]
            if parts is not None and second[0] is not None:
                parts.append(second[0])
            else:
                parts = None
    return parts, size


_QUOTED_NAME = re.compile(r'["\\\x00-\x1f\x7f]')  # git C-quotes such names (core.quotePath off)


def _header_matches(header: bytes, f: FileDiff) -> bool:
    """Whether a ``diff --git a/<old> b/<new>`` line can be ``f``'s: checked for names git
    prints unquoted (the others are not parsed, as in ``diff.patch``), so a misaligned stream is an
    error rather than hunks attached to the wrong file."""
    if _QUOTED_NAME.search(f.old_path) or _QUOTED_NAME.search(f.new_path):
        return True
    want = f"diff --git a/{f.old_path} b/{f.new_path}"
    return header == os.fsencode(want)


def _detail(d: selection.Decision, policy: selection.SelectionPolicy, selected: int) -> str:
    """The reason in words, where it needs numbers."""
    f = d.file
    if d.reason == SelectionReason.TOO_LARGE and f.size_bytes is not None and not f.loaded:
        return (f"{util.human_bytes(f.size_bytes)}, larger than select.max_file_bytes "
                f"({util.human_bytes(policy.max_file_bytes)}): content not read")
    if d.reason == SelectionReason.OVER_MAX_FILES:
        return (f"{selected} files to review, more than select.max_files ({policy.max_files}):"
                " files in select.include first, then the first ones in path order are reviewed")
    if d.reason == SelectionReason.OVER_MAX_TOTAL_BYTES:
        return (f"the diffs to review pass select.max_total_bytes "
                f"({util.human_bytes(policy.max_total_bytes)}) at this file; it and the files "
                "after it are not reviewed")
    return ""
