"""Adaptive repetition: extra rounds only for comparisons not yet decided."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from support import tool
from volbench.adaptive import Pending, pending
from volbench.experiment import parse_document
from volbench.model import Metric, Parsed, RunResult, Status, canonical_json
from volbench.runner import run_experiment
from volbench.store import Store


def runs_of(target: str, iops: list[float], params: dict[str, object] | None = None
            ) -> list[RunResult]:
    params = params or {"rw": "randread"}
    return [RunResult(target, "w", params, i + 1, Status.OK, 0, 1,
                      parsed=Parsed((Metric("iops", v, "op/s", {"op": "read"}),)))
            for i, v in enumerate(iops)]


def test_a_clear_difference_is_decided_and_a_noisy_one_is_not() -> None:
    rng = random.Random(1)
    base = runs_of("base", [1000 + rng.gauss(0, 5) for _ in range(3)])
    slow = runs_of("slow", [500 + rng.gauss(0, 5) for _ in range(3)])
    noisy = runs_of("noisy", [1000 + rng.gauss(0, 150) for _ in range(3)])
    found = pending(base + slow + noisy, "base")
    assert found == {Pending("noisy", "w", canonical_json({"rw": "randread"}))}


def test_equivalence_within_a_generous_threshold_is_decided() -> None:
    base = runs_of("base", [1000, 1010, 990, 1005])
    same = runs_of("same", [1002, 998, 1006, 995])
    assert pending(base + same, "base", {"iops": 0.10}) == set()
    assert pending(base + same, "base", {"iops": 0.001})  # too strict to decide yet


def test_descriptive_metrics_failed_runs_and_missing_baselines_are_ignored() -> None:
    base = runs_of("base", [1000, 1001, 999])
    other = [RunResult("x", "w", {"rw": "randread"}, i, Status.OK, 0, 1, parsed=Parsed(
        (Metric("io_bytes", float(i), "B", {"op": "read"}),))) for i in range(3)]
    failed = [RunResult("y", "w", {"rw": "randread"}, 1, Status.FAILED, 0, 1)]
    orphan = runs_of("z", [1, 2, 300], params={"rw": "write"})
    assert pending(base + other + failed + orphan, "base") == set()


@pytest.mark.root
def test_extra_rounds_go_only_to_undecided_pairs(workdir: Path, tmp_path: Path) -> None:
    tool("fio")
    doc = {
        "name": "adaptive", "workdir": str(workdir),
        "targets": [{"name": "base", "type": "loopdisk", "size": "512M"},
                    {"name": "capped", "type": "loopdisk", "size": "512M",
                     "limits": {"read_iops": 200}},
                    {"name": "twin", "type": "loopdisk", "size": "512M"}],
        "workloads": [{"name": "r", "tool": "fio", "rw": "randread", "size": "16M",
                       "runtime": "1s"}],
        "repeat": {"min": 2, "max": 4, "until": "decided"},
        # Equivalence within 0.01 % cannot be shown with a handful of runs: twin stays open.
        "thresholds": {"iops": 0.0001, "bw": 0.0001, "lat_mean": 0.0001, "clat_p99": 0.0001},
        "baseline": "base",
    }
    outcome = run_experiment(parse_document(doc), db=tmp_path / "a.db")
    with Store(tmp_path / "a.db") as store:
        runs = store.runs([outcome.experiment_id])
    count = Counter(r.target for r in runs if r.status is Status.OK)
    assert count["capped"] == 2  # a 200 IOPS cap is decided at once
    assert count["base"] == max(count.values()) <= 4
    assert 2 <= count["twin"] <= count["base"]
    assert all(r.repetition <= 4 for r in runs)


def test_per_run_percentiles_do_not_keep_repetition_going_unless_asked() -> None:
    def runs(target: str, iops: list[float], p99: list[float]) -> list[RunResult]:
        return [RunResult(target, "w", {"rw": "randread"}, i + 1, Status.OK, 0, 1,
                          parsed=Parsed((Metric("iops", a, "op/s", {"op": "read"}),
                                         Metric("clat_p99", b, "s", {"op": "read"}))))
                for i, (a, b) in enumerate(zip(iops, p99, strict=True))]

    base = runs("base", [500, 501, 500], [0.010, 0.030, 0.015])
    fast = runs("fast", [1000, 1001, 999], [0.012, 0.004, 0.028])
    assert pending(base + fast, "base") == set()  # IOPS decided; the p99s are noise
    assert pending(base + fast, "base", metrics=["clat_p99"])
