"""Run volbench's CLI with the runner's untimed steps timed: `python bench/spans.py OUT
-m volbench.cli.main ARGS...` is `volbench ARGS...` (the form bench/common.py's `volbench`
calls), and OUT gets one JSON line per step (what, start, end).

For bench/overhead.py: the time outside the measured runs is not all volbench's own.
Three parts of it are the method's: building each target (mkfs, mount, throttle),
laying out fio's data file before a target's first run (a fio process writing it), and
tearing the targets down (unmount, detach, remove the image). Timed from inside, by
wrapping those methods with wall-clock stamps (no profiler: cProfile slows the Python
between them, which is what the bench measures). Bench-only: the product never loads it.
"""

from __future__ import annotations

import functools
import json
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any

from volbench.engine import runner


def _timed(what: str, fn: Callable[..., Any], out: list[dict[str, Any]]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            out.append({"what": what, "start": start, "end": time.time()})
    return wrapper


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    module = "volbench.cli.main"
    if args[:1] == ["-m"]:
        module, args = args[1], args[2:]
    spans: list[dict[str, Any]] = []
    session = runner.Session
    # A setup key is laid out once (fio's data file); later calls return the stored
    # error at once and are spans of ~0 s.
    session.build_group = _timed("build", session.build_group, spans)  # type: ignore[method-assign]
    session.ensure_setup = _timed("layout", session.ensure_setup, spans)  # type: ignore[method-assign]
    session.run_group = _timed("group", session.run_group, spans)  # type: ignore[method-assign]
    session._run_all = _timed("runs", session._run_all, spans)  # type: ignore[method-assign]
    sys.argv = ["volbench", *args]
    try:
        runpy.run_module(module, run_name="__main__")
    finally:
        with open(path, "w", encoding="utf-8") as f:
            for span in spans:
                f.write(json.dumps(span) + "\n")


if __name__ == "__main__":
    main()
