"""``git ocr`` / ``ocr-hook``: subcommands, hook entry points, logging set-up and the error
boundary that maps failures to exit codes (SPEC §1, §9). Heavy modules are imported inside the
branch that needs them so ``git ocr -h`` stays fast.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import OcrError, UsageError

log = logging.getLogger("ocr_hook")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"git ocr: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _add_review_flags(p: argparse.ArgumentParser, hook: bool = False) -> None:
    g = p.add_argument_group("review options")
    if not hook:
        g.add_argument("--commit", metavar="REF", help="review REF against its first parent")
        g.add_argument("--from", dest="from_ref", metavar="A", help="review merge-base(A,B)..B")
        g.add_argument("--to", dest="to_ref", metavar="B", help="end of the range (with --from)")
        g.add_argument("--preview", action="store_true",
                       help="show which files would be reviewed; no LLM call")
    g.add_argument("--format", choices=("text", "json", "sarif"), default=None,
                   help="output format (default text)")
    g.add_argument("--output", metavar="FILE", help="write the result to FILE instead of stdout")
    g.add_argument("--effort", choices=("low", "medium", "high"),
                   help="review rounds: low 1, medium 2, high 3")
    g.add_argument("--concurrency", type=int, metavar="N", help="groups reviewed in parallel")
    g.add_argument("--timeout", type=float, metavar="S", help="whole-run time limit in seconds")
    g.add_argument("--max-tokens-budget", type=int, metavar="N",
                   help="input+output token budget for the run (0 = unlimited)")
    g.add_argument("--max-tools", type=int, metavar="N", help="tool rounds per group")
    g.add_argument("--tools", metavar="FILE",
                   help="tools.json-format file that drops tools or rewrites descriptions")
    g.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
    g.add_argument("--no-filter", action="store_true",
                   help="skip the LLM review filter that drops comments the diff proves wrong")
    g.add_argument("--exclude", action="append", metavar="GLOBS",
                   help="gitignore-style globs to exclude (comma-separated, repeatable)")
    g.add_argument("--rule", metavar="FILE",
                   help="rule file (rule.json format, or a Markdown checklist for every file)")
    g.add_argument("--background", metavar="TEXT", help="requirement background for the reviewer")
    g.add_argument("--background-file", metavar="FILE", help="read the background from FILE")
    g.add_argument("--provider", metavar="NAME", help="LLM provider preset")
    g.add_argument("--model", metavar="NAME", help="LLM model")
    g.add_argument("--mode", choices=("blocking", "advisory"), help="gate mode")
    g.add_argument("--fail-on", choices=("critical", "high", "medium", "low"),
                   help="lowest severity that blocks")
    g.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="git ocr",
        description="AI code review of the staged snapshot (or a commit, range or push) with "
        "findings pinned to exact lines and a severity gate.",
        epilog="Use `git ocr -h` (git turns --help into a man-page lookup).",
    )
    from . import __version__

    p.add_argument("--version", action="version", version=f"ocr-hook {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    r = sub.add_parser("review", help="review the staged snapshot (default), a commit or a range")
    _add_review_flags(r)
    ru = sub.add_parser("rules", help="inspect review rules")
    rus = ru.add_subparsers(dest="rules_cmd", metavar="ACTION", parser_class=_Parser)
    rc = rus.add_parser("check",
                        help="show which rule layer and pattern apply to PATH, and the text")
    rc.add_argument("path", metavar="PATH")
    rc.add_argument("--rule", metavar="FILE", help="rule file to include as the top layer")
    h = sub.add_parser("hook", help="entry points for git hooks and the pre-commit framework")
    hs = h.add_subparsers(dest="hook", metavar="HOOK", parser_class=_Parser)
    hpc = hs.add_parser("pre-commit", help="review what is being committed")
    _add_review_flags(hpc, hook=True)
    hpp = hs.add_parser(
        "pre-push", help="review the commits being pushed (native hook: refs on stdin)",
        description="Native pre-push hook: `git ocr hook pre-push REMOTE URL` with git's ref "
        "lines on stdin. Without arguments (pre-commit framework, hook ocr-review-push) the "
        "range comes from PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF.",
    )
    hpp.add_argument("remote", nargs="?", help="remote name (git passes it as argument 1)")
    hpp.add_argument("url", nargs="?", help="remote URL (git passes it as argument 2)")
    _add_review_flags(hpp, hook=True)
    _add_maintenance_commands(sub)
    co = sub.add_parser("config", help="configuration commands")
    cos = co.add_subparsers(dest="config_cmd", metavar="ACTION", parser_class=_Parser)
    cos.add_parser("allow-mcp", help="allow the MCP servers of .ocr-hook.toml (at HEAD) to run")
    cos.add_parser("allow-endpoint",
                   help="trust llm.base_url/extra_headers of .ocr-hook.toml (at HEAD)")
    from .config_cli import add_commands

    add_commands(sub, _Parser)  # config list|get|set|unset|path, llm test|providers
    return p


def setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ocr-hook: %(message)s"))
    root = logging.getLogger("ocr_hook")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False


def _flag_layer(args: argparse.Namespace) -> object:
    from .config import Layer

    data: dict[str, dict[str, object]] = {}

    def put(key: str, value: object) -> None:
        section, name = key.split(".")
        data.setdefault(section, {})[name] = value

    pairs = {
        "effort": "review.effort",
        "concurrency": "review.concurrency",
        "timeout": "review.timeout_s",
        "max_tokens_budget": "review.max_tokens_budget",
        "max_tools": "review.max_tool_rounds",
        "tools": "tools.file",
        "background": "review.background",
        "background_file": "review.background_file",
        "provider": "llm.provider",
        "model": "llm.model",
        "mode": "gate.mode",
        "fail_on": "gate.fail_on",
    }
    for attr, key in pairs.items():
        v = getattr(args, attr, None)
        if v is not None:
            put(key, v)
    if getattr(args, "exclude", None):
        put("select.exclude",
            [g.strip() for item in args.exclude for g in item.split(",") if g.strip()])
    if getattr(args, "no_cache", False):
        put("cache.enabled", False)
    if getattr(args, "no_filter", False):
        put("review.filter", False)
    return Layer("command line", data)


def load_config(repo: Path, args: argparse.Namespace, environ: Mapping[str, str]) -> object:
    """Layer defaults, user file, repository file (from HEAD), the preset's standard variables,
    ``OCR_HOOK_*``/``OCR_LLM_*`` and flags (SPEC §2; ``config_cli.config_layers``)."""
    from . import config
    from .config_cli import config_layers

    return config.build(config_layers(repo, environ, _flag_layer(args)))


def _review(args: argparse.Namespace, environ: Mapping[str, str], stage: str) -> int:
    from . import config as config_mod
    from . import gitio, output, review
    from .gate import Exit

    out_path = _check_output_path(args.output) if args.output else None
    mode = "staged"
    if getattr(args, "commit", None):
        if getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
            raise UsageError("--commit cannot be combined with --from/--to: review one commit"
                             " (--commit REF) or one range (--from A --to B)")
        mode = "commit"
    elif getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
        if not (args.from_ref and args.to_ref):
            raise UsageError("--from and --to must be given together")
        mode = "range"
    repo = gitio.find_toplevel(Path.cwd())
    cfg = load_config(repo, args, environ)
    assert isinstance(cfg, config_mod.Config)
    targets: tuple[Any, ...] = ()
    if stage == "pre-push":
        mode = "push"
        targets = tuple(_pushed_ranges(repo, args, environ))
    layers = _rule_layers(repo, cfg, args, environ)
    from .rulesources import selection_globs

    inc, exc = selection_globs(layers)
    if inc or exc:
        cfg = cfg.model_copy(update={"select": cfg.select.model_copy(update={
            "include": [*cfg.select.include, *inc], "exclude": [*cfg.select.exclude, *exc]})})
    from .config_cli import resolve_llm_endpoint_deferred

    # llm.api_key_cmd runs only when the review is about to call the LLM (review.run)
    endpoint, why, key_cmd = resolve_llm_endpoint_deferred(cfg, environ)
    background = cfg.review.background
    if cfg.review.background_file:
        try:
            background = Path(cfg.review.background_file).read_text(encoding="utf-8")
        except OSError as e:
            raise OcrError(f"cannot read background file {cfg.review.background_file}: {e}") from e
    preview = bool(getattr(args, "preview", False))
    req = review.ReviewRequest(
        repo=repo,
        config=cfg,
        environ=environ,
        mode=mode,
        stage=stage,
        commit=getattr(args, "commit", None) or "",
        from_ref=getattr(args, "from_ref", None) or "",
        to_ref=getattr(args, "to_ref", None) or "",
        targets=targets,
        endpoint=endpoint,
        endpoint_error=why,
        api_key_cmd=key_cmd,
        preview=preview,
        use_cache=cfg.cache.enabled,
        background=background,
        protected_paths=layers.protected_paths,
        tool_defs=_tool_defs(cfg),
        mcp=None if preview else _mcp_bridge(repo, cfg, environ),
    )
    try:
        result = _run_review(req, layers.text_for)
    finally:
        if req.mcp is not None:
            req.mcp.close()
    fmt = args.format or "text"
    stream: Any = io.StringIO() if out_path is not None else sys.stdout
    if fmt == "json":
        output.write_json(result, stream)
    elif fmt == "sarif":
        output.write_sarif(result, stream)
    else:
        output.write_text(result, stream, environ)
    if out_path is not None:
        _write_output(out_path, stream.getvalue())
    for reason in result.incomplete_reasons:
        if fmt != "text" or args.output:
            log.warning("%s", output.display_text(reason))
    if result.decision.blocked:
        log.warning("%s", _bypass_message(stage, result.decision.verdict,
                                          result.decision.blocking_findings, result.gate.fail_on))
    return int(result.decision.exit_code) if not preview else int(Exit.OK)


OUTPUT_FILE_MODE = 0o644  # --output: a report for other tools (CI uploads), not a secret


def _check_output_path(name: str) -> Path:
    """``--output FILE`` checked before the review starts: an existing directory, a missing
    parent directory, or a parent that is not a writable directory is a UsageError (exit 2), so
    a long review never ends in a result that cannot be written."""
    path = Path(name)
    shown = one_line(name)
    if path.is_dir():
        raise UsageError(f"--output {shown}: is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(f"--output {shown}: directory {one_line(str(parent))} {what}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path,
                                                                                      os.W_OK)):
        raise UsageError(f"--output {shown}: permission denied")
    return path


def _write_output(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (``atomicfile``: a reader, e.g. a CI step,
    never sees half a report). Raises UsageError when the write fails."""
    from .atomicfile import write_bytes

    try:
        write_bytes(path, text.encode("utf-8", "replace"), mode=OUTPUT_FILE_MODE)
    except OSError as e:
        raise UsageError(f"--output {one_line(str(path))}: cannot write:"
                         f" {e.strerror or e}") from e


def _pushed_ranges(repo: Path, args: argparse.Namespace, environ: Mapping[str, str]) -> list[Any]:
    """Ranges of a pre-push run (SPEC §3.4). Native hook: ``REMOTE URL`` arguments and every
    stdin line. pre-commit framework (no arguments; it passes no stdin lines either):
    ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF``, absent on the push of a root history.
    Raises UsageError when neither applies or a line/ref cannot be resolved."""
    from . import target
    from .errors import UsageError

    if args.remote:
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        lines = target.parse_push_lines(data.decode("utf-8", "surrogateescape"))
        return target.push_targets(repo, args.remote, lines)
    if any(environ.get(k) for k in ("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF",
                                     "PRE_COMMIT_REMOTE_NAME", "PRE_COMMIT")):
        return target.pre_commit_push_targets(repo, environ)
    raise UsageError("git ocr hook pre-push: expected REMOTE URL (native pre-push hook, ref lines"
                     " on stdin) or PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF (pre-commit framework)")


def _rule_layers(repo: Path, cfg: object, args: argparse.Namespace, environ: Mapping[str, str]):  # type: ignore[no-untyped-def]
    """Rule layers of SPEC §5 (``--rule`` → repository file at HEAD → user file → built-in)."""
    from . import rulesources

    return rulesources.load(
        repo,
        cli_rule=getattr(args, "rule", None) or "",
        repo_rule_file=getattr(getattr(cfg, "rules", None), "file", "") or "",
        environ=environ,
    )


def _rules_check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from . import gitio

    repo = gitio.find_toplevel(Path.cwd())
    cfg = load_config(repo, args, environ)
    layers = _rule_layers(repo, cfg, args, environ)
    rel = os.path.relpath(Path.cwd() / args.path, repo).replace(os.sep, "/")
    if rel.startswith("../"):
        rel = args.path
    m = layers.check(rel)
    print(f"path:    {rel}")
    print(f"layer:   {m.layer}")
    print(f"pattern: {m.pattern}")
    print(f"source:  {m.origin or 'inline'}")
    print()
    print(m.text)
    return EXIT_OK


def _run_review(req: Any, rules_for: Any) -> Any:
    """Run ``review.run`` with the run's services: the session log (SPEC §12), the result cache
    (§10) and the stderr heartbeat (§11). Preview runs use none of them."""
    from . import __version__, gitio, review
    from .cache import ResultCache
    from .progress import Progress
    from .session import Session, new_session_id, prune, sessions_dir

    if req.preview:
        return review.run(req, rules_for=rules_for)
    common = gitio.git_common_dir(req.repo)
    cache = (ResultCache.for_repo(common, req.config.cache.max_mb, __version__)
             if req.use_cache else None)
    progress = Progress()
    sid = new_session_id()
    endpoint = req.endpoint
    session = Session(sid, sessions_dir(common) / f"{sid}.jsonl",
                      secret_values=[endpoint.api_key] if endpoint else [],
                      observer=progress.event)
    session.record("start", {
        "mode": req.mode, "stage": req.stage, "effort": req.effort,
        "provider": endpoint.provider if endpoint else "",
        "model": endpoint.model if endpoint else "",
        "base_url": endpoint.url if endpoint else "",
        "cache": req.use_cache, "version": __version__,
    })
    result = None
    try:
        with progress:
            result = review.run(req, session=session, rules_for=rules_for, cache=cache)
        for f in result.findings:
            session.record("comment", {
                "id": f.id, "path": f.path, "side": f.side, "start_line": f.start_line,
                "end_line": f.end_line, "severity": f.severity.label, "category": f.category,
                "anchor": f.anchor, "content": f.content,
            })
    finally:
        end: dict[str, Any] = {"status": "error"}
        if result is not None:
            end = {
                "status": result.status, "verdict": result.decision.verdict,
                "findings": len(result.findings), "llm_calls": result.llm_calls,
                "input_tokens": result.usage.input_tokens,
                "output_tokens": result.usage.output_tokens,
                "cache_hits": result.cache_hits, "elapsed_ms": result.elapsed_ms,
            }
        session.record("end", end)
        session.close()
        prune(sessions_dir(common))
        if cache is not None:
            cache.prune()
    return result


def _tool_defs(cfg: Any) -> Any:
    """Built-in tool definitions narrowed by ``tools.file`` / ``--tools`` (SPEC §7.2), or None
    for the shipped ones. Raises ConfigError at start-up for an unreadable or invalid file."""
    if not cfg.tools.file:
        return None
    from .errors import ConfigError
    from .tools.registry import apply_tools_file, parse_tools_json

    try:
        text = Path(cfg.tools.file).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read tools file {cfg.tools.file}: {e}") from e
    return apply_tools_file(parse_tools_json(), text, cfg.tools.file)


def _repo_mcp_servers(repo: Path) -> dict[str, Any]:
    """The raw ``mcp.servers`` table of ``.ocr-hook.toml`` at HEAD ({} when absent)."""
    from . import config, gitio

    rc, out, _ = gitio.run_git_full(
        repo, "cat-file", "blob", f"HEAD:{config.REPO_FILE}", ok_codes=(0, 128), timeout_s=10
    )
    if rc != 0:
        return {}
    src = f"{config.REPO_FILE} (HEAD)"
    data = config.parse_toml(gitio.decode_text(out), src)
    servers = (data.get("mcp") or {}).get("servers") or {}
    if not isinstance(servers, dict):
        raise OcrError(f"invalid mcp.servers in {src}: must be a table")
    return servers


def _mcp_bridge(repo: Path, cfg: Any, environ: Mapping[str, str]) -> Any:
    """An McpBridge (not started) for the configured servers, or None when there are none.
    Servers defined in the repository file run only with the consent recorded by
    ``git ocr config allow-mcp`` for that exact list (SPEC §7.3); without it they are left out
    with a warning. Raises ConfigError for an invalid server entry."""
    if not cfg.mcp.servers:
        return None
    from . import config, consent
    from .tools.mcp_bridge import McpBridge, parse_servers

    servers = parse_servers(cfg.mcp.servers)
    src = f"{config.REPO_FILE} (HEAD)"
    repo_servers = parse_servers(_repo_mcp_servers(repo), src)
    from_repo = [n for n, s in servers.items() if repo_servers.get(n) == s]
    notes: list[tuple[str, str]] = []
    if from_repo:
        fp = consent.fingerprint({n: s.model_dump() for n, s in repo_servers.items()})
        if not consent.is_allowed(environ, repo, fp):
            for n in from_repo:
                del servers[n]
            notes.append(("", f"MCP servers of {src} not started: {', '.join(from_repo)}; this"
                              " server list has not been allowed; review it and run"
                              " `git ocr config allow-mcp` to let it run"))
    return McpBridge(servers, cwd=repo, environ=environ, notes=notes)


def _allow_mcp(environ: Mapping[str, str]) -> int:
    """``git ocr config allow-mcp``: show the MCP servers of ``.ocr-hook.toml`` at HEAD and
    record the user's consent for exactly that list (ocr_hook/consent.py)."""
    from . import config, consent, gitio
    from .tools.mcp_bridge import describe_server, parse_servers

    repo = gitio.find_toplevel(Path.cwd())
    src = f"{config.REPO_FILE} (HEAD)"
    servers = parse_servers(_repo_mcp_servers(repo), src)
    if not servers:
        raise OcrError(f"{src} defines no mcp.servers; nothing to allow")
    lines = [describe_server(n, s) for n, s in servers.items()]
    fp = consent.fingerprint({n: s.model_dump() for n, s in servers.items()})
    path = consent.record(environ, repo, fp, lines)
    print(f"Allowed the MCP servers of {src} in {repo} to run during reviews:")
    for line in lines:
        print(f"  {line}")
    print(f"Recorded in {path}; any change to this list needs a new `git ocr config allow-mcp`.")
    return EXIT_OK


def _bypass_message(stage: str, verdict: str, findings: int, fail_on: str) -> str:
    """How to proceed when the gate blocks (SPEC §9), worded for the stage. ``git ocr review``
    run by hand or in CI blocks no commit: it states why the exit code is non-zero, without
    commit hints."""
    if stage == "review":
        if verdict == "findings":
            return f"blocking findings: {findings} at or above {fail_on}"
        return "review incomplete and gate.on_error = block"
    what = "push" if stage == "pre-push" else "commit"
    hook_id = "ocr-review-push" if stage == "pre-push" else "ocr-review"
    why = (f"{findings} finding(s) at or above {fail_on}" if verdict == "findings"
           else "the review is incomplete and gate.on_error = block")
    return (f"{what} blocked: {why}. Fix and retry, or bypass once with "
            f"`git {what} --no-verify` (native hook), `SKIP={hook_id} git {what}` (pre-commit "
            f"framework) or `OCR_HOOK_GATE_MODE=advisory git {what}`.")


def _hook_error_hint(hook: str) -> str:
    """The second stderr line of a hook that stops with a usage or configuration error (exit
    2): how to let this one commit or push through (e.g. the commit that fixes a typo in
    ``.ocr-hook.toml``, which is read from HEAD)."""
    what = "push" if hook == "pre-push" else "commit"
    hook_id = "ocr-review-push" if hook == "pre-push" else "ocr-review"
    return (f"to {what} anyway, bypass the review once: `git {what} --no-verify` (native hook),"
            f" `SKIP={hook_id} git {what}` (pre-commit framework) or"
            f" `OCR_HOOK_SKIP=1 git {what}`")


def _add_maintenance_commands(sub: Any) -> None:
    """``install``/``uninstall`` (native hooks), ``cache`` and ``session`` subcommands."""
    ins = sub.add_parser("install", help="install native git hooks (chains an existing hook)")
    ins.add_argument("--pre-commit", action="store_true", help="the pre-commit hook (default)")
    ins.add_argument("--pre-push", action="store_true", help="the pre-push hook")
    ins.add_argument("--force", action="store_true",
                     help="replace an existing hook instead of running it first")
    uns = sub.add_parser("uninstall", help="remove the native hooks, restoring earlier ones")
    uns.add_argument("--pre-commit", action="store_true", help="only the pre-commit hook")
    uns.add_argument("--pre-push", action="store_true", help="only the pre-push hook")
    ca = sub.add_parser("cache", help="inspect or empty the result cache")
    cas = ca.add_subparsers(dest="cache_cmd", metavar="ACTION", parser_class=_Parser)
    cas.add_parser("stats", help="entries, size and location of the cache")
    cas.add_parser("clear", help="delete every cache entry")
    cap = cas.add_parser("prune", help="shrink the cache to cache.max_mb (oldest first)")
    cap.add_argument("--max-mb", type=int, metavar="N", help="prune to N MiB instead")
    se = sub.add_parser("session", help="list or show review sessions")
    ses = se.add_subparsers(dest="session_cmd", metavar="ACTION", parser_class=_Parser)
    sl = ses.add_parser("list", help="the recorded sessions, newest first")
    sl.add_argument("--json", action="store_true", help="one JSON object per session")
    ss = ses.add_parser("show", help="the records of one session")
    ss.add_argument("id", metavar="ID", help="session id (a unique prefix is enough)")
    ss.add_argument("--json", action="store_true", help="raw JSON lines")


def _maintenance(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``install``/``uninstall``/``cache``/``session``; returns the exit code."""
    from . import gitio

    repo = gitio.find_toplevel(Path.cwd())
    if args.command in ("install", "uninstall"):
        from . import install

        hooks = [h for h, on in (("pre-commit", args.pre_commit), ("pre-push", args.pre_push))
                 if on]
        if args.command == "install":
            changes = install.install(repo, hooks or ["pre-commit"], force=args.force)
        else:
            changes = install.uninstall(repo, hooks or list(install.HOOK_TYPES))
        for c in changes:
            print(c.describe())
        return EXIT_OK
    common = gitio.git_common_dir(repo)
    if args.command == "cache":
        from .cache import ResultCache

        if not getattr(args, "cache_cmd", None):
            raise OcrError("usage: git ocr cache stats|clear|prune")
        cfg = load_config(repo, args, environ)
        cache = ResultCache.for_repo(common, cfg.cache.max_mb)  # type: ignore[attr-defined]
        if args.cache_cmd == "stats":
            st = cache.stats()
            print(f"location: {st.path}")
            print("entries:  " + ", ".join(f"{n} {k}" for k, n in st.entries.items()))
            print(f"size:     {st.total_bytes / 1048576:.2f} MiB of "
                  f"{st.max_bytes / 1048576:.0f} MiB ({st.total_bytes} bytes)")
            return EXIT_OK
        if args.cache_cmd == "clear":
            print(f"removed {cache.clear()} cache entries from {cache.root}")
            return EXIT_OK
        cap = None if args.max_mb is None else args.max_mb * 1048576
        n, freed = cache.prune(cap)
        print(f"pruned {n} file(s), {freed} bytes freed")
        return EXIT_OK
    from . import session as session_mod

    directory = session_mod.sessions_dir(common)
    if getattr(args, "session_cmd", None) == "list":
        items = session_mod.list_sessions(directory)
        if args.json:
            import dataclasses
            import json

            for s in items:
                print(json.dumps(dataclasses.asdict(s), ensure_ascii=False))
        else:
            sys.stdout.write(session_mod.format_list(items))
        return EXIT_OK
    if getattr(args, "session_cmd", None) == "show":
        path = session_mod.find_session(directory, args.id)
        if args.json:
            sys.stdout.write(path.read_text(encoding="utf-8", errors="replace"))
        else:
            for rec in session_mod.read_records(path):
                print(session_mod.format_record(rec))
        return EXIT_OK
    raise OcrError("usage: git ocr session list|show ID")


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits on


def one_line(text: str) -> str:
    """``text`` with every line break escaped (``\\n``, ``\\r``…): user-supplied names (file
    names, values) inside an error message cannot split it into several lines (issue 10)."""
    if not any(ch in text for ch in _LINE_BREAKS):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if ch in _LINE_BREAKS else ch
                   for ch in text)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Program entry. Returns the exit code (SPEC §9); never lets a traceback reach the user."""
    env = os.environ if environ is None else environ
    if argv is None:  # run as a program (console script), not called in-process by a test
        import atexit
        import gc

        # Exit without the interpreter's final collections over every object our imports
        # created (pydantic schemas, compiled globs): ~60 ms of a review's wall time on 2 cores
        # (bench/bench_overhead.py). Exit handlers still run; the run's files and child
        # processes are closed explicitly before this point, never left to the collector.
        atexit.register(gc.freeze)
        # pydantic looks up third-party plugins in every installed distribution's entry points
        # on first use (~20 ms); ocr-hook validates its own config and uses none.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    setup_logging(bool(getattr(args, "verbose", False)))
    if args.command is None or (args.command == "hook" and not getattr(args, "hook", None)):
        parser.print_help(sys.stderr if args.command else sys.stdout)
        return EXIT_OK if args.command is None else EXIT_USAGE
    if args.command == "hook" and env.get("OCR_HOOK_SKIP", "").strip() in ("1", "true", "yes"):
        print("ocr-hook: skipped (OCR_HOOK_SKIP=1)", file=sys.stderr)
        return EXIT_OK
    on_error_block = env.get("OCR_HOOK_GATE_ON_ERROR", "").strip().lower() == "block"
    try:
        if args.command == "review":
            return _review(args, env, "review")
        if args.command == "rules" and getattr(args, "rules_cmd", None) == "check":
            return _rules_check(args, env)
        if args.command == "llm" or (args.command == "config" and getattr(
                args, "config_cmd", None) in ("list", "get", "set", "unset", "path")):
            from .config_cli import run as run_config_command

            return run_config_command(args, env)
        if args.command in ("install", "uninstall", "cache", "session"):
            return _maintenance(args, env)
        if args.command == "config" and getattr(args, "config_cmd", None) == "allow-mcp":
            return _allow_mcp(env)
        if args.command == "config" and getattr(args, "config_cmd", None) == "allow-endpoint":
            from .config_cli import allow_endpoint

            return allow_endpoint(env)
        if args.command == "hook" and args.hook == "pre-commit":
            return _review(args, env, "pre-commit")
        if args.command == "hook" and args.hook == "pre-push":
            return _review(args, env, "pre-push")
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except OcrError as e:
        log.error("%s", one_line(str(e)))
        if args.command == "hook":  # a bad committed setting must not trap every commit
            log.error("%s", _hook_error_hint(args.hook))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ocr-hook: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout closed early (e.g. `| head`): not an error of the review
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - a bug means an incomplete review, not a traceback
        log.error("NOT REVIEWED: internal error %s: %s (run with --verbose for details)",
                  type(e).__name__, one_line(str(e)))
        log.debug("traceback", exc_info=True)
        return EXIT_INCOMPLETE if on_error_block else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
