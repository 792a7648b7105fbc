"""The `sync:` axis of write workloads (core/syncmode.py): read and checked with the field
named, mapped to fio's, dd's and bonnie++'s options, contradicting options refused, and a
commit-bound case's headline (core/headline.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from volbench.core import syncmode
from volbench.core.errors import ExperimentError
from volbench.core.headline import headline
from volbench.engine.experiment import parse_document
from volbench.targets.base import Built
from volbench.workloads import KINDS
from volbench.workloads.base import RunContext


def spec_of(tmp_path: Path, tool: str = "fio", **workload: Any) -> Any:
    exp = parse_document({"name": "s", "workdir": str(tmp_path / "w"),
                          "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
                          "workloads": [{"name": "c", "tool": tool, **workload}]})
    return exp.workloads[0]


def cases(tmp_path: Path, tool: str = "fio", **workload: Any) -> list[dict[str, Any]]:
    return KINDS[tool].cases(spec_of(tmp_path, tool, **workload))


def argv(tmp_path: Path, tool: str = "fio", **workload: Any) -> list[list[str]]:
    spec = spec_of(tmp_path, tool, **workload)
    ctx = RunContext(Built("d", "directory", path=tmp_path), tmp_path / "run")
    return [list(KINDS[tool].command(spec, c, ctx).argv) for c in KINDS[tool].cases(spec)]


def refused(tmp_path: Path, tool: str = "fio", **workload: Any) -> str:
    with pytest.raises(ExperimentError) as err:
        spec_of(tmp_path, tool, **workload)
    return str(err.value)


@pytest.mark.parametrize(("value", "text"), [
    ("none", "none"), ("dsync", "dsync"), ("sync", "sync"), ({"fdatasync": 1}, "fdatasync:1"),
    ({"fsync": 32}, "fsync:32"), ("fdatasync:8", "fdatasync:8"), ("fsync", "fsync:1")])
def test_every_form_of_a_mode_reads_as_one_word(value: Any, text: str) -> None:
    assert syncmode.convert(value) == text
    assert syncmode.convert(syncmode.convert(value)) == text


@pytest.mark.parametrize(("value", "said"), [
    ({"fdatasync": 0}, "every 1 … 1000000 writes, got 0"),
    ({"fsync": "x"}, "whole number of writes"),
    ({"fsync": 1, "fdatasync": 1}, "a mapping of 2 keys"),
    ({"dsync": 1}, "'dsync' is not fsync or fdatasync"),
    ("fdatasnc", "expected one of none, dsync, sync"),
    (True, "expected one of"), ("dsync:2", "expected one of")])
def test_a_bad_mode_is_refused_with_the_field_named(tmp_path: Path, value: Any,
                                                     said: str) -> None:
    text = refused(tmp_path, rw="randwrite", sync=value)
    assert "workloads[0].sync:" in text and said in text


SCHEMA_PROBES: tuple[Any, ...] = (
    "none", "dsync", "sync", "fsync", "fdatasync:1", "fsync: 32", {"fdatasync": 1},
    {"fsync": "32"}, True, False, 0, 1, {"fsync": 1}, "fsync:1", "bogus", "fsync:0",
    "fdatasync:x", {"fsync": 0}, {"fsync": 1_000_001}, {"fsync": 1, "fdatasync": 1},
    {"write": 1}, {}, 2.5, None, {"fsync": 2}, "fsync:2", "fsync:1000000", "fsync:1000001",
    "fsync:0999999")


@pytest.mark.parametrize("tool", ["fio", "dd", "bonnie++"])
def test_the_schema_takes_the_modes_the_tool_takes(tool: str) -> None:
    """`volbench schema` states the axis's values (config/spec.py SyncAxis.one): each probe
    the converter takes, the schema takes, and each it refuses, the schema refuses."""
    field = next(f for f in KINDS[tool].fields if f.name == syncmode.PARAM)
    one = jsonschema.Draft7Validator(field.one())
    for value in SCHEMA_PROBES:
        try:
            field.convert(value)
            taken = True
        except (ValueError, TypeError):
            taken = False
        assert one.is_valid(value) == taken, (tool, value)


def test_fio_options_of_each_mode(tmp_path: Path) -> None:
    found = argv(tmp_path, rw="randwrite", sync=["none", "dsync", "sync", {"fdatasync": 1},
                                                 {"fsync": 4}])
    syncs = [[a for a in args if a.split("=")[0] in ("--fsync", "--fdatasync", "--sync")]
             for args in found]
    assert syncs == [[], ["--sync=dsync"], ["--sync=sync"], ["--fdatasync=1"], ["--fsync=4"]]
    engines = [[a for a in args if a.startswith("--ioengine=")] for args in found]
    # no ioengine named: libaio as always without a mode, psync (a database's) with one
    assert engines == [["--ioengine=libaio"]] + [["--ioengine=psync"]] * 4


def test_none_is_no_parameter_and_reads_lose_the_mode(tmp_path: Path) -> None:
    found = cases(tmp_path, rw=["randread", "randwrite"], sync=["none", {"fdatasync": 1}])
    assert [(c["rw"], c.get("sync")) for c in found] == [
        ("randread", None), ("randwrite", None), ("randwrite", "fdatasync:1")]
    assert next(c for c in found if c["rw"] == "randread")["ioengine"] == "libaio"


def test_raw_sync_options_are_the_same_case_as_the_axis(tmp_path: Path) -> None:
    axis = cases(tmp_path, rw="randwrite", sync={"fdatasync": 1})
    raw = cases(tmp_path, rw="randwrite", options={"fdatasync": 1})
    assert axis == raw and axis[0]["sync"] == "fdatasync:1"
    assert spec_of(tmp_path, rw="randwrite", options={"fdatasync": 1, "iodepth_batch": 1}
                   ).options == {"iodepth_batch": "1"}
    assert cases(tmp_path, rw="randwrite", options={"sync": "0"})[0].get("sync") is None
    assert cases(tmp_path, rw="randwrite", options={"sync": "dsync"})[0]["sync"] == "dsync"


@pytest.mark.parametrize("option", ["sync", "fsync", "fdatasync", "sync_file_range",
                                    "write_barrier"])
def test_options_that_contradict_the_axis_are_refused(tmp_path: Path, option: str) -> None:
    text = refused(tmp_path, rw="randwrite", sync="dsync", options={option: "0"})
    assert f"workloads[0].options.{option}: contradicts sync: (dsync)" in text
    assert f"remove {option} from options" in text


def test_two_raw_modes_are_refused(tmp_path: Path) -> None:
    text = refused(tmp_path, rw="randwrite", options={"fsync": "1", "fdatasync": "1"})
    assert "workloads[0].options: give one sync mode, not several" in text


def test_an_engine_fio_does_not_time_syncs_with_is_refused(tmp_path: Path) -> None:
    text = refused(tmp_path, rw="randwrite", ioengine="libaio", sync={"fdatasync": 1})
    assert "workloads[0].ioengine: fio does not time the sync calls of libaio" in text
    assert cases(tmp_path, rw="randwrite", ioengine="io_uring", iodepth=8,
                 sync={"fdatasync": 1})[0]["ioengine"] == "io_uring"
    # O_DSYNC writes are timed as writes: any engine
    assert cases(tmp_path, rw="randwrite", ioengine="libaio", sync="dsync")[0]["sync"] == "dsync"


def test_a_deep_queue_with_the_default_sync_engine_is_refused(tmp_path: Path) -> None:
    text = refused(tmp_path, rw="randwrite", iodepth=[1, 32], sync={"fdatasync": 1})
    assert "workloads[0].iodepth: 32 with sync: the engine of a sync mode, psync" in text


def test_a_mode_without_writes_is_refused(tmp_path: Path) -> None:
    text = refused(tmp_path, rw="randread", sync={"fdatasync": 1})
    assert "workloads[0].sync: applies to writes, and rw has none" in text
    text = refused(tmp_path, jobfile=__file__, sync="dsync")
    assert "workloads[0].sync: applies to volbench's own job (rw, bs, iodepth …), not to a " \
        "job file" in text


def test_dd_modes(tmp_path: Path) -> None:
    found = argv(tmp_path, "dd", op=["write", "read"], count=8,
                 sync=["none", "dsync", {"fdatasync": 8}])
    flags = [[a for a in args if a.startswith(("oflag=", "conv=", "iflag="))] for args in found]
    assert flags == [["oflag=direct", "conv=notrunc"], ["oflag=direct,dsync", "conv=notrunc"],
                     ["oflag=direct", "conv=notrunc,fdatasync"], ["iflag=direct"]]
    text = refused(tmp_path, "dd", count=256, sync={"fdatasync": 1})
    assert "workloads[0].sync: fdatasync:1: dd makes one fdatasync call, after its last" in text
    assert "give {fdatasync: 256}" in text
    assert "applies to writes, and op has none" in refused(tmp_path, "dd", op="read",
                                                           sync="dsync")


def test_dd_layout_does_not_sync(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "dd", op="write", count=8, sync="dsync")
    (case,) = KINDS["dd"].cases(spec)
    ctx = RunContext(Built("d", "directory", path=tmp_path), tmp_path / "run")
    (layout,) = KINDS["dd"].setup(spec, case, ctx)
    assert "oflag=direct" in layout.argv and "dsync" not in " ".join(layout.argv)


def test_bonnie_takes_an_fsync_after_every_write_and_nothing_else(tmp_path: Path) -> None:
    for value, flagged in ((True, True), ({"fsync": 1}, True), ("none", False), (False, False)):
        (args,) = argv(tmp_path, "bonnie++", sync=value)
        assert ("-b" in args) is flagged, value
    text = refused(tmp_path, "bonnie++", sync={"fdatasync": 1})
    assert "workloads[0].sync: fdatasync:1: bonnie++ can only fsync after every write" in text


def test_a_commit_bound_case_is_judged_on_what_a_committer_waits_for() -> None:
    fdatasync = {"rw": "randwrite", "sync": "fdatasync:1"}
    for name in ("commit_lat_mean", "commit_lat_p99", "iops"):
        assert headline(name, {"op": "sync"}, fdatasync)
    for name in ("lat_mean", "lat_p99"):  # the sync call alone
        assert not headline(name, {"op": "sync"}, fdatasync)
    assert not headline("iops", {"op": "write"}, fdatasync)  # shown beside, not judged
    assert not headline("bw", {"op": "write"}, {"rw": "write", "sync": "fsync:32"})
    dsync = {"rw": "randwrite", "sync": "dsync"}
    assert headline("clat_p99", {"op": "write"}, dsync)
    assert headline("lat_mean", {"op": "write"}, dsync) and headline("iops", {"op": "write"}, dsync)
    assert not headline("clat_p99", {"op": "write"}, {"rw": "randwrite"})
    assert headline("iops", {"op": "write"}, {"rw": "randwrite"})  # no mode: as before
    assert headline("bw", {}, {"op": "write", "sync": "dsync"})  # dd: its bandwidth


def test_the_plan_says_each_mode_and_what_it_is_judged_on(tmp_path: Path) -> None:
    from volbench.engine.plan import make_plan, sync_lines
    exp = parse_document({"name": "s", "workdir": str(tmp_path / "w"),
                          "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
                          "workloads": [{"name": "c", "tool": "fio", "rw": "randwrite",
                                         "sync": ["none", "dsync", {"fdatasync": 1}]}]})
    assert sync_lines(make_plan(exp, seed=1)) == [
        "sync c sync=dsync: O_DSYNC writes, judged on write latency (p99, mean) and IOPS: "
        "each write a commit",
        "sync c sync=fdatasync:1: fdatasync after every write, judged on commit latency "
        "(writes + sync: p99, mean) and syncs/s; the sync call's own latency and write IOPS "
        "beside"]
    # the plan names what the report judges (core/headline.py), not the sync call alone
    fdatasync = {"rw": "randwrite", "sync": "fdatasync:1"}
    assert headline("commit_lat_p99", {"op": "sync"}, fdatasync)
    assert not headline("lat_p99", {"op": "sync"}, fdatasync)


def test_each_host_of_a_multi_host_run_gets_the_mode_in_its_job_file(tmp_path: Path) -> None:
    import json

    from volbench.workloads import fioclient
    spec = spec_of(tmp_path, rw="randwrite", sync={"fdatasync": 1})
    (case,) = KINDS["fio"].cases(spec)
    hosts = [{"host": h, "address": f"10.0.0.{i}", "port": 8765, "path": str(tmp_path),
              "server": f"ip:10.0.0.{i},8765"}
             for i, h in enumerate(("a", "b"), 1)]
    ctx = RunContext(Built("d", "directory", path=tmp_path), tmp_path / "run",
                     {fioclient.CLIENTS: json.dumps(hosts)})
    inv = KINDS["fio"].command(spec, case, ctx)
    jobs = [text for path, text in inv.files.items() if path.suffix == ".fio"]
    assert len(jobs) == 2 and all("fdatasync=1\n" in j and "ioengine=psync\n" in j
                                  for j in jobs)
