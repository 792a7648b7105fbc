"""Shared by the benchmark scripts: run volbench's CLI and read its database."""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml


def volbench(*args: str, timeout: float = 3600, ok_codes: tuple[int, ...] = (0,),
             python: tuple[str, ...] = ()) -> float:
    """Run the volbench CLI; returns its wall-clock seconds (fails loudly on an exit code
    outside `ok_codes`; 3 means some runs failed, the others were stored). `python` are
    the interpreter's own arguments (`-m cProfile -o FILE`)."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, *python, "-m", "volbench.cli.main", *args],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode not in ok_codes:
        raise SystemExit(f"volbench {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return time.monotonic() - start


def write_experiment(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def metric_values(db: Path, name: str, **tags: str) -> dict[str, list[float]]:
    """Measured OK values of one metric, by target, in run order: one per run. Rows of
    a part of a run (tagged `window`: burst, sustained …) are left out unless a window is
    asked for; counted as runs they made more values than runs."""
    out: dict[str, list[float]] = {}
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT r.target, m.value, m.tags FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE m.name = ? AND r.status = 'ok' AND r.warmup = 0 ORDER BY r.id", (name,))
        for target, value, tag_json in rows:
            found = json.loads(tag_json)
            if "window" in found and "window" not in tags:
                continue
            if all(found.get(k) == v for k, v in tags.items()):
                out.setdefault(target, []).append(float(value))
    return out


def median(values: list[float]) -> float:
    return statistics.median(values)
