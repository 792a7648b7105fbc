"""Headless Chromium driven over the DevTools protocol, with the standard library only.

A test helper: checks that the HTML report renders in a real browser without console
errors (volbench itself makes PNG charts with rsvg-convert, see volbench/svgpng.py).
Chromium (Debian: `apt-get install chromium`) is started through `volbench.system.proc` with a
fresh profile directory and the flags this machine needs as root and offline; every wait
has a deadline, and the browser's whole process group is ended on the way out.

The protocol client is deliberately small: one WebSocket (RFC 6455: client frames
masked, text frames, fragmentation, ping/pong and close handled) and request/response
matching by id; events are kept in order for the caller to inspect.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.system import proc

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


class BrowserError(VolbenchError):
    pass


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _WebSocket:
    def __init__(self, host: str, port: int, path: str, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError("Chromium closed the DevTools connection during the handshake")
            head += chunk
        status, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise BrowserError(f"DevTools handshake refused: {status[:200]!r}")

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytearray([0x81])  # FIN + text frame
        if len(data) < 126:
            header.append(0x80 | len(data))
        elif len(data) < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", len(data))
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", len(data))
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(bytes(header) + mask + masked)

    def _exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise BrowserError("Chromium closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self) -> str:
        parts: list[bytes] = []
        while True:
            first, second = self._exact(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._exact(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._exact(8))[0]
            payload = self._exact(length)  # server frames are not masked
            opcode = first & 0x0F
            if opcode == 0x8:
                raise BrowserError("Chromium closed the DevTools connection")
            if opcode == 0x9:  # ping: answer with a pong carrying the same payload
                self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                continue
            if opcode in (0x1, 0x0):
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        with suppress(OSError):
            self.sock.close()


class Page:
    """One browser tab: send commands, collect events (console messages, exceptions)."""

    def __init__(self, ws: _WebSocket, deadline: float) -> None:
        self.ws = ws
        self.deadline = deadline
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def _receive(self) -> str:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BrowserError("Chromium did not answer in time")
        self.ws.sock.settimeout(left)
        try:
            return self.ws.receive()
        except TimeoutError as exc:
            raise BrowserError("Chromium did not answer in time") from exc

    def wait_event(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        while True:
            message: dict[str, Any] = json.loads(self._receive())
            if message.get("method") == method:
                return message
            if "method" in message:
                self.events.append(message)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event (scripts have run by then)."""
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.call("Runtime.evaluate", expression="0")  # flush events that are in flight
        found = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                found.append(str(p.get("exceptionDetails", {}).get("text", "exception")))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", "")) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                found.append(str(p["entry"].get("text", "")))
        return found

    def screenshot(
        self, path: Path, width: int, height: int, *, top: int = 0, scale: float = 1.0
    ) -> None:
        """PNG of the page region [0, width] × [top, top + height] (CSS pixels × scale)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=scale,
            mobile=False,
        )
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": top, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))


def _devtools_port(profile: Path, server: proc.Background, deadline: float) -> int:
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if marker.exists():
            lines = marker.read_text().splitlines()
            if lines and lines[0].isdigit():
                return int(lines[0])
        if not server.alive():
            tail = " | ".join(server.output().strip().splitlines()[-3:])
            raise BrowserError(f"Chromium exited at start: {tail}")
        time.sleep(0.05)
    raise BrowserError("Chromium did not open its DevTools port in time")


@contextmanager
def page(timeout: float = 60.0, chromium: str | None = None) -> Iterator[Page]:
    """A headless Chromium tab, for `timeout` seconds at most; the browser ends on exit."""
    binary = chromium or find_chromium()
    if binary is None:
        raise BrowserError(
            "Chromium is not installed; install it with "
            "`apt-get install chromium` (Debian) to export PNG charts"
        )
    deadline = time.monotonic() + timeout
    profile = Path(tempfile.mkdtemp(prefix="volbench-chromium-"))
    server = proc.start(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"], log=profile / "chromium.log"
    )
    ws: _WebSocket | None = None
    try:
        port = _devtools_port(profile, server, deadline)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            tabs = [t for t in json.load(r) if t.get("type") == "page"]
        if not tabs:
            raise BrowserError("Chromium opened no tab")
        path = "/" + tabs[0]["webSocketDebuggerUrl"].split("/", 3)[3]
        ws = _WebSocket("127.0.0.1", port, path, timeout=10)
        yield Page(ws, deadline)
    finally:
        if ws is not None:
            # Chromium ignores SIGTERM for a while; asked over the protocol it exits at once.
            with suppress(BrowserError, OSError, subprocess.TimeoutExpired):
                ws.send(json.dumps({"id": 0, "method": "Browser.close"}))
                server.popen.wait(timeout=5)
            ws.close()
        server.stop()
        shutil.rmtree(profile, ignore_errors=True)
