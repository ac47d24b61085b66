"""What a review reports: the result, its output formats (``formats``: the registry, one module
per format), the display helpers they share, where a report is written, progress on stderr, and
the session log and its local viewer.
"""

from __future__ import annotations

# TYPE_CHECKING without importing typing: the parser of a hook run reads the format names
from ..util import TYPE_CHECKING, lazy_exports

if TYPE_CHECKING:
    from .destination import check_output_path, stdout_to_devnull, to_stdout, write_output
    from .display import display_json, display_path, display_text, json_escape, utf8_safe
    from .formats import DEFAULT_FORMAT, LIVE_FORMATS, OUTPUT_FORMATS, format_writer, live_writer
    from .html import diff_from_record, render_html
    from .json_format import to_json
    from .ndjson import EVENT_SCHEMA, EventStream
    from .progress import Progress
    from .result import (
        CACHEABLE_STOPS,
        CAP_STOPS,
        INCOMPLETE_STOPS,
        FileOutcome,
        GroupOutcome,
        GroupReport,
        ReviewResult,
        merged_findings,
        not_reviewed_line,
    )
    from .session import Session, new_session_id, prune_sessions, sessions_dir
    from .session_read import (
        find_session,
        format_session_list,
        format_session_record,
        list_sessions,
        read_session_records,
        session_files,
        session_result,
    )
    from .text import finding_location, verdict_line
    from .viewer import Viewer, load_marks, marks_path

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "destination": ("check_output_path", "stdout_to_devnull", "to_stdout", "write_output",),
    "display": ("display_json", "display_path", "display_text", "json_escape", "utf8_safe",),
    "formats": ("DEFAULT_FORMAT", "LIVE_FORMATS", "OUTPUT_FORMATS", "format_writer",
                "live_writer",),
    "html": ("diff_from_record", "render_html",),
    "json_format": ("to_json",),
    "ndjson": ("EVENT_SCHEMA", "EventStream",),
    "progress": ("Progress",),
    "result": (
        "CACHEABLE_STOPS",
        "CAP_STOPS",
        "FileOutcome",
        "GroupOutcome",
        "GroupReport",
        "INCOMPLETE_STOPS",
        "ReviewResult",
        "merged_findings",
        "not_reviewed_line",
    ),
    "session": ("Session", "new_session_id", "prune_sessions", "sessions_dir",),
    "session_read": (
        "find_session",
        "format_session_list",
        "format_session_record",
        "list_sessions",
        "read_session_records",
        "session_files",
        "session_result",
    ),
    "text": ("finding_location", "verdict_line",),
    "viewer": ("Viewer", "load_marks", "marks_path",),
})
