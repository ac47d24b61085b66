"""A real headless Chromium for checking the review page (spec §11.4).

``.ci/run`` installs the system package (``/usr/bin/chromium``) when it is missing and sets
``OCR_TEST_REQUIRE_CHROMIUM=1``: a test that needs the browser (:func:`chromium_or_skip`) skips
with the reason where none is installed, and fails instead under that variable, so CI always
runs it. Every run
gets a fresh profile directory and the flags that keep the browser itself off the network
(no background networking, component updates, sync or first-run tasks), so any request seen
while a page loads came from the page.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# set to 1 by .ci/run: a missing Chromium fails the browser tests instead of skipping them (read
# at import: the test fixtures clear the process environment of the tests' own variables)
REQUIRE_VARIABLE = "OCR_TEST_REQUIRE_CHROMIUM"
REQUIRED = os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0")
QUIET_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
)


def chromium() -> str:
    """Path of the Chromium binary. Raises RuntimeError naming the CI install step if none."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no Chromium found: install the system package (`apt-get install -y "
                       "chromium`, as .ci/run does)")


def chromium_or_skip(required: bool | None = None) -> str:
    """Path of the Chromium binary for a test that needs it. None found: skips the test with the
    reason, or fails it when Chromium is ``required`` (default :data:`REQUIRED`, the CI
    variable)."""
    try:
        return chromium()
    except RuntimeError as exc:
        if REQUIRED if required is None else required:
            pytest.fail(f"{exc} ({REQUIRE_VARIABLE} is set: this run must have the browser)")
        pytest.skip(f"{exc}; set {REQUIRE_VARIABLE}=1 to fail instead")


def run_chromium(page: Path | str, *flags: str, proxy_port: int | None = None,
                 timeout_s: float = 60.0, proxy_loopback: bool = True,
                 ) -> subprocess.CompletedProcess[bytes]:
    """Load ``page`` (a file, or a URL string) in headless Chromium with ``flags`` (e.g.
    ``--dump-dom``). ``proxy_port``: send every http(s) request the page makes to that loopback
    port, loopback included (``<-loopback>`` removes Chromium's implicit bypass) unless
    ``proxy_loopback`` is False (a page served from 127.0.0.1: only other hosts are caught)."""
    with tempfile.TemporaryDirectory(prefix="ocr-chromium-") as profile:
        argv = [chromium(), *QUIET_FLAGS, f"--user-data-dir={profile}", *flags]
        if proxy_port is not None:
            argv.append(f"--proxy-server=http://127.0.0.1:{proxy_port}")
            if proxy_loopback:
                argv.append("--proxy-bypass-list=<-loopback>")
        argv.append(page if isinstance(page, str) else page.resolve().as_uri())
        return subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False)


def dump_dom(page: Path | str, proxy_port: int | None = None,
             proxy_loopback: bool = True) -> str:
    """The DOM of ``page`` (a file or a URL) after it loaded, serialised by Chromium
    (``--dump-dom``); the proxy as :func:`run_chromium`."""
    p = run_chromium(page, "--dump-dom", "--virtual-time-budget=2000", proxy_port=proxy_port,
                     proxy_loopback=proxy_loopback)
    if p.returncode != 0:
        raise RuntimeError(f"chromium failed ({p.returncode}): {p.stderr.decode()[-400:]}")
    return p.stdout.decode("utf-8")


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1800,
               proxy_port: int | None = None) -> None:
    """A PNG of ``page`` at ``width`` x ``height`` CSS pixels."""
    p = run_chromium(page, f"--screenshot={png.resolve()}", f"--window-size={width},{height}",
                     "--hide-scrollbars", "--virtual-time-budget=2000", proxy_port=proxy_port)
    if p.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium screenshot failed ({p.returncode}):"
                           f" {p.stderr.decode()[-400:]}")


class Listener:
    """A loopback TCP listener that records the first line of every request made to it (as a
    proxy it also swallows them: nothing the browser sends goes further than this socket). A
    connection closed or idle for 2 s before sending a byte is no request and is not recorded."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                head = conn.recv(2048).decode("latin-1")
            except OSError:
                head = ""
            if head:  # a connection that sends nothing (Chromium's preconnect) asks for nothing
                self.requests.append(head.split("\r\n", 1)[0])
            conn.close()

    def close(self) -> None:
        self.sock.close()


# Chromium's own service calls (component updater, network time, accounts) still go out in
# headless mode despite the quiet flags; they are not the page's, and the proxy swallows them.
BROWSER_HOSTS = (".google.com", ".googleapis.com", ".gstatic.com", ".gvt1.com")


def page_requests(requests: list[str]) -> list[str]:
    """The requests not made by Chromium for itself (see BROWSER_HOSTS)."""
    out = []
    for line in requests:
        parts = line.split()
        target = parts[1] if len(parts) > 1 else line
        host = target.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        if not host.endswith(BROWSER_HOSTS):
            out.append(line)
    return out
