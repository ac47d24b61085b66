"""A real loopback OTLP/HTTP trace collector: accepts ``POST /v1/traces`` (binary protobuf,
``ExportTraceServiceRequest`` of opentelemetry-proto, gzip or not) and keeps every span it
decodes; or, with ``hang=True``, accepts each request, reads it and never answers (until
closed), as a stuck collector does.

Fake: nothing but the collector's storage. Real: sockets, HTTP, the OTLP protobuf encoding the
SDK's exporter writes.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Span:
    """One received span: name, attributes as plain values, events (name, attributes), ids."""

    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    trace_id: str
    span_id: str
    parent_id: str
    resource: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OtlpCollector:
    """The collector on 127.0.0.1 (a free port). ``requests``: the number of POSTs that
    arrived (hanging ones included); ``spans``: the decoded spans; ``paths``: request paths."""

    def __init__(self, hang: bool = False) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.hang = hang
        self.requests = 0
        self.paths: list[str] = []
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:  # silence
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with collector.lock:
                    collector.requests += 1
                    collector.paths.append(self.path)
                if collector.hang:
                    collector.closing.wait(60)
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                collector.add(req)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, req: Any) -> None:
        """Keep the spans of one decoded ExportTraceServiceRequest."""
        with self.lock:
            for rs in req.resource_spans:
                resource = _attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(Span(
                            s.name, _attrs(s.attributes),
                            [(e.name, _attrs(e.attributes)) for e in s.events],
                            s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                            resource))

    @property
    def url(self) -> str:
        """The base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def named(self, name: str) -> list[Span]:
        """The received spans called ``name``."""
        with self.lock:
            return [s for s in self.spans if s.name == name]

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
