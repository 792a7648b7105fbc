"""What a PostgreSQL commit waits for, as each run's server said it, where targets differ.

Every pgbench run records its server's settings as the server showed them when it started
(`current_setting()`, what SHOW prints; services/postgres.py RECORDED, the run's `service`
annotation). Four of them decide what a commit waits for: `synchronous_commit` (off: the
commit returns before its WAL is flushed), `fsync` (off: nothing is flushed at all),
`wal_sync_method` (how the WAL is flushed: fdatasync, open_datasync, …) and
`full_page_writes` (whole pages in the WAL after each checkpoint: more to flush). Two
targets, or two result sets, that differ in them compare durability as much as storage:
the report and `volbench compare` say which setting differs, where.

The benchmark role cannot change them for the server (no superuser, no ALTER SYSTEM:
services/pgrole.py), so the start's values hold for every run; a script may still `SET
synchronous_commit` for its own session, which no server setting shows (the script is
recorded with the case).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from volbench.core.model import RunResult, Status
from volbench.report.checks import ReportWarning

SETTINGS = ("synchronous_commit", "fsync", "wal_sync_method", "full_page_writes")
KIND = "commit-settings"


def _settings(run: RunResult) -> dict[str, str]:
    service = run.annotations.get("service")
    found = service.get("settings") if isinstance(service, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {k: str(found[k]) for k in SETTINGS if k in found}


def seen(runs: Iterable[RunResult]) -> dict[str, dict[str, dict[str, set[str]]]]:
    """workload -> setting -> value -> the targets whose finished runs had it."""
    out: dict[str, dict[str, dict[str, set[str]]]] = {}
    for run in runs:
        if run.status is not Status.OK:
            continue
        for name, value in _settings(run).items():
            out.setdefault(run.workload, {}).setdefault(name, {}).setdefault(
                value, set()).add(run.target)
    return out


def _values(by_value: Mapping[str, set[str]], order: Sequence[str]) -> str:
    rank = {t: i for i, t in enumerate(order)}
    return " / ".join(f"{value} ({', '.join(sorted(targets, key=lambda t: rank.get(t, 99)))})"
                      for value, targets in sorted(by_value.items()))


def warnings(runs: Sequence[RunResult], order: Sequence[str]) -> list[ReportWarning]:
    """One warning per pgbench workload whose targets ran with different commit settings."""
    out = []
    for workload, settings in seen(runs).items():
        differ = [f"{name} {_values(values, order)}" for name, values in settings.items()
                  if len(values) > 1]
        if differ:
            out.append(ReportWarning(
                KIND, f"{workload}: what a commit waits for differs between targets: "
                f"{'; '.join(differ)}; their tps and commit latency compare these settings "
                "too", workload=workload))
    return out


def compare_lines(a: Sequence[RunResult], b: Sequence[RunResult]) -> list[str]:
    """`volbench compare`: each target and workload whose commit settings differ, A → B."""
    def by_case(runs: Sequence[RunResult]) -> dict[tuple[str, str], dict[str, set[str]]]:
        out: dict[tuple[str, str], dict[str, set[str]]] = {}
        for run in runs:
            if run.status is Status.OK:
                for name, value in _settings(run).items():
                    out.setdefault((run.workload, run.target), {}).setdefault(
                        name, set()).add(value)
        return out

    side_a, side_b = by_case(a), by_case(b)
    lines = []
    for key in sorted(set(side_a) & set(side_b)):
        changed = [f"{name} {_joined(side_a[key][name])} → {_joined(side_b[key][name])}"
                   for name in SETTINGS
                   if name in side_a[key] and name in side_b[key]
                   and side_a[key][name] != side_b[key][name]]
        if changed:
            lines.append(f"what a commit waits for differs (A → B) for {key[0]} on {key[1]}: "
                         f"{'; '.join(changed)}: the comparison includes these settings")
    return lines


def _joined(values: Any) -> str:
    return "/".join(sorted(values))
