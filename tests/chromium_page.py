"""A page in real headless Chromium, driven over the DevTools protocol (a websocket; the
`websockets` package's sync client): load a file, collect console errors and uncaught exceptions,
evaluate JavaScript, take a screenshot. For the `browser` test tier (tests/report/test_html_browser.py)."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


class Chromium:
    def __init__(self, width: int = 1280, height: int = 900) -> None:
        exe = chromium_path()
        if exe is None:
            raise RuntimeError("chromium is not installed (Debian: apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="pytps-chromium-")
        self.proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",  # CI containers run as root
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=10))
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if msg.get("method") == method:
                return msg
            self.events.append(msg)

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JavaScript failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def console_errors(self) -> list[str]:
        """Console messages at level error or warning, uncaught exceptions and log entries of
        level error, seen so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(
                    f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                )
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('exception', {}).get('description')}")
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def requested_urls(self) -> list[str]:
        """Every URL the page asked for, seen so far."""
        return [
            ev["params"]["request"]["url"] for ev in self.events if ev.get("method") == "Network.requestWillBeSent"
        ]

    def wait_until(self, expression: str, timeout: float = 60) -> float:
        """Polls a JavaScript condition until it holds; returns the seconds waited."""
        t0 = time.monotonic()
        while not self.evaluate(f"!!({expression})"):
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"never true: {expression}")
            time.sleep(0.005)
        return time.monotonic() - t0

    def screenshot(self) -> bytes:
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        return base64.b64decode(r["data"])

    def close(self) -> None:
        try:
            if hasattr(self, "_stack"):
                self._stack.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
