"""Each host target type built for real, used by fio, and torn down without a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import tool
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store


def run(workdir: Path, db: Path, targets: list[dict[str, Any]], **workload: Any
        ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a 1-second fio on each target; (target rows by name, first run by target)."""
    tool("fio")
    job = {"name": "w", "tool": "fio", "rw": "randrw", "rwmixread": 50, "size": "16M",
           "runtime": "1s", **workload}
    job = {k: v for k, v in job.items() if v is not None}
    doc = {"name": "t", "workdir": str(workdir), "targets": targets, "workloads": [job],
           "repeat": 1}
    outcome = run_experiment(parse_document(doc), db=db)
    assert not outcome.failed_targets, outcome.failed_targets
    assert outcome.counts == {"ok": len(targets)}
    with Store(db) as store:
        rows = {t.name: t.info for t in store.targets(outcome.experiment_id)}
        runs = {r.target: r for r in store.runs([outcome.experiment_id])}
    return rows, runs  # type: ignore[return-value]


@pytest.mark.root
def test_loopdisk_filesystems_and_a_raw_device(workdir: Path, tmp_path: Path) -> None:
    rows, runs = run(workdir, tmp_path / "l.db", [
        {"name": "x", "type": "loopdisk", "size": "400M", "fs": "xfs",
         "mkfs_options": ["-m", "reflink=0"], "mount_options": ["noatime"]},
        {"name": "e", "type": "loopdisk", "size": "128M", "fs": "ext4"},
        {"name": "raw", "type": "loopdisk", "size": "64M", "fs": "none"},
    ])
    assert rows["x"]["mount"]["fstype"] == "xfs"
    assert "noatime" in rows["x"]["mount"]["options"]
    assert any("reflink=0" in step for step in rows["x"]["recipe"])
    assert rows["e"]["mount"]["fstype"] == "ext4"
    assert "mount" not in rows["raw"]
    assert runs["raw"].argv[-1] != "" and any(a.startswith("--filename=/dev/loop")
                                              for a in runs["raw"].argv)
    for info in rows.values():
        (dev,) = info["topology"]
        assert dev["name"].startswith("loop") and dev["log-sec"] >= 512
        # a loop device passes flushes on to its backing file: the kernel says "write back"
        assert list(info["write_cache"].values()) == ["write back"]


@pytest.mark.root
def test_btrfs_raid0_spans_two_devices(workdir: Path, tmp_path: Path) -> None:
    rows, runs = run(workdir, tmp_path / "b.db", [
        {"name": "b", "type": "btrfs", "disks": 2, "size": "256M", "data": "raid0"}])
    assert len(rows["b"]["topology"]) == 2
    assert rows["b"]["mount"]["fstype"] == "btrfs"
    assert any("-d raid0" in step for step in rows["b"]["recipe"])
    io = runs["b"].annotations["device_io"]
    assert io["read_bytes"] > 0 and io["write_bytes"] > 0


@pytest.mark.root
def test_zram_is_a_new_device_removed_afterwards(workdir: Path, tmp_path: Path) -> None:
    before = {p.name for p in Path("/sys/block").glob("zram*")}
    rows, _ = run(workdir, tmp_path / "z.db", [
        {"name": "z", "type": "zram", "size": "128M", "fs": "ext4"}])
    (dev,) = rows["z"]["topology"]
    assert list(rows["z"]["write_cache"].values()) == ["write through"]  # RAM: nothing to flush
    assert dev["name"] not in before  # never an existing zram (it may be someone's swap)
    assert {p.name for p in Path("/sys/block").glob("zram*")} == before


def test_directory_target_needs_no_root_and_leaves_nothing(tmp_path: Path) -> None:
    tool("fio")
    space = tmp_path / "space"
    space.mkdir()
    (space / "keep.txt").write_text("the user's file")
    rows, runs = run(tmp_path, tmp_path / "d.db", [
        {"name": "d", "type": "directory", "path": str(space)}], direct=False)
    assert runs["d"].status == "ok"
    assert [p.name for p in space.iterdir()] == ["keep.txt"]
    assert rows["d"]["recipe"][0].startswith("# work in a private directory")


def test_a_users_fio_job_file(tmp_path: Path) -> None:
    tool("fio")
    job = tmp_path / "mine.fio"
    job.write_text("[global]\nsize=8M\nruntime=1\ntime_based=1\n"
                   "[seq]\nrw=write\nbs=64k\n[rand]\nrw=randread\nbs=4k\nstonewall\n")
    space = tmp_path / "space"
    space.mkdir()
    _, runs = run(tmp_path, tmp_path / "j.db", [
        {"name": "d", "type": "directory", "path": str(space)}], jobfile=str(job),
        rw=None, rwmixread=None, size=None, runtime=None)
    jobs = {m.tags.get("job") for m in runs["d"].metrics if m.name == "iops"}
    assert jobs == {"seq", "rand"}
    # fio reads the job file's checked copy in the run directory (issue 34), not the user's.
    copy = runs["d"].argv[-1]
    assert copy.endswith("/job.fio") and "/runs/" in copy and str(job) not in runs["d"].argv


def test_without_root_the_default_falls_back_to_a_directory(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The interpreter lives under /root here, so a real unprivileged user cannot run it;
    # the fallback is decided by the effective uid, which we fake.
    from volbench.cli.main import main
    from volbench.engine import defaults

    monkeypatch.setattr(defaults.os, "geteuid", lambda: 1000)
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: not running as root: loop disks, filesystems and throttling "
                          "need root, so the default experiment runs on one directory")
    assert "experiment default-nonroot: 1 target(s)" in out
    exp, note = defaults.default_experiment(root=True)
    assert note is None and len(exp.targets) == 4
