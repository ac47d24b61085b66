"""``git ocr delegate`` and ``git ocr delegate submit FILE|-`` (README "Delegation (no API
key)", ``pipeline.delegated``): print the review task of the snapshot for an agent of the
user's own; take its findings back, anchor, gate and store them. The submit's exit code is the
gate's, as ``git ocr review``'s (spec §9); bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import functools
import io
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import pipeline, report
from ..errors import UsageError
from ..exitcodes import Exit
from .review_cmd import _build_request, _bypass_message

log = logging.getLogger("ocr_hook")


def target_flags(args: argparse.Namespace) -> str:
    """The target flags of this command as the task repeats them (" --commit REF", " --from A
    --to B" or ""), shell-quoted."""
    import shlex

    if getattr(args, "commit", None):
        return f" --commit {shlex.quote(args.commit)}"
    if getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
        return (f" --from {shlex.quote(args.from_ref or '')}"
                f" --to {shlex.quote(args.to_ref or '')}")
    return ""


def _read_findings(name: str) -> list[Any]:
    """The findings list of file ``name`` ("-": stdin). Raises UsageError (one line) for a
    file that cannot be read or is not a JSON list."""
    if name == "-":
        text = sys.stdin.read() if sys.stdin is not None else ""
        return pipeline.parse_findings(text, "stdin")
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise UsageError(f"cannot read findings file {name}: {why}") from e
    return pipeline.parse_findings(text, name)


def run_delegate_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr delegate`` (the task on stdout or ``--output FILE``; exit 0) or ``delegate
    submit FILE`` (the result as ``git ocr review`` writes it; the gate's exit code). Raises
    OcrError (UsageError, ConfigError, GitError) for bad input."""
    if args.action is None and args.file:
        raise UsageError(f"unexpected argument {args.file!r}: use `git ocr delegate submit FILE`")
    if args.action == "submit" and not args.file:
        raise UsageError("git ocr delegate submit: expected FILE (the findings, - for stdin)")
    if args.preview:
        raise UsageError("--preview does not go with delegate (`git ocr review --preview`)")
    items = _read_findings(args.file) if args.action == "submit" else None
    out_path = report.check_output_path(args.output) if args.output else None
    req, layers = _build_request(args, environ, "review")
    if req.mcp is not None:  # a delegated review starts no MCP server
        req.mcp.close()
        req = req._replace(mcp=None)
    if items is None:
        return _print_task(req, layers.text_for, target_flags(args), out_path)
    return _submit(req, layers.text_for, items, args, out_path, environ)


def _print_task(req: Any, rules_for: Any, flags: str, out_path: Path | None) -> int:
    d = pipeline.Delegation(req, rules_for)
    if not d.state.reviewable:
        log.warning("nothing to review: no reviewable file in this change (`git ocr review"
                    " --preview` shows why)")
        return Exit.OK
    text = pipeline.task_text(d, flags)
    if out_path is not None:
        report.write_output(out_path, text)
    else:
        sys.stdout.write(text)
    return Exit.OK


def _submit(req: Any, rules_for: Any, items: list[Any], args: argparse.Namespace,
            out_path: Path | None, environ: Mapping[str, str]) -> int:
    said: list[str] = []
    runner = functools.partial(pipeline.run_submitted, items=items, say=said.append)
    result = pipeline.run_with_services(req, rules_for, runner=runner)
    for text in said:
        for line in text.splitlines():
            log.info("%s", report.display_text(line))
    if req.use_cache:
        log.info("stored for this snapshot: `git ocr hook pre-commit` without an LLM endpoint"
                 " answers from it")
    else:
        log.warning("the cache is off (cache.enabled = false, --no-cache): the result is not"
                    " stored, the hook will not see it")
    fmt = args.format or report.DEFAULT_FORMAT
    stream: Any = io.StringIO() if out_path is not None else sys.stdout
    report.format_writer(fmt)(result, stream, environ)
    if out_path is not None:
        report.write_output(out_path, stream.getvalue())
    if result.decision.blocked:
        log.warning("%s", _bypass_message("review", result.decision.verdict,
                                          result.decision.blocking_findings,
                                          result.gate.fail_on, environ))
    return int(result.decision.exit_code)
