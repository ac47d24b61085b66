"""The services a real review runs with, built around ``pipeline.review.run``: the session
log (spec §12) with its start/comment/end records, the result cache (§10), the stderr heartbeat
(§11), the tools file (§7.2) and the MCP bridge, whose repository-defined servers start only
with the user's recorded consent (§7.3). Prints nothing; heavy modules are imported when used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, config, git, report
from ..config import REPO_SOURCE, read_repo_path, repo_mcp_servers
from ..findings import RunWarning
from ..util import tracing
from . import review, since_last

if TYPE_CHECKING:
    from ..config import Config
    from ..report import ReviewResult
    from .cache.store import ResultCache
    from .request import ReviewRequest

log = logging.getLogger("ocr_hook")


def run_with_services(req: ReviewRequest, rules_for: Any,
                      events: Callable[[str, Mapping[str, Any]], None] | None = None,
                      runner: Any = None) -> ReviewResult:
    """Run ``pipeline.review.run`` (or ``runner``, of its signature: a delegated submit) with
    the run's services: the session log (spec §12), the result cache (§10, opened only by a run
    with something for the model, pruned only after a run that wrote to it) and the stderr
    heartbeat (§11). Preview runs use none of them. ``events`` (``--format ndjson``'s
    ``report.EventStream.event``) sees every session record after the heartbeat does."""
    if req.preview:
        return review.run(req, rules_for=rules_for)
    tel = req.config.telemetry  # spec §11.7: off unless the user configured it
    tracing.start(req.environ, enabled=tel.enabled, content=tel.content, version=__version__)
    try:
        with tracing.span("ocr.review", {"ocr.mode": req.mode, "ocr.stage": req.stage,
                                         "ocr.effort": req.effort}) as span:
            result = _run_logged(req, rules_for, events, runner or review.run)
            trace_result(span, result)
            return result
    finally:
        tracing.finish()  # at most tracing's bound: a hanging collector never holds the hook


def trace_result(span: Any, result: ReviewResult) -> None:
    """The run span's outcome attributes and one ``ocr.comment`` event per finding (severity,
    category, path, lines; the comment's text only with ``telemetry.content``)."""
    span.set("ocr.status", result.status)
    span.set("ocr.verdict", result.decision.verdict)
    span.set("ocr.findings", len(result.findings))
    span.set("ocr.llm_calls", result.llm_calls)
    span.set("gen_ai.usage.input_tokens", result.usage.input_tokens)
    span.set("gen_ai.usage.output_tokens", result.usage.output_tokens)
    for f in result.findings:
        text = None
        if tracing.content:
            from ..secrets import redact  # only with telemetry.content

            text = tracing.text(redact(f.content)[0])
        span.event("ocr.comment", {
            "ocr.comment.severity": f.severity.label, "ocr.comment.category": str(f.category),
            "code.filepath": f.path, "code.lineno": f.start_line,
            "ocr.comment.end_line": f.end_line, "ocr.comment.anchor": str(f.anchor),
            "ocr.comment.content": text})


def _run_logged(req: ReviewRequest, rules_for: Any,
                events: Callable[[str, Mapping[str, Any]], None] | None,
                run: Any) -> ReviewResult:
    """The body of :func:`run_with_services`: the run with its session, cache and progress."""
    common = git.git_common_dir(req.repo)
    req, chain = since_last.begin(req, common)  # spec §12.3: the last blocked review's findings
    opened: list[ResultCache] = []

    def open_cache() -> ResultCache | None:
        if not opened:
            from .cache.store import ResultCache  # only a run with something for the model

            opened.append(ResultCache.for_repo(common, req.config.cache.max_mb, __version__))
        return opened[0]

    progress = report.Progress()
    sid = report.new_session_id()
    endpoint = req.endpoint
    session = report.Session(sid, report.sessions_dir(common) / f"{sid}.jsonl",
                      secret_values=[endpoint.api_key] if endpoint else [],
                      observer=progress.event if events is None
                      else _both(progress.event, events))
    session.record("start", {
        "mode": req.mode, "stage": req.stage, "effort": req.effort,
        "provider": endpoint.provider if endpoint else "",
        "model": endpoint.model if endpoint else "",
        "base_url": endpoint.url if endpoint else "",
        "cache": req.use_cache, "version": __version__,
    })
    result: ReviewResult | None = None
    try:
        with progress:
            result = run(req, session=session, rules_for=rules_for,
                         cache=open_cache if req.use_cache else None)
        apply_dismissals(req, common, result)
        since_last.finish(req, common, sid, result, chain)
        if result.since_last is not None:
            session.record("since_last", result.since_last)
        record_findings(session, result)
    finally:
        end: dict[str, Any] = {"status": "error"}
        if result is not None:
            end = {
                "status": result.status, "verdict": result.decision.verdict,
                "findings": len(result.findings), "llm_calls": result.llm_calls,
                "input_tokens": result.usage.input_tokens,  # not read from or written to
                "output_tokens": result.usage.output_tokens,  # the provider's prompt cache
                "cache_read_tokens": result.usage.cache_read_tokens,
                "cache_write_tokens": result.usage.cache_write_tokens,
                "cache_hits": result.cache_hits, "elapsed_ms": result.elapsed_ms,
            }
        session.record("end", end)
        session.close()
        report.prune_sessions(report.sessions_dir(common))
        if opened and opened[0].writes:  # only a write can take it over cache.max_mb
            opened[0].prune()
    return result


def _both(first: Callable[[str, Mapping[str, Any]], None],
          second: Callable[[str, Mapping[str, Any]], None],
          ) -> Callable[[str, Mapping[str, Any]], None]:
    """A session observer that calls ``first`` then ``second``."""
    def observe(kind: str, data: Mapping[str, Any]) -> None:
        first(kind, data)
        second(kind, data)
    return observe


def apply_dismissals(req: ReviewRequest, common_dir: Path, result: ReviewResult) -> None:
    """Gate time: take the dismissed findings out of ``result`` (inline markers,
    ``.ocr-hook-dismissed.json`` at HEAD, the personal file) and decide the gate again. A file
    that cannot be read is a warning and its dismissals are not applied. A result without
    findings has nothing to dismiss: no file is read (no git call, so such a run starts fast)."""
    if not result.findings or result.preview:
        return
    from .. import comments  # a run without findings never loads the comment machinery

    dismissals, problems = comments.load_for_review(req.repo, common_dir)
    for p in problems:
        log.warning("%s", p)
        result.warnings.append(RunWarning("dismissals", "", p))
    result.dismiss(dismissals)


def record_findings(session: Any, result: ReviewResult) -> None:
    """One ``comment`` record per finding and one ``dismissed`` record per dismissed finding,
    each with its dismissal ``key`` and anchored ``code`` (``git ocr dismiss ID`` finds a
    finding by id in these records); then one ``result`` record with the JSON result, the
    verdict line and the reviewed files' diffs (already redacted), from which ``git ocr
    session show ID --html`` renders the review page."""
    def fields(f: Any) -> dict[str, Any]:
        from .. import comments  # only a result with findings needs it

        return {
            "id": f.id, "path": f.path, "side": f.side, "start_line": f.start_line,
            "end_line": f.end_line, "severity": f.severity.label, "category": f.category,
            "anchor": f.anchor, "content": f.content, "source": f.source, "code": f.code,
            "key": comments.finding_key(f),
            **({"repeats": f.repeats} if f.repeats else {}),  # spec §12.3: the earlier id
        }

    for f in result.findings:
        session.record("comment", fields(f))
    for d in result.dismissed:
        session.record("dismissed", {**fields(d.finding), "by": d.by, "reason": d.reason})

    diffs: dict[str, Any] = {}
    for g in result.groups:
        for fd in g.files:
            diffs.setdefault(fd.path, diff_record(fd))
    session.record("result", report.utf8_safe({"report": report.to_json(result),
                                               "verdict_line": report.verdict_line(result),
                                               "diffs": list(diffs.values())}))


def diff_record(fd: Any) -> dict[str, Any]:
    """A ``diff.FileDiff`` as plain JSON data for the session's ``result`` record (the review
    page of ``git ocr session show ID --html`` is rendered from it, ``report.html.
    diff_from_record``): paths, status, counts and the hunks as ``[old_start, old_count,
    new_start, new_count, header, [[kind, text, old, new], …]]``."""
    return {
        "status": fd.status, "old_path": fd.old_path, "new_path": fd.new_path,
        "insertions": fd.insertions, "deletions": fd.deletions,
        "hunks": [[h.old_start, h.old_count, h.new_start, h.new_count, h.header,
                   [list(ln) for ln in h.lines]] for h in fd.hunks],
    }


def tool_defs(cfg: Config, repo: Path | None = None,
              from_repo: frozenset[str] = frozenset()) -> Any:
    """Built-in tool definitions narrowed by ``tools.file`` / ``--tools`` (spec §7.2), or None
    for the shipped ones. A ``tools.file`` of the repository file (``"tools.file" in
    from_repo``) is read from HEAD of ``repo``, any other from disk. Raises ConfigError at
    start-up for an unreadable or invalid file."""
    if not cfg.tools.file:
        return None
    from .. import tools  # the tools package: only for a tools file (else a run with the LLM)

    if "tools.file" in from_repo and repo is not None:
        text = read_repo_path(repo, "tools.file", cfg.tools.file, REPO_SOURCE)
        return tools.apply_tools_file(tools.parse_tools_json(), text, f"{cfg.tools.file} (HEAD)")
    text = tools.read_tools_file(cfg.tools.file)
    return tools.apply_tools_file(tools.parse_tools_json(), text, cfg.tools.file)


def mcp_bridge(repo: Path, cfg: Config, environ: Mapping[str, str]) -> Any:
    """An McpBridge (not started) for the configured servers, or None when there are none.
    Servers defined in the repository file run only with the consent recorded by
    ``git ocr config allow-mcp`` for that exact list (spec §7.3); without it they are left out
    with a warning. Raises ConfigError for an invalid server entry."""
    if not cfg.mcp.servers:
        return None
    from .. import tools

    servers = tools.parse_servers(cfg.mcp.servers)
    src = REPO_SOURCE
    repo_servers = tools.parse_servers(repo_mcp_servers(repo), src)
    from_repo = [n for n, s in servers.items() if repo_servers.get(n) == s]
    notes: list[tuple[str, str]] = []
    if from_repo:
        fp = config.consent_fingerprint({n: s.model_dump() for n, s in repo_servers.items()})
        if not config.consent_given(environ, repo, fp):
            for n in from_repo:
                del servers[n]
            notes.append(("", f"MCP servers of {src} not started: {', '.join(from_repo)}; this"
                              " server list has not been allowed; review it and run"
                              " `git ocr config allow-mcp` to let it run"))
    return tools.McpBridge(servers, cwd=repo, environ=environ, notes=notes)
