"""The verify pass of a faulted run (workloads/fioverify.py, engine/faultverify.py) on
fio 3.33's captured outputs (tests/data/fio/3.33/verify-*, verify.capture.sh): a file
written with checksums, random writes with checksums, then a read-back that passes and
one after two blocks were damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import DATA
from volbench.core.errors import ParseError
from volbench.engine.faultverify import expected_loss
from volbench.faults import md, nfs
from volbench.workloads import fio, fioverify

FIO = DATA / "fio" / "3.33"
SIZE = 16 * 1024 * 1024


def captured(name: str) -> fioverify.Verified:
    return fioverify.parse((FIO / f"{name}.json").read_text(),
                           (FIO / f"{name}.stderr").read_text(), SIZE,
                           int((FIO / f"{name}.exitcode").read_text()))


def test_a_clean_read_back_says_nothing_lost() -> None:
    found = captured("verify-ok")
    assert found.nothing_lost and found.bad == () and found.checked_bytes == SIZE
    assert found.words() == "nothing lost (16M checked)"
    errors, checked = fioverify.metrics(found, "")
    assert (errors.name, errors.value, checked.value) == ("verify_errors", 0.0, SIZE)


def test_damaged_blocks_are_counted_with_their_offsets() -> None:
    found = captured("verify-damaged")
    # One block with a wrong checksum (0xff in its middle), one zeroed (bad magic).
    assert found.bad == ((5255168, 4096), (9437184, 4096))
    assert not found.nothing_lost and found.checked_bytes == SIZE  # read on past them
    assert found.words().startswith("2 blocks (8k) lost or damaged, first at offset 5255168")
    errors, _ = fioverify.metrics(found, "md raid0 keeps no copy of a member's blocks")
    assert errors.value == 2.0 and "(expected: md raid0" in errors.note


def test_a_read_back_stopped_by_an_error_leaves_bytes_unchecked() -> None:
    text = (FIO / "verify-ok.json").read_text().replace(
        '"io_bytes" : 16777216', '"io_bytes" : 4194304', 1).replace(
        '"error" : 0', '"error" : 5', 1)
    found = fioverify.parse(text, "", SIZE, 1)
    assert found.unchecked_bytes == 12 * 1024 * 1024 and not found.nothing_lost
    assert "12M unreadable (fio error 5)" in found.words()
    assert fioverify.metrics(found, "")[0].value is None  # unknown, not "0 lost"


def test_the_passes_read_what_the_measured_job_wrote() -> None:
    """The layout, measured options and read-back of the captured run are what volbench
    builds (same verify type, interval = the block size, whole-MiB reads)."""
    layout = (FIO / "verify-layout.cmd").read_text()
    ctx = type("Ctx", (), {"rundir": Path("/tmp/r"), "built": None, "services": {}})()
    params = {"bs": "4k", "size": "16M", "rw": "randwrite"}
    built = fioverify.layout("d.dat", params, ctx)  # type: ignore[arg-type]
    for option in ("--verify=crc32c", "--do_verify=0", "--verify_interval=4096", "--bs=1048576"):
        assert option in built.argv
    assert "--verify_interval=4k" in layout and "--bs=1M" in layout
    assert fioverify.measured_options(params) == ("--verify=crc32c", "--do_verify=0",
                                                  "--verify_state_save=0", "--norandommap",
                                                  "--io_size=1P")
    # Sequential writes keep their order (and fio's pass rule: docs/faults.md).
    assert fioverify.measured_options({**params, "rw": "write"}) == (
        "--verify=crc32c", "--do_verify=0", "--verify_state_save=0")
    assert " ".join(fioverify.measured_options(params)[:2]) in (
        FIO / "verify-randwrite.cmd").read_text()
    # No verify state file beside wherever volbench runs: the runs' own directory, none.
    assert "--verify_state_save=0" in built.argv and built.cwd == Path("/tmp/r")
    assert fioverify.measured_options({**params, "rw": "randread"}) == ()
    check = fioverify.command("d.dat", params, ctx).argv  # type: ignore[arg-type]
    assert "--continue_on_error=verify" in check and "--rw=read" in check
    assert fioverify.block_size({"bs": "4k-64k"}) is None


@pytest.mark.parametrize(("level", "loses"), [("raid1", False), ("raid10", False),
                                              ("raid5", False), ("raid0", True),
                                              ("linear", True)])
def test_md_levels_without_a_copy_may_lose_data(level: str, loses: bool) -> None:
    assert bool(md.may_lose(level)) is loses


def test_a_soft_nfs_mount_may_lose_writes_and_a_hard_one_not() -> None:
    assert nfs.may_lose("rw,relatime,vers=3,hard,proto=tcp,timeo=600") == ""
    assert nfs.may_lose("rw,vers=3,soft,timeo=10,retrans=1").startswith("a soft mount")
    assert nfs.may_lose(["soft"]) != ""


def test_the_expected_loss_counts_only_faults_that_took_effect() -> None:
    events = [{"may_lose": "md raid0 keeps no copy", "error": "mdadm: EBUSY"},
              {"may_lose": "", "error": None}]
    assert expected_loss(events) == ""  # md refused the fail: nothing could be lost
    assert expected_loss([{"may_lose": "soft", "error": None}] * 2) == "soft"


def test_a_job_that_went_on_past_its_errors_is_parsed_one_that_stopped_is_not() -> None:
    """fio writes total_err only with continue_on_error: such a job's errors are counted
    (a fault's I/O errors), its results kept; a job that stopped on its error fails."""
    went_on = fio.parse_json((FIO / "verify-damaged.json").read_text())
    assert any(m.name == "iops" for m in went_on.metrics)
    with pytest.raises(ParseError, match="reported error 84"):
        fio.parse_json((FIO / "error-verify-damaged.json").read_text())
    stopped = captured("error-verify-damaged")
    # Reads in flight (iodepth 4) still found the second block; 3 MiB were never read.
    assert stopped.bad == ((5255168, 4096), (9437184, 4096)) and not stopped.nothing_lost
    assert stopped.exit_code == 1 and stopped.unchecked_bytes == 3 * 1024 * 1024
