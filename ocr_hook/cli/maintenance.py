"""Maintenance commands (spec §1): ``install``/``uninstall`` of the native hooks, ``cache
stats|clear|prune``, ``session list|show`` and ``rules check PATH``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import config, git, hooks, pipeline, report
from ..errors import OcrError
from ..exitcodes import Exit
from .review_cmd import rule_layers


def run_maintenance(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``install``/``uninstall``/``cache``/``session``; returns the exit code. Raises
    OcrError for a missing action or an unknown session id."""
    repo = git.find_toplevel(Path.cwd())
    if args.command in ("install", "uninstall"):
        return _install(args, repo)
    if args.command == "cache":
        return _cache(args, repo, environ)
    return _session(args, repo)


def _install(args: argparse.Namespace, repo: Path) -> int:
    """``install``/``uninstall`` the native hooks; prints one line per change."""
    chosen = [h for h, on in (("pre-commit", args.pre_commit),
                              ("pre-merge-commit", args.pre_merge_commit),
                              ("pre-push", args.pre_push)) if on]
    if args.command == "install":
        changes = hooks.install(repo, chosen or ["pre-commit"], force=args.force)
    else:
        changes = hooks.uninstall(repo, chosen or list(hooks.HOOK_TYPES))
    for c in changes:
        print(c.describe())
    return Exit.OK


def _cache(args: argparse.Namespace, repo: Path, environ: Mapping[str, str]) -> int:
    """``cache stats|clear|prune [--max-mb N]`` on the repository's result cache."""
    if not getattr(args, "cache_cmd", None):
        raise OcrError("usage: git ocr cache stats|clear|prune")
    cfg = config.load_config(repo, vars(args), environ)
    cache = pipeline.ResultCache.for_repo(git.git_common_dir(repo), cfg.cache.max_mb)
    if args.cache_cmd == "stats":
        st = cache.stats()
        print(f"location: {st.path}")
        print("entries:  " + ", ".join(f"{n} {k}" for k, n in st.entries.items()))
        print(f"size:     {st.total_bytes / 1048576:.2f} MiB of "
              f"{st.max_bytes / 1048576:.0f} MiB ({st.total_bytes} bytes)")
        return Exit.OK
    if args.cache_cmd == "clear":
        print(f"removed {cache.clear()} cache entries from {cache.root}")
        return Exit.OK
    cap = None if args.max_mb is None else args.max_mb * 1048576
    n, freed = cache.prune(cap)
    print(f"pruned {n} file(s), {freed} bytes freed")
    return Exit.OK


def _session(args: argparse.Namespace, repo: Path) -> int:
    """``session list [--json]`` or ``session show ID [--json]``."""
    directory = report.sessions_dir(git.git_common_dir(repo))
    if getattr(args, "session_cmd", None) == "list":
        items = report.list_sessions(directory)
        if args.json:
            for s in items:
                print(json.dumps(dataclasses.asdict(s), ensure_ascii=False))
        else:
            sys.stdout.write(report.format_session_list(items))
        return Exit.OK
    if getattr(args, "session_cmd", None) == "show":
        path = report.find_session(directory, args.id)
        if getattr(args, "html", False):
            return _session_page(path, args.output)
        if args.json:
            sys.stdout.write(path.read_text(encoding="utf-8", errors="replace"))
        else:
            for rec in report.read_session_records(path):
                print(report.format_session_record(rec))
        return Exit.OK
    raise OcrError("usage: git ocr session list|show ID")


def _session_page(path: Path, output: str | None) -> int:
    """``session show ID --html [--output FILE]``: the review page of a recorded session.
    Raises OcrError when the session has no result record (an older or interrupted run)."""
    out_path = report.check_output_path(output) if output else None
    rec = next((r for r in reversed(report.read_session_records(path))
                if r.get("type") == "result"), None)
    if rec is None or not isinstance(rec.get("report"), dict):
        raise OcrError(f"session {path.stem} has no recorded result (interrupted, or written by"
                       " an older ocr-hook)")
    diffs = [report.diff_from_record(d) for d in rec.get("diffs", []) if isinstance(d, dict)]
    page = report.render_html(rec["report"], diffs, str(rec.get("verdict_line", "")))
    if out_path is not None:
        report.write_output(out_path, page)
    else:
        sys.stdout.write(page)
    return Exit.OK


def rules_check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr rules check PATH``: the rule layer, pattern and text that apply to PATH."""
    repo = git.find_toplevel(Path.cwd())
    cfg = config.load_config(repo, vars(args), environ)
    layers = rule_layers(repo, cfg, args, environ)
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
    return Exit.OK
