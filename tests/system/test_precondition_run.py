"""precondition: on real loop disks: discard punches the image, fill writes it N times,
the state is recorded per target and per run, and a listed disk without wipe is refused."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from support import tool
from volbench.cli.main import main
from volbench.config.precondition import Precondition
from volbench.core.errors import ExperimentError, UnsafeDevice
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store
from volbench.system import proc
from volbench.system.journal import Journal
from volbench.system.recipe import Recipe
from volbench.targets import BuildContext, open_target

MiB = 2**20


def document(workdir: Path, *targets: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": "pre", "workdir": str(workdir), "targets": list(targets),
            "workloads": [{"name": "w", "tool": "fio", "rw": "randwrite", "bs": "64k",
                           "size": "16M", "runtime": "1s"}], "repeat": 1, **more}


@contextmanager
def loop(workdir: Path, size: str, name: str) -> Iterator[str]:
    """A loop device of the test's own on a sparse image: "a disk of the user's"."""
    image = workdir / f"{name}.img"
    proc.run(["truncate", "-s", size, str(image)], timeout=30)
    device = proc.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                      timeout=60).stdout.strip()
    try:
        yield device
    finally:
        proc.run(["losetup", "--detach", device], timeout=60)
        image.unlink()


def allocated(path: str) -> int:
    """Bytes the file really holds (st_blocks counts 512-byte units)."""
    return os.stat(path).st_blocks * 512


def build(workdir: Path, target: dict[str, Any]) -> Any:
    spec = parse_document(document(workdir, target)).targets[0]
    journal = Journal(workdir / "journal.jsonl")
    return journal, open_target(spec, BuildContext(journal.scope(), Recipe(), workdir))


@pytest.mark.root
@pytest.mark.parametrize("discard", [False, True])
def test_discard_punches_the_loop_image(workdir: Path, discard: bool) -> None:
    tool("blkdiscard")
    # A preallocated image holds every block; a loop device punches holes on discard.
    target = {"name": "raw", "type": "loopdisk", "size": "64M", "fs": "none",
              "preallocate": True}
    if discard:
        target["precondition"] = {"discard": True}
    journal, opened = build(workdir, target)
    with opened as built:
        held = allocated(built.info["image"])
        state = built.info["state"]
    journal.close()
    if discard:
        assert held < MiB, held
        assert state["state"] == "fresh" and state["precondition"]["discard"]["seconds"] >= 0
    else:
        assert held >= 64 * MiB
        assert state == {"state": "fresh"}


@pytest.mark.root
def test_fill_writes_the_raw_device_twice_and_the_runs_record_it(
        workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool("fio")
    doc = document(workdir, {"name": "raw", "type": "loopdisk", "size": "64M", "fs": "none",
                             "precondition": {"discard": True, "fill": "2x"}},
                   {"name": "plain", "type": "loopdisk", "size": "64M", "fs": "ext4"})
    outcome = run_experiment(parse_document(doc), db=tmp_path / "r.db")
    assert outcome.counts == {"ok": 2}
    with Store(tmp_path / "r.db") as store:
        info = {t.name: t.info for t in store.targets(outcome.experiment_id)}
        runs = {r.target: r for r in store.runs([outcome.experiment_id])}
    fill = info["raw"]["state"]["precondition"]["fill"]
    assert info["raw"]["state"]["state"] == "preconditioned"
    assert fill["what"] == "whole device" and fill["passes"] == 2
    assert fill["bytes_written"] == 2 * 64 * MiB  # fio's count
    assert fill["device_bytes_written"] >= 2 * 64 * MiB  # the kernel's (/proc/diskstats)
    assert len(fill["pass_seconds"]) == 2 and fill["seconds"] > 0
    assert sum("--rw=write" in step for step in info["raw"]["recipe"]) == 2
    assert info["plain"]["state"] == {"state": "fresh"}
    assert runs["raw"].annotations["target_state"] == {"state": "preconditioned",
                                                       "runs_before": 0}
    assert runs["plain"].annotations["target_state"] == {"state": "fresh", "runs_before": 0}
    # the same target without precondition: compare says the states differ
    again = document(workdir, {"name": "raw", "type": "loopdisk", "size": "64M", "fs": "none"},
                     repeat=2, warmup=1)
    assert run_experiment(parse_document(again), db=tmp_path / "fresh.db").counts == {"ok": 3}
    with Store(tmp_path / "fresh.db") as store:
        # the warm-up run writes to the device too: it counts
        assert sorted(r.annotations["target_state"]["runs_before"]
                      for r in store.runs([1])) == [0, 1, 2]
    assert main(["compare", str(tmp_path / "fresh.db"), str(tmp_path / "r.db")]) == 0
    assert "- target raw: A was fresh, B preconditioned: " in capsys.readouterr().out


@pytest.mark.root
@pytest.mark.parametrize(("fs", "nodiscard", "least"), [
    ("ext4", ["-E", "nodiscard"], 80 * MiB),
    # btrfs's free space is an estimate (statvfs said 253 MiB of 256 and it took 183):
    # the fill writes until ENOSPC instead of trusting it. Here its metadata takes 2 x 32
    # MiB (DUP), so a file gets ~79 MiB of the 160.
    ("btrfs", ["-K"], 64 * MiB)])
def test_fill_of_a_mounted_target_writes_its_free_space(workdir: Path, fs: str,
                                                         nodiscard: list[str],
                                                         least: int) -> None:
    tool("fio")
    # mkfs without its own discard: the sparse image shows what the fill wrote.
    journal, opened = build(workdir, {
        "name": "e", "type": "loopdisk", "size": "160M", "fs": fs,
        "mkfs_options": nodiscard, "precondition": {"fill": "2x"}})
    with opened as built:
        assert built.path is not None
        fill = built.info["state"]["precondition"]["fill"]
        held = allocated(built.info["image"])
        assert not (built.path / ".volbench-precondition.fill").exists()  # removed
    journal.close()
    assert built.info["state"]["state"] == "filled"
    assert fill["what"] == "free space of the filesystem"
    assert len(fill["bytes_per_pass"]) == 2 and fill["bytes_written"] == sum(
        fill["bytes_per_pass"])
    assert all(least < n < 160 * MiB for n in fill["bytes_per_pass"]), fill
    assert fill["device_bytes_written"] >= fill["bytes_written"]
    assert held > least  # the blocks stay written after the file is gone


@pytest.mark.root
def test_a_listed_disk_without_wipe_is_not_discarded(workdir: Path) -> None:
    tool("blkdiscard")
    with loop(workdir, "32M", name="user") as dev:
        image = str(workdir / "user.img")
        # "the user's data": every block written
        proc.run(["dd", "if=/dev/urandom", f"of={dev}", "bs=1M", "count=32", "oflag=direct",
                  "status=none"], timeout=120)
        listed = {"name": "d", "type": "disk", "device": dev, "fs": "none",
                  "precondition": {"discard": True}}
        with pytest.raises(ExperimentError, match=r"precondition\.discard: .* without wipe: "):
            parse_document(document(workdir, listed))
        # Past the file check (a spec made in code), the build refuses it too.
        plain = {k: v for k, v in listed.items() if k != "precondition"}
        spec = replace(parse_document(document(workdir, plain)).targets[0],
                       precondition=Precondition(discard=True))
        journal = Journal(workdir / "journal.jsonl")
        with (pytest.raises(UnsafeDevice, match="without wipe: true"),
              open_target(spec, BuildContext(journal.scope(), Recipe(), workdir))):
            pass
        assert allocated(image) >= 32 * MiB  # untouched
        # wipe: true allows it
        journal, opened = build(workdir, {**listed, "wipe": True})
        with opened as built:
            assert built.info["state"]["state"] == "fresh"
            assert allocated(image) < MiB
        journal.close()
