"""A time limit on a whole HTTP request, from connecting to the last byte of the reply (spec
§13.3, ``llm.timeout_s``).

requests' ``timeout=(connect, read)`` bounds each socket operation, not the request: a server
that sends one byte a second never lets a 10 s read timeout expire, in the headers or in the
body, and a read of a 64 KiB chunk waits for all of it, so a clock checked between chunks is
not reached either. The watchdog bounds the request itself. A session built by
:func:`watched_session` makes its connections from subclasses of urllib3's that tell the
session's :class:`Watch` which connection carries the request in flight; when the time is up a
timer thread shuts that connection's socket down (``shutdown(SHUT_RDWR)``), the blocked read or
send returns at once, and the request fails with one of requests' connection errors;
:attr:`Watch.expired` tells the caller that the time limit ended it, not the server.

Through a SOCKS proxy (urllib3's own connection classes) the watchdog cannot see the socket:
there only the per-operation timeouts apply, each at most the time left.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool


class Watch:
    """The time limit of the request in flight on one session. :meth:`armed` starts the
    clock; the session's connections report themselves with :meth:`track`. Thread-safe: the
    timer thread and the requesting thread share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: HTTPConnection | None = None
        self._expired = False

    @property
    def expired(self) -> bool:
        """Whether the time limit of the last :meth:`armed` block was reached."""
        with self._lock:
            return self._expired

    @contextlib.contextmanager
    def armed(self, limit_s: float) -> Iterator[Watch]:
        """Within the block, the request in flight is cut off ``limit_s`` seconds from now.
        Not re-entrant: one request at a time per session (requests' rule for a Session)."""
        with self._lock:
            self._conn, self._expired = None, False
        timer = threading.Timer(max(0.0, limit_s), self._fire)
        timer.daemon = True
        timer.name = "ocr-http-watchdog"
        timer.start()
        try:
            yield self
        finally:
            timer.cancel()
            with self._lock:
                self._conn = None

    def track(self, conn: HTTPConnection) -> None:
        """``conn`` carries the request in flight; when the time is up already (it was reached
        while the connection was still being made), its socket is shut down now."""
        with self._lock:
            self._conn = conn
            if self._expired:
                _shut(conn)

    def _fire(self) -> None:
        with self._lock:
            self._expired = True
            if self._conn is not None:
                _shut(self._conn)


def _shut(conn: HTTPConnection) -> None:
    """Shut ``conn``'s socket down, if it has one: a read or send blocked on it returns."""
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed by the other side: nothing to end
        sock.shutdown(socket.SHUT_RDWR)


def _pool_classes(watch: Watch) -> dict[str, type[HTTPConnectionPool]]:
    """urllib3 pool classes (``PoolManager.pool_classes_by_scheme``) whose connections report
    every request they send to ``watch``: once before sending (the socket may not exist yet)
    and once after (it does; so a limit reached while connecting still ends the request)."""

    def tracked(base: type[HTTPConnection]) -> type[HTTPConnection]:
        class Tracked(base):  # type: ignore[valid-type,misc]  # a base chosen at run time
            def request(self, *args: Any, **kwargs: Any) -> None:
                watch.track(self)
                try:
                    super().request(*args, **kwargs)
                finally:
                    watch.track(self)

        return Tracked

    class Pool(HTTPConnectionPool):
        ConnectionCls = tracked(HTTPConnection)

    class TlsPool(HTTPSConnectionPool):
        ConnectionCls = tracked(HTTPSConnection)

    return {"http": Pool, "https": TlsPool}


class WatchedAdapter(HTTPAdapter):
    """requests' adapter with :func:`_pool_classes` for direct connections and HTTP(S)
    proxies (SOCKS proxies keep urllib3's classes). ``watch`` is its :class:`Watch`."""

    def __init__(self) -> None:
        self.watch = Watch()
        self._pools = _pool_classes(self.watch)
        super().__init__()  # calls init_poolmanager

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pools

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if manager.pool_classes_by_scheme.get("http") is HTTPConnectionPool:  # not SOCKS
            manager.pool_classes_by_scheme = self._pools
        return manager


def watched_session() -> tuple[requests.Session, Watch]:
    """A new ``requests.Session`` whose HTTP and HTTPS requests its :class:`Watch` can cut
    off, and that watch."""
    session = requests.Session()
    adapter = WatchedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session, adapter.watch
