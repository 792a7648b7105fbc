"""What the guest's `volbench run` tells the host while it runs: its progress, as JSON
lines in a file of the shared outdir (the guest writes it through cli/progress.py's
EventProgress; the host follows it here and draws each event on its own terminal).

A file, not the console: the console is the guest's text (kernel messages, tools'
output, volbench's report), and the host's terminal is not the guest's (its width, whether
it is one at all), so the host draws the progress itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# The file in OUTDIR/.lab the guest writes its progress to.
PROGRESS = "progress"


def follow(path: Path, handle: Callable[[dict[str, Any]], None], stop: threading.Event,
           every: float = 0.25) -> None:
    """Hand each JSON line appended to `path` to `handle` until `stop` is set (then read
    what is left once more). A line still being written waits for its newline."""
    offset = 0
    while True:
        stopping = stop.is_set()
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            data = b""
        complete = data[: data.rfind(b"\n") + 1]
        offset += len(complete)
        for line in complete.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                handle(event)
        if stopping:
            return
        stop.wait(every)


@contextmanager
def following(path: Path, handle: Callable[[dict[str, Any]], None] | None) -> Iterator[None]:
    """Follow `path` in a thread while the block runs (nothing when `handle` is None)."""
    if handle is None:
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(path, handle, stop), name="lab-progress",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
