"""OpenTelemetry traces of a review (spec §11.7) behind one small facade, :data:`tracing`.

Off unless the user configures it (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``telemetry.enabled``). Off, every call is a no-op and
nothing of ``opentelemetry`` is imported, so a hook run pays one attribute check per span. On,
the SDK and its OTLP/HTTP exporter (the optional extra ``ocr-hook[otel]``) are imported when
the run starts; without them the run warns once and goes on untraced.

Spans are exported by the SDK's ``BatchSpanProcessor`` on its own daemon thread, so a slow or
hanging collector never holds up a review; :meth:`Tracing.finish` gives the last batch at most
FLUSH_BOUND_S and never waits for the exporter to shut down (the SDK's ``force_flush`` blocks
on the export itself, so it runs on a daemon thread that the process does not wait for).

The one module-level state is :data:`tracing`: the run's tracer, set by ``start`` and cleared
by ``finish`` (one run per process; a second ``start`` while on keeps the first).
"""

from __future__ import annotations

import logging
import threading

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

log = logging.getLogger("ocr_hook.telemetry")

# OpenTelemetry SDK configuration, "OTLP Exporter": the signal-specific URL is used as it is,
# the general one gets the signal path appended; without either the default is localhost:4318
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_TRACES_URL = "http://localhost:4318/v1/traces"
FLUSH_BOUND_S = 0.05  # spec §11.7: the exporter never delays a hook's exit by more than this
EXPORT_TIMEOUT_S = 5.0  # one export request, on the processor's daemon thread
CONTENT_MAX_CHARS = 8192  # a text attribute (telemetry.content): prompts can be large
MISSING_EXTRA = ("telemetry is configured ({why}) but OpenTelemetry is not installed"
                 " (pip install 'ocr-hook[otel]'); reviewing without it")


class _NoSpan:
    """The span of telemetry that is off: a context manager whose methods do nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, key: str, value: Any) -> None:
        """Set attribute ``key`` (nothing: off)."""

    def event(self, name: str, attrs: Mapping[str, Any]) -> None:
        """Add event ``name`` (nothing: off)."""

    def redact_errors(self, redact: Any) -> None:
        """Pass an exception's message through ``redact`` (nothing: off)."""


NO_SPAN = _NoSpan()


class _Span:
    """A span being recorded, current on this thread while its ``with`` block runs (the
    SDK's ``start_as_current_span``: an exception leaving the block is recorded, error status)."""

    __slots__ = ("_cm", "_owner", "_redact", "_span")

    def __init__(self, cm: Any, owner: Tracing) -> None:
        self._cm = cm
        self._owner = owner
        self._span: Any = None
        self._redact: Any = None

    def redact_errors(self, redact: Any) -> None:
        """With ``telemetry.content``, an exception's message passes ``redact`` (str → str)
        before it is recorded (the server's error may echo the request)."""
        self._redact = redact

    def __enter__(self) -> _Span:
        self._span = self._cm.__enter__()
        self._owner._adopt_root(self._span)
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[1] is not None:
            self._failed(exc[1])
        self._cm.__exit__(*exc)

    def _failed(self, err: BaseException) -> None:
        """Record an exception leaving the block: an ``exception`` event with
        ``exception.type`` (and ``http.response.status_code`` of an error that has one); its
        message only with ``telemetry.content`` (a server's error may echo the prompt), never
        the stack trace; error status described by the type."""
        from opentelemetry.trace import Status, StatusCode

        kind = type(err).__qualname__
        status = getattr(err, "status", None)
        self._span.add_event("exception", _clean({
            "exception.type": kind,
            "exception.message": self._owner.text(
                self._redact(str(err)) if self._redact else str(err)),
            "http.response.status_code": status if isinstance(status, int) else None}))
        if isinstance(status, int):
            self._span.set_attribute("http.response.status_code", status)
        self._span.set_status(Status(StatusCode.ERROR, kind))

    def set(self, key: str, value: Any) -> None:
        """Set attribute ``key`` (None: left out)."""
        if value is not None:
            self._span.set_attribute(key, value)

    def event(self, name: str, attrs: Mapping[str, Any]) -> None:
        """Add event ``name`` with ``attrs`` (None values left out) at this moment."""
        self._span.add_event(name, _clean(attrs))


def _clean(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``attrs`` without None values (OpenTelemetry attributes are str, bool, int, float or
    sequences of one of them)."""
    return {k: v for k, v in (attrs or {}).items() if v is not None}


class Tracing:
    """The run's tracer. ``start`` once per run, spans around stages, ``finish`` at the end.
    Thread-safe: spans may start on any thread; one started on a thread with no current span
    (a worker) is a child of the run's first span, unless ``parent`` (from :meth:`current` on
    another thread) says otherwise."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tracer: Any = None
        self._provider: Any = None
        self._root: Any = None  # the context of the run's first span
        self.content = False  # telemetry.content: spans may carry (redacted) text

    @property
    def on(self) -> bool:
        """True while a run is traced."""
        return self._tracer is not None

    def start(self, environ: Mapping[str, str], *, enabled: bool, content: bool,
              version: str) -> bool:
        """Turn tracing on for one run when ``environ`` names an OTLP endpoint
        (ENDPOINT_VARS) or ``enabled`` (``telemetry.enabled``), unless ``OTEL_SDK_DISABLED`` is
        ``true``. Returns whether it is on. Without the ``otel`` extra: one warning (logger
        ``ocr_hook``), False. Never raises for telemetry problems."""
        why = next((v for v in ENDPOINT_VARS if environ.get(v, "").strip()),
                   "telemetry.enabled" if enabled else "")
        if not why or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return False
        url = traces_url(environ)
        if not _http_url(url):
            shown = environ.get(why, "").strip() or url  # what the user set, else the URL
            log.warning("telemetry off: %s = %r is not an http(s) URL", why, shown)
            return False
        with self._lock:
            if self._tracer is not None:
                return True
            try:
                self._provider, self._tracer = _sdk_tracer(environ, version)
                self._root = None
            except ImportError:
                log.warning(MISSING_EXTRA.format(why=why))
                return False
            except Exception as e:  # noqa: BLE001 - telemetry never stops a review
                log.warning("telemetry not started: %s", e)
                return False
            self.content = content
        return True

    def span(self, name: str, attrs: Mapping[str, Any] | None = None,
             parent: Any = None) -> _Span | _NoSpan:
        """A context manager recording span ``name`` with ``attrs`` (None values left out);
        ``parent``: a context from :meth:`current`. Off: NO_SPAN."""
        tracer = self._tracer
        if tracer is None:
            return NO_SPAN
        if parent is None:
            from opentelemetry import trace

            if not trace.get_current_span().get_span_context().is_valid:
                parent = self._root
        return _Span(tracer.start_as_current_span(  # _Span records exceptions itself
            name, context=parent, attributes=_clean(attrs), record_exception=False,
            set_status_on_exception=False), self)

    def current(self) -> Any:
        """The current context (None when off): the ``parent`` of spans on another thread."""
        if self._tracer is None:
            return None
        from opentelemetry import context

        return context.get_current()

    def text(self, value: str) -> str | None:
        """``value`` (already redacted by the caller) cut to CONTENT_MAX_CHARS when
        ``telemetry.content`` is on, else None (the attribute is left out)."""
        if not self.content or self._tracer is None:
            return None
        return value if len(value) <= CONTENT_MAX_CHARS else value[:CONTENT_MAX_CHARS] + "…"

    def _adopt_root(self, span: Any) -> None:
        if self._root is None:
            from opentelemetry import trace

            with self._lock:
                if self._root is None:
                    self._root = trace.set_span_in_context(span)

    def finish(self, bound_s: float = FLUSH_BOUND_S) -> None:
        """End the run's tracing: export what is left on a daemon thread and wait at most
        ``bound_s`` for it (spec §11.7); then the process may exit, the export unfinished. No
        effect when off."""
        with self._lock:
            provider, self._provider, self._tracer, self._root = self._provider, None, None, None
            self.content = False
        if provider is None:
            return

        def flush() -> None:
            try:
                provider.force_flush()
                provider.shutdown()
            except Exception as e:  # noqa: BLE001 - an export failure is no review failure
                log.debug("telemetry export failed: %s", str(e).splitlines()[0][:300])

        worker = threading.Thread(target=flush, name="ocr-telemetry-flush", daemon=True)
        worker.start()
        worker.join(bound_s)


def traces_url(environ: Mapping[str, str]) -> str:
    """The OTLP/HTTP traces URL: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``, else DEFAULT_TRACES_URL. Pure."""
    signal = environ.get(ENDPOINT_VARS[0], "").strip()
    if signal:
        return signal
    base = environ.get(ENDPOINT_VARS[1], "").strip()
    return f"{base.rstrip('/')}/v1/traces" if base else DEFAULT_TRACES_URL


def otlp_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` else ``OTEL_EXPORTER_OTLP_HEADERS``:
    ``key=value`` pairs separated by commas, percent-decoded (W3C Baggage format, as the
    OpenTelemetry specification says); a pair without ``=`` is ignored. Pure."""
    from urllib.parse import unquote

    text = environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", "")
    out: dict[str, str] = {}
    for pair in text.split(","):
        key, eq, value = pair.partition("=")
        if eq and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    return out


def _http_url(url: str) -> bool:
    """Whether ``url`` is an ``http``/``https`` URL with a host (what the OTLP/HTTP exporter
    can send to). Pure."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


class _FirstFailure(logging.Handler):
    """The SDK's warnings and errors (a failed export, a retry) as one debug line of
    ``ocr_hook.telemetry`` per run (``-v`` shows it): ``telemetry export failed: …``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.told = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.told:
            return
        self.told = True
        log.debug("telemetry export failed: %s", record.getMessage().splitlines()[0][:300])


def _sdk_tracer(environ: Mapping[str, str], version: str) -> tuple[Any, Any]:
    """(TracerProvider, Tracer) exporting to :func:`traces_url` in batches. Raises ImportError
    without the ``otel`` extra."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # the SDK logs failed exports; a hook's stderr is for the review: one debug line (-v)
    sdk_log = logging.getLogger("opentelemetry")
    for h in [h for h in sdk_log.handlers if isinstance(h, _FirstFailure)]:
        sdk_log.removeHandler(h)  # one line per run
    sdk_log.addHandler(_FirstFailure())
    sdk_log.propagate = False
    exporter = OTLPSpanExporter(endpoint=traces_url(environ), headers=otlp_headers(environ),
                                timeout=EXPORT_TIMEOUT_S)
    resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME") or "ocr-hook",
                                "service.version": version})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, provider.get_tracer("ocr_hook", version)


tracing = Tracing()
