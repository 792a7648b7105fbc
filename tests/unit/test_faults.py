"""The `faults:` field: read and checked before anything runs; `volbench plan` shows it."""

from __future__ import annotations

import pytest

from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_text
from volbench.engine.faultrun import Bound, plan_lines, schedule
from volbench.engine.plan import closure

M1, M2 = "/dev/disk/by-id/virtio-m1", "/dev/disk/by-id/virtio-m2"
TARGETS = f"""
targets:
  - {{name: r1, type: mdraid, level: raid1, devices: [{M1}, {{path: {M2}, wipe: true}}]}}
  - {{name: n3, type: nfs, on: [r1]}}
  - {{name: slowdisk, type: loopdisk, size: 1G, limits: {{read_iops: 500}}}}
  - {{name: plain, type: loopdisk, size: 1G}}
  - {{name: i1, type: iscsi, on: [plain]}}
"""


def experiment(faults: str, extra: str = "") -> str:
    return (TARGETS + "workloads:\n  - {name: reads, tool: fio, rw: randread, runtime: 60s,"
            f" {extra}\n     faults: {faults}}}\n")


def problems(text: str) -> list[str]:
    with pytest.raises(ExperimentError) as info:
        parse_text(text, "exp.yaml")
    return [str(p) for p in info.value.problems]


def test_the_issue_example_parses_into_a_schedule() -> None:
    exp = parse_text(experiment(f"[{{at: 20s, action: fail, device: {M2}, speed_limit_max: 5000}},"
                                f" {{at: 40s, action: restore, device: {M2}}},"
                                " {at: 15s, action: stop, target: n3, for: 15s}]"))
    faults = exp.workload("reads").faults
    assert [(f.at, f.action, f.duration) for f in faults] == [
        (20.0, "fail", None), (40.0, "restore", None), (15.0, "stop", 15.0)]
    assert faults[0].device == M2 and faults[0].options == {"speed_limit_max": 5000}
    assert faults[2].target == "n3"
    lines = plan_lines(exp.workloads, exp.targets, lambda n: closure(exp, n))
    assert lines[0].startswith(f"fault reads at 20 s: fail device {M2}, speed_limit_max 5000")
    assert "-> runs on r1, n3: mdadm --fail ARRAY MEMBER; mdadm --remove" in lines[0]
    assert "-> runs on n3: rpc.nfsd 0" in lines[2]
    assert lines[3] == "fault reads at 30 s: start target n3: rpc.nfsd -G 10 THREADS"


def test_the_schedule_orders_starts_and_ends_in_time() -> None:
    exp = parse_text(experiment("[{at: 5s, action: slow, target: slowdisk, for: 10s},"
                                " {at: 15s, action: slow, target: slowdisk, percent: 50}]"))
    bound = [Bound(i, f, exp.target("slowdisk"), None) for i, f in  # type: ignore[arg-type]
             enumerate(exp.workload("reads").faults)]
    steps = schedule(bound)
    # At 15 s the first slow ends before the second starts.
    assert [(s.at, s.ends, s.bound.index) for s in steps] == [
        (5.0, False, 0), (15.0, True, 0), (15.0, False, 1)]


@pytest.mark.parametrize(("faults", "expected"), [
    ("[{at: 5s, action: fail, device: /dev/disk/by-id/virtio-zz}]",
     "workloads[0].faults[0].device: /dev/disk/by-id/virtio-zz is not a disk any target lists"),
    ("[{at: 5s, action: stop, target: n4, for: 5s}]",
     "workloads[0].faults[0].target: 'n4' is not a target of this experiment (targets are: r1, n3, "
     "slowdisk, plain, i1)"),
    ("[{at: 5s, action: cut, target: n3, for: 5s}]",
     "workloads[0].faults[0].action: 'cut' acts on a target of type iscsi, and target n3 is "
     "type nfs"),
    ("[{at: 5s, action: stop, target: r1, for: 5s}]",
     "workloads[0].faults[0].action: 'stop' acts on a target of type nfs, and target r1 is "
     "type mdraid"),
    ("[{at: 5s, action: slow, target: plain, for: 5s}]",
     "workloads[0].faults[0].action: 'slow' cuts the disk class of target plain, which has "
     "no limits:"),
    (f"[{{at: 5s, action: fail, device: {M1}}}]",
     f"workloads[0].faults[0].device: {M1} is a real disk outside the lab"),
    ("[{at: 5s, action: fail, target: r1}]",
     "workloads[0].faults[0].target: a member fault names the member disk"),
    (f"[{{at: 5s, action: restore, device: {M2}}}]",
     f"workloads[0].faults[0]: 'restore' of device {M2} at 5 s ends no fault started before it"),
    ("[{at: 5s, action: explode, target: n3}]",
     "workloads[0].faults[0].action: 'explode' is not one of"),
    ("[{at: 5s, action: stop, target: n3, device: /dev/x}]",
     "workloads[0].faults[0]: a fault names either device: or target:, not both"),
    ("[{at: 5s, action: stop}]",
     "workloads[0].faults[0]: a fault names either device: or target:, not neither"),
    ("[{at: soon, action: stop, target: n3}]",
     "workloads[0].faults[0].at: expected a duration such as 10s"),
    ("[{at: 5s, action: stop, target: n3, for: 0s}]",
     "workloads[0].faults[0].for: must be longer than 0 s"),
    ("[{at: 5s, action: stop, target: n3, for: 20s}, {at: 10s, action: stop, target: n3}]",
     "workloads[0].faults[1]: falls inside the 20 s of 'stop' at 5 s on target n3"),
    ("[{at: 5s, action: stop, target: n3, colour: red}]",
     "workloads[0].faults[0].colour: unknown field"),
    (f"[{{at: 5s, action: fail, device: {M2}}}, {{at: 9s, action: fail, device: {M2}}}]",
     f"workloads[0].faults[1]: device {M2} already has a 'fail' in effect at 9 s"),
])
def test_bad_faults_are_refused_naming_the_field(faults: str, expected: str) -> None:
    found = problems(experiment(faults))
    assert any(p.startswith(expected) for p in found), found


def test_an_iscsi_path_is_cut_and_restored_by_target() -> None:
    exp = parse_text(experiment("[{at: 5s, action: cut, target: i1},"
                                " {at: 12s, action: restore, target: i1}]"))
    assert [(f.action, f.target) for f in exp.workload("reads").faults] == [
        ("cut", "i1"), ("restore", "i1")]
    lines = plan_lines(exp.workloads, exp.targets, lambda n: closure(exp, n))
    assert "echo 0 > /sys/kernel/config/target/iscsi/IQN/tpgt_1/enable" in lines[0]


def test_a_workload_without_faults_has_none() -> None:
    exp = parse_text(experiment("[]").replace("faults: []", ""))
    assert exp.workload("reads").faults == ()


DM_TARGETS = """
targets:
  - {name: lv1, type: lvm, disks: 1, size: 1G}
  - {name: span, type: lvm, disks: 2, size: 1G}
  - {name: thin, type: lvm, layout: thin, disks: 1, size: 1G}
workloads:
  - {name: reads, tool: fio, rw: randread, runtime: 30s, faults: FAULTS}
"""


@pytest.mark.parametrize(("faults", "expected"), [
    ("[{at: 5s, action: delay, target: span, for: 5s}]",
     "workloads[0].faults[0].action: 'delay' swaps the dm table of an LV that is one linear "
     "stretch of one disk; target span is not"),
    ("[{at: 5s, action: errors, target: thin, for: 5s}]",
     "workloads[0].faults[0].action: 'errors' swaps the dm table"),
    ("[{at: 5s, action: delay, target: lv1, delay_ms: 0}]",
     "workloads[0].faults[0].delay_ms:"),
    ("[{at: 5s, action: heal, target: lv1}]",
     "workloads[0].faults[0]: 'heal' of target lv1 at 5 s ends no fault started before it"),
    ("[{at: 5s, action: exhaust, target: lv1, for: 5s}]",
     "workloads[0].faults[0].action: 'exhaust' fills the thin pool of a thin volume; target "
     "lv1 is not one"),
    ("[{at: 5s, action: exhaust, target: thin, for: 5s, error_if_no_space: 2}]",
     "workloads[0].faults[0].error_if_no_space:"),
    ("[{at: 5s, action: exhaust, target: thin, for: 5s, no_space_timeout: 0s}]",
     "workloads[0].faults[0].no_space_timeout: 0 s is not a whole number of seconds from 1 "
     "to 3600 (e.g. no_space_timeout: 8s)"),
    ("[{at: 5s, action: exhaust, target: thin, for: 5s, no_space_timeout: 2.5s}]",
     "workloads[0].faults[0].no_space_timeout: 2.5 s is not a whole number"),
    ("[{at: 5s, action: delay, target: lv1, for: 5s, no_space_timeout: 8s}]",
     "workloads[0].faults[0].no_space_timeout:"),
])
def test_dm_faults_need_a_linear_lv_on_one_disk(faults: str, expected: str) -> None:
    found = problems(DM_TARGETS.replace("FAULTS", faults))
    assert any(p.startswith(expected) for p in found), found


def test_dm_faults_plan_their_dmsetup_commands() -> None:
    exp = parse_text(DM_TARGETS.replace("FAULTS", "[{at: 5s, action: delay, target: lv1, "
                                        "for: 4s, delay_ms: 50}, {at: 12s, action: errors, "
                                        "target: lv1}, {at: 15s, action: heal, target: lv1}]"),
                     "exp.yaml")
    lines = plan_lines(exp.workloads, exp.targets, lambda name: closure(exp, name))
    assert lines[0].startswith("fault reads at 5 s: delay target lv1 for 4 s, delay_ms 50 -> "
                               "runs on lv1: dmsetup suspend LV; dmsetup load LV --table")
    assert lines[1].startswith("fault reads at 9 s: heal target lv1: dmsetup suspend LV")
    assert "flakey MAJ:MIN OFFSET 0 1" in lines[2]


def test_exhaust_takes_error_if_no_space_0_or_1() -> None:
    for value in (0, 1):
        exp = parse_text(DM_TARGETS.replace("FAULTS", "[{at: 5s, action: exhaust, target: thin, "
                                            f"for: 5s, error_if_no_space: {value}}}]"), "x.yaml")
        assert exp.workloads[0].faults[0].options == {"error_if_no_space": value}


def test_exhaust_takes_no_space_timeout_as_whole_seconds() -> None:
    exp = parse_text(DM_TARGETS.replace("FAULTS", "[{at: 5s, action: exhaust, target: thin, "
                                        "for: 20s, error_if_no_space: 0, no_space_timeout: "
                                        "1m}]"), "x.yaml")
    assert exp.workloads[0].faults[0].options == {"error_if_no_space": 0,
                                                  "no_space_timeout": 60}
