"""A lab disk pulled out of the running VM and returned (faults/labdisk.py,
lab/faultbridge.py, docs/faults.md): the checks before anything runs, the QMP steps the
host takes (on a fake VM that plays QEMU and the guest's udev), and the undo that puts a
pulled disk back at teardown and in `volbench cleanup`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from volbench.config.faults import FaultSpec
from volbench.config.lab import DEFAULT_CLASSES, DiskClass, LabDisk, LabSpec
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_text
from volbench.engine.faultrun import Bound, FaultRun
from volbench.faults import labdisk
from volbench.faults.base import FaultError, run_commands
from volbench.lab.errors import LabError
from volbench.lab.faultbridge import FaultBridge, serve
from volbench.system import journal
from volbench.targets.base import Built

P1, P2 = "/dev/disk/by-id/virtio-p1", "/dev/disk/by-id/virtio-p2"
SPEC = LabSpec(disks=(LabDisk("p1"), LabDisk("p2", disk_class="capped")),
               classes={**DEFAULT_CLASSES,
                        "capped": DiskClass("capped", iops=100, bursts={"iops": 300},
                                            burst_seconds=5)})
IMAGES = (Path("/var/tmp/lab/p1.raw"), Path("/var/tmp/lab/p2.raw"))


class FakeVM:
    """QEMU's QMP as the bridge uses it, and the guest: a device_del takes the disk's
    device, its -drive and its by-id link away; a device_add brings device and link back."""

    def __init__(self, links: Path, stuck: bool = False) -> None:
        self.links, self.stuck = links, stuck
        self.devices = {"labdev0": "labdisk0", "labdev1": "labdisk1"}  # id -> backend
        self.legacy, self.nodes = {"labdisk0", "labdisk1"}, set[str]()
        self.caps: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        links.mkdir(exist_ok=True)
        for disk in SPEC.disks:
            (links / f"virtio-{disk.name}").touch()

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any:
        args = arguments or {}
        self.calls.append((command, args))
        if command == "qom-list":
            return [{"name": d, "type": "child<virtio-blk-pci>"} for d in self.devices]
        if command == "query-named-block-nodes":
            return [{"node-name": n} for n in self.nodes]
        if command == "query-block":  # a -drive by its name, each device's caps
            return [{"device": b if b in self.legacy else "", "inserted": self.caps.get(d, {}),
                     "qdev": f"/machine/peripheral/{d}/virtio-backend"}
                    for d, b in self.devices.items()]
        if command == "device_del" and not self.stuck:
            backend = self.devices.pop(args["id"])
            self.legacy.discard(backend)  # a -drive goes with its device
            index = int(args["id"].removeprefix("labdev"))
            (self.links / f"virtio-{SPEC.disks[index].name}").unlink()
        elif command == "blockdev-add":
            self.nodes.add(args["node-name"])
        elif command == "blockdev-del":
            self.nodes.remove(args["node-name"])
        elif command == "block_set_io_throttle":
            self.caps[args["id"].split("/")[3]] = {k: v for k, v in args.items() if k != "id"}
        elif command == "device_add":
            assert args["drive"] in self.nodes | self.legacy, args
            self.devices[args["id"]] = args["drive"]
            (self.links / f"virtio-{args['serial']}").touch()
        return {}

    def __enter__(self) -> FakeVM:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def named(vm: FakeVM, command: str) -> list[dict[str, Any]]:
    return [args for name, args in vm.calls if name == command]


# -- the host's QMP steps -------------------------------------------------------------------


def test_a_pull_deletes_the_device_and_waits_until_qemu_has(tmp_path: Path) -> None:
    vm = FakeVM(tmp_path)
    reply = serve(vm, SPEC, IMAGES, {"action": "pull", "disk": "p2"})
    assert named(vm, "device_del") == [{"id": "labdev1"}]
    assert "labdev1" not in vm.devices and reply["gone_after_s"] >= 0
    assert [s["command"] for s in reply["steps"]] == ["device_del"]
    with pytest.raises(LabError, match="not plugged in"):  # a second pull
        serve(vm, SPEC, IMAGES, {"action": "pull", "disk": "p2"})


def test_a_return_plugs_the_disk_back_where_it_was_with_its_class_caps(tmp_path: Path) -> None:
    vm = FakeVM(tmp_path)
    serve(vm, SPEC, IMAGES, {"action": "pull", "disk": "p2"})
    reply = serve(vm, SPEC, IMAGES, {"action": "return", "disk": "p2"})
    (added,) = named(vm, "blockdev-add")
    assert added["node-name"] == "labnode1" and added["file"]["filename"] == str(IMAGES[1])
    assert added["cache"] == {"direct": True, "no-flush": True}  # write-through, as at boot
    (device,) = named(vm, "device_add")
    assert device == {"driver": "virtio-blk-pci", "drive": "labnode1", "id": "labdev1",
                      "serial": "p2", "bus": "labbr0", "addr": "0x2",
                      "write-cache": "off", "config-wce": "off"}
    (caps,) = named(vm, "block_set_io_throttle")
    assert caps["id"] == "/machine/peripheral/labdev1/virtio-backend"
    assert caps["group"] == "labdisk1"
    assert (caps["iops"], caps["iops_max"], caps["iops_max_length"]) == (100, 300, 5)
    assert reply["arguments"] == caps
    assert reply["caps_now"]["iops"] == 100 and reply["caps_now"]["group"] == "labdisk1"
    # Pulled again: the returned disk's node is closed too, so a third return reopens it.
    serve(vm, SPEC, IMAGES, {"action": "pull", "disk": "p2"})
    assert named(vm, "blockdev-del") == [{"node-name": "labnode1"}] and not vm.nodes
    serve(vm, SPEC, IMAGES, {"action": "return", "disk": "p2"})
    assert len(named(vm, "device_add")) == 2 and vm.devices["labdev1"] == "labnode1"


def test_a_return_of_a_disk_in_place_only_sets_its_caps(tmp_path: Path) -> None:
    vm = FakeVM(tmp_path)
    serve(vm, SPEC, IMAGES, {"action": "return", "disk": "p1"})
    assert [c for c, _ in vm.calls if c not in ("qom-list", "query-block")] == [
        "block_set_io_throttle"]
    assert named(vm, "block_set_io_throttle")[0]["iops"] == 500  # standard


def test_a_guest_that_never_lets_go_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    vm = FakeVM(tmp_path, stuck=True)
    with pytest.raises(LabError, match=r"did not let go of the disk within 0\.3 s"):
        serve(vm, SPEC, IMAGES, {"action": "pull", "disk": "p1"}, unplug_timeout=0.3)


@pytest.mark.parametrize(("request_", "words"), [
    ({"action": "pull", "disk": "vda"}, "no lab disk 'vda'"),
    ({"action": "eject", "disk": "p1"}, "unknown lab-disk action 'eject'"),
])
def test_the_host_refuses_other_disks_and_actions(tmp_path: Path, request_: dict[str, Any],
                                                  words: str) -> None:
    vm = FakeVM(tmp_path)
    with pytest.raises(LabError, match=words):
        serve(vm, SPEC, IMAGES, request_)
    assert not named(vm, "device_del")


# -- the guest's action, through the bridge -------------------------------------------------


@pytest.fixture
def bridged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    vm = FakeVM(tmp_path / "by-id")
    monkeypatch.setattr(labdisk, "LINKS", tmp_path / "by-id")
    monkeypatch.setenv(labdisk.CHANNEL_ENV, str(tmp_path / "faults"))
    bridge = FaultBridge(SPEC, tmp_path / "faults", tmp_path / "qmp.sock", IMAGES,
                         connect=lambda _: vm).start()
    yield vm
    bridge.stop()


def test_the_pull_action_waits_for_the_link_to_go_and_its_undo_for_it_to_come_back(
        bridged: FakeVM, tmp_path: Path) -> None:
    action = labdisk.pull(FaultSpec(6.0, "pull", device=P2))
    assert (action.journal_kind, action.data) == ("fault-labdisk", {"disk": "p2",
                                                                    "pulled": True})
    done = run_commands(action.apply_commands())
    assert [d.command for d in done] == [
        "qmp pull p2", f"wait until {tmp_path}/by-id/virtio-p2 is gone"]
    assert not (tmp_path / "by-id" / "virtio-p2").exists()
    assert done[1].output.startswith(f"{tmp_path}/by-id/virtio-p2 gone after ")
    back = run_commands(action.undo_commands(action.data))
    assert back[1].output.startswith(f"{tmp_path}/by-id/virtio-p2 back after ")
    assert "labdev1" in bridged.devices and (tmp_path / "by-id" / "virtio-p2").exists()


def test_cleanup_puts_a_pulled_disk_back_from_its_journal_entry(bridged: FakeVM) -> None:
    # What `volbench cleanup` (and a scope's close) runs for the entry the pull journalled.
    serve(bridged, SPEC, IMAGES, {"action": "pull", "disk": "p1"})
    journal.UNDO["fault-labdisk"]({"disk": "p1", "pulled": True})
    assert bridged.devices["labdev0"] == "labnode0"
    # A pull that never got to the host: its undo finds the disk in place.
    journal.UNDO["fault-labdisk"]({"disk": "p2", "pulled": True})
    assert bridged.devices["labdev1"] == "labdisk1"


def test_a_pull_in_effect_when_the_run_ends_is_undone_at_teardown(
        bridged: FakeVM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr("volbench.faults.base.inside_lab", lambda: True)
    (tmp_path / "mdstat").write_text(MDSTAT_DEGRADED)
    monkeypatch.setattr(labdisk, "MDSTAT", tmp_path / "mdstat")
    exp = parse_text(LAB.replace("FAULTS", f"[{{at: 0s, action: pull, device: {P1}}}]"),
                     "e.yaml")
    (fault,) = exp.workload("reads").faults  # no for: and no return: open at the end
    built = Built("r1", "mdraid", None, info={"level": "raid1"})
    with journal.opened("test") as jrnl, jrnl.scope() as scope, \
            FaultRun([Bound(0, fault, exp.target("r1"), built)], scope) as run:
        deadline = time.monotonic() + 10
        while not named(bridged, "device_del") and time.monotonic() < deadline:
            time.sleep(0.01)
    assert [(e["action"], e["phase"], e["error"]) for e in run.events] == [
        ("pull", "pull", None), ("return", "teardown", None)]
    assert run.events[0]["may_lose"] == ""  # a RAID1 member: the mirror has every block
    watched = run.events[0]["commands"][2]
    assert watched["output"].startswith("md degraded after "), watched
    assert bridged.devices["labdev0"] == "labnode0"  # back


MDSTAT_WHOLE = """Personalities : [raid1]
md127 : active raid1 vdb[1] vda[0]
      307200 blocks super 1.2 [2/2] [UU]
"""
MDSTAT_DEGRADED = MDSTAT_WHOLE.replace("[2/2] [UU]", "[2/1] [U_]").replace("vdb[1] ", "")


def test_md_is_degraded_when_a_member_is_missing_or_marked_faulty() -> None:
    assert not labdisk.degraded(MDSTAT_WHOLE)
    assert labdisk.degraded(MDSTAT_DEGRADED)
    assert labdisk.degraded(MDSTAT_WHOLE.replace("vdb[1]", "vdb[1](F)"))
    assert not labdisk.degraded("Personalities : [raid1]\nunused devices: <none>\n")


def test_an_md_that_does_not_notice_is_recorded_not_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mdstat").write_text(MDSTAT_WHOLE)
    monkeypatch.setattr(labdisk, "MDSTAT", tmp_path / "mdstat")
    (done,) = run_commands([labdisk._wait_md_degraded(timeout=0.2)])
    assert done.returncode == 0
    assert done.output.startswith("md shows no member missing after 0.2 s")


def test_outside_the_lab_a_pull_is_refused_and_its_undo_has_nothing_to_do(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(labdisk.CHANNEL_ENV, raising=False)
    with pytest.raises(FaultError, match="pulling a lab disk needs the lab"):
        labdisk.pull(FaultSpec(6.0, "pull", device=P1))
    assert labdisk._undo_commands({"disk": "p1", "pulled": True}) == []  # QEMU is gone


# -- checked before anything runs -----------------------------------------------------------

LAB = f"""
lab:
  disks: [{{name: p1, size: 300M}}, {{name: p2, size: 300M}}, {{name: p3, size: 300M}}]
targets:
  - {{name: r1, type: mdraid, level: raid1, fs: none, devices: [{P1}, {P2}]}}
  - {{name: loop, type: loopdisk, size: 300M, fs: none, limits: {{read_iops: 100}}}}
workloads:
  - {{name: reads, tool: fio, rw: randread, runtime: 20s, faults: FAULTS}}
"""


def refusals(faults: str, text: str = LAB) -> list[str]:
    with pytest.raises(ExperimentError) as info:
        parse_text(text.replace("FAULTS", faults), "exp.yaml")
    return [str(p) for p in info.value.problems]


def test_a_pull_of_a_listed_lab_disk_is_planned_with_its_return() -> None:
    exp = parse_text(LAB.replace("FAULTS", f"[{{at: 6s, action: pull, device: {P2}}}, "
                                 f"{{at: 12s, action: return, device: {P2}}}]"), "e.yaml")
    assert [(f.action, f.device) for f in exp.workload("reads").faults] == [
        ("pull", P2), ("return", P2)]


@pytest.mark.parametrize(("faults", "expected"), [
    ("[{at: 6s, action: pull, target: r1}]",
     "workloads[0].faults[0].target: 'pull' takes one disk out, and target r1 is type "
     "mdraid"),
    ("[{at: 6s, action: pull, device: /dev/disk/by-id/virtio-p3}]",
     "workloads[0].faults[0].device: /dev/disk/by-id/virtio-p3 is not a disk any target "
     "lists"),
    (f"[{{at: 6s, action: return, device: {P1}}}]",
     f"workloads[0].faults[0]: 'return' of device {P1} at 6 s ends no fault started "
     "before it (add a slow/pull of the same device earlier"),
    (f"[{{at: 6s, action: pull, device: {P1}}}, {{at: 9s, action: pull, device: {P1}}}]",
     f"workloads[0].faults[1]: device {P1} already has a 'pull' in effect at 9 s"),
    (f"[{{at: 6s, action: pull, device: {P1}, for: 10s}}, "
     f"{{at: 9s, action: fail, device: {P1}}}]",
     "workloads[0].faults[1]: falls inside the 10 s of 'pull' at 6 s"),
])
def test_bad_pulls_are_refused_naming_the_field(faults: str, expected: str) -> None:
    found = refusals(faults)
    assert any(p.startswith(expected) for p in found), found


def test_a_listed_loop_device_cannot_be_pulled_and_the_message_says_what_can() -> None:
    text = LAB.replace("- {name: loop, type: loopdisk",
                       "- {name: loop2, type: disk, device: /dev/loop7}\n  - {name: loop, "
                       "type: loopdisk")
    (found,) = [p for p in refusals("[{at: 6s, action: pull, device: /dev/loop7}]", text)
                if "pull" in p or "loop7" in p]
    assert "cannot be pulled" in found and "a loopdisk target's own disk" in found
    assert "volbench lab run" in found and "target:" in found


def test_a_loopdisk_target_can_be_pulled_on_the_host() -> None:
    text = LAB.split("targets:")[0].split("lab:")[0] + "targets:" + LAB.split("targets:")[1]
    exp = parse_text(text.replace("FAULTS", "[{at: 6s, action: pull, target: loop, for: 4s}]"),
                     "e.yaml")
    assert [(f.action, f.target) for f in exp.workload("reads").faults] == [("pull", "loop")]


def test_a_lab_disk_pull_outside_the_lab_is_refused() -> None:
    # The same file without its lab: section, run on the host.
    text = LAB.split("targets:")[0].split("lab:")[0] + "targets:" + LAB.split("targets:")[1]
    found = refusals(f"[{{at: 6s, action: pull, device: {P1}}}]", text)
    assert any("pulling /dev/disk/by-id/virtio-p1 needs the lab VM" in p for p in found), found
