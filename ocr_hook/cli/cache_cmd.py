"""``git ocr cache stats|clear|prune [--max-mb N]``: the repository's result cache (spec §10)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from .. import config, git, pipeline
from ..errors import OcrError
from ..exitcodes import Exit
from ..util import display_path


def run_cache_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Show, clear or prune the result cache of the repository around the working directory.
    Raises OcrError when no action is given."""
    repo = git.find_toplevel(Path.cwd())
    if not getattr(args, "cache_cmd", None):
        raise OcrError("usage: git ocr cache stats|clear|prune")
    cfg = config.load_config(repo, vars(args), environ)
    cache = pipeline.ResultCache.for_repo(git.git_common_dir(repo), cfg.cache.max_mb)
    if args.cache_cmd == "stats":
        st = cache.stats()
        print(f"location: {display_path(str(st.path))}")
        print("entries:  " + ", ".join(f"{n} {k}" for k, n in st.entries.items()))
        print(f"size:     {st.total_bytes / 1048576:.2f} MiB of "
              f"{st.max_bytes / 1048576:.0f} MiB ({st.total_bytes} bytes)")
        return Exit.OK
    if args.cache_cmd == "clear":
        print(f"removed {cache.clear()} cache entries from {display_path(str(cache.root))}")
        return Exit.OK
    cap = None if args.max_mb is None else args.max_mb * 1048576
    n, freed = cache.prune(cap)
    print(f"pruned {n} file(s), {freed} bytes freed")
    return Exit.OK
