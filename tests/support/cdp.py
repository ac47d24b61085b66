"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
load a page, click an element with real mouse events, read the page's text.

Chromium reads commands from its file descriptor 3 and writes answers and events to 4, each
one JSON object ended by a NUL byte; no port is opened. The browser runs with the quiet flags
and a fresh profile of :mod:`tests.support.browser`, optionally behind a proxy (as there).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import time
from typing import Any

from tests.support.browser import QUIET_FLAGS, chromium


class Browser:
    """One headless Chromium with one page attached (flattened session). Use as a context
    manager; every wait is bounded by ``timeout_s`` (RuntimeError when it runs out)."""

    def __init__(self, proxy_port: int | None = None, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="ocr-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        argv = [chromium(), *QUIET_FLAGS, f"--user-data-dir={self._profile.name}",
                "--remote-debugging-pipe"]
        if proxy_port is not None:  # loopback bypasses the proxy: it catches other hosts
            argv.append(f"--proxy-server=http://127.0.0.1:{proxy_port}")
        argv.append("about:blank")

        def fds() -> None:  # the child's fd 3 and 4, whatever numbers the pipes got here
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(res_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t.get("type") == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not answer in time")
            chunk = os.read(self._res_r, 65536)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)  # type: ignore[no-any-return]

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command (to the page with ``session``) and return its result; events that
        arrive meanwhile are kept in :attr:`events`. Raises RuntimeError for an error answer."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            got = self._read(deadline)
            if got.get("id") == self._next_id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})  # type: ignore[no-any-return]
            self.events.append(got)

    def wait_event(self, method: str) -> dict[str, Any]:
        """The first kept or next event ``method`` (removed from :attr:`events`)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def navigate(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript ``expression`` in the page (DevTools runs it, not the
        page's own scripts, so a page CSP without scripts does not stop it)."""
        got = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True)
        return got["result"].get("value")

    def click(self, selector: str) -> None:
        """Scroll the element of CSS ``selector`` into view and click its centre with the
        mouse (pressed and released, the left button). Raises RuntimeError when none matches."""
        rect = self.evaluate(
            f"(() => {{const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2,"
            " r.y + r.height / 2];})()")
        if rect is None:
            raise RuntimeError(f"no element {selector!r} on the page")
        x, y = rect
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y,
                      button="left", clickCount=1)

    def close(self) -> None:
        """End the browser and remove its profile."""
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._res_r)
        self._profile.cleanup()
