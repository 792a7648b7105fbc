"""`volbench compare A.db B.db`: B against A per case, with environment checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import ENV, load, make_db, make_run
from volbench.cli.main import main
from volbench.core.model import RunResult
from volbench.report.compare import compare_reports, environment_differences


def _runs(iops: list[float], lat: float) -> list[RunResult]:
    return [
        make_run(t, {"iops": v, "lat_mean": lat}, rep, started=rep * 10.0 + i)
        for rep, v in enumerate(iops, 1)
        for i, t in enumerate(("xfs", "ext4"))
    ]


def _env(kernel: str) -> dict[str, object]:
    checked = dict(ENV["checked"])  # type: ignore[call-overload]
    checked["kernel"] = kernel
    return {**ENV, "checked": checked}


@pytest.fixture
def sets(tmp_path: Path) -> tuple[Path, Path]:
    before = make_db(
        tmp_path / "before.db",
        _runs([1000.0, 1001.0, 999.0, 1000.0], 0.002),
        environment=_env("6.1.0"),
    )
    after = make_db(
        tmp_path / "after.db",
        _runs([1200.0, 1201.0, 1199.0, 1200.0], 0.002),
        environment=_env("6.18.0"),
    )
    return before, after


def test_b_is_compared_with_a_case_by_case(sets: tuple[Path, Path]) -> None:
    result = compare_reports(load(sets[0]), load(sets[1]))
    got = {(v.target, v.candidate.metric): v for v in result.verdicts}
    assert set(got) == {
        ("xfs", "iops"),
        ("ext4", "iops"),
        ("xfs", "lat_mean"),
        ("ext4", "lat_mean"),
    }
    assert got[("xfs", "iops")].verdict == "better"
    assert got[("xfs", "iops")].phrase.startswith("faster: +20.0 % [")
    assert got[("xfs", "lat_mean")].verdict == "equivalent"
    assert got[("xfs", "iops")].baseline.target == "xfs"  # same target, other set
    # The two iops comparisons are the headline family; latency is a description.
    family = got[("xfs", "iops")].family
    assert family is not None and (family.method, family.size) == ("Holm", 2)
    assert got[("xfs", "lat_mean")].phrase.startswith("secondary, not a verdict: ")


def test_kernel_mismatch_is_warned_about(sets: tuple[Path, Path]) -> None:
    result = compare_reports(load(sets[0]), load(sets[1]))
    assert [(d.field, d.a, d.b) for d in result.differences] == [("kernel", "6.1.0", "6.18.0")]
    assert any("kernel: 6.1.0 (A) vs 6.18.0 (B)" in w for w in result.warnings)
    same = compare_reports(load(sets[0]), load(sets[0]))
    assert same.differences == [] and not any("environment" in w for w in same.warnings)


def test_tool_versions_are_compared_too() -> None:
    a = {"checked": {"kernel": "6.1", "tools": {"fio": "fio-3.33", "pgbench": None}}}
    b = {"checked": {"kernel": "6.1", "tools": {"fio": "fio-3.36"}}}
    found = [(d.field, d.a, d.b) for d in environment_differences(a, b)]
    assert found == [("tools.fio", "fio-3.33", "fio-3.36"), ("tools.pgbench", "", "(missing)")]


def test_lab_disks_are_compared_too() -> None:
    """Seed 000 on write-back lab disks (2026-11-23) against write-through ones: the disks
    are what changed, and compare must say so."""
    def env(write_cache: str | None) -> dict[str, Any]:
        disk: dict[str, Any] = {"name": "plain", "class": "standard",
                                "caps": {"iops": 500}, "size": 2**30}
        if write_cache:
            disk["write_cache"] = write_cache
        return {"checked": {"kernel": "6.1"}, "lab": {"disks": [disk]}}

    found = [(d.field, d.a, d.b) for d in environment_differences(env(None), env("write-through"))]
    assert found == [("lab disk plain", "standard: iops 500, write-back; 1 GiB",
                      "standard: iops 500, write-through; 1 GiB")]
    assert environment_differences(env("write-back"), env(None)) == []  # old records: write-back
    host = {"checked": {"kernel": "6.1"}}
    found = [(d.field, d.a, d.b) for d in environment_differences(host, env("write-through"))]
    assert found == [("lab", "(none)", "1 disk")]


def test_cases_in_one_set_only_are_listed(tmp_path: Path) -> None:
    a = make_db(tmp_path / "a.db", _runs([1.0, 2.0, 3.0], 0.001))
    extra = [make_run("btrfs", {"iops": 5.0}, r, started=100.0 + r) for r in (1, 2, 3)]
    b = make_db(tmp_path / "b.db", _runs([1.0, 2.0, 3.0], 0.001) + extra)
    result = compare_reports(load(a), load(b))
    assert result.only_a == [] and result.only_b == ["btrfs w bs=4k rw=randread"]
    assert any("1 case(s) only in B" in w for w in result.warnings)


def test_cli_compare_formats(sets: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(sets[0]), str(sets[1])]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"A: {sets[0]}: demo (experiment 1)"
    assert "- the checked environment differs — kernel: 6.1.0 (A) vs 6.18.0 (B)" in out
    assert "faster: +20.0 %" in out
    assert main(["compare", str(sets[0]), str(sets[1]), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"# {sets[1]} vs {sets[0]}\n") and "| xfs | w |" in md
    assert (
        main(["compare", str(sets[0]), str(sets[1]), "--format", "json", "--metrics", "iops"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["environment_differences"] == [{"field": "kernel", "a": "6.1.0", "b": "6.18.0"}]
    assert {v["metric"] for v in data["verdicts"]} == {"iops"}


def test_cli_compare_refuses_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(tmp_path / "nope.db"), str(tmp_path / "nope2.db")]) == 1
    assert "no results database at" in capsys.readouterr().err
