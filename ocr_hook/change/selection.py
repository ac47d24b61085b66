"""Deterministic file selection (spec §4): FileDiff[] + policy → reviewed or excluded(reason).

Gates run in the order of spec §4; the first that matches decides. Pure: no git, no LLM, no env.
Globs use gitignore semantics through pathspec; built-in lists live in ``config/*.json``
(``path_lists.json``: secret paths and provider directories; ``default_exclude_patterns.json``:
tests, fixtures, generated and lock files; ``supported_file_types.json``: the allow-list).

Reasons, in gate order (OCR names where OCR has one):

1. ``binary`` – git says binary (``Binary files … differ``, numstat ``-``) or a NUL byte in
   the diff's content (files forced to text by a ``diff`` attribute);
2. ``submodule`` (mode 160000), ``symlink_outside`` (a link whose target is absolute or walks
   above the top of the repository; its target is never read), ``symlink`` (any link, in a
   scan: ``SelectionPolicy.links`` off; its blob is the link text, not code);
3. ``secret_path`` – new or old (rename source) path matches a secret path;
4. ``provider_directory`` – the path lies under a dependency/IDE/build directory at any depth;
5. ``user_exclude`` – ``select.exclude`` / ``--exclude``;
6. (``select.include`` match: the file skips gates 7–8);
7. ``unsupported_ext`` – neither extension nor file name is in the allow-list;
8. ``default_path`` – tests (unless ``select.review_tests``), fixtures, snapshots, generated
   and lock files, and files whose first lines carry ``@generated`` or ``Code generated …
   DO NOT EDIT``;
9. ``deleted`` – kept in the "other changed files" list, not reviewed unless the snapshot
   still refers to it (``FileDiff.referenced_by``, found by ``deleted_refs``);
   then three reasons for paths whose content did not change, so an LLM call would have
   nothing to look at (spec §3.5: listed, no LLM call): ``rename_only`` (a rename without
   hunks), ``mode_only`` (only the file mode changed), ``no_content_change`` (anything else
   without hunks: an added or deleted empty file, a copy without edits);
10. ``too_large`` – the file's diff alone exceeds 80 % of the context budget, in tokens; or,
    decided from git's object sizes before any content is read (``changeset``), one of its
    blobs is larger than ``select.max_file_bytes``.

Gates 1–9 are deliberate exclusions (binary content, secret paths, dependency and build
folders, the user's own globs, file types, tests, generated and lock files, deletions, paths
without a content change). ``too_large`` is not: the file passed every one of them and was left
out only because it could not be fitted, so it is selected but not reviewed
(:data:`NOT_REVIEWED_REASONS`), like the two reasons that bound a large change set
(``changeset``): files that pass every gate but come after the first ``select.max_files`` of
them (``over_max_files``), or whose diffs would take the total past ``select.max_total_bytes``
(``over_max_total_bytes``). The review reports such files as not reviewed, with the reason, and
is incomplete.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .. import util
from ..diff import FileDiff, Hunk, RawEntry
from ..git import CONTEXT_LINES, GENERATED_SCAN_BYTES
from ..vocabulary import StopReason, Vocabulary

TOO_LARGE_FRACTION = 0.8  # spec §4 gate 10: a file's diff alone > 80 % of the context budget
GENERATED_SCAN_LINES = 5  # spec §4 gate 8: "files whose first lines say …"
BYTES_PER_TOKEN_FLOOR = 3  # no tokenizer yields more than one token per 3 bytes of code/diff


class SelectionReason(Vocabulary):
    """Why selection keeps a changed file from review, in gate order (see the module
    docstring), the two bounds of a large change set last (selected, not reviewed). ``words``:
    the reason for people (the text output never shows codes such as ``unsupported_ext``);
    three reasons are named after the path's kind where it has one (:func:`reason_words`), and
    the words of ``PROVIDER_DIRECTORY`` and ``DEFAULT_PATH`` name what is left."""

    BINARY = "binary", "binary"
    SUBMODULE = "submodule", "submodule"
    SYMLINK_OUTSIDE = "symlink_outside", "symlink pointing outside the repository"
    SYMLINK = "symlink", "symbolic link (a scan reads files, not link text)"
    SECRET_PATH = "secret_path", "may hold secrets"
    PROVIDER_DIRECTORY = "provider_directory", "build output"
    USER_EXCLUDE = "user_exclude", "excluded by select.exclude / --exclude"
    UNSUPPORTED_EXT = "unsupported_ext", "not a source file type"
    DEFAULT_PATH = "default_path", "test file"
    DELETED = "deleted", "deleted"
    RENAME_ONLY = "rename_only", "renamed, content unchanged"
    MODE_ONLY = "mode_only", "mode change only"
    NO_CONTENT_CHANGE = "no_content_change", "no content change"
    TOO_LARGE = "too_large", "too large for the model's context"
    OVER_MAX_FILES = "over_max_files", "over select.max_files"
    OVER_MAX_TOTAL_BYTES = "over_max_total_bytes", "over select.max_total_bytes"


REASONS = tuple(SelectionReason)  # every reason, in gate order
# the bounds of a large change set
BOUND_REASONS = frozenset({SelectionReason.OVER_MAX_FILES, SelectionReason.OVER_MAX_TOTAL_BYTES})
# selected, not reviewed: a file that passed every deliberate gate but could not be fitted
NOT_REVIEWED_REASONS = BOUND_REASONS | {SelectionReason.TOO_LARGE}
# paths whose content did not change (spec §3.5: listed, no LLM call)
NO_CONTENT_REASONS = frozenset({SelectionReason.RENAME_ONLY, SelectionReason.MODE_ONLY,
                                SelectionReason.NO_CONTENT_CHANGE})


class SelectionPolicy(NamedTuple):
    """What the user configured: globs are gitignore-style (``select.*`` and ``--exclude``);
    ``context_tokens`` is ``llm.context_tokens`` (0 disables gate 10). The bounds of a large
    change set (``changeset``; 0 = no bound): ``max_file_bytes`` per blob, ``max_files``
    reviewed files, ``max_total_bytes`` of their diffs together."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    review_tests: bool = False
    context_tokens: int = 200_000
    max_file_bytes: int = 0
    max_files: int = 0
    max_total_bytes: int = 0
    links: bool = True  # False (git ocr scan): every symbolic link is left out (``symlink``)


class Decision(NamedTuple):
    """Outcome for one changed path: ``reason`` is a :class:`SelectionReason`, "" when the
    file will be reviewed.
    ``detail`` says the same in words where a reason needs numbers (sizes, bounds) and states
    the secret scan of a file whose content was not loaded ("" otherwise). ``scan_gap``: the
    secret scan left part of the text this change adds to the file unread (the
    ``security.max_scan_bytes`` budget, an unreadable blob) and the file is not one the user
    excluded (``user_exclude``): the review is incomplete (``changeset``)."""

    file: FileDiff
    reviewed: bool
    reason: str
    detail: str = ""
    scan_gap: bool = False

    @property
    def selected(self) -> bool:
        """Passed every deliberate gate: reviewed, or left out only because it could not be
        fitted (:data:`NOT_REVIEWED_REASONS`: too large, a bound of the change set)."""
        return self.reviewed or self.reason in NOT_REVIEWED_REASONS


class GlobList:
    """gitignore-style globs (pathspec's GitIgnoreSpec: last match wins, ``!`` negates).

    pathspec tries every pattern in turn; with ~40 patterns per list and 1,000 paths that is
    the bulk of ``--preview``'s time. All pattern regexes are therefore also joined into one
    alternation: a path that matches none of them cannot match the list, and only the rare
    path that matches some pattern is decided by pathspec itself. Same answers, one regex
    search per path in the common case.

    Compiling the built-in patterns costs more than a whole 1-file review, so it waits for the
    first path that contains one of the patterns' literal parts (:func:`glob_needles`): every
    character of a pattern outside its wildcards must be in a path it matches, so a path without
    any of them is no match, decided without a regex. The needle test itself is a loop of substring
    tests for the first NEEDLE_LOOP_PATHS paths and one regex alternation of the needles after that
    (one C-level scan per path; compiling it costs about as much as the loop over a few hundred
    paths).
    """

    NEEDLE_LOOP_PATHS = 64  # paths tested by the substring loop before the needle regex (ours)
    _GROUP_NAME = re.compile(r"\(\?P<\w+>")

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        self.needles = glob_needles(self.lines)
        self._needle_re: re.Pattern[str] | None = None
        self._needle_tests = 0
        self._compiled: tuple[Any, re.Pattern[str] | None] | None = None

    def _holds_needle(self, path: str) -> bool:
        """Whether ``path`` contains one of ``needles`` (not None here)."""
        needles = self.needles or ()
        if self._needle_re is None:
            if self._needle_tests < self.NEEDLE_LOOP_PATHS:
                self._needle_tests += 1
                return any(n in path for n in needles)
            if not needles:
                return False
            self._needle_re = re.compile("|".join(map(re.escape, needles)))
        return self._needle_re.search(path) is not None

    def _compile(self) -> tuple[Any, re.Pattern[str] | None]:
        import pathspec  # imported with the first glob list compiled

        spec = pathspec.GitIgnoreSpec.from_lines(self.lines)
        parts = [
            self._GROUP_NAME.sub("(?:", regex.pattern)
            for p in spec.patterns
            if p.include is not None and (regex := getattr(p, "regex", None)) is not None
        ]
        joined = re.compile("|".join(f"(?:{x})" for x in parts)) if parts else None
        self._compiled = (spec, joined)
        return self._compiled

    def match_file(self, path: str) -> bool:
        if self.needles is not None and not self._holds_needle(path):
            return False
        spec, joined = self._compiled or self._compile()
        if joined is None or joined.search(path) is None:
            return False
        return bool(spec.match_file(path))


_WILDCARDS = re.compile(r"\[[^\]]*\]?|[*?/]")


def glob_needles(lines: Sequence[str]) -> tuple[str, ...] | None:
    """One literal part of each including gitignore pattern (its longest run of characters
    between wildcards, brackets and slashes), or None when some including pattern has none
    (``*``) or uses an escape: then every path must go to the compiled patterns. Comments,
    blank lines and ``!`` patterns add nothing (a negation only removes matches)."""
    needles: list[str] = []
    for line in lines:
        pattern = line.rstrip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        if "\\" in pattern:
            return None
        runs = [r for r in _WILDCARDS.split(pattern) if r]
        if not runs:
            return None
        needles.append(max(runs, key=len))
    return tuple(dict.fromkeys(needles))


class _Builtin:
    """The built-in lists, compiled once per process."""

    def __init__(self) -> None:
        lists = util.load_builtin_json("path_lists.json")
        defaults = util.load_builtin_json("default_exclude_patterns.json")
        types = util.load_builtin_json("supported_file_types.json")
        self.secret = GlobList(lists["secret_paths"])
        self.provider = GlobList(lists["provider_directories"])
        self.tests = GlobList([p.lower() for p in defaults["tests"]])
        self.generated = GlobList(
            [p.lower() for p in defaults["generated"] + defaults["lock_files"]]
        )
        self.generated_only = GlobList([p.lower() for p in defaults["generated"]])
        self.lock_files = GlobList([p.lower() for p in defaults["lock_files"]])
        self.extensions = frozenset(e.lower() for e in types["extensions"])
        self.file_names = frozenset(types["file_names"])
        self.prefixes = tuple(types["file_name_prefixes"])


@functools.cache
def _builtin() -> _Builtin:
    return _Builtin()


def is_supported(path: str) -> bool:
    """True when the file name, a known name prefix (``Dockerfile.dev``) or the extension
    (case-insensitive) is in ``config/supported_file_types.json``. Dotfiles such as ``.env``
    count as their own extension."""
    b = _builtin()
    base = posixpath.basename(path)
    if base in b.file_names or base.startswith(b.prefixes):
        return True
    _, ext = posixpath.splitext(base)
    if not ext and base.startswith("."):
        ext = base  # ".env", ".bashrc"
    return bool(ext) and ext.lower() in b.extensions


def symlink_points_outside(link_path: str, target: str) -> bool:
    """True when a symlink at ``link_path`` (repo-relative) with text ``target`` escapes the
    repository: empty or absolute targets (also ``C:``-style) or ``..`` walks above the top."""
    if not target or target.startswith("/") or (len(target) > 1 and target[1] == ":"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    return joined == ".." or joined.startswith("../")


def marker_head(text: str, count: int = GENERATED_SCAN_LINES) -> list[str]:
    """The lines the marker test sees (gate 8): ``text``'s first ``count`` lines within its
    first ``git.GENERATED_SCAN_BYTES`` bytes (UTF-8), from a hunk or a blob's head alike."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) > GENERATED_SCAN_BYTES:
        text = raw[:GENERATED_SCAN_BYTES].decode("utf-8", "replace")
    return text.split("\n")[:count]


def _top_rows(hunk: Hunk, count: int) -> list[str]:
    """The new lines 1..``count`` a hunk starting at new line 1 shows, in order."""
    return [text for _, text in sorted(
        (ln.new_line, ln.text) for ln in hunk.lines
        if ln.new_line is not None and ln.new_line <= count)]


def needs_head(fd: FileDiff, count: int = GENERATED_SCAN_LINES) -> bool:
    """Whether the marker test of ``fd`` needs its new blob's head (``FileDiff.head_text``):
    its first hunk shows neither the first ``count`` lines nor GENERATED_SCAN_BYTES bytes, nor
    reaches the file's end (an added file; under ``git.CONTEXT_LINES`` context lines after its
    last change, as git prints that many while the file goes on). No hunks: False."""
    if not fd.hunks or fd.head_text is not None or fd.status == "deleted":
        return False
    first = fd.hunks[0]
    if first.new_start > 1:
        return True
    rows = _top_rows(first, count)
    if len(rows) >= count or sum(len(r.encode("utf-8", "replace")) + 1 for r in rows) \
            >= GENERATED_SCAN_BYTES or fd.status == "added" or first.old_count == 0:
        return False
    trailing = 0
    for ln in reversed(first.lines):
        if ln.kind != " ":
            break
        trailing += 1
    return trailing >= CONTEXT_LINES


def first_lines(fd: FileDiff, count: int = GENERATED_SCAN_LINES) -> list[str] | None:
    """The first ``count`` lines of the new file as the marker test sees them
    (:func:`marker_head`): from ``head_text`` when the loader read it, else from a hunk that
    starts at line 1; None when neither shows them."""
    if fd.head_text is not None:
        return marker_head(fd.head_text, count)
    if fd.hunks and fd.hunks[0].new_start <= 1:
        return marker_head("\n".join(_top_rows(fd.hunks[0], count)), count)
    return None


def looks_generated(lines: Sequence[str]) -> bool:
    """``@generated`` anywhere, or ``Code generated … DO NOT EDIT`` (the Go convention), in the
    given lines (case-insensitive)."""
    for line in lines:
        low = line.lower()
        if "@generated" in low or ("code generated" in low and "do not edit" in low):
            return True
    return False


def select(
    files: Sequence[FileDiff],
    policy: SelectionPolicy,
    count_tokens: Callable[[str], int] | None = None,
) -> list[Decision]:
    """Decide every changed file, in input order (spec §4 gates 1–10).

    ``count_tokens`` (text → tokens) is only called for diffs large enough to approach the
    too_large threshold (bytes/3 ≥ threshold), so small reviews never load a BPE table.
    """
    user_ex = GlobList(policy.exclude) if policy.exclude else None
    user_in = GlobList(policy.include) if policy.include else None
    limit = int(policy.context_tokens * TOO_LARGE_FRACTION)
    out: list[Decision] = []
    for fd in files:
        reason = exclusion_reason(fd, policy, user_ex, user_in)
        detail = ""
        if not reason and limit > 0 and len(fd.patch) // BYTES_PER_TOKEN_FLOOR >= limit:
            if count_tokens is not None:
                tokens, about = count_tokens(fd.patch), ""
            else:
                tokens = len(fd.patch.encode("utf-8", "replace")) // BYTES_PER_TOKEN_FLOOR
                about = "about "
            if tokens > limit:
                reason = SelectionReason.TOO_LARGE
                hunks = f"{len(fd.hunks):,} hunk{'s' if len(fd.hunks) != 1 else ''}"
                detail = (f"its diff ({hunks}) is {about}{tokens:,} tokens,"
                          f" more than {limit:,} ({TOO_LARGE_FRACTION:.0%} of"
                          f" llm.context_tokens = {policy.context_tokens:,})")
        out.append(Decision(fd, not reason, reason, detail))
    return out


def path_reason(
    fd: FileDiff | RawEntry,
    policy: SelectionPolicy,
    user_ex: GlobList | None,
    user_in: GlobList | None,
) -> str:
    """Gates 3–9 and the no-content reasons of :func:`exclusion_reason` from status, modes and
    paths alone, as if the file had no hunks and no content (``metadata_reason`` refines it)."""
    probe = FileDiff(fd.status, fd.old_path, fd.new_path, fd.old_mode, fd.new_mode,
                     referenced_by=getattr(fd, "referenced_by", ()))
    return exclusion_reason(probe, policy, user_ex, user_in, content=False)


def metadata_reason(
    fd: FileDiff,
    policy: SelectionPolicy,
    user_ex: GlobList | None,
    user_in: GlobList | None,
    known_path_reason: str | None = None,
) -> str:
    """The gates that need no file content, from git's metadata alone (status, modes, paths,
    ``--numstat`` counts, ``size_bytes``), in gate order; "" when the file's patch must be read
    to decide (it may still be excluded by a content gate: a ``diff`` attribute forcing a
    binary file to text, a link pointing outside, a generated-file marker).

    A blob larger than ``policy.max_file_bytes`` is ``too_large`` unless a path gate (3–8) or
    ``deleted`` comes first: git reports such a file as binary without reading it, so gate 1
    cannot be decided for it. numstat ``0 0`` on a text file means no hunks: the no-content
    reasons are decided here too. Symbolic links always need their link text (gate 2).
    ``known_path_reason``: :func:`path_reason` of the file when already computed."""
    too_big = (policy.max_file_bytes > 0 and fd.size_bytes is not None
               and fd.size_bytes > policy.max_file_bytes)
    if fd.binary and not too_big:
        return SelectionReason.BINARY
    if fd.submodule:
        return SelectionReason.SUBMODULE
    if fd.symlink:
        return "" if policy.links else SelectionReason.SYMLINK
    reason = (path_reason(fd, policy, user_ex, user_in) if known_path_reason is None
              else known_path_reason)
    if reason in NO_CONTENT_REASONS:
        if fd.old_oid and fd.old_oid == fd.new_oid:
            return reason  # the same blob on both sides: no content change, whatever its size
        if too_big:
            return SelectionReason.TOO_LARGE
        has_lines = fd.binary or fd.insertions or fd.deletions
        return "" if has_lines else reason
    if reason:
        return reason
    return SelectionReason.TOO_LARGE if too_big else ""


def exclusion_reason(
    fd: FileDiff,
    policy: SelectionPolicy,
    user_ex: GlobList | None,
    user_in: GlobList | None,
    *,
    content: bool = True,
) -> str:
    """Gates 1–9 (and the three no-content reasons) for one file: the first reason, or "".
    ``content=False`` skips the generated-file marker check (the file's text is not known)."""
    b = _builtin()
    path = fd.path
    if fd.binary:
        return SelectionReason.BINARY
    if fd.submodule:
        return SelectionReason.SUBMODULE
    if fd.symlink and symlink_points_outside(path, fd.link_text):
        return SelectionReason.SYMLINK_OUTSIDE
    if fd.symlink and not policy.links:
        return SelectionReason.SYMLINK
    if b.secret.match_file(path) or (fd.old_path != path and b.secret.match_file(fd.old_path)):
        return SelectionReason.SECRET_PATH
    if b.provider.match_file(path):
        return SelectionReason.PROVIDER_DIRECTORY
    if user_ex is not None and user_ex.match_file(path):
        return SelectionReason.USER_EXCLUDE
    if user_in is None or not user_in.match_file(path):
        if not is_supported(path):
            return SelectionReason.UNSUPPORTED_EXT
        low = path.lower()
        if not policy.review_tests and b.tests.match_file(low):
            return SelectionReason.DEFAULT_PATH
        if b.generated.match_file(low):
            return SelectionReason.DEFAULT_PATH
        if fd.status != "deleted" and content:
            head = first_lines(fd)
            if head is not None and looks_generated(head):
                return SelectionReason.DEFAULT_PATH
    if fd.status == "deleted" and not fd.referenced_by:
        return SelectionReason.DELETED
    if not fd.hunks:
        if fd.status == "renamed":
            return SelectionReason.RENAME_ONLY
        if fd.mode_only:
            return SelectionReason.MODE_ONLY
        return SelectionReason.NO_CONTENT_CHANGE
    return ""


# reasons whose words depend on the path (a lock file, test data, generated, vendored…)
_PATH_WORDED = frozenset({SelectionReason.PROVIDER_DIRECTORY, SelectionReason.UNSUPPORTED_EXT,
                          SelectionReason.DEFAULT_PATH})
_VENDORED = ("vendor", "node_modules", "bower_components", "venv", ".venv", "site-packages",
             "pods", "carthage", "oh_modules")
_EDITOR = (".idea", ".vscode", ".svn")
_TEST_DATA = ("__snapshots__", "testdata", "fixtures", ".ipynb_checkpoints")


def reason_words(path: str, reason: str) -> str:
    """``reason`` (a selection reason, or the stop reason that left a selected file not
    reviewed) of ``path`` in human words: ``lock file``, ``generated/minified``, ``vendored``,
    ``test file``, ``binary``… A path that is a lock file, a generated/minified file or test
    data is called that whichever gate caught it first (``yarn.lock`` is ``unsupported_ext``,
    ``dist/app.min.js`` ``provider_directory``). A stop reason has its brief words
    (``StopReason.brief``); unknown reasons and stops without brief words are returned as
    they are."""
    known = SelectionReason.lookup(reason)
    if known is None:
        stop = StopReason.lookup(reason)
        return stop.brief if stop is not None and stop.brief else reason
    if known not in _PATH_WORDED:
        return known.words
    b = _builtin()
    low = path.lower()
    parts = low.split("/")
    if b.lock_files.match_file(low):
        return "lock file"
    if any(p in _TEST_DATA for p in parts[:-1]) or low.endswith(".snap"):
        return "test data"
    if b.generated_only.match_file(low) or (known == SelectionReason.DEFAULT_PATH
                                            and not b.tests.match_file(low)):
        return "generated/minified"
    if known != SelectionReason.PROVIDER_DIRECTORY:
        return known.words  # a test file; not a source file type
    if any(p in _VENDORED for p in parts[:-1]):
        return "vendored"
    if any(p in _EDITOR for p in parts[:-1]):
        return "editor settings"
    return known.words
