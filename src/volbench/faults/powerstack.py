"""Taking a stack down after a power cut, and bringing it back as after a reboot.

After the cut (faults/powercut.py: every disk suspended, then failing) nothing of the
old stack may live on: `down` ends the processes on it (the server SIGKILLed, the
workload and the probe die on their failed I/O), force-unmounts the NFS clients,
unexports and stops nfsd, lazily unmounts the filesystems, and stops the md arrays and
removes the device-mapper devices (LVM's) stacked on the cut disks. The disks' open
counts must then be 0: the power only comes back on disks nothing holds.

`up` is what a reboot does, per stack, in its order: `mdadm --assemble` the arrays,
`vgchange -ay` the volume groups, mount each filesystem (its journal replays), export
and restart nfsd and mount the client again, start PostgreSQL on its data directory
(crash recovery), and time the first successful I/O (the probe's file read back) or
query: `recovery_seconds`. With `check`, each filesystem is also checked read-only
after its mount (umount, `xfs_repair -n` / `e2fsck -fn` / `btrfs check --readonly`,
mount again), its findings recorded and its time kept out of recovery_seconds: the
check is volbench looking, not the machine recovering.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.core.errors import VolbenchError
from volbench.faults.base import MAX_OUTPUT_CHARS
from volbench.faults.labdisk import BY_ID
from volbench.faults.probe import FILE as PROBE_FILE
from volbench.services.crashhooks import CrashHooks
from volbench.system import proc
from volbench.system.block import dmctl
from volbench.system.block.disks import listed_paths
from volbench.system.block.mounts import is_mounted
from volbench.targets.base import Built, TargetSpec
from volbench.targets.nfs import NfsSpec, in_client_netns

COMMAND_TIMEOUT = 300.0
RELEASE_TIMEOUT = 60.0
# Processes get this long to end by themselves on their failed I/O before SIGKILL.
PROCESS_GRACE = 20.0
CHECKS = {"xfs": ["xfs_repair", "-n"], "ext4": ["e2fsck", "-f", "-n"],
          "btrfs": ["btrfs", "check", "--readonly"]}


@dataclass(frozen=True)
class Mounted:
    """A filesystem of the stack as it was mounted before the cut."""

    source: str
    target: str
    fstype: str
    options: str


@dataclass
class Layer:
    """One target of a stack, with what it mounted (captured before the cut)."""

    spec: TargetSpec
    built: Built
    mounts: list[Mounted] = field(default_factory=list)


@dataclass
class Stack:
    """A target and what it is built on (bottom-up), the wrapped disks under it, its
    server, and the processes running on it this cycle."""

    name: str
    layers: list[Layer]
    disks: list[str]
    # Servers on the stack (PostgreSQL clusters): each killed at the cut, started after.
    services: list[CrashHooks] = field(default_factory=list)
    probe_file: Path | None = None
    # Processes on the stack this cycle (proc.Forked, or anything with poll() and
    # stop()): each gets PROCESS_GRACE to end on its failed I/O, then SIGKILL.
    processes: list[Any] = field(default_factory=list)


@dataclass
class Steps:
    """Every step of a down or up, in order: what, exit code, seconds, output's end."""

    items: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, what: str, code: int, seconds: float, output: str = "") -> None:
        with self.lock:
            self.items.append({"step": what, "returncode": code, "seconds": round(seconds, 3),
                               "output": output.strip()[-MAX_OUTPUT_CHARS:]})

    def run(self, argv: Sequence[str], check: bool = True) -> proc.Completed:
        done = proc.run(argv, timeout=COMMAND_TIMEOUT, check=False)
        self.add(proc.command_line(argv), -1 if done.timed_out else done.returncode,
                 done.elapsed, done.stdout + done.stderr)
        if check and (done.returncode != 0 or done.timed_out):
            raise StackError(f"{proc.command_line(argv)} failed (exit code "
                             f"{done.returncode}): {(done.stderr or done.stdout).strip()[-300:]}")
        return done


class StackError(VolbenchError):
    """A stack could not be taken down or brought back after a cut."""


def lab_disks(spec: TargetSpec) -> list[str]:
    """The lab disks a target lists itself (by their names)."""
    return [p[len(BY_ID):] for p in listed_paths(spec) if p.startswith(BY_ID)]


def _below(name: str, specs: Mapping[str, TargetSpec]) -> list[str]:
    """`name` and what it is built on, bottom-up."""
    order: list[str] = []

    def visit(current: str) -> None:
        for dep in specs[current].on:
            visit(dep)
        if current not in order:
            order.append(current)

    visit(name)
    return order


def component(name: str, specs: Mapping[str, TargetSpec]) -> list[str]:
    """What a cut of target `name`'s disks takes down: it, what it is built on, and every
    target built on any of those (an NFS export of its filesystem), bottom-up in the
    experiment's order. Targets on other disks are not part of it."""
    found = set(_below(name, specs))
    grew = True
    while grew:
        above = {t for t, spec in specs.items() if t not in found and set(spec.on) & found}
        grew = bool(above)
        found |= above
    order: list[str] = []
    for target in specs:
        if target in found:
            order += [n for n in _below(target, specs) if n not in order]
    return order


def stack_for(name: str, specs: Mapping[str, TargetSpec], built: Mapping[str, Built],
              services: Sequence[CrashHooks] = (), probe: bool = True) -> Stack:
    """The stack a cut of target `name` takes down (`component`), with the lab disks
    under it, its servers, and its probe file on `name`'s mount (`probe`, when it has
    one)."""
    order = [n for n in component(name, specs) if n in built]
    layers = [Layer(specs[n], built[n]) for n in order]
    disks = [d for n in order for d in lab_disks(specs[n])]
    top = built[name].path
    return Stack(name, layers, disks, list(services),
                 top / PROBE_FILE if probe and top is not None else None)


def _mount_table() -> list[Mounted]:
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        source, target, fstype, options = line.split(" ")[:4]
        found.append(Mounted(source, target.replace("\\040", " "), fstype, options))
    return found


def _containing(path: str, table: list[Mounted]) -> Mounted | None:
    best: Mounted | None = None
    for m in table:
        if (path == m.target or path.startswith(m.target.rstrip("/") + "/")) and \
                (best is None or len(m.target) > len(best.target)):
            best = m
    return best


def capture(stack: Stack) -> None:
    """Each layer's local filesystems as mounted now (before a cycle: a cut may turn a
    filesystem read-only, and the options are what the remount uses)."""
    table = _mount_table()
    for layer in stack.layers:
        layer.mounts = []
        if isinstance(layer.spec, NfsSpec):
            if layer.spec.on:  # the filesystem under the export is the `on:` target's
                continue
            exported = str(layer.built.info.get("exported", ""))
            found = _containing(exported, table) if exported else None
        else:
            path = layer.built.path
            found = next((m for m in table if path is not None and m.target == str(path)),
                         None)
        if found is not None and found.fstype not in ("nfs", "nfs4"):
            layer.mounts.append(found)


# -- down ----------------------------------------------------------------------------------


def _crash_servers(stacks: Sequence[Stack], steps: Steps) -> None:
    for stack in stacks:
        for service in stack.services:
            started = time.monotonic()
            service.crash()
            steps.add(f"{stack.name}: server killed (SIGKILL)", 0, time.monotonic() - started)


def _stop_processes(stacks: Sequence[Stack], steps: Steps) -> None:
    deadline = time.monotonic() + PROCESS_GRACE
    for stack in stacks:
        for process in stack.processes:
            while process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if process.poll() is None:
                process.stop()
                steps.add(f"{stack.name}: {getattr(process, 'name', 'process')} killed", 0, 0.0)


def _nfs_layers(stacks: Sequence[Stack]) -> list[Layer]:
    return [layer for s in stacks for layer in s.layers if isinstance(layer.spec, NfsSpec)]


def _nfs_clients_down(stacks: Sequence[Stack], steps: Steps) -> None:
    """Forced: the RPCs a hard mount would retry for ever fail, and whoever waits on
    them gets EIO (umount -f), and the mount leaves the tree at once (-l)."""
    for layer in _nfs_layers(stacks):
        if layer.built.path is not None and is_mounted(layer.built.path):
            steps.run(["umount", "-f", "-l", str(layer.built.path)], check=False)


def _nfs_server_down(stacks: Sequence[Stack], steps: Steps) -> None:
    nfs = _nfs_layers(stacks)
    for layer in nfs:
        folder = str(layer.built.info.get("exported", ""))
        client = str(layer.built.info.get("client", {}).get("address", "127.0.0.1"))
        steps.run(["exportfs", "-u", f"{client}:{folder}"], check=False)
    if nfs:
        steps.run(["rpc.nfsd", "0"], check=False)
        steps.run(["exportfs", "-f"], check=False)


def _holders(node: str) -> list[str]:
    folder = Path(f"/sys/class/block/{Path(node).name}/holders")
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _release(name: str, steps: Steps) -> None:
    """A device stacked on a cut disk, gone: its own holders first (an LV on an md
    array), then itself (md: stopped; device-mapper: removed)."""
    for holder in _holders(name):
        _release(holder, steps)
    if name.startswith("md"):
        steps.run(["mdadm", "--stop", f"/dev/{name}"], check=False)
    elif name.startswith("dm-"):
        dm_name = Path(f"/sys/class/block/{name}/dm/name").read_text().strip()
        started = time.monotonic()
        try:
            dmctl.remove(dm_name)
            steps.add(f"dm remove {dm_name}", 0, time.monotonic() - started)
        except dmctl.DmError as exc:
            steps.add(f"dm remove {dm_name}", 1, time.monotonic() - started, str(exc))


def down(stacks: Sequence[Stack], steps: Steps) -> None:
    """Everything of the old stacks gone (see the module doc); the disks' open counts are
    checked by the caller (Power.restore)."""
    _crash_servers(stacks, steps)
    _nfs_clients_down(stacks, steps)
    _stop_processes(stacks, steps)
    _nfs_server_down(stacks, steps)
    for stack in stacks:
        for layer in reversed(stack.layers):
            for m in reversed(layer.mounts):
                if is_mounted(Path(m.target)):
                    steps.run(["umount", "-l", m.target], check=False)


def wait_released(disks: Sequence[str], steps: Steps,
                  timeout: float = RELEASE_TIMEOUT) -> None:
    """Until no cut disk is open: what is stacked on one is stopped or removed (again,
    each round: an array or LV is busy until the lazily unmounted filesystem on it has
    gone with its last user); StackError naming what still holds one after `timeout`."""
    started = time.monotonic()
    tried: set[str] = set()
    while True:
        held = [d for d in disks if dmctl.info(f"vbcut-{d}").open_count]
        if not held:
            steps.add("disks released", 0, time.monotonic() - started)
            return
        for disk in held:
            for holder in _holders(dmctl.info(f"vbcut-{disk}").node):
                _release(holder, steps if holder not in tried else Steps())
                tried.add(holder)
        if time.monotonic() - started > timeout:
            found = {d: _holders(dmctl.info(f"vbcut-{d}").node) for d in held}
            raise StackError(f"disks {', '.join(held)} are still open {timeout:g} s after "
                             "their stack was taken down (held by: " + "; ".join(
                                 f"{d}: {', '.join(h) or 'an open file or mount'}"
                                 for d, h in found.items()) + ")")
        time.sleep(0.2)


# -- up ------------------------------------------------------------------------------------


@dataclass
class Recovery:
    """What bringing one stack back found: seconds to its first successful I/O or query
    (checks excluded), the checks' findings, and whether it came back at all."""

    ok: bool = True
    seconds: float | None = None
    check_seconds: float = 0.0
    checks: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "recovery_seconds": self.seconds,
                "check_seconds": round(self.check_seconds, 3), "checks": self.checks,
                "services": self.services, "error": self.error}


class Nfsd:
    """nfsd is one per kernel: the first stack that needs it back starts it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def ensure(self, threads: int, steps: Steps) -> None:
        with self.lock:
            text = Path("/proc/fs/nfsd/threads").read_text().strip() or "0"
            if int(text) == 0:
                steps.run(["rpc.nfsd", "-G", "10", str(threads)])


def _check(m: Mounted, steps: Steps, recovery: Recovery) -> None:
    argv = CHECKS.get(m.fstype)
    if argv is None:
        return
    started = time.monotonic()
    steps.run(["umount", m.target])
    done = steps.run([*argv, m.source], check=False)
    steps.run(["mount", "-t", m.fstype, "-o", m.options, m.source, m.target])
    recovery.checks.append({"fs": m.fstype, "device": m.source, "returncode": done.returncode,
                            "clean": done.returncode == 0,
                            "output": (done.stdout + done.stderr).strip()[-1500:]})
    recovery.check_seconds += time.monotonic() - started


def _layer_up(layer: Layer, steps: Steps, recovery: Recovery, check: bool,
              nfsd: Nfsd) -> None:
    info = layer.built.info
    if layer.spec.type == "mdraid":
        _md_up(str(info["device"]), layer.built.devices, steps)
    elif layer.spec.type == "lvm":
        steps.run(["vgchange", "-ay", str(info["vg"])])
    for m in layer.mounts:
        steps.run(["mount", "-t", m.fstype, "-o", m.options, m.source, m.target])
        if check:
            _check(m, steps, recovery)
    if isinstance(layer.spec, NfsSpec):
        _nfs_up(layer.spec, layer.built, steps, nfsd)


def _md_up(node: str, devices: Sequence[str], steps: Steps) -> None:
    """Assemble the array at its own node. As at boot, udev's incremental assembly may
    have taken the members first, whole or half, under another name (the first cut in
    the lab: "mdadm: /dev/dm-5 is busy"); such an array is stopped and assembled again
    here, so the stack above finds the node it was built on."""
    steps.run(["udevadm", "settle", "--timeout=30"], check=False)
    state = Path(f"/sys/class/block/{Path(node).name}/md/array_state")
    if state.exists() and state.read_text().strip() not in ("inactive", "clear"):
        return
    holders = sorted({h.name for d in devices
                      for h in Path(f"/sys/class/block/{Path(os.path.realpath(d)).name}/holders")
                      .glob("md*")})
    for holder in holders:
        steps.run(["mdadm", "--stop", f"/dev/{holder}"])
    steps.run(["mdadm", "--assemble", "--run", node, *devices])


def _nfs_up(spec: NfsSpec, built: Built, steps: Steps, nfsd: Nfsd) -> None:
    info = built.info
    options = [*spec.export_options, *(["fsid=0"] if spec.v4 else [])]
    client = str(info.get("client", {}).get("address", "127.0.0.1"))
    steps.run(["exportfs", "-o", ",".join(options), f"{client}:{info['exported']}"])
    nfsd.ensure(spec.threads, steps)
    assert built.path is not None
    argv = in_client_netns(spec, ["mount", "-t", "nfs", "-o",
                                  ",".join([f"vers={spec.version}", *spec.mount_options]),
                                  str(info["source"]), str(built.path)])
    for attempt in range(3):  # a server that has just started may not answer at once
        if steps.run(argv, check=attempt == 2).returncode == 0:
            return
        time.sleep(2.0)


def first_io(path: Path) -> None:
    """Read the probe file's first block back (a fresh open: the mount is new)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.read(fd, 4096)
    finally:
        os.close(fd)


def up(stack: Stack, steps: Steps, check: bool, nfsd: Nfsd,
       since: float | None = None) -> Recovery:
    """The stack back, bottom-up (module doc); never raises: a stack that does not come
    back is a finding (`ok` False, `error`)."""
    recovery = Recovery()
    started = since if since is not None else time.monotonic()
    try:
        for layer in stack.layers:
            _layer_up(layer, steps, recovery, check, nfsd)
        for service in stack.services:  # its first query is its first I/O
            recovery.services.append(service.start())
        if stack.probe_file is not None:
            first_io(stack.probe_file)
        recovery.seconds = round(time.monotonic() - started - recovery.check_seconds, 3)
    except (VolbenchError, OSError) as exc:
        recovery.ok, recovery.error = False, str(exc)
    return recovery


def up_all(stacks: Sequence[Stack], steps: Steps, check: bool,
           since: float | None = None) -> dict[str, Recovery]:
    """Every stack back at once (a thread each: a stack's recovery time is its own, as
    after a reboot; nfsd is started by the first stack that needs it)."""
    nfsd = Nfsd()
    found: dict[str, Recovery] = {}
    threads = []
    for stack in stacks:
        def work(stack: Stack = stack) -> None:
            found[stack.name] = up(stack, steps, check, nfsd, since)
        threads.append(threading.Thread(target=work, name=f"up-{stack.name}"))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found

