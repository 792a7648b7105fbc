"""hdparm -tT: the parser on captured output, errors, and real runs on a loop device."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support import DATA, tool
from volbench.core.errors import ParseError, VolbenchError
from volbench.core.model import Status
from volbench.engine.execution import measure
from volbench.engine.experiment import parse_document
from volbench.engine.importer import IMPORTERS
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.targets.base import Built
from volbench.workloads import hdparm
from volbench.workloads.base import RunContext

HDPARM = DATA / "hdparm/9.65"
MIB = 1024**2
_LINE = re.compile(r"Timing (.*?):\s+(\d+) MB in\s+([\d.]+) seconds =\s+([\d.]+) MB/sec")


@pytest.mark.parametrize("case", ["loop-tT", "loop-tT-direct", "loop-t"])
def test_rates_are_mib_per_second_in_bytes(case: str) -> None:
    text = (HDPARM / f"{case}.stdout").read_text()
    parsed = hdparm.parse_text(text, case)
    lines = _LINE.findall(text)
    bws = [m for m in parsed.metrics if m.name == "bw"]
    assert len(bws) == len(lines) > 0
    for m, (label, mb, seconds, rate) in zip(bws, lines, strict=True):
        assert m.unit == "B/s" and m.value == pytest.approx(float(rate) * MIB)
        assert m.tags == {"test": "cached" if "cached" in label else "disk"}
        # hdparm's "MB" is MiB: the amount read over the time agrees with the rate.
        assert float(mb) * MIB / float(seconds) == pytest.approx(m.value, rel=0.02)


def test_params_read_back_from_labels() -> None:
    assert hdparm.params_of((HDPARM / "loop-tT-direct.stdout").read_text()) == {
        "direct": True,
        "cached": True,
    }
    assert hdparm.params_of((HDPARM / "loop-t.stdout").read_text()) == {
        "direct": False,
        "cached": False,
    }
    imp = IMPORTERS["hdparm"]((HDPARM / "loop-tT.stdout").read_text(), "loop-tT")
    assert imp.params == {"direct": False, "cached": True} and imp.parsed.metrics


@pytest.mark.parametrize("case", ["error-vda-eperm", "error-no-such-device", "error-regular-file"])
def test_error_outputs_do_not_parse(case: str) -> None:
    with pytest.raises(ParseError, match="no 'Timing"):
        hdparm.parse_text((HDPARM / f"{case}.stdout").read_text(), case)


def test_directory_target_has_no_device(tmp_path: Path) -> None:
    doc = {
        "targets": [{"name": "d", "type": "directory", "path": "/tmp"}],
        "workloads": [{"name": "h", "tool": "hdparm", "direct": [False, True]}],
    }
    hspec = parse_document(doc).workloads[0]
    assert isinstance(hspec, hdparm.HdparmSpec)
    cases = hdparm.cases(hspec)
    assert len(cases) == 2
    built = Built("d", "directory", tmp_path, None, devices=["/dev/vda"])
    with pytest.raises(VolbenchError, match="needs a block device"):
        hdparm.command(hspec, cases[0], RunContext(built, tmp_path))
    dev = Built("l", "loopdisk", tmp_path, "/dev/loop7", devices=["/dev/loop7"])
    argv = hdparm.command(hspec, cases[1], RunContext(dev, tmp_path)).argv
    assert argv == ("hdparm", "-tT", "--direct", "/dev/loop7")


@pytest.mark.parametrize(
    ("device", "error", "stderr"),
    [
        ("missing", "No such file or directory", "No such file or directory"),
        ("regular", "exit code 5", "BLKFLSBUF failed"),
    ],
)
def test_unopenable_device_is_a_failed_run_with_output(
    tmp_path: Path, device: str, error: str, stderr: str
) -> None:
    tool("hdparm")
    path = tmp_path / device
    if device == "regular":
        path.write_text("not a disk\n")
    # -t only: -T on a regular file would first spend 2 s timing cached reads.
    doc = {
        "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
        "workloads": [{"name": "h", "tool": "hdparm", "cached": False}],
    }
    spec = parse_document(doc).workloads[0]
    assert isinstance(spec, hdparm.HdparmSpec)
    built = Built("bad", "loopdisk", None, str(path))
    (case,) = hdparm.cases(spec)
    result = measure(
        target="bad",
        workload=spec,
        kind=hdparm.KIND,
        params=case,
        repetition=1,
        warmup=False,
        ctx=RunContext(built, tmp_path / "run"),
        tracker=None,
        drop=False,
    )
    assert result.status is Status.FAILED
    assert error in result.error and result.exit_code not in (0, None)
    assert stderr in result.outputs["stderr"]


@pytest.mark.root
def test_real_runs_on_a_loop_device(workdir: Path, tmp_path: Path) -> None:
    tool("hdparm")
    doc = {
        "name": "hdparm",
        "workdir": str(workdir),
        "repeat": 1,
        "targets": [
            {"name": "xfs", "type": "loopdisk", "size": "320M", "fs": "xfs"},
            {"name": "dir", "type": "directory", "path": str(tmp_path)},
        ],
        "workloads": [
            {"name": "h", "tool": "hdparm"},
            {"name": "hd", "tool": "hdparm", "direct": True, "cached": False},
        ],
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "h.db")
    with Store(tmp_path / "h.db") as store:
        runs = store.runs([outcome.experiment_id], outputs=True)
    loop = [r for r in runs if r.target == "xfs"]
    assert len(loop) == 2 and all(r.status is Status.OK for r in loop), [r.error for r in loop]
    for run in loop:
        tests = {m.tags["test"]: m.value for m in run.metrics if m.name == "bw"}
        expected = {"cached", "disk"} if run.params["cached"] else {"disk"}
        assert set(tests) == expected and all(v and v > MIB for v in tests.values())
        assert run.argv[-1].startswith("/dev/loop")
        # -t read the device itself (the whole 320 MiB device at most).
        assert run.annotations["device_io"]["read_bytes"] > 32 * MIB
    assert "--direct" in next(r for r in loop if r.params["direct"]).argv
    bad = [r for r in runs if r.target == "dir"]
    assert len(bad) == 2
    assert all(r.status is Status.FAILED and "needs a block device" in r.error for r in bad)
