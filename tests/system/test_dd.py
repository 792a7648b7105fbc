"""dd: the summary parser on coreutils 9.1 and 8.x output, the spec, and real runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from support import DATA, tool
from volbench.core.errors import ExperimentError, ParseError, VolbenchError
from volbench.core.model import RunResult, Status
from volbench.engine.experiment import parse_document
from volbench.engine.importer import IMPORTERS
from volbench.engine.runner import run_experiment
from volbench.stats.windows import window_metrics
from volbench.store.db import Store
from volbench.targets.base import Built
from volbench.workloads import dd
from volbench.workloads.base import RunContext

DD = DATA / "dd"
PARSABLE = sorted(
    p
    for p in DD.glob("*/*.stderr")
    if p.stem not in ("status-none", "status-noxfer", "error-if-missing", "error-of-directory")
)
_UNITS = {"kB": 1e3, "MB": 1e6, "GB": 1e9}


def value(run: RunResult, name: str) -> float:
    v = next(m.value for m in run.metrics if m.name == name)
    assert v is not None
    return v


@pytest.mark.parametrize("path", PARSABLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_rate_is_bytes_over_seconds_and_agrees_with_dd(path: Path) -> None:
    text = path.read_text()
    parsed = dd.parse_text(text, path.name)
    got = {m.name: m for m in parsed.metrics}
    # The last line holding "bytes … copied" is dd's own summary (progress lines come first).
    last = [ln for ln in re.split(r"[\r\n]", text) if "copied" in ln][-1]
    nbytes, seconds, rate, unit = re.search(  # type: ignore[union-attr]
        r"^(\d+) bytes.* copied, ([\d.e-]+) s, ([\d.]+) (\w+)/s", last
    ).groups()
    assert got["bytes"].value == int(nbytes) and set(got) == {"bw", "bytes"}
    if int(nbytes):
        assert got["bw"].value == pytest.approx(int(nbytes) / float(seconds))
        # dd rounds its rate to 2-3 digits in decimal units.
        assert got["bw"].value == pytest.approx(float(rate) * _UNITS[unit], rel=0.05)
    else:
        assert got["bw"].value == 0


def test_progress_updates_are_not_the_summary_but_the_series() -> None:
    parsed = dd.parse_text((DD / "coreutils-9.1/status-progress.stderr").read_text())
    assert next(m.value for m in parsed.metrics if m.name == "bytes") == 400000 * 512
    (series,) = parsed.series
    assert series.name == "bw" and series.unit == "B/s" and len(series.points) == 31
    assert series.points[0] == (1.0, 6819840.0)
    assert series.points[1] == (2.0, 13239808.0 - 6819840.0)
    assert all(4.9e6 < v < 7.7e6 for _, v in series.points)
    assert window_metrics(series=parsed.series) == []  # a loop disk's steady 6.6 MB/s


def test_a_summary_without_progress_has_no_series() -> None:
    parsed = dd.parse_text((DD / "coreutils-9.1/write-256m-direct.stderr").read_text())
    assert parsed.series == ()


def test_partial_records_are_noted() -> None:
    bw = dd.parse_text((DD / "coreutils-9.1/partial-record.stderr").read_text()).metrics[0]
    assert bw.name == "bw" and "partial records" in bw.note
    full = dd.parse_text((DD / "coreutils-9.1/write-256m-direct.stderr").read_text()).metrics[0]
    assert full.note == ""


@pytest.mark.parametrize(
    "case", ["status-none", "status-noxfer", "error-if-missing", "error-of-directory"]
)
def test_outputs_without_summary_are_errors(case: str) -> None:
    with pytest.raises(ParseError, match="no 'N bytes"):
        dd.parse_text((DD / f"coreutils-9.1/{case}.stderr").read_text(), case)


def test_import_reads_parameters_and_refuses_several_runs() -> None:
    old = IMPORTERS["dd"](
        (DD / "coreutils-8.x/seed004-write-thin-pool-1000m-direct.stderr").read_text(), "seed004"
    )
    assert old.params == {"count": 1000, "bs": "1M"}
    assert next(m.value for m in old.parsed.metrics if m.name == "bw") == pytest.approx(
        1048576000 / 15.9126
    )
    flattened = (DD / "coreutils-8.x/seed004-ten-runs.flattened.txt").read_text()
    with pytest.raises(ParseError, match="holds 10 dd runs"):
        IMPORTERS["dd"](flattened, "flattened")
    first = flattened.splitlines()[0]
    assert dd.params_of(first) == {"op": "write", "bs": "1M", "count": 1000, "direct": True}
    assert dd.params_of(flattened.splitlines()[1])["op"] == "read"


# -- spec and command lines ----------------------------------------------------------------


def spec_of(**fields: Any) -> dd.DdSpec:
    doc = {
        "targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
        "workloads": [{"name": "w", "tool": "dd", **fields}],
    }
    spec = parse_document(doc).workloads[0]
    assert isinstance(spec, dd.DdSpec)
    return spec


def test_cases_and_command_lines(tmp_path: Path) -> None:
    spec = spec_of(file=["reuse", "fresh"])
    cases = dd.cases(spec)
    assert cases == [
        {"op": "write", "bs": "1M", "count": 256, "direct": True, "file": "reuse"},
        {"op": "write", "bs": "1M", "count": 256, "direct": True, "file": "fresh"},
        {"op": "read", "bs": "1M", "count": 256, "direct": True},
    ]
    ctx = RunContext(Built("t", "loopdisk", tmp_path, "/dev/loop9"), tmp_path)
    rewrite, fresh, read = (dd.command(spec, c, ctx).argv for c in cases)
    assert "conv=notrunc" in rewrite and "oflag=direct" in rewrite
    assert f"of={tmp_path}/volbench-dd-256M.dat" in rewrite
    assert not any(a.startswith("conv=") for a in fresh) and "fresh" in " ".join(fresh)
    assert "iflag=direct" in read and f"if={tmp_path}/volbench-dd-256M.dat" in read
    assert rewrite[-1] == fresh[-1] == read[-1] == "status=progress"  # the per-second series
    assert (
        dd.setup_key(spec, cases[0]) == dd.setup_key(spec, cases[2]) != dd.setup_key(spec, cases[1])
    )
    assert dd.after(spec, cases[1], ctx)[0].argv[:2] == ("rm", "-f")
    assert dd.after(spec, cases[0], ctx) == []
    buffered = dd.command(spec_of(direct=False), {**cases[0], "direct": False}, ctx).argv
    assert "conv=notrunc,fdatasync" in buffered and "oflag=direct" not in buffered


def test_spec_problems() -> None:
    with pytest.raises(ExperimentError, match="fresh files only apply to writes"):
        spec_of(op="read", file="fresh")
    with pytest.raises(ExperimentError, match="512-byte sectors"):
        spec_of(bs="1000")
    with pytest.raises(ExperimentError, match="not one of: write, read"):
        spec_of(op="randwrite")


def test_raw_device_limits(tmp_path: Path) -> None:
    spec = spec_of(count=10**6)
    raw = RunContext(Built("raw", "loopdisk", None, "/dev/loop0", device_bytes=64 * 2**20),
                     tmp_path)
    (write, _read) = dd.cases(spec)
    with pytest.raises(VolbenchError, match="past the end of /dev/loop0"):
        dd.command(spec, write, raw)  # 1 TiB: larger than any loop device here
    with pytest.raises(VolbenchError, match="fresh needs a filesystem"):
        dd.command(spec, {**write, "file": "fresh"}, raw)
    assert dd.setup(spec, {**write, "file": "fresh"}, raw) == []


# -- real runs ------------------------------------------------------------------------------


@pytest.mark.root
def test_a_raw_target_knows_its_size_and_dd_stops_at_its_end(workdir: Path, tmp_path: Path
                                                             ) -> None:
    tool("dd")
    doc = {
        "name": "dd-end", "workdir": str(workdir), "repeat": 1,
        "targets": [{"name": "raw", "type": "loopdisk", "size": "64M", "fs": "none"}],
        "workloads": [{"name": "w", "tool": "dd", "op": "write", "count": 65}],  # 65 MiB
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "e.db")
    with Store(tmp_path / "e.db") as store:
        (run,) = store.runs([outcome.experiment_id])
    assert run.status is Status.FAILED
    assert "dd would go past the end of /dev/loop" in run.error and "(65M > 64M)" in run.error


@pytest.mark.root
def test_real_runs_on_files_and_raw_devices(workdir: Path, tmp_path: Path) -> None:
    tool("dd")
    doc = {
        "name": "dd",
        "workdir": str(workdir),
        "repeat": 2,
        "targets": [
            {"name": "xfs", "type": "loopdisk", "size": "320M", "fs": "xfs"},
            {"name": "raw", "type": "loopdisk", "size": "128M", "fs": "none"},
        ],
        "workloads": [{"name": "w", "tool": "dd", "count": 64, "file": ["reuse", "fresh"]}],
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "d.db")
    with Store(tmp_path / "d.db") as store:
        runs = store.runs([outcome.experiment_id], outputs=True)
    mib64 = 64 * 1024**2
    for run in runs:
        case = (run.target, run.params["op"], run.params.get("file"))
        if case == ("raw", "write", "fresh"):
            assert run.status is Status.FAILED and "fresh needs a filesystem" in run.error
            continue
        assert run.status is Status.OK, (case, run.error)
        assert value(run, "bytes") == mib64
        # Needs no reference: a floor for a real number, far below any speed seen.
        within("dd: unthrottled B/s (floor)", value(run, "bw"), low=1e6)
        io = run.annotations["device_io"]
        # Direct I/O: the device moved every byte (no page cache in between).
        assert io["write_bytes" if run.params["op"] == "write" else "read_bytes"] >= mib64
        assert "after" not in run.annotations
        if run.target == "raw":
            assert any(
                a.startswith("of=/dev/loop") or a.startswith("if=/dev/loop") for a in run.argv
            )
    assert len(runs) == 12


@pytest.mark.root
def test_throttled_target_is_slower(ramdir: Path, tmp_path: Path) -> None:
    """dd's 64 MiB in 1 MiB direct blocks, reads and writes, on two loop disks with their
    images in RAM (the ramdir fixture): the shared host disk's stalls are no part of it.

    Physical: the throttled copy takes 2 s at 32 MiB/s; the throttle's first slice lets
    at most +5 % more through, and a dd at depth 1 loses what the machine takes away from
    it (CPU, steal): 0.5 s of 2 s would still be inside -25 %. The RAM-backed twin copies
    at hundreds of MiB/s or more: > 3 × the cap.
    """
    tool("dd")
    cap = 32 * 1024**2
    doc = {
        "name": "dd-throttle",
        "workdir": str(ramdir),
        "repeat": 1,
        "targets": [
            {"name": "fast", "type": "loopdisk", "size": "320M"},
            {
                "name": "slow",
                "type": "loopdisk",
                "size": "320M",
                "limits": {"write_bps": cap, "read_bps": cap},
            },
        ],
        "workloads": [{"name": "w", "tool": "dd", "count": 64}],
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "t.db")
    with Store(tmp_path / "t.db") as store:
        runs = {(r.target, r.params["op"]): r for r in store.runs([outcome.experiment_id])}
    assert all(r.status is Status.OK for r in runs.values())
    for op in ("write", "read"):
        slow, fast = value(runs["slow", op], "bw"), value(runs["fast", op], "bw")
        within(f"dd {op}: capped B/s / cap", slow / cap, 0.75, 1.25,
               reference="physical: the throttle")
        within(f"dd {op}: fast / capped B/s", fast / slow, low=3,
               reference="physical: a RAM-backed loop disk")
