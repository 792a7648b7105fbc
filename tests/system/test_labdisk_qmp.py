"""A lab disk's throttle changed at run time through a real QEMU's QMP socket, asked the
way the guest asks (a request file, the host's bridge, an answer file), and a pulled
disk plugged back. QEMU runs the lab's own disk options (vm.qemu_options) on a q35
machine that never starts (-S): the devices and their throttles are all that is needed,
so no guest boots. A pull needs a guest that lets go of the disk (ACPI hotplug): here
it times out, clearly; the lab tests pull for real (tests/lab/test_faults_pull_lab.py)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import tool
from volbench.config.lab import LabDisk, LabSpec
from volbench.faults import labdisk
from volbench.faults.base import FaultError
from volbench.lab.errors import LabError
from volbench.lab.faultbridge import FaultBridge, serve
from volbench.lab.qmp import Qmp
from volbench.lab.vm import qemu_options

SPEC = LabSpec(disks=(LabDisk("m1"), LabDisk("m2")))  # standard: 500 IOPS, 50 MiB/s


def images(tmp_path: Path) -> list[Path]:
    out = [tmp_path / f"{disk.name}.raw" for disk in SPEC.disks]
    for image in out:
        image.write_bytes(b"\0" * 1024**2)
    return out


@contextlib.contextmanager
def started(tmp_path: Path, options: list[str]) -> Iterator[Path]:
    binary = tool("qemu-system-x86_64")
    sock = tmp_path / "qmp.sock"
    vm = subprocess.Popen([binary, "-machine", "q35", "-S", "-nodefaults", "-display", "none",
                           "-qmp", f"unix:{sock},server=on,wait=off", *options])
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert vm.poll() is None and time.monotonic() < deadline, "QEMU did not start"
            time.sleep(0.05)
        yield sock
    finally:
        vm.terminate()
        vm.wait(timeout=20)


@pytest.fixture
def qemu(tmp_path: Path) -> Iterator[Path]:
    with started(tmp_path, qemu_options(SPEC, images(tmp_path))) as sock:
        yield sock


def iops_of(sock: Path) -> dict[str, int]:
    with Qmp(sock) as qmp:
        return {b["qdev"].split("/")[3]: b["inserted"]["iops"]
                for b in qmp.execute("query-block")}


def test_the_guests_request_slows_and_returns_the_disk(qemu: Path, tmp_path: Path) -> None:
    bridge = FaultBridge(SPEC, tmp_path / "faults", qemu).start()
    try:
        reply = labdisk.ask(tmp_path / "faults", {"action": "slow", "disk": "m2",
                                                   "percent": 10})
        assert reply["arguments"]["iops"] == 50
        assert iops_of(qemu) == {"labdev0": 500, "labdev1": 50}
        labdisk.ask(tmp_path / "faults", {"action": "return", "disk": "m2"})
        assert iops_of(qemu) == {"labdev0": 500, "labdev1": 500}
        with pytest.raises(FaultError, match="no lab disk 'vda'"):
            labdisk.ask(tmp_path / "faults", {"action": "slow", "disk": "vda", "percent": 5})
    finally:
        bridge.stop()
    assert not bridge.thread.is_alive()
    assert list((tmp_path / "faults").iterdir()) == []  # every request answered and read


def test_no_bridge_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "faults").mkdir()
    with pytest.raises(FaultError, match="no answer from the lab's host"):
        labdisk.ask(tmp_path / "faults", {"action": "return", "disk": "m1"}, timeout=0.3)


def test_the_actions_steps_ask_the_host_and_keep_its_answer(
        qemu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from volbench.config.faults import FaultSpec
    from volbench.faults.base import run_commands

    monkeypatch.setenv(labdisk.CHANNEL_ENV, str(tmp_path / "faults"))
    bridge = FaultBridge(SPEC, tmp_path / "faults", qemu).start()
    try:
        action = labdisk.slow(FaultSpec(4.0, "slow", device="/dev/disk/by-id/virtio-m1",
                                        options={"percent": 20}))
        (done,) = run_commands(action.apply_commands())
        assert done.command == "qmp slow m1 20 %" and done.returncode == 0
        assert '"iops": 100' in done.output
        assert iops_of(qemu)["labdev0"] == 100
        run_commands(action.undo_commands(action.data))
        assert iops_of(qemu)["labdev0"] == 500
    finally:
        bridge.stop()


def test_a_pulled_disk_is_plugged_back_at_its_slot_with_its_serial_and_caps(
        tmp_path: Path) -> None:
    # The VM as after m2's pull: its device and its -drive gone (QEMU deletes a -drive
    # with its device), the bridge and m1 as they were.
    disks = images(tmp_path)
    options = qemu_options(SPEC, disks)
    cut = options.index("-drive", options.index("-drive") + 1)
    with started(tmp_path, options[:cut]) as sock, Qmp(sock) as qmp:
        reply = serve(qmp, SPEC, disks, {"action": "return", "disk": "m2"})
        assert [s["command"] for s in reply["steps"]] == [
            "blockdev-add", "device_add", "block_set_io_throttle"]
        (back,) = [b for b in qmp.execute("query-block") if b["qdev"].endswith("labdev1/"
                                                                               "virtio-backend")]
        assert back["inserted"]["image"]["filename"] == str(disks[1])
        assert back["inserted"]["iops"] == 500 and back["inserted"]["bps"] == 50 * 1024**2
        assert back["inserted"]["group"] == "labdisk1"
        assert reply["caps_now"]["iops"] == 500
        serial = qmp.execute("qom-get", {"path": "/machine/peripheral/labdev1/virtio-backend",
                                         "property": "serial"})
        assert serial == "m2"
        # Asked again, the disk is in: only its caps are set.
        again = serve(qmp, SPEC, disks, {"action": "return", "disk": "m2"})
        assert [s["command"] for s in again["steps"]] == ["block_set_io_throttle"]
        assert again["caps_now"]["iops"] == 500


def test_a_guest_that_does_not_let_go_of_a_pulled_disk_is_a_clear_error(qemu: Path,
                                                                         tmp_path: Path) -> None:
    with Qmp(qemu) as qmp, pytest.raises(LabError, match="did not let go of the disk"):
        serve(qmp, SPEC, images(tmp_path), {"action": "pull", "disk": "m1"},
              unplug_timeout=1.0)


def test_the_journal_puts_a_pulled_disk_back_through_the_bridge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What teardown and `volbench cleanup` in the guest run for a pull's journal entry:
    # the request goes through the channel, the host's bridge plugs m2 back into QEMU.
    from volbench.system import journal

    disks = images(tmp_path)
    options = qemu_options(SPEC, disks)
    cut = options.index("-drive", options.index("-drive") + 1)
    links = tmp_path / "by-id"
    links.mkdir()
    (links / "virtio-m2").touch()  # the guest's udev, which this QEMU has not
    monkeypatch.setattr(labdisk, "LINKS", links)
    monkeypatch.setenv(labdisk.CHANNEL_ENV, str(tmp_path / "faults"))
    with started(tmp_path, options[:cut]) as sock:
        bridge = FaultBridge(SPEC, tmp_path / "faults", sock, disks).start()
        try:
            journal.UNDO["fault-labdisk"]({"disk": "m2", "pulled": True})
        finally:
            bridge.stop()
        assert iops_of(sock) == {"labdev0": 500, "labdev1": 500}
