"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only).

Chromium reads commands from fd 3 and writes replies and events to fd 4, each message a JSON
object ended by a NUL byte. That is all a test needs to open a page, watch its console, run a
query and take a screenshot: no websocket library, no Playwright browser download.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Debian's /usr/bin/chromium is a launcher script whose sourced snippets can disturb fds 3/4;
# the real binary next to its resources takes the pipe as it is
DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")


def find_chromium() -> str | None:
    """``$ASSAY_CHROMIUM``, else the first Chromium on PATH (Debian: /usr/bin/chromium)."""
    configured = os.environ.get("ASSAY_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    if DEBIAN_BINARY.exists():
        return str(DEBIAN_BINARY)
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process driven over a pipe; use as a context manager."""

    def __init__(self, executable: str, profile_dir: Path, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        args = [
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--no-pings",
            "--hide-scrollbars",
            "--mute-audio",
            f"--user-data-dir={profile_dir}",
            "--window-size=1280,900",
            "about:blank",
        ]

        def onto_fds_3_and_4() -> None:  # runs in the child, before exec
            high_in = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_out = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [executable, *args],
            pass_fds=(3, 4),
            preexec_fn=onto_fds_3_and_4,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(CDPError, OSError):
            self.send("Browser.close", timeout=5.0)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.process.stderr is not None:
            self.process.stderr.close()

    # ------------------------------------------------------------------ protocol

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CDPError("timed out waiting for chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise CDPError(f"chromium closed the pipe (exit {self.process.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; events that arrive meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, *, timeout: float | None = None) -> dict[str, Any]:
        """The first event named ``method`` (already received or arriving before the timeout)."""
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            event = self._read_message(deadline)
            if "method" in event:
                self.events.append(event)
                if event["method"] == method:
                    return event

    # ------------------------------------------------------------------ page helpers

    def open_page(self, url: str) -> str:
        """Open ``url`` in a new tab with console, log, network and page events on.

        Returns the tab's session.
        """
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
        )
        if "exceptionDetails" in result:
            raise CDPError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, path: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.send("Page.getLayoutMetrics", session=session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": size["width"],
                "height": size["height"],
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params, session=session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error-level log entries seen so far."""
        problems: list[str] = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                problems.append(
                    " ".join(
                        str(a.get("value", a.get("description", "")))
                        for a in params.get("args", [])
                    )
                )
            elif method == "Runtime.exceptionThrown":
                problems.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                problems.append(str(params["entry"].get("text")))
        return problems

    def requested_urls(self) -> list[str]:
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
        ]
