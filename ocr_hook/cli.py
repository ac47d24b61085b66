"""``git ocr`` / ``ocr-hook``: subcommands, hook entry points, logging set-up and the error
boundary that maps failures to exit codes (SPEC §1, §9). Heavy modules are imported inside the
branch that needs them so ``git ocr -h`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import OcrError

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
    g.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
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
    rc = rus.add_parser("check", help="show which rule layer and pattern apply to PATH, and the text")
    rc.add_argument("path", metavar="PATH")
    rc.add_argument("--rule", metavar="FILE", help="rule file to include as the top layer")
    h = sub.add_parser("hook", help="entry points for git hooks and the pre-commit framework")
    hs = h.add_subparsers(dest="hook", metavar="HOOK", parser_class=_Parser)
    hpc = hs.add_parser("pre-commit", help="review what is being committed")
    _add_review_flags(hpc, hook=True)
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
        put("select.exclude", [g.strip() for item in args.exclude for g in item.split(",") if g.strip()])
    if getattr(args, "no_cache", False):
        put("cache.enabled", False)
    return Layer("command line", data)


def _user_config_path(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "ocr-hook" / "config.toml"


def load_config(repo: Path, args: argparse.Namespace, environ: Mapping[str, str]) -> object:
    """Layer defaults, user file, repository file (from HEAD), environment and flags."""
    from . import config, gitio

    layers = []
    user = _user_config_path(environ)
    if user.is_file():
        try:
            text = user.read_text(encoding="utf-8")
        except OSError as e:
            raise OcrError(f"cannot read {user}: {e}") from e
        layers.append(config.Layer(str(user), config.parse_toml(text, str(user))))
    rc, out, _ = gitio.run_git_full(
        repo, "cat-file", "blob", f"HEAD:{config.REPO_FILE}", ok_codes=(0, 128), timeout_s=10
    )
    if rc == 0:
        src = f"{config.REPO_FILE} (HEAD)"
        layers.append(config.Layer(src, config.parse_toml(gitio.decode_text(out), src)))
    layers.append(config.env_layer(environ))
    layers.append(_flag_layer(args))  # type: ignore[arg-type]
    return config.build(layers)


def _review(args: argparse.Namespace, environ: Mapping[str, str], stage: str) -> int:
    from . import config as config_mod
    from . import gitio, output, review
    from .gate import Exit
    from .session import Session, new_session_id, prune, sessions_dir

    repo = gitio.find_toplevel(Path.cwd())
    cfg = load_config(repo, args, environ)
    assert isinstance(cfg, config_mod.Config)
    mode = "staged"
    if getattr(args, "commit", None):
        mode = "commit"
    elif getattr(args, "from_ref", None) or getattr(args, "to_ref", None):
        if not (args.from_ref and args.to_ref):
            raise OcrError("--from and --to must be given together")
        mode = "range"
    layers = _rule_layers(repo, cfg, args, environ)
    from .rulesources import selection_globs

    inc, exc = selection_globs(layers)
    if inc or exc:
        cfg = cfg.model_copy(update={"select": cfg.select.model_copy(update={
            "include": [*cfg.select.include, *inc], "exclude": [*cfg.select.exclude, *exc]})})
    endpoint, why = config_mod.resolve_endpoint(cfg.llm, environ)
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
        endpoint=endpoint,
        endpoint_error=why,
        preview=preview,
        use_cache=cfg.cache.enabled,
        background=background,
        protected_paths=layers.protected_paths,
    )
    session = None
    if not preview:
        common = gitio.git_common_dir(repo)
        sid = new_session_id()
        session = Session(sid, sessions_dir(common) / f"{sid}.jsonl")
        session.record("start", {"mode": mode, "stage": stage, "model": endpoint.model if endpoint else "",
                                 "provider": endpoint.provider if endpoint else ""})
    try:
        result = review.run(req, session=session, rules_for=layers.text_for)
    finally:
        if session is not None:
            session.record("end", {})
            session.close()
            prune(sessions_dir(gitio.git_common_dir(repo)))
    fmt = args.format or "text"
    stream = sys.stdout
    fh = None
    if args.output:
        fh = open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        stream = fh
    try:
        if fmt == "json":
            output.write_json(result, stream)
        elif fmt == "sarif":
            output.write_sarif(result, stream)  # type: ignore[attr-defined]
        else:
            output.write_text(result, stream, environ)
    finally:
        if fh is not None:
            fh.close()
    for reason in result.incomplete_reasons:
        if fmt != "text" or args.output:
            log.warning("%s", reason)
    if result.decision.blocked and result.decision.verdict == "findings":
        log.warning(
            "commit blocked: %d finding(s) at or above %s. Fix them, or bypass once with "
            "`git commit --no-verify`, `SKIP=ocr-review git commit` (pre-commit framework) or "
            "OCR_HOOK_GATE_MODE=advisory.",
            result.decision.blocking_findings, result.gate.fail_on,
        )
    return int(result.decision.exit_code) if not preview else int(Exit.OK)


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


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Program entry. Returns the exit code (SPEC §9); never lets a traceback reach the user."""
    env = os.environ if environ is None else environ
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
        if args.command == "hook" and args.hook == "pre-commit":
            return _review(args, env, "pre-commit")
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except OcrError as e:
        log.error("%s", e)
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
                  type(e).__name__, e)
        log.debug("traceback", exc_info=True)
        return EXIT_INCOMPLETE if on_error_block else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
