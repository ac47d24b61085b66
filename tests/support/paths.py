"""Where the tests find the checkout: its root (``ocr_hook/``, ``config/``, ``bench/``, the
hook manifest) and the tests' data folder. Tests name these instead of counting parents of
their own ``__file__``, so a test can move between folders without its paths changing."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SUPPORT = ROOT / "tests" / "support"
