"""type: image — thin (sparse) vs thick (fallocate) vs eager (zeroed) image files, on a
directory or on another target's mount, attached as loop disks and used by fio."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from support import tool
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document
from volbench.engine.runner import run_experiment
from volbench.store.db import Store

MiB = 1024**2


def run(
    workdir: Path, db: Path, targets: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One short fio random read/write run per target: (target info by name, run by target)."""
    tool("fio")
    doc = {
        "name": "img",
        "workdir": str(workdir),
        "targets": targets,
        "repeat": 1,
        "workloads": [{"name": "w", "tool": "fio", "rw": "randrw", "size": "16M", "runtime": "1s"}],
    }
    outcome = run_experiment(parse_document(doc), db=db)
    assert not outcome.failed_targets, outcome.failed_targets
    assert outcome.counts == {"ok": len(targets)}
    with Store(db) as store:
        rows = {t.name: t.info for t in store.targets(outcome.experiment_id)}
        runs = {r.target: r for r in store.runs([outcome.experiment_id])}
    return rows, runs


@pytest.mark.root
def test_thin_thick_and_eager_images(workdir: Path, tmp_path: Path) -> None:
    size = 128 * MiB
    rows, runs = run(
        workdir,
        tmp_path / "i.db",
        [
            {"name": a, "type": "image", "size": "128M", "allocation": a, "fs": "ext4"}
            for a in ("thin", "thick", "eager")
        ],
    )
    allocated = {name: info["allocated_bytes"] for name, info in rows.items()}
    # Measured right after creation, before mkfs: a sparse file has (next to) nothing.
    assert allocated["thin"] < size // 100
    assert allocated["thick"] >= size and allocated["eager"] >= size
    assert any(step.startswith("fallocate") for step in rows["thick"]["recipe"])
    assert any(step.startswith("dd if=/dev/zero") for step in rows["eager"]["recipe"])
    assert any(step.startswith("truncate") for step in rows["thin"]["recipe"])
    for name, info in rows.items():
        assert info["allocation"] == name and info["mount"]["fstype"] == "ext4"
        (dev,) = info["topology"]
        assert dev["name"].startswith("loop")
        assert info["holder"]["target"]  # the filesystem the image lives on is recorded
        io = runs[name].annotations["device_io"]
        assert io["read_bytes"] > 0 and io["write_bytes"] > 0
        assert not Path(info["image"]).exists()  # removed at teardown


@pytest.mark.root
def test_image_in_a_directory_leaves_the_users_files(workdir: Path, tmp_path: Path) -> None:
    store = workdir / "datastore"
    store.mkdir()
    (store / "keep.txt").write_text("the user's file")
    rows, _ = run(
        workdir / "w",
        tmp_path / "d.db",
        [{"name": "raw", "type": "image", "size": "64M", "dir": str(store), "fs": "none"}],
    )
    info = rows["raw"]
    assert Path(info["image"]).parent.parent == store
    assert "mount" not in info
    assert sorted(os.listdir(store)) == ["keep.txt"]


@pytest.mark.root
def test_image_on_another_target(workdir: Path, tmp_path: Path) -> None:
    """A thin image on an ext4 loop disk: the disk is built first and removed last."""
    rows, runs = run(
        workdir,
        tmp_path / "n.db",
        [
            {"name": "image", "type": "image", "size": "64M", "fs": "ext4", "on": ["store"]},
            {"name": "store", "type": "loopdisk", "size": "160M", "fs": "ext4"},
        ],
    )
    info, store = rows["image"], rows["store"]
    assert info["on"]["target"] == "store" and info["on"]["type"] == "loopdisk"
    assert info["holder"]["target"] == store["mount"]["target"]
    assert info["image"].startswith(store["mount"]["target"] + "/volbench-image-image-")
    assert runs["image"].annotations["device_io"]["write_bytes"] > 0


def test_image_fields_are_checked(tmp_path: Path) -> None:
    doc = {
        "workloads": [{"tool": "fio", "name": "f"}],
        "targets": [
            {"name": "a", "type": "image", "allocation": "thik", "dir": str(tmp_path / "missing")},
            {"name": "b", "type": "image", "on": ["a", "c"]},
            {"name": "c", "type": "image", "size": "1M", "dir": str(tmp_path), "on": ["a"]},
        ],
    }
    with pytest.raises(ExperimentError) as info:
        parse_document(doc)
    text = str(info.value)
    assert "'thik' is not one of: thin, thick, eager" in text and "did you mean 'thick'" in text
    assert "is not an existing directory" in text
    assert "targets[1].on: type image is built on 0 to 1 targets, got 2" in text
    assert "targets[2].size: must be at least 16M" in text
    assert "targets[2].dir: give either dir: or on:, not both" in text
