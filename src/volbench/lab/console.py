"""The VM console, read through a named pipe.

virtme-ng hands QEMU `/proc/self/fd/1` and `/proc/self/fd/2` as file chardevs:
QEMU re-opens them, and on a regular file each open gets its own offset (and
O_TRUNC), so the streams overwrite each other ("direct redirection garbles
it", MACHINE-NOTES). Re-opening a pipe is harmless, so vng's output goes into a
FIFO that a thread drains into the console log, and to a callback (live output).
"""

from __future__ import annotations

import codecs
import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path


class Console:
    def __init__(
        self, fifo: Path, log: Path, on_output: Callable[[str], None] | None = None
    ) -> None:
        self.fifo = fifo
        self.log = log
        self.on_output = on_output
        self._chunks: list[str] = []
        self._thread: threading.Thread | None = None
        os.mkfifo(fifo, 0o600)
        # Opened now, non-blocking, so the writer's open() does not wait for a reader.
        self._fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    def start(self) -> None:
        """Start draining; call once the writer has the FIFO open (else it reads EOF at once)."""
        flags = fcntl.fcntl(self._fd, fcntl.F_GETFL)
        fcntl.fcntl(self._fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._drain, name="lab-console", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with open(self.log, "a", encoding="utf-8") as log:
            while True:
                data = os.read(self._fd, 65536)
                if not data:
                    break
                text = decoder.decode(data)
                self._chunks.append(text)
                log.write(text)
                log.flush()
                if self.on_output is not None:
                    self.on_output(text)

    def close(self, timeout: float = 10.0) -> str:
        """Wait for the writers to be gone (EOF), then return everything read."""
        if self._thread is not None:
            self._thread.join(timeout)
        if self._thread is None or not self._thread.is_alive():
            os.close(self._fd)
        return self.text

    @property
    def text(self) -> str:
        return "".join(self._chunks)
