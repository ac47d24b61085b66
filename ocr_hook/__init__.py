"""ocr-hook: AI code review of the staged snapshot, as a git hook."""

__version__ = "0.1.0"
