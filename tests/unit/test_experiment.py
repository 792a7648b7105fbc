"""The experiment file: broken files are refused with one message per problem, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from volbench.core.errors import ExperimentError
from volbench.engine.experiment import load, parse_text

GOOD = """
name: plain-vs-stripe
targets:
  - {name: xfs-1disk, type: loopdisk, size: 2G, fs: xfs}
  - {name: btrfs-stripe-2, type: btrfs, disks: 2, size: 2G, data: raid0}
  - {name: standard-disk, type: loopdisk, size: 2G, fs: xfs,
     limits: {read_iops: 500, write_iops: 500, read_bps: 50M}}
workloads:
  - {name: rand4k, tool: fio, rw: [randread, randwrite], bs: 4k, iodepth: [1, 32],
     size: [1G], runtime: 10s}
repeat: 5
baseline: xfs-1disk
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ExperimentError) as info:
        parse_text(text, "exp.yaml")
    return [str(p) for p in info.value.problems]


def test_the_issue_example_parses_into_typed_values() -> None:
    exp = parse_text(GOOD)
    assert [t.name for t in exp.targets] == ["xfs-1disk", "btrfs-stripe-2", "standard-disk"]
    std = exp.target("standard-disk")
    assert std.limits.read_iops == 500 and std.limits.read_bps == 50 * 2**20
    assert std.limits.write_bps is None
    rand = exp.workload("rand4k")
    assert rand.matrix["rw"] == ("randread", "randwrite")
    assert rand.matrix["iodepth"] == (1, 32)
    assert rand.matrix["runtime"] == (10.0,)
    assert exp.repeat.min == exp.repeat.max == 5 and not exp.repeat.adaptive
    assert exp.baseline == "xfs-1disk"


@pytest.mark.parametrize(("text", "expected"), [
    ("targets: []\nworkloads: []\n", ["targets: no targets", "workloads: no workloads"]),
    (GOOD.replace("type: btrfs", "type: btrfss"),
     ["targets[1].type: unknown target type 'btrfss' (did you mean 'btrfs'?)"]),
    (GOOD.replace("iodepth: [1, 32]", "iodeth: [1, 32]"),
     ["workloads[0].iodeth: unknown field (did you mean 'iodepth'?)"]),
    (GOOD.replace("bs: 4k", "bs: fourk"),
     ["workloads[0].bs: expected a size such as 4k, 1M or 2G, got 'fourk'"]),
    (GOOD.replace("randwrite]", "randwirte]"),
     ["workloads[0].rw[1]: 'randwirte' is not one of"]),
    (GOOD.replace("baseline: xfs-1disk", "baseline: xfs1"),
     ["baseline: 'xfs1' is not a target name (did you mean 'xfs-1disk'?)"]),
    (GOOD.replace("repeat: 5", "repeat: many"),
     ["repeat: expected a number of runs or {min, max, until}, got 'many'"]),
    (GOOD.replace("repeat: 5", "repeat: {min: 5, max: 2}"),
     ["repeat.max: must be at least min (5), got 2"]),
    (GOOD.replace("read_iops: 500,", "read_iops: -1,"),
     ["targets[2].limits.read_iops: must be at least 1, got -1"]),
    (GOOD.replace("limits: {", "limits: {rd_iops: 5, "),
     ["targets[2].limits.rd_iops: unknown field (did you mean 'read_iops'?)"]),
    (GOOD.replace("data: raid0", "data: raid0, disks: 1").replace("disks: 2, ", ""),
     ["targets[1].data: profile raid0 needs at least 2 disks"]),
    (GOOD.replace("name: btrfs-stripe-2", "name: xfs-1disk"),
     ["targets[1].name: 'xfs-1disk' is used by another entry of targets"]),
    (GOOD.replace("tool: fio", "tool: fiio"),
     ["workloads[0].tool: unknown tool 'fiio' (did you mean 'fio'?)"]),
    (GOOD + "order: random\n", ["order: 'random' is not one of: interleaved, shuffled"]),
    ("name: x\ntargets:\n  - name: a\n   type: loopdisk\n", ["line 4, column 4: not valid YAML"]),
    ("- just\n- a list\n", ["(top level): expected a mapping of fields, got a list"]),
    (GOOD.replace("fs: xfs}", "fs: zfs}", 1), ["targets[0].fs: 'zfs' is not one of"]),
    (GOOD.replace("rw: [randread, randwrite]", "rw: randread, rwmixread: 70"),
     ["workloads[0].rwmixread: only applies to mixed modes"]),
])
def test_broken_files_name_the_field_and_the_fix(text: str, expected: list[str]) -> None:
    found = problems(text)
    for want in expected:
        assert any(p.startswith(want) for p in found), f"{want!r} not in {found}"


def test_all_problems_are_reported_at_once() -> None:
    text = GOOD.replace("type: btrfs", "type: nope").replace("bs: 4k", "bs: x") \
        .replace("repeat: 5", "repeat: 0")
    found = problems(text)
    assert len(found) == 3
    with pytest.raises(ExperimentError, match=r"exp.yaml: 3 problem\(s\)"):
        parse_text(text, "exp.yaml")


def test_adaptive_repeat_policy() -> None:
    exp = parse_text(GOOD.replace("repeat: 5", "repeat: {min: 3, max: 20, until: decided}"))
    assert (exp.repeat.min, exp.repeat.max, exp.repeat.until) == (3, 20, "decided")
    assert exp.repeat.adaptive


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match="cannot read the file"):
        load(tmp_path / "nope.yaml")


def test_the_spec_hash_ignores_formatting_but_not_content() -> None:
    a = parse_text(GOOD)
    b = parse_text(GOOD.replace("repeat: 5", "repeat:   5  "))
    c = parse_text(GOOD.replace("repeat: 5", "repeat: 6"))
    assert a.spec_hash == b.spec_hash != c.spec_hash


def test_on_names_a_target_and_is_only_for_types_built_on_others() -> None:
    found = problems(GOOD.replace("fs: xfs}", "fs: xfs, on: nowhere}", 1))
    assert "targets[0].on: type loopdisk is built on no other target, got 1 (remove on:)" in found
    assert any(p.startswith("targets[0].on: 'nowhere' is not a target name") for p in found)
