"""The reference CLI (OCR, npm ``@alibaba-group/open-code-review``) for side-by-side benches
(not a benchmark itself).

- :func:`find_ocr`: the ``ocr`` executable: ``--ocr PATH`` / ``$OCR_BIN``, else the copy this
  module installs once with npm under ``~/.cache/ocr-hook-bench/ocr-<version>`` (the only
  network use of a bench: the npm registry), else ``ocr`` on ``PATH``;
- :func:`write_config`: OCR's user config (``$HOME/.opencodereview/config.json``) pointing it at
  a loopback model server, over either protocol;
- :func:`review_command`: an ``ocr review`` command line; OCR has no staged-only mode, so a
  workspace review of a repository whose only change is staged reviews exactly the index;
- :class:`ServerClock`: when a loopback model server was busy, on its own clock, so a bench
  measures both tools' own time the same way (:func:`busy_s`, :func:`chain`);
- :func:`ocr_kind` and :func:`ocr_answer`: which of OCR's requests a body is (from its system
  prompt and user message) and the minimal reply each kind expects, for a scripted model that
  files one comment in OCR's main request.

Own time, for every tool compared here: the child's wall time minus the time the loopback
server was handling at least one of its requests (:func:`busy_s` of the spans the server
recorded while the child ran). A tool's own session log is not used: the two tools log
differently, and the server sees both alike.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import CACHE, Reply, ScriptedLLM, openai_text, openai_tool_calls

OCR_VERSION = "1.12.4"
OCR_PACKAGE = "@alibaba-group/open-code-review"


def find_ocr(explicit: str | None = None, install: bool = True) -> str:
    """Path of an ``ocr`` executable of :data:`OCR_VERSION`. Raises SystemExit with a one-line
    reason when none is found and npm cannot install one."""
    given = explicit or os.environ.get("OCR_BIN")
    if given:
        if not shutil.which(given):
            raise SystemExit(f"OCR executable not found: {given}")
        return str(shutil.which(given))
    prefix = CACHE / f"ocr-{OCR_VERSION}"
    exe = prefix / "node_modules" / ".bin" / "ocr"
    if not exe.exists() and install and shutil.which("npm"):
        prefix.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["npm", "install", "--silent", "--prefix", str(prefix),
                            f"{OCR_PACKAGE}@{OCR_VERSION}"], capture_output=True, text=True,
                           check=False)
        if p.returncode:
            raise SystemExit(f"npm install {OCR_PACKAGE}@{OCR_VERSION} failed: "
                             f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    if exe.exists():
        return str(exe)
    on_path = shutil.which("ocr")
    if on_path:
        return on_path
    raise SystemExit(f"no OCR executable: pass --ocr PATH, set OCR_BIN, or install npm "
                     f"(npm install {OCR_PACKAGE}@{OCR_VERSION})")


# OCR's npm launcher (bin/ocr.js) checks the registry for a newer version in a detached
# process at most every 18 minutes unless this is set: a bench sets it for every run of either
# tool (ocr-hook ignores it), so no run starts a network request or a competing process.
NO_UPDATE = {"OCR_NO_UPDATE": "1"}


def native_binary(ocr: str) -> str:
    """The platform binary that OCR's npm launcher ``ocr`` (a symlink to
    ``@alibaba-group/open-code-review/bin/ocr.js``) starts, from the optional dependency npm
    installed beside it (``@alibaba-group/ocr-<os>-<arch>/bin/opencodereview``); "" when
    ``ocr`` is not that launcher or the binary is not there."""
    launcher = Path(ocr).resolve()
    if launcher.name != "ocr.js":
        return ""
    scope = launcher.parent.parent.parent  # node_modules/@alibaba-group
    found = sorted(scope.glob("ocr-*-*/bin/opencodereview"))
    return str(found[0]) if len(found) == 1 else ""


def add_arguments(ap: Any) -> None:
    """``--ocr [PATH]`` and ``--no-ocr`` on an ``argparse.ArgumentParser`` (see
    :func:`from_arguments`)."""
    ap.add_argument("--ocr", nargs="?", const="", default=None, metavar="PATH",
                    help="compare with OCR at PATH (default: when find_ocr finds it without "
                         "installing; a bare --ocr may npm-install it once)")
    ap.add_argument("--no-ocr", action="store_true", help="ocr-hook only")


def from_arguments(args: Any) -> str:
    """The OCR executable a bench compares with, from :func:`add_arguments`' options: ""
    with ``--no-ocr``; ``--ocr PATH`` or a bare ``--ocr`` (which may install it), else the copy
    :func:`find_ocr` finds without installing, else "" with a note on stderr. Raises
    SystemExit when an explicit ``--ocr`` finds none."""
    if args.no_ocr:
        return ""
    if args.ocr is not None:
        return find_ocr(args.ocr or None)
    try:
        return find_ocr(install=False)
    except SystemExit as e:
        print(f"OCR not compared: {e}", file=sys.stderr)
        return ""


def write_config(home: Path, url: str, protocol: str = "openai", model: str = "scripted-model",
                 timeout_s: int = 600) -> Path:
    """Write OCR's config under ``home`` (the HOME of its process) for the model server at
    ``url`` (the base URL the loopback server reports: ``…/v1`` for OpenAI, the host for
    Anthropic). Returns the config path."""
    cfg = home / ".opencodereview" / "config.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(json.dumps({"llm": {
        "url": url, "auth_token": "bench", "model": model, "protocol": protocol,
        "use_anthropic": protocol == "anthropic", "timeout_sec": timeout_s}}))
    return cfg


def review_command(ocr: str, *args: str) -> list[str]:
    """``ocr review --format json --audience agent`` plus ``args`` (e.g. ``--from A --to B``,
    ``--effort low``); without a range it reviews the work tree, index and untracked files."""
    return [ocr, "review", "--format", "json", "--audience", "agent", *args]


# --- the server's clock ----------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """One request as the loopback server handled it: ``start`` when its headers were parsed,
    ``end`` when the last byte of the response was written (``time.perf_counter`` seconds, the
    clock :func:`benchlib.run_child` measures wall time with), and ``kind``, the name the answer
    function gave it with :meth:`ServerClock.note` ("" when it gave none)."""

    start: float
    end: float
    kind: str


class ServerClock:
    """Wraps the request handler of ``llm`` (a :class:`ScriptedLLM`) so that every POST is
    recorded as a :class:`Span` in ``spans`` (in order of completion). ``mark()`` returns the
    current count, ``since(mark)`` the spans completed after it: the requests of one child run
    when runs do not overlap. Thread-safe; the answer function may call :meth:`note` from the
    handler thread to name the request it answers."""

    def __init__(self, llm: ScriptedLLM) -> None:
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        self._local = threading.local()
        clock = self
        base: Any = llm.server.RequestHandlerClass

        class Timed(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:  # noqa: N802
                t0 = time.perf_counter()
                clock._local.kind = ""
                try:
                    super().do_POST()
                finally:
                    span = Span(t0, time.perf_counter(), clock._local.kind)
                    with clock._lock:
                        clock.spans.append(span)

        llm.server.RequestHandlerClass = Timed  # type: ignore[assignment]

    def note(self, kind: str) -> None:
        """Name the request this handler thread is answering."""
        self._local.kind = kind

    def mark(self) -> int:
        with self._lock:
            return len(self.spans)

    def since(self, mark: int) -> list[Span]:
        with self._lock:
            return list(self.spans[mark:])


def busy_s(spans: Iterable[Span]) -> float:
    """Seconds during which at least one of ``spans`` was being handled (their union)."""
    total, cur_s, cur_e = 0.0, None, None
    for sp in sorted(spans, key=lambda x: x.start):
        if cur_e is None or sp.start > cur_e:
            if cur_s is not None and cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = sp.start, sp.end
        else:
            cur_e = max(cur_e, sp.end)
    if cur_s is not None and cur_e is not None:
        total += cur_e - cur_s
    return total


def chain(spans: Iterable[Span]) -> int:
    """The most requests that ran one after another: the longest chain of spans that do not
    overlap (greedy by earliest end), i.e. the round trips a user waits for."""
    n, end = 0, float("-inf")
    for sp in sorted(spans, key=lambda x: x.end):
        if sp.start >= end:
            n, end = n + 1, sp.end
    return n


def kinds(spans: Iterable[Span]) -> dict[str, int]:
    """Requests by kind, sorted by name."""
    out: dict[str, int] = {}
    for sp in spans:
        out[sp.kind or "?"] = out.get(sp.kind or "?", 0) + 1
    return dict(sorted(out.items()))


# --- a scripted model for OCR ----------------------------------------------------------------

# OCR 1.12.4's requests, told apart by facts of their wire format (recorded requests of a
# 1-file review): the first words of the system prompt, and the heading OCR puts in the main
# prompt of a later round once earlier findings are confirmed.
_OCR_SYSTEM = (("## Role\nYou are a code review assistant", "main"),
               ("You are a fact-checker", "review_filter"))


def ocr_kind(body: Mapping[str, Any]) -> str:
    """Which of OCR's requests ``body`` (a decoded Chat Completions request) is: ``main`` (the
    review of a group), ``later_round`` (a main request that lists confirmed findings),
    ``review_filter`` (the fact-check of filed comments), or ``other`` (plan, grouping, or
    anything not recognised: see :func:`ocr_answer`)."""
    msgs = body.get("messages") or []
    system = str(msgs[0].get("content", "")) if msgs and msgs[0].get("role") == "system" else ""
    user = " ".join(str(m.get("content", "")) for m in msgs if m.get("role") == "user")
    for prefix, kind in _OCR_SYSTEM:
        if system.startswith(prefix):
            return "later_round" if kind == "main" and "<confirmed_findings>" in user else kind
    return "other"


def tool_names(body: Mapping[str, Any]) -> set[str]:
    """Names of the tools a Chat Completions request offers."""
    return {str((t.get("function") or {}).get("name")) for t in body.get("tools") or []}


def ocr_answer(body: Mapping[str, Any], comment: Mapping[str, Any] | None) -> tuple[str, dict]:
    """(kind, OpenAI response body) for one OCR request: the first turn of ``main`` files
    ``comment`` (a ``code_comment`` item; none when ``comment`` is None) and calls
    ``task_done`` in the same reply; every later turn and ``later_round`` calls ``task_done``;
    ``review_filter`` approves all comments; ``other`` gets the least its tools allow
    (``task_done``, else ``approve_all_comments``, else the text ``NONE``)."""
    kind = ocr_kind(body)
    tools = tool_names(body)
    msgs = body.get("messages") or []
    first_turn = not any(m.get("role") == "assistant" for m in msgs)
    if kind == "main" and first_turn and comment is not None:
        return kind, openai_tool_calls(("code_comment", {"comments": [dict(comment)]}),
                                       ("task_done", {"state": "DONE"}))
    if kind == "review_filter" or ("task_done" not in tools and "approve_all_comments" in tools):
        return kind, openai_tool_calls(("approve_all_comments", {}))
    if "task_done" in tools:
        return kind, openai_tool_calls(("task_done", {"state": "DONE"}))
    return kind, openai_text("NONE")


def latency_s(raw: str, fixed_s: float, per_kib_s: float) -> float:
    """A hosted model's latency for one request body: ``fixed_s`` plus ``per_kib_s`` per KiB
    of the UTF-8 body."""
    return fixed_s + per_kib_s * len(raw.encode()) / 1024


def attach(llm: ScriptedLLM, clock: ServerClock,
           answer: Callable[[dict[str, Any], str], tuple[str, dict, float]]) -> None:
    """Make ``answer(body, raw) -> (kind, response body, delay seconds)`` the model of
    ``llm``; the kind is noted on ``clock``. A body that is not JSON gets ``NONE``."""
    def reply(raw: str) -> Reply:
        try:
            body = json.loads(raw)
        except ValueError:
            clock.note("invalid")
            return Reply(openai_text("NONE"))
        kind, out, delay = answer(body, raw)
        clock.note(kind)
        return Reply(out, delay_s=delay)
    llm._next = reply  # type: ignore[method-assign]
