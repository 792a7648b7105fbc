"""`volbench doctor FILE`: exactly what one experiment needs here, what is missing, and the
command that installs it.

The same sources as the run's preflight (the targets' and workloads' tool lists, the
workloads' own programs such as PostgreSQL, root, throttling), plus the lab VM's checks
when the file has a `lab:` section; each missing piece names the `scripts/setup --with
GROUP` (and the Debian package) that brings it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volbench.core.errors import VolbenchError
from volbench.engine.experiment import Experiment, root_problems
from volbench.system.block import cgroups
from volbench.system.host import pgfind, tools
from volbench.targets import KINDS as TARGET_KINDS
from volbench.targets import precondition
from volbench.workloads import KINDS as WORKLOAD_KINDS


@dataclass(frozen=True)
class Need:
    what: str
    # Which targets or workloads of the file need it.
    users: str
    # Where it was found (a path, a version), or what is wrong.
    detail: str
    ok: bool
    package: str = ""
    group: str = ""
    # How to fix what setup cannot install (root, the kernel).
    fix: str = ""


def _users(exp: Experiment) -> dict[str, list[str]]:
    """Tool name -> 'target NAME' / 'workload NAME' entries that need it."""
    users: dict[str, list[str]] = {}
    for t in exp.targets:
        for name in TARGET_KINDS[t.type].tools + precondition.tools(t):
            users.setdefault(name, []).append(f"target {t.name}")
    for w in exp.workloads:
        for name in WORKLOAD_KINDS[w.tool].tools:
            users.setdefault(name, []).append(f"workload {w.name}")
    return users


def _tool_needs(exp: Experiment) -> list[Need]:
    found = []
    for name, users in sorted(_users(exp).items()):
        path = tools.find(name)
        tool = tools.TOOLS.get(name)
        found.append(Need(name, ", ".join(users), path or "missing", path is not None,
                          tool.package if tool else "", tool.group if tool else ""))
    return found


def _program_needs(exp: Experiment) -> list[Need]:
    """Programs a workload finds itself (PostgreSQL for pgbench)."""
    found = []
    for w in exp.workloads:
        check = WORKLOAD_KINDS[w.tool].programs
        if check is None:
            continue
        what = "PostgreSQL" if w.tool == "pgbench" else w.tool
        try:
            versions = check(w)
        except pgfind.PostgresMissing as exc:
            explicit = any(s.startswith("pg_bin") for s in exc.searched)
            found.append(Need(what, f"workload {w.name}", str(exc), False,
                              "" if explicit else "postgresql",
                              "" if explicit else "pgbench",
                              "fix pg_bin" if explicit else ""))
            continue
        except VolbenchError as exc:  # e.g. a major outside 12-18
            found.append(Need(what, f"workload {w.name}", str(exc), False, fix=str(exc)))
            continue
        detail = ", ".join(f"{k} {v}" for k, v in versions.items())
        found.append(Need(what, f"workload {w.name}", detail, True))
    return found


def _system_needs(exp: Experiment) -> list[Need]:
    found = []
    problems = root_problems(exp)
    if problems:
        found.append(Need("root", "; ".join(p.path for p in problems), "not root", False,
                          fix="run volbench as root"))
    limited = [f"target {t.name}" for t in exp.targets if t.limits]
    if limited:
        why = cgroups.available()
        found.append(Need("blkio throttling", ", ".join(limited), why or "cgroup v1 blkio",
                          why is None, fix="a kernel with cgroup v1 blkio (see docs)"))
    return found


def _lab_needs(exp: Experiment) -> list[Need]:
    if exp.lab is None:
        return []
    from volbench.lab.doctor import checks  # late: the lab imports much of volbench

    found = []
    for check in checks():
        name = check.name.removeprefix("lab: ")
        tool = tools.TOOLS.get(name)
        group = "lab" if tool is not None or name == "vng" else ""
        found.append(Need(f"lab {name}", "the lab: section", check.detail, check.ok,
                          tool.package if tool else "", group,
                          "" if group else check.detail))
    return found


def needs(exp: Experiment) -> list[Need]:
    return [*_system_needs(exp), *_tool_needs(exp), *_program_needs(exp), *_lab_needs(exp)]


def install_command(found: Sequence[Need]) -> str | None:
    """The setup command that installs every missing installable piece, or None."""
    groups = sorted({n.group for n in found if not n.ok and n.group},
                    key=tools.GROUPS.index)
    if not groups:
        return None
    packages = sorted({n.package for n in found if not n.ok and n.package})
    extra = f"   (Debian packages: {' '.join(packages)})" if packages else ""
    flags = "".join(f" --with {g}" for g in groups if g != "base")
    return f"scripts/setup{flags}{extra}"
