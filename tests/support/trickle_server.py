"""A loopback HTTP server that answers every request slowly, one byte at a time: the model that
holds a connection open by trickling bytes (each read gets a byte in time, so no per-read
timeout ever expires).

Fake: the model. Real: sockets, HTTP/1.1 framing, the client's time limit.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any


class TrickleServer:
    """Answers each request with a valid 200 reply carrying ``body`` (JSON), sending one byte
    every ``interval_s``: from the first byte of the status line when ``headers_too``, else
    after headers sent at once. ``requests`` counts the requests read; ``closed_after_s`` holds,
    per request, the seconds from its arrival to the client closing the connection."""

    def __init__(self, body: Any, *, interval_s: float = 1.0, headers_too: bool = False) -> None:
        self.data = json.dumps(body).encode()
        self.interval_s = interval_s
        self.headers_too = headers_too
        self.requests = 0
        self.closed_after_s: list[float] = []
        self._stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, protocol: str) -> str:
        port = self.sock.getsockname()[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if protocol == "openai" else "")

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            head = b""
            try:
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                body = head.split(b"\r\n\r\n", 1)[1]
                while len(body) < length:
                    body += conn.recv(65536)
            except OSError:
                return
            self.requests += 1
            t0 = time.monotonic()
            headers = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(self.data))
            out = headers + self.data
            try:
                if not self.headers_too:
                    conn.sendall(headers)
                    out = self.data
                for i in range(len(out)):
                    if self._stop.wait(self.interval_s):
                        return
                    conn.sendall(out[i:i + 1])
            except OSError:  # the client hung up: the time limit ended the request
                self.closed_after_s.append(time.monotonic() - t0)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(2)
        self.sock.close()
