"""The rebuild after md's `restore`: its expected length from the member's size and the
limits, its rate and share of the disks' byte cap from /proc/mdstat's progress, and the
workload's share in the rebuild's phase."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.config.faults import FaultSpec
from volbench.core.model import Parsed, Series
from volbench.engine.faultphases import phase_metrics, rebuild
from volbench.faults import md
from volbench.stats import phases

M1, M2 = "/dev/disk/by-id/virtio-m1", "/dev/disk/by-id/virtio-m2"
MiB = 2**20
# A 64 MiB member (65536 KiB as md counts it), disks capped at 4 MiB/s, md at 100000 KiB/s.
FACTS = {"speed_limits": {"speed_limit_min": 1000, "speed_limit_max": 200000},
         "set": {"speed_limit_max": 100000}, "member_kib": 65536, "bitmap": "none",
         "cap_bps": 4 * MiB}


def events(facts: dict[str, object]) -> list[dict[str, object]]:
    return [{"action": "fail", "phase": "fail", "done_s": 2.0, "error": None, "facts": facts},
            {"action": "restore", "phase": "restore", "started_s": 3.5, "done_s": 4.0,
             "error": None}]


def progress(t: float, done_kib: int) -> dict[str, object]:
    return {"t": t, "rebuild": {"what": "recovery", "fraction": done_kib / 65536,
                                "done_kib": done_kib, "total_kib": 65536}}


def test_expected_length_is_size_over_the_lowest_limit() -> None:
    assert phases.rebuild_expected(64 * MiB, (4 * MiB, 100000 * 1024)) == 16.0
    assert phases.rebuild_expected(64 * MiB, (4 * MiB, 2 * MiB)) == 32.0
    assert phases.rebuild_expected(64 * MiB, (None, 2 * MiB)) == 32.0
    assert phases.rebuild_expected(64 * MiB, (None, None)) is None
    assert phases.rebuild_expected(0, (4 * MiB,)) is None


def test_progress_rate_is_done_over_time_between_first_and_last() -> None:
    assert phases.progress_rate([(5.0, 0.0), (6.0, 3.0), (9.0, 12.0)]) == 3.0
    assert phases.progress_rate([(5.0, 0.0)]) is None
    assert phases.progress_rate([(5.0, 0.0), (5.5, 3.0)]) is None


def test_the_rebuild_is_measured_beside_its_prediction() -> None:
    # 4096 KiB a second from 4 s: done at 20 s, the first sample without a rebuild at
    # 21 s; the length is the progress's (16 s), not the samples' (17 s).
    samples = [progress(float(t), 4096 * (t - 4)) for t in range(5, 20)]
    samples.append({"t": 21.0, "rebuild": None})
    got = {m.name: m for m in rebuild(events(FACTS), samples)}
    assert got["rebuild_seconds"].value == 16.0
    assert got["rebuild_expected_seconds"].value == 16.0
    assert got["rebuild_expected_seconds"].note == \
        "64 MiB at min(cap 4 MiB/s, speed_limit_max 100000 KiB/s)"
    assert got["rebuild_bw"].value == pytest.approx(4 * MiB)
    assert got["rebuild_share"].value == pytest.approx(1.0)


def test_progress_span_extrapolates_within_what_is_known() -> None:
    points = [(5.0, 4.0), (9.0, 12.0)]  # 2 a second: started at 3 s, 20 done at 13 s
    assert phases.progress_span(points, 20.0, 0.0, 100.0) == 10.0
    assert phases.progress_span(points, 20.0, 4.0, 12.0) == 8.0  # known bounds win
    assert phases.progress_span(points[:1], 20.0, 0.0, 100.0) is None


def test_md_own_speed_limit_counts_when_the_fault_sets_none() -> None:
    facts = {**FACTS, "set": {}, "speed_limits": {"speed_limit_max": 2048}, "cap_bps": None}
    got = {m.name: m for m in rebuild(events(facts), [progress(5.0, 0), progress(8.0, 6144)])}
    assert got["rebuild_expected_seconds"].value == 32.0  # 64 MiB at 2 MiB/s
    assert got["rebuild_expected_seconds"].note == "64 MiB at min(speed_limit_max 2048 KiB/s)"
    assert got["rebuild_bw"].value == pytest.approx(2 * MiB)
    assert "rebuild_share" not in got  # no cap known (not in the lab)


def test_a_bitmap_makes_no_prediction() -> None:
    facts = {**FACTS, "bitmap": "+8"}
    (expected,) = [m for m in rebuild(events(facts), [progress(5.0, 0), progress(6.0, 10)])
                   if m.name == "rebuild_expected_seconds"]
    assert expected.value is None and "bitmap (+8)" in expected.note


def test_the_workload_share_is_its_bytes_in_the_rebuild_phase_over_the_cap() -> None:
    # 64k reads at 4 MiB/s before; 1 MiB/s from 5 s on (the rebuild takes the rest).
    bw = Series("bw", "B/s", tuple((float(t), float(4 * MiB if t <= 4 else MiB))
                                   for t in range(1, 21)), {"op": "read"})
    iops = Series("iops", "op/s", tuple((t, v / 65536) for t, v in bw.points), {"op": "read"})
    samples = [progress(float(t), 3072 * (t - 4)) for t in range(5, 20)]
    got = {(m.name, m.tags.get("phase")): m.value for m in phase_metrics(
        Parsed(series=(iops, bw)), events(FACTS), 20.0, {}, samples).metrics}
    assert got[("workload_share", "restore")] == pytest.approx(0.25)
    assert got[("rebuild_share", None)] == pytest.approx(0.75)


def test_md_fail_records_the_members_byte_cap_and_the_array(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(md, "speed_limits", lambda: {"speed_limit_max": 200000})
    monkeypatch.setattr(md, "array_facts", lambda array: {"member_kib": 65536})
    built = md.Built("r1", "mdraid", None, "/dev/md127", info={
        "device": "/dev/md127", "level": "raid1",
        "disks": [{"device": "/dev/vda", "listed": M1}, {"device": "/dev/vdb", "listed": M2}]})
    caps = {M1: {"iops": 2000, "bps": 8 * MiB}, M2: {"iops": 2000, "write_bps": 4 * MiB}}
    action = md.fail(FaultSpec(2, "fail", device=M2), built, caps)
    assert action.facts["cap_bps"] == 4 * MiB  # the lowest byte cap of the members
    assert action.facts["member_kib"] == 65536
    assert md.fail(FaultSpec(2, "fail", device=M2), built).facts["cap_bps"] is None


def test_array_facts_read_the_member_size_and_bitmap_from_sysfs(tmp_path: Path) -> None:
    (tmp_path / "md127" / "md" / "bitmap").mkdir(parents=True)
    (tmp_path / "md127" / "md" / "component_size").write_text("64512\n")
    (tmp_path / "md127" / "md" / "bitmap" / "location").write_text("none\n")
    assert md.array_facts("/dev/md127", tmp_path) == {"member_kib": 64512, "bitmap": "none"}
    assert md.array_facts("/dev/md126", tmp_path) == {}
