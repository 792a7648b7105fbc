"""bonnie++: the CSV parser on every captured version, the spec, and real runs on loop disks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bounds import within
from support import DATA, tool
from volbench.core.errors import ExperimentError, ParseError
from volbench.core.model import Metric, Status
from volbench.engine.experiment import parse_document
from volbench.engine.importer import IMPORTERS
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.targets.base import Built
from volbench.workloads import bonnie
from volbench.workloads.base import HostFacts, RunContext

BONNIE = DATA / "bonnie++"
CSV_FILES = [
    *sorted(BONNIE.glob("2.00a/csv-*.stdout")),
    BONNIE / "2.00a/table-s64m-n4.stdout",
    BONNIE / "1.96/pkb-bonnie-plus-plus-sample.csv",
]
GIB = 1024**3


def metric(metrics: tuple[Metric, ...], name: str, test: str) -> Metric:
    found = [m for m in metrics if m.name == name and m.tags["test"] == test]
    assert len(found) == 1, f"{name}/{test}: {found}"
    return found[0]


def csv_row(path: Path) -> list[str]:
    return next(
        line for line in path.read_text().splitlines() if line.startswith(("1.96,", "1.98,"))
    ).split(",")


@pytest.mark.parametrize("path", CSV_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_capture_maps_fields_by_layout(path: Path) -> None:
    parsed = bonnie.parse_csv(path.read_text(), str(path))
    fields = csv_row(path)
    layout = bonnie.LAYOUTS[len(fields)]
    row = dict(zip(layout, fields, strict=True))
    for column, name, factor in bonnie.IO_TESTS + bonnie.FILE_TESTS:
        text = row[column]
        found = [
            m
            for m in parsed.metrics
            if m.name == name and m.tags["test"] == column and m.tags.get("row", "1") == "1"
        ]
        if not text:
            assert not found, f"skipped test {column} must give no metric"
            continue
        (m,) = found
        if set(text) == {"+"}:
            assert m.value is None and "too fast" in m.note
        else:
            assert m.value == pytest.approx(float(text) * factor)
        assert m.tags["cpu_bound"] == ("yes" if column in bonnie.CPU_BOUND else "no")


def test_plus_signs_never_become_numbers() -> None:
    for path in CSV_FILES:
        for m in bonnie.parse_csv(path.read_text(), str(path)).metrics:
            assert (m.value is None) == ("too fast" in m.note), (path.name, m)


def test_198_layout_skips_seek_count_and_matches_the_human_table() -> None:
    # The 2.00a CSV has "8192,5" (seeks, seekers) after the chunk size. A header-based
    # mapping would read 8192 as putc; the table on stderr shows put_block 74.9m instead.
    path = BONNIE / "2.00a/csv-direct-fast-sync-s256m-n16.stdout"
    parsed = bonnie.parse_csv(path.read_text(), str(path))
    assert not [m for m in parsed.metrics if m.tags["test"] == "putc"]
    table = (path.with_suffix(".stderr")).read_text()
    mib_s = float(re.search(r"256M\s+([\d.]+)m", table).group(1))  # type: ignore[union-attr]
    assert metric(parsed.metrics, "bw", "put_block").value == pytest.approx(
        mib_s * 2**20, rel=0.001
    )
    latency = re.search(r"Latency\s+(\d+)us", table).group(1)  # type: ignore[union-attr]
    assert metric(parsed.metrics, "latency_max", "put_block").value == pytest.approx(
        int(latency) * 1e-6
    )
    files = metric(parsed.metrics, "ops", "seq_create")
    assert files.value is not None and files.unit == "op/s"


def test_196_layout_with_ms_and_us_latencies() -> None:
    path = BONNIE / "1.96/pkb-bonnie-plus-plus-sample.csv"
    parsed = bonnie.parse_csv(path.read_text(), str(path))
    row = dict(zip(bonnie.LAYOUTS[48], csv_row(path), strict=True))
    assert row["put_block_latency"].endswith("ms") and row["get_block_latency"].endswith("us")
    assert metric(parsed.metrics, "latency_max", "put_block").value == pytest.approx(
        float(row["put_block_latency"][:-2]) / 1000
    )
    assert metric(parsed.metrics, "latency_max", "get_block").value == pytest.approx(
        float(row["get_block_latency"][:-2]) / 1e6
    )
    assert metric(parsed.metrics, "ops", "seeks").value == pytest.approx(float(row["seeks"]))
    assert metric(parsed.metrics, "cpu", "seq_stat").value is None


def test_header_line_is_skipped_and_repeated_rows_are_tagged() -> None:
    path = BONNIE / "2.00a/csv-files-only-x2.stdout"
    parsed = bonnie.parse_csv(path.read_text(), str(path))
    assert {m.tags["row"] for m in parsed.metrics} == {"1", "2"}
    assert not [m for m in parsed.metrics if m.name == "bw"]  # -s 0: no I/O tests
    lat = [
        m.value for m in parsed.metrics if m.name == "latency_max" and m.tags["test"] == "ran_del"
    ]
    assert len(lat) == 2 and lat[0] != lat[1]


def test_cache_note_below_twice_ram_unless_direct() -> None:
    path = BONNIE / "2.00a/csv-s256m-n4.stdout"
    text = path.read_text()
    noted = bonnie.parse_csv(text, ram_bytes=24 * GIB)
    assert "cache-influenced" in metric(noted.metrics, "bw", "putc").note
    assert "cache-influenced" not in metric(noted.metrics, "ops", "seq_create").note
    big_file = bonnie.parse_csv(text, ram_bytes=64 * 1024**2)
    assert metric(big_file.metrics, "bw", "putc").note == ""
    direct = bonnie.parse_csv(text, ram_bytes=24 * GIB, direct=True)
    assert metric(direct.metrics, "bw", "putc").note == ""


def test_unknown_layouts_and_missing_csv_are_errors() -> None:
    fields = csv_row(BONNIE / "2.00a/csv-s256m-n4.stdout")
    with pytest.raises(ParseError, match=r"1\.98 with 48 fields"):
        bonnie.parse_csv(",".join(fields[:48]))
    for path in (
        BONNIE / "2.00a/error-direct-with-per-char.stdout",
        BONNIE / "1.03a/seed003-table-local-edited-by-author.txt",
    ):
        with pytest.raises(ParseError, match="no CSV result line"):
            bonnie.parse_csv(path.read_text(), str(path))


def test_import_reads_parameters_from_the_csv() -> None:
    imp = IMPORTERS["bonnie++"](
        (BONNIE / "1.96/pkb-bonnie-plus-plus-sample.csv").read_text(), "pkb"
    )
    assert imp.params == {"size": "7423M", "per_char": False, "files": 100}
    imp = IMPORTERS["bonnie++"]((BONNIE / "2.00a/csv-s64m-n1.stdout").read_text(), "s64")
    assert imp.params == {"size": "64M", "per_char": True, "files": 1}
    assert all(not m.note or "too fast" in m.note for m in imp.parsed.metrics)


# -- the spec and the command line ---------------------------------------------------------


def spec_of(**fields: Any) -> bonnie.BonnieSpec:
    doc = {
        "targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
        "workloads": [{"name": "b", "tool": "bonnie++", **fields}],
    }
    spec = parse_document(doc).workloads[0]
    assert isinstance(spec, bonnie.BonnieSpec)
    return spec


def test_defaults_are_a_quick_run_as_root(tmp_path: Path) -> None:
    spec = spec_of()
    (case,) = bonnie.cases(spec)
    root = HostFacts(euid=0)
    ctx = RunContext(Built("t", "loopdisk", tmp_path, "/dev/loop9"), tmp_path / "run", host=root)
    argv = bonnie.command(spec, case, ctx).argv
    text = " ".join(argv)
    assert "-s 512 " in text and "-r 256" in text and "-n 16 " in text and "-q" in argv
    assert "-f" in argv and "-D" not in argv and "-b" not in argv  # per-char off by default
    synced = bonnie.command(
        spec_of(sync=True, direct=True), {**case, "sync": True, "direct": True}, ctx
    ).argv
    assert "-b" in synced and "-D" in synced
    assert argv[argv.index("-d") + 1] == str(tmp_path / "volbench-b")
    assert argv[-2:] == ("-u", "root")
    user = RunContext(ctx.built, ctx.rundir, host=HostFacts(euid=1000))
    assert "-u" not in bonnie.command(spec, case, user).argv  # bonnie++ runs as its caller


def test_a_user_of_its_own(tmp_path: Path) -> None:
    spec = spec_of(user="nobody")
    (case,) = bonnie.cases(spec)
    ctx = RunContext(Built("t", "loopdisk", tmp_path, "/dev/loop9"), tmp_path / "run",
                     host=HostFacts(euid=0))
    (mkdir,) = bonnie.setup(spec, case, ctx)
    assert mkdir.argv[:4] == ("install", "-d", "-o", "nobody")
    assert bonnie.command(spec, case, ctx).argv[-2:] == ("-u", "nobody")
    with pytest.raises(ExperimentError, match="user: no user 'no-such-user-vb'"):
        spec_of(user="no-such-user-vb")


def test_spec_problems_name_the_field() -> None:
    with pytest.raises(ExperimentError) as err:
        spec_of(size="256M", ram="256M")
    assert "size: bonnie++ refuses a file size below twice ram" in str(err.value)
    with pytest.raises(ExperimentError, match="per_char: the per-char tests fail"):
        spec_of(per_char=True, direct=True)
    with pytest.raises(ExperimentError, match="whole MiB"):
        spec_of(size="1000k")
    spec = spec_of(per_char=[True, False], direct=[True, False])
    assert len(bonnie.cases(spec)) == 3  # per_char with direct dropped


def test_raw_device_target_is_refused_with_a_reason(tmp_path: Path) -> None:
    spec = spec_of()
    ctx = RunContext(Built("raw", "loopdisk", None, "/dev/loop9"), tmp_path)
    assert bonnie.setup(spec, bonnie.cases(spec)[0], ctx) == []
    with pytest.raises(Exception, match="needs a filesystem"):
        bonnie.command(spec, bonnie.cases(spec)[0], ctx)


# -- real runs ------------------------------------------------------------------------------


@pytest.mark.root
def test_real_runs_on_loop_disks(diskdir: Path, tmp_path: Path) -> None:
    """The O_DIRECT block rate needs no reference: it is checked to be a number at all
    (> 1 MB/s; measured 44 MB/s quiet, 19 MB/s niced beside a 2-core hog); slower would
    take the 64 MiB over a minute, longer than any stall of the shared disk seen."""
    tool("bonnie++")
    doc = {
        "name": "bonnie",
        "workdir": str(diskdir),
        "repeat": 1,
        "targets": [
            {"name": "xfs", "type": "loopdisk", "size": "512M", "fs": "xfs"},
            {"name": "raw", "type": "loopdisk", "size": "128M", "fs": "none"},
        ],
        "workloads": [
            {
                "name": "b",
                "tool": "bonnie++",
                "size": "64M",
                "ram": "32M",
                "files": 1,
                "direct": [False, True],
            }
        ],
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "b.db")
    with Store(tmp_path / "b.db") as store:
        runs = store.runs([outcome.experiment_id], outputs=True)
    ok = {r.params["direct"]: r for r in runs if r.target == "xfs"}
    assert all(r.status is Status.OK for r in ok.values()), [r.error for r in ok.values()]
    direct = ok[True]
    block = metric(direct.metrics, "bw", "put_block")
    # O_DIRECT: the loop disk really wrote the file, and the rate is a number.
    assert block.value is not None and block.note == ""
    within("bonnie: O_DIRECT put_block, B/s", block.value, low=1e6,
           reference="a floor for a real number, not a speed")
    assert direct.annotations["device_io"]["write_bytes"] >= 64 * 1024**2
    assert direct.outputs["stdout"].startswith("1.98,")
    buffered = ok[False]
    assert "cache-influenced" in metric(buffered.metrics, "bw", "put_block").note
    assert "-u" in buffered.argv and "-f" in buffered.argv
    raw = [r for r in runs if r.target == "raw"]
    assert raw and all(r.status is Status.FAILED and "needs a filesystem" in r.error for r in raw)
