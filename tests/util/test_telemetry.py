"""The telemetry facade (``ocr_hook/util/telemetry.py``, spec §11.7): when it turns on, where
it sends, its headers, and that off it is a no-op. The export itself is tested against a real
collector in tests/e2e/test_telemetry.py.

Real: the facade and, when on, the OpenTelemetry SDK; the collector of the last test.
"""

from __future__ import annotations

import logging
import time

import pytest

from ocr_hook.util import tracing
from ocr_hook.util.telemetry import DEFAULT_TRACES_URL, NO_SPAN, otlp_headers, traces_url
from tests.support.otlp_collector import OtlpCollector


@pytest.mark.parametrize("environ, url", [
    ({}, DEFAULT_TRACES_URL),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4999"}, "http://127.0.0.1:4999/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/otlp/"}, "http://c:4318/otlp/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/custom"}, "http://b:2/custom"),
])
def test_the_traces_url_follows_the_otlp_variables(environ: dict[str, str], url: str) -> None:
    assert traces_url(environ) == url


def test_headers_are_comma_separated_pairs_percent_decoded() -> None:
    assert otlp_headers({"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1,broken"}) == {
        "api-key": "a b", "x": "1"}
    assert otlp_headers({"OTEL_EXPORTER_OTLP_HEADERS": "x=1",
                         "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "y=2"}) == {"y": "2"}


@pytest.mark.parametrize("environ, enabled", [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_SDK_DISABLED": "TRUE"}, True),
])
def test_off_unless_configured(environ: dict[str, str], enabled: bool) -> None:
    assert tracing.start(environ, enabled=enabled, content=True, version="t") is False
    assert not tracing.on and tracing.current() is None
    assert tracing.span("x", {"a": 1}) is NO_SPAN
    assert tracing.text("secret") is None
    tracing.finish()


def test_telemetry_enabled_alone_turns_it_on() -> None:
    try:
        assert tracing.start({}, enabled=True, content=False, version="t") is True
        assert tracing.on and tracing.text("code") is None  # content is off
    finally:
        tracing.finish(bound_s=0.0)
    assert not tracing.on


def test_content_is_cut_to_its_bound_and_spans_nest_across_threads() -> None:
    import threading

    from ocr_hook.util.telemetry import CONTENT_MAX_CHARS

    c = OtlpCollector()
    try:
        assert tracing.start({"OTEL_EXPORTER_OTLP_ENDPOINT": c.url}, enabled=False,
                             content=True, version="t")
        assert tracing.text("x" * (CONTENT_MAX_CHARS + 5)) == "x" * CONTENT_MAX_CHARS + "…"
        with tracing.span("run", {"skip": None, "keep": 1}):
            worker = threading.Thread(target=lambda: tracing.span("worker").__enter__()
                                      .__exit__(None, None, None))
            worker.start()
            worker.join()
        tracing.finish(bound_s=2.0)
        end = time.monotonic() + 5
        while len(c.spans) < 2 and time.monotonic() < end:
            time.sleep(0.01)
        spans = {s.name: s for s in c.spans}
        assert spans["run"].attributes == {"keep": 1}
        assert spans["worker"].parent_id == spans["run"].span_id  # a worker's span: the run's
    finally:
        tracing.finish()
        c.close()


class Lines(logging.Handler):
    """The messages ``ocr_hook.telemetry`` logs while installed, at every level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.logger = logging.getLogger("ocr_hook.telemetry")

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> Lines:
        self.level_was = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level_was)


@pytest.mark.parametrize("value", ["not a url", "ftp://collector.example/otlp", "localhost:4318"])
def test_an_endpoint_that_is_not_an_http_url_is_one_warning_and_off(value: str) -> None:
    with Lines() as got:
        on = tracing.start({"OTEL_EXPORTER_OTLP_ENDPOINT": value}, enabled=False,
                           content=False, version="t")
    assert on is False and not tracing.on
    assert [(r.levelno, r.getMessage()) for r in got.records] == [(logging.WARNING,
        f"telemetry off: OTEL_EXPORTER_OTLP_ENDPOINT = {value!r} is not an http(s) URL")]


FAILED_EXPORT = """
import logging, socket, sys, time
from ocr_hook.cli.main import setup_logging
from ocr_hook.util import tracing
setup_logging(verbose=sys.argv[1] == "-v")
with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
assert tracing.start({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
                     enabled=False, content=False, version="t")
with tracing.span("run"):
    pass
tracing.finish()
time.sleep(2.5)  # the exporter fails and retries meanwhile
print(port)
"""


@pytest.mark.parametrize("verbose", [True, False])
def test_a_failed_export_is_one_debug_line(verbose: bool) -> None:
    """In its own process: the exporter's retries go on after the test (no other test may
    see their connections)."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", FAILED_EXPORT, "-v" if verbose else "-q"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    port = p.stdout.strip()
    lines = p.stderr.splitlines()
    if not verbose:
        assert lines == []
        return
    assert len(lines) == 1, lines
    assert lines[0].startswith("ocr-hook: telemetry export failed: ") and f"port={port}" in lines[0]
