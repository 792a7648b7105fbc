"""Plan: targets × workloads × matrix × repetitions, in the chosen order."""

from __future__ import annotations

from volbench.engine.experiment import parse_document
from volbench.engine.plan import Plan, make_plan

DOC = {
    "name": "p",
    "targets": [{"name": "a", "type": "loopdisk"}, {"name": "b", "type": "loopdisk"},
                {"name": "c", "type": "btrfs", "disks": 2, "size": "1G"}],
    "workloads": [{"name": "w", "tool": "fio", "rw": ["randread", "randrw"],
                   "rwmixread": [50, 70], "iodepth": [1, 8]}],
    "repeat": 3,
}


def plan(**changes: object) -> Plan:
    return make_plan(parse_document({**DOC, **changes}), seed=7)


def test_matrix_drops_rwmixread_for_modes_that_do_not_mix() -> None:
    cases = [c.params for c in plan().cases]
    # randread × 2 depths (no rwmixread) + randrw × 2 mixes × 2 depths
    assert len(cases) == 2 + 4
    assert all("rwmixread" not in p for p in cases if p["rw"] == "randread")
    assert {(p["rwmixread"], p["iodepth"]) for p in cases if p["rw"] == "randrw"} == {
        (50, 1), (50, 8), (70, 1), (70, 8)}


def test_interleaved_order_runs_each_case_on_every_target_back_to_back() -> None:
    runs = plan().runs()
    assert len(runs) == 3 * 6 * 3
    assert [r.repetition for r in runs] == sorted(r.repetition for r in runs)
    first_round = runs[: 6 * 3]
    assert [r.target for r in first_round[:3]] == ["a", "b", "c"]
    assert len({r.case_key for r in first_round}) == len(first_round)


def test_sequential_order_finishes_one_target_before_the_next() -> None:
    p = plan(order="sequential")
    runs = p.runs()
    assert [r.target for r in runs] == ["a"] * 18 + ["b"] * 18 + ["c"] * 18
    assert [g.measured for g in p.groups] == [("a",), ("b",), ("c",)]
    assert p.loop_devices() == 2  # one target at a time; btrfs has two disks


def test_shuffled_order_is_reproducible_from_its_seed_and_keeps_rounds() -> None:
    a = plan(order="shuffled").runs()
    b = make_plan(parse_document({**DOC, "order": "shuffled"}), seed=7).runs()
    c = make_plan(parse_document({**DOC, "order": "shuffled"}), seed=8).runs()
    assert a == b and a != c
    assert [r.repetition for r in a] == sorted(r.repetition for r in a)


def test_warmup_rounds_come_first_and_are_marked() -> None:
    runs = plan(warmup=1).runs()
    assert all(r.warmup for r in runs[:18]) and not any(r.warmup for r in runs[18:])
    assert len({r.run_key for r in runs}) == len(runs)


def test_estimate_and_resources() -> None:
    p = plan()
    # 54 runs of 10 s fio + overheads, 3 target builds
    assert 54 * 10 < p.estimate() < 54 * 12 + 3 * 5
    assert p.loop_devices() == 4
    assert p.disk_space() == 4 * 2**30


def test_targets_are_built_after_what_they_are_built_on() -> None:
    from dataclasses import replace

    from volbench.engine.plan import build_order, closure

    exp = parse_document(DOC)
    # c is built on a, a on b (as an NFS export of an LV would be): b, a, c.
    targets = (replace(exp.target("a"), on=("b",)), exp.target("b"),
               replace(exp.target("c"), on=("a",)))
    exp = replace(exp, targets=targets)
    assert build_order(exp) == ["b", "a", "c"]
    assert closure(exp, "c") == {"a", "b", "c"}
    seq = make_plan(replace(exp, order="sequential"), seed=1)
    assert [(g.members, g.measured) for g in seq.groups] == [
        (("b", "a"), ("a",)), (("b",), ("b",)), (("b", "a", "c"), ("c",))]
    assert {r.target for r in seq.runs_for(seq.groups[2])} == {"c"}
    assert make_plan(exp, seed=1).groups[0].members == ("b", "a", "c")
