"""``git ocr scan [PATH…] [--all] [--staged]`` (spec §3.9): review whole tracked files, at HEAD or
as staged, through the review's pipeline. The target is ``git.scan_target`` (each file one added
hunk of its blob); the request, the run, the formats and the exit codes are the review's
(``cli.review_cmd``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .. import config, git, pipeline
from ..errors import UsageError
from .review_cmd import _read_background, _with_rule_globs, rule_layers, run_review_command

if TYPE_CHECKING:
    from ..change import RuleLayers
    from ..pipeline import ReviewRequest

USAGE = ("scan: name the files to scan (PATH…, pathspecs relative to the current"
         " directory) or scan every tracked file with --all")


def run_scan_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``git ocr scan``: the review of the scan target, written and gated as
    ``git ocr review`` (``review_cmd.run_review_command``); returns its exit code. Raises
    UsageError (exit 2) without PATH and ``--all``, with both, or for a PATH that names no
    tracked file."""
    paths = list(getattr(args, "paths", None) or [])
    if not paths and not args.all:
        raise UsageError(USAGE)
    if paths and args.all:
        raise UsageError("scan: give PATH… or --all, not both")
    return run_review_command(args, environ, "review", build=_build_scan_request)


def _build_scan_request(args: argparse.Namespace, environ: Mapping[str, str],
                        stage: str) -> tuple[ReviewRequest, RuleLayers]:
    """The ReviewRequest of a scan (mode ``scan``, its one target resolved here, so a bad PATH
    fails before any setting is needed) and the rule layers it reviews with. No
    review-configuration file is "edited" by a scan, so none is protected (spec §5). Raises
    OcrError (UsageError, ConfigError, GitError)."""
    cwd = Path.cwd()
    repo = git.find_toplevel(cwd, head_files=config.HEAD_FILES)
    if args.staged:
        git.snapshot_ahead(repo, environ)  # write-tree while the settings load
    origins: dict[str, str] = {}  # spec §13.7: a money cap's NOT REVIEWED line names its source
    cfg, from_repo = config.load_settings(repo, vars(args), environ, llm_command=True,
                                          origins=origins)
    target = git.scan_target(repo, cwd, [] if args.all else args.paths, environ,
                             staged=bool(args.staged))
    layers = rule_layers(repo, cfg, args, environ)
    cfg = _with_rule_globs(cfg, layers)
    endpoint, why, key_cmd = config.resolve_llm_endpoint_deferred(cfg, environ)
    preview = bool(args.preview)
    req = pipeline.ReviewRequest(
        repo=repo, config=cfg, environ=environ, mode="scan", stage=stage, targets=(target,),
        endpoint=endpoint, endpoint_error=why, api_key_cmd=key_cmd, preview=preview,
        use_cache=cfg.cache.enabled, background=_read_background(cfg, repo, from_repo),
        guidance=layers.guidance, tool_defs=pipeline.tool_defs(cfg, repo, from_repo),
        mcp=None if preview else pipeline.mcp_bridge(repo, cfg, environ),
        cap_sources={k: v for k, v in origins.items() if k.startswith("budget.")},
    )
    return req, layers
