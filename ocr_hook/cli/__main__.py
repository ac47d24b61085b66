"""``python -m ocr_hook.cli``: what installed native hooks run (ocr_hook/hooks/native.py)."""

from __future__ import annotations

import sys

from .main import main

sys.exit(main())
