"""The device guard refuses, on real loop devices, every disk that is in use or holds data.

Each test attaches its own loop devices (few: the machine has eight) and always
detaches them. Holders (device-mapper, md) cannot be made on this host: those
refusals are tested inside the lab VM (tests/lab/test_lab.py).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import DATA, need, tool
from volbench.config.fields import Reader
from volbench.core.errors import CommandFailed, ExperimentError, UnsafeDevice
from volbench.engine.experiment import parse_document
from volbench.system import proc
from volbench.system.block import disks, guard
from volbench.system.journal import Journal
from volbench.system.recipe import Recipe
from volbench.targets import BuildContext, disk, open_target
from volbench.targets.base import Built

WIPEFS = DATA / "wipefs" / "2.38.1"


# -- parsing wipefs, on captured output --------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "types", "rule"),
    [
        ("empty", [], None),
        ("xfs", ["xfs"], guard.SIGNATURE),
        ("ext4-label", ["ext4"], guard.SIGNATURE),
        ("btrfs", ["btrfs"], guard.SIGNATURE),
        ("lvm2-member", ["LVM2_member"], guard.PV),
        ("swap", ["swap"], guard.SWAP_SIGNATURE),
        ("dos", ["dos"], guard.PARTITION_TABLE),
        ("gpt", ["gpt", "gpt", "PMBR"], guard.PARTITION_TABLE),
    ],
)
def test_parse_wipefs(case: str, types: list[str], rule: str | None) -> None:
    assert (WIPEFS / f"{case}.exitcode").read_text().strip() == "0"
    found = guard.parse_wipefs((WIPEFS / f"{case}.stdout").read_text())
    assert [s.type for s in found] == types
    assert all(s.device == "loop0" and s.offset.startswith("0x") for s in found)
    if rule is not None:
        assert guard.content_rule(found[0]) == rule


def test_parse_wipefs_label_and_md_member() -> None:
    (sig,) = guard.parse_wipefs((WIPEFS / "ext4-label.stdout").read_text())
    assert sig.label == "mylabel" and "label 'mylabel'" in str(sig)
    assert (
        guard.content_rule(guard.Signature("vdb", "0x1000", "linux_raid_member")) == guard.MD_MEMBER
    )
    assert guard.parse_wipefs("") == []


# -- loop devices of our own -------------------------------------------------------------------


def _losetup(argv: list[str]) -> str:
    deadline = time.monotonic() + 600  # eight loop devices for every test on the machine
    while True:
        try:
            return proc.run(["losetup", *argv], timeout=60).stdout.strip()
        except CommandFailed as exc:
            if "free loop" not in exc.stderr or time.monotonic() > deadline:
                raise
            time.sleep(1)


@contextlib.contextmanager
def loop(
    workdir: Path,
    size: str = "64M",
    *,
    partitions: bool = False,
    read_only: bool = False,
    name: str = "disk",
) -> Iterator[str]:
    image = workdir / f"{name}.img"
    proc.run(["truncate", "-s", size, str(image)], timeout=30)
    flags = (
        ["--find", "--show", "--direct-io=on"]
        + (["-P"] if partitions else [])
        + (["-r"] if read_only else [])
    )
    device = _losetup([*flags, str(image)])
    try:
        yield device
    finally:
        _losetup(["--detach", device])
        image.unlink()


@contextlib.contextmanager
def mounted(device: str, where: Path) -> Iterator[Path]:
    where.mkdir()
    proc.run(["mount", device, str(where)], timeout=60)
    try:
        yield where
    finally:
        proc.run(["umount", str(where)], timeout=60)


def add_partitions(device: str, table: str) -> None:
    """Write a partition table and make the kernel show its partitions.

    This host's kernel has no partition-table parsers (re-reading finds nothing), so
    `partx --add` tells it about each partition (BLKPG), which works everywhere.
    """
    proc.run(["sfdisk", "-q", device], timeout=60, input=table)
    if not guard.partitions_of(Path(device).name):
        proc.run(["partx", "--add", device], timeout=60)


def refusal(path: str, *, wipe: bool = False) -> UnsafeDevice:
    with pytest.raises(UnsafeDevice) as info:
        guard.check(path, wipe=wipe)
    return info.value


def signatures(device: str) -> list[str]:
    out = proc.run(["wipefs", "--no-act", "--json", device], timeout=30).stdout
    return [s.type for s in guard.parse_wipefs(out)]


# -- rules -------------------------------------------------------------------------------------


@pytest.mark.root
def test_a_fresh_disk_passes(workdir: Path) -> None:
    with loop(workdir) as dev:
        facts = guard.check(dev)
        assert facts.node == dev and facts.size == 64 * 1024**2
        assert facts.signatures == () and facts.partitions == ()


def test_not_a_block_device(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for path in ("/dev/disk/by-id/virtio-nonexistent", str(tmp_path / "file"), "/dev/null"):
        err = refusal(path)
        assert err.rule == guard.NOT_BLOCK and err.device == path
        assert "by-id" in str(err)


@pytest.mark.root
def test_the_root_filesystem_is_refused_without_touching_it() -> None:
    root = guard.root_stack()
    tool("wipefs")
    need(bool(root), "/ is not on a block device here")
    for name in sorted(root):
        err = refusal(f"/dev/{name}", wipe=True)  # not even wipe: true gets past it
        assert err.rule == guard.ROOT, err


@pytest.mark.root
def test_mounted_disk_and_mounted_partition(workdir: Path) -> None:
    tool("mkfs.ext4")
    tool("sfdisk")
    with loop(workdir) as dev:
        proc.run(["mkfs.ext4", "-q", dev], timeout=60)
        with mounted(dev, workdir / "m"):
            err = refusal(dev, wipe=True)
            assert err.rule == guard.MOUNTED and str(workdir / "m") in str(err)
        assert refusal(dev).rule == guard.SIGNATURE  # unmounted: only its content remains
    with loop(workdir, partitions=True, name="parted") as dev:
        add_partitions(dev, "label: dos\n,24M,L\n,,L\n")
        assert len(guard.partitions_of(Path(dev).name)) == 2
        part = f"{dev}p1"
        proc.run(["mkfs.ext4", "-q", part], timeout=60)
        with mounted(part, workdir / "p"):
            err = refusal(dev, wipe=True)
            assert err.rule == guard.MOUNTED and f"{part} is mounted" in str(err)


@pytest.mark.root
def test_partition_table_refused_unless_wipe_then_wiped(workdir: Path) -> None:
    tool("sfdisk")
    with loop(workdir, partitions=True) as dev:
        add_partitions(dev, "label: gpt\n,24M,L\n,,L\n")
        proc.run(["mkfs.ext4", "-q", f"{dev}p2"], timeout=60)
        err = refusal(dev)
        assert err.rule == guard.PARTITION_TABLE and "wipe: true" in str(err)
        facts = guard.check(dev, wipe=True)
        assert {s.type for s in facts.signatures} == {"gpt", "PMBR", "ext4"}
        recipe = Recipe()
        guard.wipe_signatures(recipe, facts)
        assert signatures(dev) == [] and guard.partitions_of(Path(dev).name) == []
        assert any("wipefs --all" in step for step in recipe.steps)
        assert guard.check(dev).signatures == ()


@pytest.mark.root
def test_swap_signature_and_swap_in_use(workdir: Path) -> None:
    tool("mkswap")
    with loop(workdir) as dev:
        proc.run(["mkswap", dev], timeout=60)
        assert refusal(dev).rule == guard.SWAP_SIGNATURE
        proc.run(["swapon", dev], timeout=60)
        try:
            err = refusal(dev, wipe=True)
            assert err.rule == guard.SWAP_ACTIVE and "swapoff" in str(err)
        finally:
            proc.run(["swapoff", dev], timeout=60)
        assert guard.check(dev, wipe=True).signatures[0].type == "swap"


@pytest.mark.root
def test_lvm_physical_volume_signature(workdir: Path) -> None:
    tool("lvm")
    with loop(workdir) as dev:
        proc.run(["pvcreate", "-q", dev], timeout=60, env={"LVM_SUPPRESS_FD_WARNINGS": "1"})
        err = refusal(dev)
        assert err.rule == guard.PV and "LVM2_member" in str(err)
        assert guard.check(dev, wipe=True).signatures[0].type == "LVM2_member"


@pytest.mark.root
def test_second_device_of_a_mounted_btrfs(workdir: Path) -> None:
    tool("mkfs.btrfs")
    with loop(workdir, "256M", name="a") as first, loop(workdir, "256M", name="b") as second:
        proc.run(["mkfs.btrfs", "-q", "-d", "single", "-m", "raid1", first, second], timeout=120)
        with mounted(first, workdir / "m"):
            assert refusal(first).rule == guard.MOUNTED
            # Not in /proc/mounts at all: only btrfs's own sysfs tells.
            err = refusal(second, wipe=True)
            assert err.rule == guard.BTRFS_MEMBER, err


@pytest.mark.root
def test_exclusively_open_and_read_only_devices(workdir: Path) -> None:
    with loop(workdir) as dev:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
        try:
            assert refusal(dev, wipe=True).rule == guard.BUSY
        finally:
            os.close(fd)
        guard.check(dev)
    with loop(workdir, read_only=True, name="ro") as dev:
        assert refusal(dev).rule == guard.READ_ONLY


# -- disks.py: listed devices for targets ------------------------------------------------------


def _source(doc: dict[str, object]) -> tuple[disks.DiskSource, list[str]]:
    problems: list = []  # type: ignore[type-arg]
    r = Reader(doc, "t", problems)
    source = disks.parse_source(r, allow_loop=doc.pop("_loop", True) is True)  # type: ignore[arg-type]
    return source, [str(p) for p in problems]


def test_listed_devices_must_have_stable_names() -> None:
    source, problems = _source(
        {"devices": ["/dev/disk/by-id/virtio-d1", {"path": "/dev/loop3", "wipe": True}]}
    )
    assert problems == []
    assert [(d.path, d.wipe) for d in source.listed] == [
        ("/dev/disk/by-id/virtio-d1", False),
        ("/dev/loop3", True),
    ]
    assert source.loop_devices == 0 and source.disk_space == 0 and source.n == 2
    _, problems = _source({"devices": ["/dev/sdb"], "size": "1G"})
    assert any("not a stable name" in p for p in problems)
    assert any("size" in p and "used whole" in p for p in problems)
    _, problems = _source({"devices": ["/dev/loop1", "/dev/loop1"]})
    assert any("listed twice" in p for p in problems)
    _, problems = _source({"_loop": False})
    assert any("devices: is required" in p or "is required" in p for p in problems)
    source, problems = _source({"disks": 3, "size": "64M"})
    assert problems == [] and source.loop_devices == 3 and source.disk_space == 3 * 64 * 2**20


def test_two_targets_cannot_share_a_disk() -> None:
    doc = {
        "targets": [
            {"name": "a", "type": "disk", "device": "/dev/disk/by-id/virtio-d1"},
            {"name": "b", "type": "disk", "device": "/dev/disk/by-id/virtio-d1", "fs": "ext4"},
        ],
        "workloads": [{"tool": "fio", "name": "f"}],
    }
    with pytest.raises(ExperimentError, match="also used by target a"):
        parse_document(doc)
    parse_document({**doc, "order": "sequential"})


@pytest.mark.root
def test_all_listed_disks_are_checked_before_any_is_wiped(workdir: Path) -> None:
    with loop(workdir, name="a") as a, loop(workdir, name="b") as b:
        proc.run(["mkfs.ext4", "-q", a], timeout=60)
        proc.run(["mkfs.ext4", "-q", b], timeout=60)
        source = disks.DiskSource((disks.ListedDisk(a, wipe=True), disks.ListedDisk(b)))
        journal = Journal(workdir / "journal.jsonl")
        with pytest.raises(UnsafeDevice) as info:
            disks.provide(journal.scope(), Recipe(), source, workdir)
        assert info.value.device == b and info.value.rule == guard.SIGNATURE
        assert signatures(a) == ["ext4"]  # the first disk was not wiped
        twice = disks.DiskSource((disks.ListedDisk(a, wipe=True), disks.ListedDisk(a, wipe=True)))
        with pytest.raises(UnsafeDevice, match="listed twice"):
            disks.provide(journal.scope(), Recipe(), twice, workdir)
        journal.close()


@pytest.mark.root
def test_disk_target_on_a_listed_device(workdir: Path) -> None:
    """type: disk makes its filesystem only after the guard, and wipes only with wipe: true."""
    with loop(workdir, "96M") as dev:
        proc.run(["mkswap", dev], timeout=60)
        doc = {
            "name": "d",
            "workdir": str(workdir),
            "workloads": [{"tool": "fio", "name": "f"}],
            "targets": [{"name": "d", "type": "disk", "device": dev, "fs": "ext4"}],
        }
        spec = parse_document(doc).targets[0]
        journal = Journal(workdir / "journal.jsonl")
        with (
            pytest.raises(UnsafeDevice, match="swap signature"),
            open_target(spec, BuildContext(journal.scope(), Recipe(), workdir)),
        ):
            pass
        assert signatures(dev) == ["swap"]
        doc["targets"] = [{"name": "d", "type": "disk", "device": dev, "fs": "ext4", "wipe": True}]
        spec = parse_document(doc).targets[0]
        recipe = Recipe()
        with open_target(spec, BuildContext(journal.scope(), recipe, workdir)) as built:
            assert built.path is not None and built.block_device == dev
            (built.path / "hello").write_text("hi")
            assert built.info["disk"]["wiped"][0].startswith("swap")
            assert built.info["mount"]["fstype"] == "ext4"
        steps = "\n".join(recipe.steps)
        assert (
            steps.index("device guard passed")
            < steps.index("wipefs --all")
            < steps.index("mkfs.ext4")
        )
        assert signatures(dev) == ["ext4"]
        journal.close()


def _disk_target(workdir: Path, device: str, fs: str) -> Any:
    doc = {"name": "x", "workdir": str(workdir), "workloads": [{"name": "w", "tool": "fio"}],
           "targets": [{"name": "d", "type": "disk", "device": device, "fs": fs}]}
    return parse_document(doc).targets[0]


@pytest.mark.root
def test_a_raw_disk_target_finds_its_disk_again_under_a_new_node(workdir: Path) -> None:
    """A lab disk pulled and returned by a fault comes back as a new node under its by-id
    link: the next run takes the new node once the guard passes it again, and a disk still
    gone, or one now in use, is not taken."""
    tool("mkfs.ext4")
    link = workdir / "virtio-d1"  # stands for /dev/disk/by-id/virtio-d1
    with loop(workdir, name="a") as first, loop(workdir, name="b") as second:
        journal = Journal(workdir / "journal.jsonl")
        with open_target(_disk_target(workdir, first, "none"),
                         BuildContext(journal.scope(), Recipe(), workdir)) as built:
            assert built.refind is not None and built.refind() is None  # the same node
        journal.close()
        link.symlink_to(first)
        built = Built("raw", "disk", path=None, block_device=first, devices=[first])
        assert disk.refind(built, str(link)) is None
        link.unlink()
        assert disk.refind(built, str(link)) is None  # still pulled: fiochecks refuses the run
        link.symlink_to(second)
        assert disk.refind(built, str(link)) == {"from": first, "to": second, "by": str(link)}
        assert built.block_device == second and built.devices == [second]
        proc.run(["mkfs.ext4", "-q", first], timeout=60)
        link.unlink()
        link.symlink_to(first)
        with mounted(first, workdir / "m"), pytest.raises(UnsafeDevice, match="mounted"):
            disk.refind(built, str(link))
        assert built.block_device == second  # nothing taken that the guard refused


@pytest.mark.root
def test_a_target_with_a_filesystem_does_not_follow_its_disk(workdir: Path) -> None:
    tool("mkfs.ext4")
    with loop(workdir) as dev:
        journal = Journal(workdir / "journal.jsonl")
        with open_target(_disk_target(workdir, dev, "ext4"),
                         BuildContext(journal.scope(), Recipe(), workdir)) as built:
            # Its filesystem stays mounted on the node it was made on: a returned disk
            # is not that mount, and the runs must see the failure, not a new disk.
            assert built.refind is None
        journal.close()
