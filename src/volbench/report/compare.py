"""Two result sets compared: before/after a change, two machines, two cloud tiers.

Every case (target × workload × params × metric × tags) present in both sets is
compared B against A with the same statistics and verdicts as a report's baseline
comparison. Like pyperf refusing to mix results from different hosts, differences in
the *checked* environment (kernel, CPU, memory, tool versions; see hostinfo) are
reported up front: they, not the change under test, may explain a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volbench.report import commitsettings, fingerprints, targetstate
from volbench.report.cases import CaseSummary
from volbench.report.data import Report
from volbench.report.table import lab_disk_text
from volbench.report.verdicts import VerdictRow, compare_sets, judge_family, thresholds


@dataclass(frozen=True)
class EnvironmentDifference:
    field: str
    a: str
    b: str


@dataclass
class SetComparison:
    a: Report
    b: Report
    label_a: str
    label_b: str
    verdicts: list[VerdictRow]
    differences: list[EnvironmentDifference]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)
    # The runs' fingerprint fields that differ, A's value then B's (report/fingerprints.py).
    fingerprint_changes: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        out = []
        if self.fingerprint_changes:
            out.append(fingerprints.line(self.fingerprint_changes) + " (A → B): a difference"
                       " in the results may come from these rather than from the change "
                       "under test")
        if self.differences:
            listed = "; ".join(f"{d.field}: {d.a} (A) vs {d.b} (B)" for d in self.differences)
            out.append(
                f"the checked environment differs — {listed}. A difference in the "
                "results may come from these rather than from the change under test"
            )
        out += targetstate.differences(self.a.targets, self.b.targets)
        out += commitsettings.compare_lines(self.a.runs, self.b.runs)
        if not self.a.environment.get("checked") or not self.b.environment.get("checked"):
            out.append(
                "one result set records no checked environment (imported results?): "
                "cannot tell whether the machines match"
            )
        if self.only_a:
            out.append(
                f"{len(self.only_a)} case(s) only in A, not compared: "
                + ", ".join(self.only_a[:5])
                + (" …" if len(self.only_a) > 5 else "")
            )
        if self.only_b:
            out.append(
                f"{len(self.only_b)} case(s) only in B, not compared: "
                + ", ".join(self.only_b[:5])
                + (" …" if len(self.only_b) > 5 else "")
            )
        for name, rep in (("A", self.a), ("B", self.b)):
            if rep.warnings:
                out.append(
                    f"{name} has {len(rep.warnings)} warning(s) of its own (failed runs, "
                    "cache effects, drift …): see `volbench report` on it"
                )
        return out


def _flatten(checked: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in checked.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = "" if value is None else str(value)
    return out


def _lab_disks(env: Mapping[str, Any]) -> dict[str, str] | None:
    """Each lab disk as `lab disk NAME` -> its class, caps, write cache and size; None
    when the results were not measured in the lab."""
    lab = env.get("lab")
    if not isinstance(lab, Mapping):
        return None
    return {f"lab disk {d.get('name')}": lab_disk_text(d) for d in lab.get("disks", [])
            if isinstance(d, Mapping)}


def _lab_size(disks: dict[str, str] | None) -> str:
    if disks is None:
        return "(none)"
    return f"{len(disks)} disk" + ("" if len(disks) == 1 else "s")


def environment_differences(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[EnvironmentDifference]:
    """Fields of environment["checked"] (tools flattened as tools.fio) that differ, and
    the lab's disks: in the lab the disks are what was measured, and a class's caps or
    write cache change results as much as a kernel does."""
    fa = _flatten(a.get("checked") or {})
    fb = _flatten(b.get("checked") or {})
    if not fa or not fb:
        return []
    la, lb = _lab_disks(a), _lab_disks(b)
    if la is not None and lb is not None:
        fa, fb = {**fa, **la}, {**fb, **lb}
    elif la is not None or lb is not None:  # one set on a host, one in the lab
        fa["lab"], fb["lab"] = _lab_size(la), _lab_size(lb)
    return [
        EnvironmentDifference(k, fa.get(k, "(missing)"), fb.get(k, "(missing)"))
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]


def _case_names(summaries: list[CaseSummary]) -> dict[tuple[str, str, str], str]:
    return {
        (s.target, s.workload, s.key[2]): " ".join(
            [s.target, s.workload, *(f"{k}={v}" for k, v in s.params.items())]
        )
        for s in summaries
    }


def compare_reports(a: Report, b: Report, label_a: str = "A", label_b: str = "B",
                    environments: tuple[Mapping[str, Any], Mapping[str, Any]] = ({}, {})
                    ) -> SetComparison:
    """B against A, case by case (same target, workload, params, metric and tags);
    `environments` are the sides' run fingerprints (differing fields are named)."""
    limits = {**thresholds(a.experiments), **thresholds(b.experiments)}
    # The headline comparisons are one family here too (report.family).
    rows = judge_family(compare_sets(b.summaries, a.summaries, limits, same_target=True))
    names_a, names_b = _case_names(a.summaries), _case_names(b.summaries)
    return SetComparison(
        a,
        b,
        label_a,
        label_b,
        rows,
        environment_differences(a.environment, b.environment),
        only_a=[n for k, n in names_a.items() if k not in names_b],
        only_b=[n for k, n in names_b.items() if k not in names_a],
        thresholds=limits,
        fingerprint_changes=fingerprints.changes(environments),
    )
