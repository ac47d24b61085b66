"""``git ocr review`` and the hook modes ``git ocr hook pre-commit|pre-push`` (spec §1, §3):
flags and environment → a ``pipeline.ReviewRequest``, the run with its services
(``pipeline.services``), the result written by its format's writer (``report.formats``) to
stdout or ``--output FILE``, and the gate's exit code (spec §9).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import change, config, git, pipeline, report
from ..errors import OcrError, UsageError
from ..exitcodes import Exit
from .common import hook_words

if TYPE_CHECKING:
    from ..change import RuleLayers
    from ..config import Config
    from ..pipeline import ReviewRequest
    from ..report import ReviewResult

log = logging.getLogger("ocr_hook")


def _review_mode(args: argparse.Namespace) -> str:
    """``staged``, ``commit`` or ``range`` from ``--commit``/``--from``/``--to``. Raises
    UsageError for a combination that names no single target."""
    if getattr(args, "commit", None):
        if getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
            raise UsageError("--commit cannot be combined with --from/--to: review one commit"
                             " (--commit REF) or one range (--from A --to B)")
        return "commit"
    if getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
        if not (args.from_ref and args.to_ref):
            raise UsageError("--from and --to must be given together")
        return "range"
    return "staged"


def _hook_input(stage: str, environ: Mapping[str, str]) -> tuple[str, str, str]:
    """(mode, from, to) of a pre-commit/pre-merge-commit hook run. The pre-commit framework
    sets ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` only for a range (``pre-commit run
    --from-ref X --to-ref Y``, in any stage): that range is reviewed (FROM...TO, as
    ``--from/--to``). Otherwise the staged snapshot, as a merge in ``pre-merge-commit``."""
    from_ref = environ.get("PRE_COMMIT_FROM_REF", "")
    to_ref = environ.get("PRE_COMMIT_TO_REF", "")
    if from_ref and to_ref:
        return "range", from_ref, to_ref
    return ("merge" if stage == "pre-merge-commit" else "staged"), "", ""


def _with_rule_globs(cfg: Config, layers: RuleLayers) -> Config:
    """``cfg`` with the include/exclude globs of the rule layers added to ``[select]``."""
    inc, exc = change.selection_globs(layers)
    if not (inc or exc):
        return cfg
    select = dataclasses.replace(cfg.select, include=[*cfg.select.include, *inc],
                                 exclude=[*cfg.select.exclude, *exc])
    return dataclasses.replace(cfg, select=select)


def _read_background(cfg: Config, repo: Path, from_repo: frozenset[str]) -> str:
    """``review.background``, or the text of ``review.background_file`` when set: from HEAD
    when the repository file named it (``from_repo``), else from disk. Raises OcrError when
    the file cannot be read."""
    if not cfg.review.background_file:
        return cfg.review.background
    if "review.background_file" in from_repo:
        return config.read_repo_path(repo, "review.background_file",
                                     cfg.review.background_file, config.REPO_SOURCE)
    try:
        return Path(cfg.review.background_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else (
            "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e))
        raise OcrError(f"cannot read background file {cfg.review.background_file}"
                       f" (review.background_file, --background-file): {why}") from e


def _snapshot_ahead(repo: Path, mode: str, stage: str, environ: Mapping[str, str]) -> None:
    """When this run reviews the staged snapshot (a plain review, a pre-commit or
    pre-merge-commit hook without a range), start ``git write-tree`` now, in a thread, so it
    runs while the settings and rules load (``git.snapshot_ahead``)."""
    if stage in ("pre-commit", "pre-merge-commit"):
        mode = _hook_input(stage, environ)[0]
    if stage != "pre-push" and mode in ("staged", "merge"):
        git.snapshot_ahead(repo, environ)


def _framework_all_files(stage: str, environ: Mapping[str, str]) -> bool:
    """Whether ``pre-commit run --all-files`` runs this pre-commit hook (``hooks``: its parent
    processes)."""
    if stage != "pre-commit" or environ.get("PRE_COMMIT") != "1":
        return False
    from .. import hooks
    return bool(hooks.framework_all_files(environ))


def _build_request(args: argparse.Namespace, environ: Mapping[str, str],
                   stage: str) -> tuple[ReviewRequest, RuleLayers]:
    """The ReviewRequest of this command and the rule layers it reviews with. Raises OcrError
    (UsageError, ConfigError) for bad flags, configuration or refs."""
    mode = _review_mode(args)
    from_ref = getattr(args, "from_ref", None) or ""
    to_ref = getattr(args, "to_ref", None) or ""
    repo = git.find_toplevel(Path.cwd(), head_files=config.HEAD_FILES)  # read alongside the probe
    _snapshot_ahead(repo, mode, stage, environ)
    origins: dict[str, str] = {}  # spec §13.7: a money cap's NOT REVIEWED line names its source
    cfg, from_repo = config.load_settings(repo, vars(args), environ, llm_command=True,
                                          origins=origins)
    targets: tuple[Any, ...] = ()
    if stage == "pre-push":
        mode = "push"
        targets = tuple(_pushed_ranges(repo, args, environ, cfg.review.max_push_commits))
    elif stage in ("pre-commit", "pre-merge-commit"):
        mode, from_ref, to_ref = _hook_input(stage, environ)
    files = getattr(args, "files", None)
    layers = rule_layers(repo, cfg, args, environ)
    cfg = _with_rule_globs(cfg, layers)
    # llm.api_key_cmd runs only when the review is about to call the LLM (pipeline.llm_stage)
    endpoint, why, key_cmd = config.resolve_llm_endpoint_deferred(cfg, environ)
    background = _read_background(cfg, repo, from_repo)
    preview = bool(getattr(args, "preview", False))
    req = pipeline.ReviewRequest(
        repo=repo,
        config=cfg,
        environ=environ,
        mode=mode,
        stage=stage,
        commit=getattr(args, "commit", None) or "",
        from_ref=from_ref,
        to_ref=to_ref,
        targets=targets,
        path_filter=tuple(files) if files else None,
        files_handed=bool(files) and _framework_all_files(stage, environ),
        endpoint=endpoint,
        endpoint_error=why,
        api_key_cmd=key_cmd,
        preview=preview,
        use_cache=cfg.cache.enabled,
        background=background,
        guidance=layers.guidance,
        protected_paths=layers.protected_paths,
        rule_sources=layers.sources,
        tool_defs=pipeline.tool_defs(cfg, repo, from_repo),
        mcp=None if preview else pipeline.mcp_bridge(repo, cfg, environ),
        cap_sources={k: v for k, v in origins.items() if k.startswith("budget.")},
    )
    return req, layers


def _write_result(result: ReviewResult, fmt: str, out_path: Path | None,
                  environ: Mapping[str, str], live: Any = None) -> None:
    """Write ``result`` in format ``fmt`` (a name of ``report.OUTPUT_FORMATS``) to stdout, or
    atomically to ``out_path``. ``live``: the format's live writer (``report.live_writer``),
    which has written the events so far to stdout or to its buffer, and ends them now."""
    stream: Any = (live.stream if live is not None
                   else io.StringIO() if out_path is not None else sys.stdout)
    if live is not None:
        live.finish(result)
    else:
        report.format_writer(fmt)(result, stream, environ)
    if out_path is not None:
        report.write_output(out_path, stream.getvalue())


def run_review_command(args: argparse.Namespace, environ: Mapping[str, str], stage: str,
                       build: Any = None) -> int:
    """``git ocr review`` (stage ``review``) or a hook (``pre-commit``/``pre-push``): review,
    write the result, warn on stderr about incomplete files and blocking findings; returns the
    gate's exit code (``Exit.OK`` for ``--preview``). ``build``: what makes the request and
    rule layers from (args, environ, stage) in place of the review's (``git ocr scan``).
    Raises OcrError for bad input."""
    out_path = report.check_output_path(args.output) if args.output else None
    req, layers = (build or _build_request)(args, environ, stage)
    fmt = args.format or report.DEFAULT_FORMAT
    # --format ndjson: events as they happen, to stdout (or a buffer that replaces --output)
    live = report.live_writer(fmt, io.StringIO() if out_path is not None else sys.stdout)
    try:
        result = pipeline.run_with_services(req, layers.text_for,
                                            events=None if live is None else live.event)
    finally:
        if req.mcp is not None:
            req.mcp.close()
    if stage == "pre-commit":  # spec §3.4.1: for the post-commit hook's review note
        pipeline.record_review(req, result)
    for w in result.warnings:  # stderr: pre-commit shows it next to the hook's name
        if w.type in STDERR_WARNINGS:
            log.warning("%s", report.display_text(w.message))
    # stdout that fails (a reader gone, a full disk) never changes the gate's exit code
    problem = report.to_stdout(lambda: _write_result(result, fmt, out_path, environ, live))
    if problem and problem != "closed":
        log.warning("cannot write the report to stdout: %s", problem)
    for reason in result.incomplete_reasons:
        if fmt != "text" or args.output:  # text on stdout has listed them already
            log.warning("%s", report.display_text(reason))
    if result.decision.blocked:
        log.warning("%s", _bypass_message(stage, result.decision.verdict,
                                          result.decision.blocking_findings, result.gate.fail_on,
                                          environ))
        for line in dismiss_hints(result, environ):
            log.warning("%s", line)
    if problem and problem != "closed":  # the report is lost: never a silent success
        return max(int(Exit.USAGE), int(result.decision.exit_code))
    return int(result.decision.exit_code) if not req.preview else int(Exit.OK)


# Run warnings that are also printed on stderr in every format: the user must see them even
# when the hook passes.
STDERR_WARNINGS = ("changes_only", "lock_wait", "commits_not_reviewed", "preexisting_refused",
                   "spend_unpriced", "spend_ledger", "review_notes")


def _pushed_ranges(repo: Path, args: argparse.Namespace, environ: Mapping[str, str],
                   max_commits: int) -> list[Any]:
    """Ranges of a pre-push run (spec §3.4). Native hook: ``REMOTE URL`` arguments and every
    stdin line. pre-commit framework (no arguments; it passes no stdin lines either):
    ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF``, absent on the push of a root history.
    Each range is bounded to its newest ``max_commits`` commits (``git.bound_push_range``). Raises
    UsageError when neither applies or a line/ref cannot be resolved."""
    if args.remote:
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        lines = git.parse_push_lines(data.decode("utf-8", "surrogateescape"))
        found = git.push_targets(repo, args.remote, lines)
    elif any(environ.get(k) for k in ("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF",
                                       "PRE_COMMIT_REMOTE_NAME", "PRE_COMMIT")):
        found = git.pre_commit_push_targets(repo, environ)
    else:
        found = None
    if found is not None:
        return [git.bound_push_range(repo, t, max_commits) for t in found]
    raise UsageError("git ocr hook pre-push: expected REMOTE URL (native pre-push hook, ref lines"
                     " on stdin) or PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF (pre-commit framework)")


def rule_layers(repo: Path, cfg: Config, args: argparse.Namespace,
                environ: Mapping[str, str]) -> RuleLayers:
    """Rule layers of spec §5 (``--rule`` → repository file at HEAD → user file → built-in)."""
    return change.load_rule_layers(
        repo,
        cli_rule=getattr(args, "rule", None) or "",
        repo_rule_file=getattr(getattr(cfg, "rules", None), "file", "") or "",
        environ=environ,
        guidance=bool(getattr(getattr(cfg, "rules", None), "guidance", False)),
    )


DISMISS_HINTS_MAX = 10  # blocking findings named with their dismiss command on stderr


def dismiss_hints(result: ReviewResult, environ: Mapping[str, str]) -> list[str]:
    """For a result blocked by findings: the exact command that dismisses each blocking finding,
    or how to allow a secret (secrets keep their own allow rules); at most
    DISMISS_HINTS_MAX, then a count. Under the pre-commit framework (``PRE_COMMIT=1``), whose
    ``git-ocr`` lives in its own environment, one more line: how to run that one."""
    if result.decision.verdict != "findings":
        return []
    from .. import comments, hooks  # only a run blocked by findings names their commands
    from ..gate import blocks

    blocking = [f for f in result.findings if blocks(f, result.gate)]  # not the advisory ones
    lines = [f"not a problem? dismiss it (or put `{comments.IGNORE_MARKER} <reason>` on its"
             " line):"]
    for f in blocking[:DISMISS_HINTS_MAX]:
        where = f"{report.finding_location(f)} [{f.severity.label} · {f.category}]"
        if comments.can_dismiss(f):
            lines.append(f"  git ocr dismiss {f.id} --reason '…'    # {where}")
        else:
            lines.append(f"  {where}: a secret; mark its line `ocr-hook: allow-secret` or list"
                         " the value in security.allow_secrets")
    if len(blocking) > DISMISS_HINTS_MAX:
        lister = ("git ocr scan \u2026 --format json" if result.input.get("mode") == "scan"
                  else "git ocr review")  # a scan's ids are not in a review's output
        lines.append(f"  … and {len(blocking) - DISMISS_HINTS_MAX} more (`{lister}` lists"
                     " every id)")
    if (environ.get("PRE_COMMIT") == "1" and any(comments.can_dismiss(f) for f in blocking)
            and not _git_ocr_on_path(environ)):
        import shlex  # only a blocked run under the pre-commit framework quotes a command

        cmd = " ".join(shlex.quote(c) for c in hooks.hook_command())
        lines.append(f"  no `git ocr` on PATH? run `{cmd} dismiss ID`, or install git-ocr"
                     " (README: Install for everyday use)")
    return lines


def _git_ocr_on_path(environ: Mapping[str, str]) -> bool:
    """Whether ``git ocr`` works from the user's shell: a ``git-ocr`` program on ``PATH``
    (``shutil.which``, as git finds its ``git-<name>`` commands there), not counting the
    directories inside the pre-commit framework's store (``$PRE_COMMIT_HOME``, else
    ``$XDG_CACHE_HOME/pre-commit``, else ``~/.cache/pre-commit``), which the framework puts
    first on the hook's ``PATH`` for a ``language: python`` hook and the user's shell lacks."""
    import shutil

    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "~"), ".cache")
    store = os.path.realpath(os.path.expanduser(
        environ.get("PRE_COMMIT_HOME") or os.path.join(cache, "pre-commit")))
    dirs = [d for d in environ.get("PATH", os.defpath).split(os.pathsep)
            if d and not (os.path.realpath(d) + os.sep).startswith(store + os.sep)]
    return shutil.which("git-ocr", path=os.pathsep.join(dirs)) is not None


def _bypass_message(stage: str, verdict: str, findings: int, fail_on: str,
                    environ: Mapping[str, str]) -> str:
    """How to proceed when the gate blocks (spec §9), worded for the stage and for what runs
    the hook (``hooks.hook_host``: the one bypass that works there, plus ``OCR_HOOK_SKIP=1``).
    ``git ocr review`` run by hand, a framework range run and CI block no commit: they state
    why the exit code is non-zero, without commit hints."""
    if stage == "review":
        if verdict == "findings":
            return f"blocking findings: {findings} at or above {fail_on}"
        return "review incomplete and gate.on_error = block"
    from .. import hooks  # only a blocked hook looks at what runs it

    what, hook_id = hook_words(stage)
    host = hooks.hook_host(stage, environ)
    if host == "framework":
        hook_id = hooks.framework_skip_id(hook_id, stage)
    why = (f"{findings} finding(s) at or above {fail_on}" if verdict == "findings"
           else "the review is incomplete and gate.on_error = block")
    if host in ("range", "ci"):
        where = "a range run" if host == "range" else "a CI run"
        return (f"review blocked: {why} ({where}: nothing is being committed). Fix and rerun,"
                f" or {hooks.bypass_clause(host, what, hook_id)}.")
    return f"{what} blocked: {why}. Fix and retry, or {hooks.bypass_clause(host, what, hook_id)}."


def add_status_parser(sub: Any, help_text: str) -> None:
    """``git ocr status [--provider NAME] [--model NAME] [--tools FILE]`` (spec §3.4.1): the
    settings flags that change the review fingerprint a note must match."""
    st = sub.add_parser(
        "status", help=help_text,
        description="List the commits of the current branch that are not on its upstream (or,"
        " without one, on any remote-tracking ref) and have no passing review note for the"
        " current settings: the ones a push would review.")
    st.add_argument("--provider", metavar="NAME", help="LLM provider preset")
    st.add_argument("--model", metavar="NAME", help="LLM model")
    st.add_argument("--tools", metavar="FILE", help="tools.json-format file, as for review")
    st.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")


def run_status_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr status``: prints ``commits not on UPSTREAM without a review note: N`` (with
    `` (of the newest 200)`` when there are more, STATUS_MAX_COMMITS) and one ``  <id, 12
    characters> <subject>`` line per such commit, oldest first; then, when no note can be
    trusted, one line saying why (``review.trust_notes = false``, an old git). On a branch
    without commits: ``no commits yet``. Exit 0. Raises OcrError for bad settings."""
    repo = git.find_toplevel(Path.cwd(), head_files=config.HEAD_FILES)
    origins: dict[str, str] = {}  # spec §13.7: a money cap's NOT REVIEWED line names its source
    cfg, from_repo = config.load_settings(repo, vars(args), environ, llm_command=True,
                                          origins=origins)
    layers = rule_layers(repo, cfg, args, environ)
    cfg = _with_rule_globs(cfg, layers)
    endpoint, why, _ = config.resolve_llm_endpoint_deferred(cfg, environ)
    req = pipeline.ReviewRequest(
        repo=repo, config=cfg, environ=environ, mode="range", endpoint=endpoint,
        endpoint_error=why, background=_read_background(cfg, repo, from_repo),
        guidance=layers.guidance, tool_defs=pipeline.tool_defs(cfg, repo, from_repo),
        rule_sources=layers.sources)
    if not git.has_commits(repo):
        print("no commits yet")
        return int(Exit.OK)
    against, commits = git.unpushed_commits(repo, STATUS_MAX_COMMITS + 1)
    more = len(commits) > STATUS_MAX_COMMITS
    commits = commits[1:] if more else commits
    trusted = pipeline.trusted_patches(req)
    keys = git.note_keys(repo, [c for c, _ in commits]) if trusted else {}
    left = [(c, s) for c, s in commits if keys.get(c, ("", "")) not in trusted]
    print(report.display_text(f"commits not on {against} without a review note: {len(left)}"
                              + (f" (of the newest {STATUS_MAX_COMMITS})" if more else "")))
    for c, subject in left:
        print(report.display_text(f"  {c[:12]} {subject}"))
    if not cfg.review.trust_notes:
        print("review notes are not trusted (review.trust_notes = false): a push reviews"
              " every commit")
    elif (w := pipeline.notes_warning(req)) is not None:
        print(w.message)
    return int(Exit.OK)


STATUS_MAX_COMMITS = 200  # `git ocr status` checks the newest commits (a push reviews fewer)
