"""``git ocr`` / ``ocr-hook``: the command layer (spec §1, §9). Nothing in ocr_hook imports it.

``main`` (cli/main.py) parses, dispatches and is the one error boundary that maps failures to
the exit codes of ``ocr_hook.exitcodes.Exit``. Each command lives in its own module and is
imported only in its branch, so ``git ocr -h`` stays fast.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
