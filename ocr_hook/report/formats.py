"""The output formats of ``git ocr review --format`` (spec §11): the one list of them.

:data:`OUTPUT_FORMATS` maps each format's name to its writer, given as ``"module:function"``
(a module of this package). The parser takes ``--format``'s choices from it and
``cli/review_cmd.py`` writes a result with :func:`format_writer`, so this table is the only
place that names the formats. The writers are imported when one is looked up, never when the
names are read: ``git ocr -h`` and a hook run build their parsers without loading a renderer.

Every writer has one signature, :data:`Writer`::

    def write_NAME(result: ReviewResult, stream: TextIO, environ: Mapping[str, str]) -> None

It writes the whole output of ``result`` to ``stream`` (stdout, or a buffer that
``--output FILE`` replaces the file with) and returns nothing; ``environ`` is the command's
environment (the text output reads ``NO_COLOR`` and ``TERM``; the others ignore it). The
exit code, the file of ``--output`` and the warnings on stderr are the command's
(``cli/review_cmd.py``), the same for every format.

Adding an output format NAME:

1. A module in this folder, ``ocr_hook/report/``, named for the format (``NAME.py``; the
   JSON writer is ``json_format.py`` so that it does not read as the standard library's
   ``json``), with a ``write_NAME`` of the signature above. It may use ``report.display`` (colour,
   terminal-safe paths and text, strict UTF-8), the JSON object of
   ``report.json_format.to_json`` and any other module of the package.
2. One entry in :data:`OUTPUT_FORMATS`: ``"NAME": "MODULE:write_NAME"``. The order is the
   order of the choices in ``git ocr review -h``.

No other code changes: the parser, ``cli/review_cmd.py``, the package's ``__init__.py`` and
the layer table (tests/test_layers.py) read the registry, and tests/report/test_formats.py
renders a sample result with every entry. What changes with any feature changes too: the user
documentation (README, spec §11), a test of the format's own content, and the pinned help text
of the parser (``--format``'s choices), regenerated with ``OCR_HOOK_REGEN_GOLDENS=1
.venv/bin/python -m pytest -q tests/cli/test_parser.py``.
"""

from __future__ import annotations

import sys

from ..util import TYPE_CHECKING  # without importing typing: the parser of every hook reads this

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TextIO

    from .result import ReviewResult

    Writer = Callable[[ReviewResult, TextIO, Mapping[str, str]], None]

OUTPUT_FORMATS: dict[str, str] = {
    "text": "text:write_text",
    "json": "json_format:write_json",
    "sarif": "sarif:write_sarif",
    "html": "html:write_html",
    "ndjson": "ndjson:write_ndjson",
}
DEFAULT_FORMAT = "text"

# Formats written while the review runs: name -> "module:Class", a class built on the output
# stream whose ``event(kind, data)`` is a session observer and whose ``finish(result)`` ends
# the output (``report.ndjson.EventStream``). ``cli/review_cmd.py`` uses it instead of the
# format's writer; the writer of OUTPUT_FORMATS stays for a finished result.
LIVE_FORMATS: dict[str, str] = {
    "ndjson": "ndjson:EventStream",
}


def format_writer(name: str) -> Writer:
    """The writer of format ``name`` (a key of :data:`OUTPUT_FORMATS`), its module imported
    now. Raises KeyError for a name that is not registered."""
    module, _, function = OUTPUT_FORMATS[name].partition(":")
    full = f"{__package__}.{module}"
    __import__(full)
    writer: Writer = getattr(sys.modules[full], function)
    return writer


def live_writer(name: str, stream: TextIO) -> Any:
    """The live writer of format ``name`` over ``stream`` (see :data:`LIVE_FORMATS`), or None
    for a format that is written only once the result is known."""
    if name not in LIVE_FORMATS:
        return None
    module, _, cls = LIVE_FORMATS[name].partition(":")
    full = f"{__package__}.{module}"
    __import__(full)
    return getattr(sys.modules[full], cls)(stream)
