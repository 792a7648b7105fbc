"""A background process started from a worker thread outlives that thread.

The parent-death signal volbench sets on its children (system/proc.py) fires when the
thread that forked the child ends; a stack brought back after a power cut starts its
PostgreSQL from such a thread (faults/powerstack.py), and it was killed with it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from volbench.system import proc


def test_a_server_started_from_a_thread_that_ends_keeps_running(tmp_path: Path) -> None:
    started: list[proc.Background] = []
    worker = threading.Thread(target=lambda: started.append(
        proc.start(["sleep", "30"], log=tmp_path / "sleep.log")))
    worker.start()
    worker.join()
    (server,) = started
    try:
        time.sleep(0.3)  # the parent-death signal, if sent, has arrived
        assert server.poll() is None
    finally:
        server.stop()
