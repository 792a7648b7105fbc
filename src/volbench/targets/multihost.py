"""A target that several load hosts use at the same time (`type: hosts`).

    targets:
      - {name: d1, type: loopdisk, size: 1G}
      - {name: d2, type: loopdisk, size: 1G}
      - {name: two-disks, type: hosts, hosts: [load1, load2], on: [d1, d2]}   # one each
      - {name: nas, type: loopdisk, size: 1G, limits: {read_iops: 1500}}
      - {name: shared, type: hosts, hosts: [load1, load2, load3], on: [nas]}   # all share
      - {name: far, type: hosts, hosts: [remote1, remote2]}   # each host's own `dir:`

`on:` names one target per host (same order as `hosts:`), one target all hosts share,
or nothing (then every host brings a `dir:`). A host on another machine cannot see this
machine's targets: it always works in its `dir:`. The fio servers of hosts on this
machine join the cgroup of the target they load, so disk-class limits apply to them.

Building opens every host (SSH reachable, key accepted, host key checked), makes the
private work directories, and records each host's environment; the fio servers are
a service (services/fioservers.py), started when the first fio run needs them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from volbench.config.fields import Reader, did_you_mean
from volbench.config.limits import Limits
from volbench.config.spec import TextList
from volbench.core.errors import Problem
from volbench.remote.hosts import HostSpec
from volbench.remote.session import Session, open_session
from volbench.system.block.mounts import make_tree
from volbench.system.host import hostinfo
from volbench.system.journal import Scope
from volbench.targets.base import BuildContext, Built, TargetKind, TargetSpec

# Workload tools that know how to drive several hosts.
MULTIHOST_TOOLS = ("fio",)
MAX_HOSTS = 64


@dataclass(frozen=True)
class HostsSpec(TargetSpec):
    """A hosts target as the experiment file gives it: the fields, read and checked."""

    host_names: tuple[str, ...] = ()
    # Filled in from the experiment's `hosts:` section by `bind_hosts`.
    hosts: tuple[HostSpec, ...] = ()
    # Where the entry is in the file (for messages found after parsing).
    where: str = ""


@dataclass
class Placement:
    """Where one host does its I/O."""

    session: Session
    # Directory on the host (a local target's mount, or the host's `dir:`), or a device.
    path: str | None
    block_device: str | None = None
    # The target it loads (None: the host's own `dir:`) and that target's cgroup.
    target: str | None = None
    cgroup: Path | None = None

    @property
    def host(self) -> HostSpec:
        """The host this placement runs on."""
        return self.session.spec


@dataclass
class MultiBuilt(Built):
    """A hosts target once built: the Built of the group plus where each host does its I/O."""
    placements: tuple[Placement, ...] = ()


HOSTS = TextList("hosts", help="hosts of the hosts: section, one load host each")


def parse(r: Reader, name: str, limits: Limits) -> HostsSpec:
    """Read this type's fields; a bad value becomes a problem on the reader that names the
    field and the fix (all of a file's problems are reported together), never a raise."""
    names = tuple(r.get(HOSTS))
    if r.has("hosts") and not names:
        r.problem("hosts", "no hosts", "name at least one host from the hosts: section")
    for dup in sorted({n for n in names if names.count(n) > 1}):
        r.problem("hosts", f"host '{dup}' is listed twice", "list every host once")
    if len(names) > MAX_HOSTS:
        r.problem("hosts", f"at most {MAX_HOSTS} hosts per target, got {len(names)}")
    return HostsSpec(name, "hosts", limits, host_names=names, where=r.path)


def bind_hosts(
    targets: Sequence[TargetSpec],
    hosts: Sequence[HostSpec],
    tools: Sequence[tuple[str, str]],
    problems: list[Problem],
) -> list[TargetSpec]:
    """Resolve each hosts target's host names against `hosts:` and check how it uses `on:`.

    `tools` are the experiment's (workload name, tool) pairs: only some tools can drive
    several hosts."""
    by_name = {h.name: h for h in hosts}
    by_target = {t.name: t for t in targets}
    out: list[TargetSpec] = []
    for spec in targets:
        if not isinstance(spec, HostsSpec):
            out.append(spec)
            continue
        where = spec.where or spec.name
        for missing in (n for n in spec.host_names if n not in by_name):
            fix = did_you_mean(missing, list(by_name)) or (
                f"hosts are: {', '.join(by_name)}" if by_name else "add a hosts: section listing it"
            )
            problems.append(Problem(f"{where}.hosts", f"'{missing}' is not a host name", fix))
        resolved = tuple(by_name[n] for n in spec.host_names if n in by_name)
        problems += _placement_problems(spec, resolved, where, by_target)
        out.append(replace(spec, hosts=resolved))
    if any(isinstance(t, HostsSpec) for t in targets):
        for name, tool in tools:
            if tool not in MULTIHOST_TOOLS:
                problems.append(
                    Problem(
                        "workloads",
                        f"workload {name} ({tool}) cannot run on a target of type "
                        f"hosts; only {', '.join(MULTIHOST_TOOLS)} drives several hosts",
                        "put it in an experiment file without multi-host targets",
                    )
                )
    return out


def _placement_problems(
    spec: HostsSpec, hosts: tuple[HostSpec, ...], where: str, targets: Mapping[str, TargetSpec]
) -> list[Problem]:
    on = spec.on
    if len(on) not in (0, 1, len(spec.host_names)):
        return [
            Problem(
                f"{where}.on",
                f"{len(on)} targets for {len(spec.host_names)} hosts",
                "name one target per host (same order as hosts:), one target they "
                "all share, or none (then every host needs dir:)",
            )
        ]
    found: list[Problem] = []
    for i, host in enumerate(hosts):
        target = (on[0] if len(on) == 1 else on[i]) if on else None
        if target is None and host.dir is None:
            found.append(
                Problem(
                    f"{where}.on",
                    f"host {host.name} has no target and no dir:",
                    "name a target in on:, or give the host a dir:",
                )
            )
        elif target is not None and host.remote:
            found.append(
                Problem(
                    f"{where}.on",
                    f"host {host.name} is another machine: it "
                    f"cannot use target {target} of this machine",
                    "leave on: empty and give every host a dir: on its own machine",
                )
            )
        elif target is not None and isinstance(targets.get(target), HostsSpec):
            found.append(
                Problem(
                    f"{where}.on",
                    f"{target} is itself a hosts target",
                    "build it on storage targets",
                )
            )
    return found


def _where(spec: HostsSpec, index: int) -> str | None:
    if not spec.on:
        return None
    return spec.on[0] if len(spec.on) == 1 else spec.on[index]


def _private_dir(session: Session, scope: Scope) -> str:
    """volbench's own directory inside the host's `dir:`, removed with its contents."""
    host = session.spec
    assert host.dir is not None
    name = f".volbench-{os.getpid()}-{int(time.time())}-{uuid.uuid4().hex[:6]}"
    path = f"{host.dir.rstrip('/')}/{name}"
    if not host.remote:
        return str(make_tree(scope, Path(path)))
    scope.add("remote-tree", host=host.to_json(), control=session.control, path=path)
    session.run(["mkdir", "--", path])
    return path


def _placement(spec: HostsSpec, i: int, session: Session, ctx: BuildContext) -> Placement:
    dep_name = _where(spec, i)
    if dep_name is None:
        return Placement(session, _private_dir(session, ctx.scope))
    dep = ctx.deps[dep_name]
    return Placement(
        session, str(dep.path) if dep.path else None, dep.block_device, dep_name, dep.cgroup
    )


def _host_info(placement: Placement) -> dict[str, Any]:
    host = placement.host
    env = hostinfo.parse_probe(placement.session.run(hostinfo.REMOTE_PROBE, timeout=60).stdout)
    return {
        "address": host.address,
        "reached": host.describe(),
        "target": placement.target,
        "dir": placement.path,
        "device": placement.block_device,
        "environment": env,
    }


@contextmanager
def build(spec: HostsSpec, ctx: BuildContext) -> Iterator[MultiBuilt]:
    """Build the layout and yield it; everything made is journaled in ctx.scope before
    it is used, so leaving the block, or `volbench cleanup` after a crash, undoes it."""
    with ExitStack() as stack:
        placements: list[Placement] = []
        for i, host in enumerate(spec.hosts):
            session = stack.enter_context(open_session(host, ctx.scope))
            ctx.recipe.note(f"host {host.describe()} reachable")
            placements.append(_placement(spec, i, session, ctx))
        devices: list[str] = []
        for dep in (ctx.deps[n] for n in spec.on):
            devices += [d for d in dep.devices if d not in devices]
        info = {
            "hosts": {p.host.name: _host_info(p) for p in placements},
            "shared": len(spec.on) == 1 and len(spec.hosts) > 1,
        }
        yield MultiBuilt(
            spec.name,
            spec.type,
            path=None,
            devices=devices,
            info=info,
            placements=tuple(placements),
        )


KIND = TargetKind(
    "hosts",
    "several load hosts at once (fio client/server): each on its own target, all "
    "on one shared target, or in each host's dir:",
    parse,
    build,
    needs_root=False,
    tools=("fio",),
    on_count=(0, MAX_HOSTS),
    loop_devices=lambda spec: 0,
    fields=(HOSTS,),
)
