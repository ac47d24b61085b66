"""The event stream of ``--format ndjson`` (spec §11.6): one JSON object per line, written and
flushed as the review goes, for agents and CI that follow a review while it runs.

Every line is an object ``{"schema": EVENT_SCHEMA, "type": TYPE, "ts": TIME, …}``:
:data:`EVENT_SCHEMA` (``ocr-hook.event/1``) names the schema and its version, ``ts`` is the
wall-clock time the event was written, ISO 8601 UTC with milliseconds
(``2026-12-02T16:21:16.123Z``). The types, in the order they come:

- ``start`` — ``files`` (the number of files to review), ``groups`` (``[{label, files}]``, as
  the JSON ``groups[]``), ``model``, ``preview`` (a preview adds ``will_review``, the paths a
  review would send, and has no groups); once, when the groups are known (before the
  first review request), or at the end when the run had none (preview, nothing to review, a
  result served whole from the cache);
- ``group_started`` — ``group`` (its label), ``files``: as the group's review begins;
- ``group_done`` — ``group``, ``stop_reason`` (``task_done``, ``max_rounds``, ``timeout``…),
  ``reason`` (the code of why its files were not reviewed, as the JSON
  ``files[].reason``, else ``""``), ``done`` and ``total`` (groups
  finished so far, groups of the run): as it finishes, in the order groups finish;
- ``finding`` — ``comment``: exactly an entry of the JSON ``comments[]``, one line each, in
  that order, after the last group (a finding's id, anchor and dismissal are final only then);
- ``warning`` — ``warning``: exactly an entry of the JSON ``warnings[]`` ``{type, file,
  message}``, one line each;
- ``verdict`` — last: ``verdict``, ``status``, ``gate``, ``summary``, ``incomplete_reasons`` and
  ``session_id``, the same values as the JSON object (``report.json_format.to_json``), and
  ``preview``; ``since_last`` too when the JSON object has it (spec §12.3).

Text is strict UTF-8 with the escapes of the JSON format (``report.display``); a line never holds
a raw newline or U+2028, so splitting at ``\\n`` is exact. :class:`EventStream` is the live writer
(a session observer: ``Session(observer=…)`` gives it the ``grouping``, ``group_start`` and
``group_done`` records); :func:`write_ndjson`, the writer of ``report.formats``, writes the
stream of a finished result at once (no group lines).
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from .display import json_escape, utf8_safe
from .json_format import to_json
from .result import ReviewResult

EVENT_SCHEMA = "ocr-hook.event/1"
EVENT_TYPES = ("start", "group_started", "group_done", "finding", "warning", "verdict")


def utc_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds and ``Z``."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def event_line(kind: str, fields: Mapping[str, Any], ts: str) -> str:
    """One event as its line (with the ending ``\\n``): schema, type, ts, then ``fields``."""
    data = utf8_safe({"schema": EVENT_SCHEMA, "type": kind, "ts": ts, **fields}, b64_keys=True)
    return json_escape(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) + "\n"


def start_fields(result: ReviewResult) -> dict[str, Any]:
    """The fields of a ``start`` event written at the end, from ``result`` (its groups; a
    preview: the files it would review, ``will_review``)."""
    groups = [{"label": g.label, "files": [f.path for f in g.files]} for g in result.groups]
    if not result.preview:
        return {"files": len({p for g in groups for p in g["files"]}), "groups": groups,
                "model": result.llm.get("model", ""), "preview": False}
    paths = [o.path for o in result.files if o.will_review and not o.reason]
    return {"files": len(paths), "groups": groups, "model": result.llm.get("model", ""),
            "preview": True, "will_review": paths}


def closing_events(result: ReviewResult) -> list[tuple[str, dict[str, Any]]]:
    """The events that end a stream, as (type, fields): one ``finding`` per JSON comment, one
    ``warning`` per JSON warning, then the ``verdict``."""
    data = to_json(result)
    events: list[tuple[str, dict[str, Any]]] = [("finding", {"comment": c})
                                                for c in data["comments"]]
    events += [("warning", {"warning": w}) for w in data["warnings"]]
    events.append(("verdict", {
        "verdict": data["verdict"], "status": data["status"], "gate": data["gate"],
        "summary": data["summary"], "incomplete_reasons": data["incomplete_reasons"],
        "session_id": data["session_id"], "preview": result.preview,
        **({"since_last": data["since_last"]} if "since_last" in data else {})}))  # spec §12.3
    return events


class EventStream:
    """The live event writer over ``stream`` (stdout, or a buffer for ``--output FILE``).

    :meth:`event` is a session observer, called on any thread; each line is written and flushed
    under one lock. A write that fails (the reader went away: BrokenPipeError) stops the
    stream; the error is raised again by :meth:`finish`, so the command handles it as any
    other failed write to stdout (``report.to_stdout``) and the review itself goes on."""

    def __init__(self, stream: TextIO, clock: Callable[[], str] = utc_now) -> None:
        self.stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self._error: OSError | None = None
        self.started = False
        self.total = 0
        self.done = 0

    def _emit(self, kind: str, fields: Mapping[str, Any]) -> None:  # under the lock
        if self._error is not None:
            return
        try:
            self.stream.write(event_line(kind, fields, self._clock()))
            self.stream.flush()
        except OSError as e:
            self._error = e

    def event(self, kind: str, data: Mapping[str, Any]) -> None:
        """Session observer: ``grouping`` → ``start``, ``group_start`` → ``group_started``,
        ``group_done`` → ``group_done``; other records are ignored."""
        with self._lock:
            if kind == "grouping" and not self.started:
                groups = data.get("groups")
                groups = list(groups) if isinstance(groups, list) else []
                self.started, self.total = True, len(groups)
                self._emit("start", {"files": data.get("files", 0), "groups": groups,
                                     "model": data.get("model", ""), "preview": False})
            elif kind == "group_start":
                self._emit("group_started", {"group": data.get("group", ""),
                                             "files": list(data.get("files") or [])})
            elif kind == "group_done":
                self.done += 1
                self._emit("group_done", {
                    "group": data.get("group", ""), "stop_reason": data.get("stop_reason", ""),
                    "reason": data.get("reason", ""), "done": self.done, "total": self.total})

    def finish(self, result: ReviewResult) -> None:
        """Write the end of the stream for ``result``: its ``start`` when none was written,
        then :func:`closing_events`. Raises the OSError of an earlier failed write, or of
        this one."""
        with self._lock:
            if not self.started:
                self.started = True
                self._emit("start", start_fields(result))
            for kind, fields in closing_events(result):
                self._emit(kind, fields)
            if self._error is not None:
                raise self._error


def write_ndjson(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None:
    """The event stream of a finished ``result`` at once: ``start``, findings, warnings,
    verdict (no group events: they are only known live, :class:`EventStream`). ``environ`` is
    not read (the writers of ``report.formats`` share one signature)."""
    EventStream(stream).finish(result)
