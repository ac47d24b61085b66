"""Everything that runs git (the only code that starts processes): the runner, what a run asks
about the repository, streamed output, the reviewed targets (staged snapshot, commits, ranges,
pushes, whole-file scans), push scope, review notes (``review_notes``), attributes, and one
changed file's diff read on demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .attributes import text_marked_binary
    from .file_patch import read_file_patch
    from .indexcopy import private_copy
    from .moved import MovedLines, moved_lines
    from .process import decode_text, foreign_env, run_command, run_git, run_git_full, zsplit
    from .push_scope import bound_push_range
    from .repository import (
        BLOB_MEMO_MAX_BLOB,
        find_toplevel,
        git_common_dir,
        git_path,
        head_blobs,
        known_blob,
        remember_blob,
        run_scope,
    )
    from .review_notes import (
        NOTES_REF,
        ReviewNote,
        change_digests,
        follow_renames,
        has_commits,
        note_keys,
        note_new_commit,
        notes_refs,
        patch_ids,
        range_commits,
        range_paths,
        read_notes,
        record_snapshot,
        unpushed_commits,
        verbatim_patch_ids,
    )
    from .stream import stream_git
    from .target import (
        CONTEXT_LINES,
        GENERATED_SCAN_BYTES,
        Target,
        commit_target,
        diff_command,
        merge_snapshot,
        parse_push_lines,
        pre_commit_push_targets,
        push_targets,
        range_target,
        read_objects,
        rediff_as_text,
        snapshot_ahead,
        staged_snapshot,
    )
    from .whole_files import SCAN_BASE_LABEL, scan_target, tree_without

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "attributes": ("text_marked_binary",),
    "file_patch": ("read_file_patch",),
    "indexcopy": ("private_copy",),
    "moved": ("MovedLines", "moved_lines"),
    "process": ("decode_text", "foreign_env", "run_command", "run_git", "run_git_full", "zsplit",),
    "repository": (
        "BLOB_MEMO_MAX_BLOB",
        "find_toplevel",
        "git_common_dir",
        "git_path",
        "head_blobs",
        "known_blob",
        "remember_blob",
        "run_scope",
    ),
    "push_scope": ("bound_push_range",),
    "whole_files": ("SCAN_BASE_LABEL", "scan_target", "tree_without"),
    "review_notes": ("NOTES_REF", "ReviewNote", "change_digests", "follow_renames",
                     "has_commits", "note_keys", "note_new_commit", "notes_refs", "patch_ids",
                     "range_commits", "range_paths", "read_notes", "record_snapshot",
                     "unpushed_commits", "verbatim_patch_ids",),
    "stream": ("stream_git",),
    "target": (
        "CONTEXT_LINES",
        "GENERATED_SCAN_BYTES",
        "Target",
        "commit_target",
        "diff_command",
        "merge_snapshot",
        "parse_push_lines",
        "pre_commit_push_targets",
        "push_targets",
        "range_target",
        "read_objects",
        "rediff_as_text",
        "snapshot_ahead",
        "staged_snapshot",
    ),
})
