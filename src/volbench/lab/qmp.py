"""A minimal QMP client: QEMU's JSON control socket (one command at a time).

The lab VM is started with `-qmp unix:SOCKET,server=on,wait=off` (vm.py); the host's
fault bridge (faultbridge.py) uses it to change a lab disk's throttle while the guest
runs. The protocol: QEMU greets, the client sends `qmp_capabilities`, then each
`{"execute": …}` gets one `{"return": …}` or `{"error": …}` line; asynchronous
`{"event": …}` lines may come in between and are skipped.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from volbench.lab.errors import LabError

TIMEOUT = 10.0


class Qmp:
    """One connection to a QEMU's QMP socket, ready for commands."""

    def __init__(self, path: Path, timeout: float = TIMEOUT) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError as exc:
            self.sock.close()
            raise LabError(f"cannot reach the lab VM's QMP socket {path}: {exc}") from None
        self.reader = self.sock.makefile("r", encoding="utf-8")
        self._line()  # the greeting
        self.execute("qmp_capabilities")

    def _line(self) -> dict[str, Any]:
        try:
            text = self.reader.readline()
        except OSError as exc:
            raise LabError(f"the lab VM's QMP socket failed: {exc}") from None
        if not text:
            raise LabError("the lab VM closed its QMP socket (has QEMU stopped?)")
        return dict(json.loads(text))

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any:
        """Run one command; its `return` value, or LabError with QEMU's error text."""
        message: dict[str, Any] = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        while True:
            reply = self._line()
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                error = reply["error"]
                raise LabError(f"QEMU refused {command}: {error.get('desc', error)}")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Qmp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
