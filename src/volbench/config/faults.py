"""The `faults:` list of a workload: what happens to the storage, when, during a run.

    faults:
      - {at: 20s, action: fail, device: /dev/disk/by-id/virtio-m2}
      - {at: 40s, action: restore, device: /dev/disk/by-id/virtio-m2}
      - {at: 15s, action: stop, target: n3, for: 15s}
      - {action: power-cut, at: {between: [10s, 50s]}, repeat: 20}   # the whole lab

A `power-cut` acts on the whole lab machine: it names no device or target. Its `at` is a
time or a seeded random moment in a window, drawn for each run; every measured run of
its workload is cut once, and `repeat` sets how many runs (cuts) each case gets
(docs/durability.md).

Here each entry is read and checked on its own (times, action names, the options an
action takes, one of device:/target:); whether the device or target is one the
experiment builds, and whether the action fits it, is checked in `volbench.faults.check`
(it knows the target kinds). Times are seconds from the start of the measured process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volbench.config.fields import Reader
from volbench.config.sections import Either, Items, Section, Value
from volbench.config.spec import Duration, Field, Integer, Text
from volbench.core import units

# An action that starts a fault -> the action that ends it (None: it ends by itself or
# only with `for:` / at teardown).
UNDONE_BY: Mapping[str, str] = {
    "fail": "restore",   # md member: mdadm --fail/--remove, then --add (rebuild)
    "stop": "start",     # NFS server: nfsd threads to 0, then back
    "slow": "return",    # a disk's throttle cut to a fraction of its class
    "pull": "return",    # a lab disk pulled out of the running VM (QMP device_del)
    "cut": "restore",    # iSCSI: the target's portal group off, then on
    "delay": "heal",     # an LV's dm table through dm-delay (delay_ms added to each I/O)
    "errors": "heal",    # an LV's dm table through dm-flakey, down: every I/O fails
    "exhaust": "free",   # a thin pool filled (after a snapshot), then freed again
}
ENDING = {"restore", "start", "return", "heal", "free"}
POWER_CUT = "power-cut"
ACTIONS = (*UNDONE_BY, *sorted(ENDING), POWER_CUT)
# Options an action takes beside at/action/device/target/for.
OPTIONS: Mapping[str, tuple[str, ...]] = {
    # md's rebuild throttle (KiB/s), from the fail to the end of the run.
    "fail": ("speed_limit_min", "speed_limit_max"),
    "slow": ("percent",),
    "delay": ("delay_ms",),
    # 1: the pool fails writes it has no chunk for (ENOSPC), 0: queues them; absent: as is.
    # no_space_timeout: how long a queueing pool holds them before it fails them (whole
    # seconds; the kernel's dm_thin_pool module parameter, 60 s by default).
    "exhaust": ("error_if_no_space", "no_space_timeout"),
    # How many cuts (measured runs) each case gets; fsck: 0 skips the read-only checks.
    POWER_CUT: ("repeat", "fsck"),
}
MAXIMA = {"percent": 100, "delay_ms": 60_000, "error_if_no_space": 1, "repeat": 10_000,
          "fsck": 1}
# Options whose 0 means something (the others start at 1).
ZERO_OK = {"error_if_no_space", "fsck"}
# Options written as durations (`no_space_timeout: 8s`), kept as whole seconds.
DURATIONS = {"no_space_timeout": 3600}
MAX_AT_S = 7 * 24 * 3600.0

AT = Duration("at", help="when: seconds from the start of the measured process (20s)")
# A power cut's `at` may also be a window, a seeded random moment in it for each run.
BETWEEN = Value("between", value={"type": "array", "minItems": 2, "maxItems": 2,
                                  "items": AT.json_schema()},
                help="power-cut: a seeded random moment from FROM to TO ([10s, 50s])")
AT_EITHER = Either("at", shapes=(AT, Section("at", fields=(BETWEEN,))),
                   help="when: 20s, or for a power-cut {between: [10s, 50s]}")
ACTION = Text("action", choices=ACTIONS, help="what happens (docs/faults.md)")
DEVICE = Text("device", None, help="the disk it happens to (/dev/disk/by-id/virtio-…)")
TARGET = Text("target", None, help="or the target it happens to")
FOR = Duration("for", None, positive=True,
               help="how long until it is undone (else by its ending action)")
# Each action's options, declared once: the action that takes it is in its help.
_OPTION_HELP = {"speed_limit_min": "fail: md's rebuild floor, KiB/s",
                "speed_limit_max": "fail: md's rebuild ceiling, KiB/s",
                "percent": "slow: the share of its class's rate the disk keeps",
                "delay_ms": "delay: milliseconds added to each I/O",
                "error_if_no_space": "exhaust: 1 fails writes without a chunk, 0 queues them",
                "no_space_timeout": "exhaust: how long a queueing pool holds writes (8s)",
                "repeat": "power-cut: cut runs (cuts) per case",
                "fsck": "power-cut: 0 skips the read-only filesystem checks after a cut"}
OPTION_FIELDS: tuple[Field[Any], ...] = tuple(
    Duration(key, None, help=_OPTION_HELP[key], when=("action", (action,))) if key in DURATIONS
    else Integer(key, None, minimum=0 if key in ZERO_OK else 1,
                 maximum=MAXIMA.get(key, 10**9), help=_OPTION_HELP[key],
                 when=("action", (action,)))
    for action, keys in OPTIONS.items() for key in keys)
FAULTS = Items("faults", None, fields=(AT_EITHER, ACTION, DEVICE, TARGET, FOR, *OPTION_FIELDS),
               help="what happens to the storage during each run, and when (docs/faults.md)")


@dataclass(frozen=True)
class FaultSpec:
    """One fault as written: fired `at` seconds into the measured process, undone
    `duration` seconds later (None: by a later ending action, or at the run's end)."""

    at: float
    action: str
    device: str | None = None
    target: str | None = None
    duration: float | None = None
    # Per-action options (md speed limits in KiB/s, a slow disk's percent of its class).
    options: Mapping[str, int] = field(default_factory=dict)
    # A power cut at a seeded random moment in [start, end] seconds (`at` is the start).
    window: tuple[float, float] | None = None

    @property
    def names(self) -> str:
        """What the fault acts on, as written (for messages and the plan)."""
        if self.action == POWER_CUT:
            return "the whole lab"
        return f"device {self.device}" if self.device else f"target {self.target}"

    @property
    def when(self) -> str:
        if self.window is not None:
            return f"between {self.window[0]:g} and {self.window[1]:g} s"
        return f"at {self.at:g} s"

    def describe(self) -> str:
        opts = "".join(f", {k} {v}" for k, v in sorted(self.options.items()))
        lasting = f" for {self.duration:g} s" if self.duration is not None else ""
        return f"{self.when}: {self.action} {self.names}{lasting}{opts}"


def parse_faults(r: Reader) -> tuple[FaultSpec, ...]:
    """The workload's `faults:` (empty when absent), every problem recorded on `r`."""
    if not r.has("faults"):
        r.raw("faults", None)
        return ()
    specs = [_one(item) for item in r.items("faults")]
    out = tuple(s for s in specs if s is not None)
    _check_pairs(r, out)
    return out


def _power_cut(fr: Reader) -> FaultSpec | None:
    """`power-cut`: `at` a time or `{between: [FROM, TO]}`; no device or target."""
    window: tuple[float, float] | None = None
    if isinstance(fr.raw("at", None), Mapping):
        window = _window(fr)
        if window is None:
            return None
        at = window[0]
    else:
        at = fr.duration("at")
    for key in ("device", "target", "for"):
        if fr.has(key):
            fr.raw(key)
            fr.problem(key, "a power cut acts on the whole lab machine: it names no device, "
                       "no target and lasts no time", f"remove {key}:")
    options = {key: fr.integer(key, minimum=1 if key == "repeat" else 0, maximum=MAXIMA[key])
               for key in OPTIONS[POWER_CUT] if fr.has(key)}
    fr.finish()
    return FaultSpec(at, POWER_CUT, options=options, window=window)


def _window(fr: Reader) -> tuple[float, float] | None:
    """`at: {between: [FROM, TO]}`, or None (a problem recorded)."""
    sub = fr.sub("at")
    bounds = sub.raw("between", None)
    sub.finish()
    if not isinstance(bounds, list) or len(bounds) != 2:
        sub.problem("between", "takes two times: [FROM, TO]", "e.g. {between: [10s, 50s]}")
        return None
    pair = [units_duration(sub, "between", b) for b in bounds]
    if pair[0] is None or pair[1] is None:
        return None
    if not 0 <= pair[0] < pair[1] <= MAX_AT_S:
        sub.problem("between", f"[{pair[0]:g} s, {pair[1]:g} s] is not a window",
                    "the first time must come before the second, e.g. [10s, 50s]")
    return pair[0], pair[1]


def units_duration(fr: Reader, key: str, value: object) -> float | None:
    """One time of a window, or None (a problem recorded)."""
    try:
        return units.parse_duration(value)  # type: ignore[arg-type]
    except (ValueError, TypeError, OverflowError) as exc:
        fr.problem(key, str(exc) or "expected a duration such as 10s")
        return None


def _one(fr: Reader) -> FaultSpec | None:
    if fr.raw("action", None) == POWER_CUT:
        fr.get(ACTION)
        return _power_cut(fr)
    if isinstance(fr.raw("at", None), Mapping):  # a window: a power cut's only
        sub = fr.sub("at")
        sub.raw("between", None)
        sub.problem("between", "only a power-cut fires at a random moment in a window",
                    "give a time, e.g. at: 20s")
        sub.finish()
        at = 0.0
    else:
        at = fr.get(AT)
    if at > MAX_AT_S:
        fr.problem("at", f"{at:g} s is more than a week into the run", "give seconds, e.g. 20s")
    action = fr.get(ACTION)
    device = fr.get(DEVICE) or None
    target = fr.get(TARGET) or None
    if (device is None) == (target is None):
        fr.problem("", "a fault names either device: or target:, not "
                   + ("both" if device else "neither"),
                   "e.g. device: /dev/disk/by-id/virtio-m2, or target: n3")
    duration = fr.get(FOR) if fr.has(FOR.name) else None
    if duration is not None and duration <= 0:
        fr.problem("for", "must be longer than 0 s", "e.g. for: 15s")
    if duration is not None and action in ENDING:
        fr.problem("for", f"'{action}' ends a fault; only the action that starts one lasts",
                   f"put for: on the {'/'.join(k for k, v in UNDONE_BY.items() if v == action)}")
    options: dict[str, int] = {}
    for key in OPTIONS.get(action, ()):
        if fr.has(key) and key in DURATIONS:
            options[key] = _whole_seconds(fr, key, DURATIONS[key])
        elif fr.has(key):
            options[key] = fr.integer(key, minimum=0 if key in ZERO_OK else 1,
                                      maximum=MAXIMA.get(key, 10**9))
    fr.finish()
    if action not in ACTIONS or (device is None) == (target is None):
        return None
    return FaultSpec(at, action, device, target, duration, options)


def _whole_seconds(fr: Reader, key: str, maximum: int) -> int:
    """A duration option the kernel takes in whole seconds, 1 s to `maximum` (0 would mean
    "never" to dm-thin: a pool that queues writes until it is freed)."""
    seconds = fr.duration(key)
    if seconds != int(seconds) or not 1 <= seconds <= maximum:
        fr.problem(key, f"{seconds:g} s is not a whole number of seconds from 1 to {maximum}",
                   f"e.g. {key}: 8s")
    return int(seconds)


def _check_pairs(r: Reader, faults: tuple[FaultSpec, ...]) -> None:
    """An ending action follows its start on the same thing; nothing starts twice."""
    active: dict[tuple[str | None, str | None], tuple[str, float]] = {}
    order = sorted(range(len(faults)), key=lambda i: faults[i].at)
    cuts = [i for i, f in enumerate(faults) if f.action == POWER_CUT]
    if cuts and len(faults) > 1:
        r.problem(f"faults[{cuts[-1] if len(cuts) > 1 else cuts[0]}]",
                  "a power cut ends the run: it is the workload's only fault",
                  "put the other faults on a workload of their own")
        return
    for i in order:
        fault, key = faults[i], (faults[i].device, faults[i].target)
        if fault.action in ENDING:
            started = active.pop(key, None)
            if started is None or UNDONE_BY[started[0]] != fault.action:
                starts = [k for k, v in UNDONE_BY.items() if v == fault.action]
                r.problem(f"faults[{i}]", f"'{fault.action}' of {fault.names} at {fault.at:g} s "
                          f"ends no fault started before it",
                          f"add a {'/'.join(starts)} of the same {fault.names.split()[0]} "
                          "earlier, or remove it")
            continue
        if key in active:
            r.problem(f"faults[{i}]", f"{fault.names} already has a '{active[key][0]}' in "
                      f"effect at {fault.at:g} s", "end it first (its ending action or for:)")
        if fault.duration is None:
            active[key] = (fault.action, fault.at)
        else:
            for j in order:  # a later fault inside this one's duration on the same thing
                other = faults[j]
                if j != i and (other.device, other.target) == key and \
                        fault.at < other.at < fault.at + fault.duration:
                    r.problem(f"faults[{j}]", f"falls inside the {fault.duration:g} s of "
                              f"'{fault.action}' at {fault.at:g} s on {fault.names}",
                              "move it after that fault ends")
