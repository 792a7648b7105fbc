"""The experiment file: typed, validated, with one message per problem naming the field.

Shape (YAML):

    name: plain-vs-stripe
    targets:                      # storage layouts, each built and torn down by volbench
      - {name: xfs-1disk, type: loopdisk, size: 2G, fs: xfs}
      - {name: standard, type: loopdisk, size: 2G, limits: {read_iops: 500, write_iops: 500}}
    workloads:                    # a list value on a workload field is a matrix axis
      - {name: rand4k, tool: fio, rw: [randread, randwrite], bs: 4k, iodepth: [1, 32]}
    repeat: 5                     # or {min: 3, max: 20, until: decided}
    warmup: 1                     # uncounted rounds before the measured ones
    order: interleaved            # interleaved | shuffled | sequential
    baseline: xfs-1disk
    series: nfs-tier              # optional: `volbench history` follows experiments (and
                                  # targets, workloads) by this key instead of their names
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from volbench.config import fieldrules
from volbench.config.faults import parse_faults
from volbench.config.fields import Reader, did_you_mean
from volbench.config.lab import LabSpec
from volbench.config.lab import parse_section as parse_lab_section
from volbench.config.limits import Limits
from volbench.config.precondition import parse as precondition_field
from volbench.config.steady import SteadySpec
from volbench.config.steady import parse as parse_steady
from volbench.core.errors import ExperimentError, Problem
from volbench.core.model import digest
from volbench.engine import filefields as F
from volbench.engine.filefields import DEFAULT_WORKDIR as DEFAULT_WORKDIR
from volbench.remote.hosts import HostSpec, parse_hosts
from volbench.system.block.disks import shared_device_problems
from volbench.targets import KINDS as TARGET_KINDS
from volbench.targets.base import TargetSpec
from volbench.targets.precondition import problems as precondition_problems
from volbench.workloads import KINDS as WORKLOAD_KINDS
from volbench.workloads.base import WorkloadSpec


@dataclass(frozen=True)
class RepeatPolicy:
    """Fixed (min == max) or adaptive: keep adding rounds until every comparison is decided."""

    min: int = 3
    max: int = 3
    until: str | None = None
    # Metrics whose comparisons must be decided (None: primary metrics, not percentiles).
    metrics: tuple[str, ...] | None = None

    @property
    def adaptive(self) -> bool:
        """Whether repetitions are adaptive: a stop rule (until) and room to add runs (max above
        min)."""
        return self.until is not None and self.max > self.min


@dataclass(frozen=True)
class Experiment:
    """A checked experiment: its targets, workloads, repetition, order and the document it came
    from (kept with the results)."""

    name: str
    targets: tuple[TargetSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    repeat: RepeatPolicy = RepeatPolicy()
    warmup: int = 0
    order: str = "interleaved"
    seed: int | None = None
    baseline: str | None = None
    drop_caches: bool = True
    workdir: Path = DEFAULT_WORKDIR
    description: str = ""
    # Practical-difference threshold per metric name (fraction, e.g. 0.02 = 2 %).
    thresholds: dict[str, float] = field(default_factory=dict)
    # The document as loaded: stored with the results and hashed for --resume.
    document: dict[str, Any] = field(default_factory=dict)
    # Load hosts (the `hosts:` section) that multi-host targets name.
    hosts: tuple[HostSpec, ...] = ()
    # The lab VM (the `lab:` section) for `volbench lab run`; a plain run ignores it, but
    # outside the lab refuses targets on its disks (engine/preflight.py lab_problems).
    lab: LabSpec | None = None
    # The SNIA steady-state rule over rounds (the `steady:` section), or None.
    steady: SteadySpec | None = None
    # The history key (docs/store.md): experiments with the same key are one history,
    # whatever their names ("" = follow by name).
    series: str = ""

    @property
    def spec_hash(self) -> str:
        """A digest of the document: the same file gives the same hash, which is how a resume
        finds its experiment."""
        return digest(self.document)

    def target(self, name: str) -> TargetSpec:
        """The target spec of that name (the name was checked to exist when the file was read)."""
        return next(t for t in self.targets if t.name == name)

    def workload(self, name: str) -> WorkloadSpec:
        """The workload spec of that name (the name was checked to exist when the file was
        read)."""
        return next(w for w in self.workloads if w.name == name)


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false. YAML 1.1 would turn the key `on:` (and yes, no,
    off) into booleans, and `on:` is how a target names what it is built on."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                              re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


class DuplicateKey(yaml.MarkedYAMLError):
    """A mapping names one key twice; YAML would silently keep the last value."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False
                       ) -> dict[Any, Any]:
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue  # a `<<:` merge may be overridden on purpose
        key = (key_node.tag, key_node.value)
        if key in seen:
            raise DuplicateKey(problem=f"duplicate key '{key_node.value}' (first on line "
                               f"{seen[key]})", problem_mark=key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Deeper than any experiment file is; PyYAML composes nodes recursively, so a document
# nested thousands deep would otherwise end in a RecursionError.
MAX_DEPTH = 64
# Values once aliases are expanded: "a billion laughs" (aliases of aliases) would
# otherwise take all memory when the document is hashed. Real files hold hundreds.
MAX_VALUES = 100_000
# Larger than any experiment file; `volbench plan /dev/zero` must not read for ever.
MAX_FILE_BYTES = 10 * 1024**2


def load_yaml(text: str) -> Any:
    """YAML with true/false as the only booleans (`on:` stays a key) and a duplicate key refused
    rather than silently overwritten."""
    return yaml.load(text, Loader=_Loader)


def _read_regular(path: Path) -> bytes:
    """The file's first MAX_FILE_BYTES + 1 bytes; a FIFO, device or socket is refused
    without waiting (a FIFO with no writer would block an ordinary open for ever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "not a regular file")
            raise ExperimentError([Problem(str(path), f"is {what}, not an experiment file",
                                           "give the path of a YAML file")], str(path))
        if os.fstat(fd).st_size > MAX_FILE_BYTES:  # refused before a byte is read
            raise _too_large(path)
        return f.read(MAX_FILE_BYTES + 1)


def _too_large(path: Path) -> ExperimentError:
    return ExperimentError([Problem(str(path), f"larger than {MAX_FILE_BYTES // 1024**2} MiB",
                                    "is this an experiment file?")], str(path))


def load(path: Path, base: Path | None = None) -> Experiment:
    """The experiment in file `path`; its relative paths are taken from `base` (default:
    the file's folder)."""
    try:
        data = _read_regular(path)
    except OSError as exc:
        raise ExperimentError([Problem(str(path), f"cannot read the file: {exc.strerror}",
                                       "check the path")], str(path)) from exc
    if len(data) > MAX_FILE_BYTES:  # it grew while being read
        raise _too_large(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ExperimentError([Problem(f"line {line}", f"not UTF-8 text (byte "
                                       f"0x{data[exc.start]:02x} at offset {exc.start})",
                                       "an experiment file is YAML text saved as UTF-8")],
                              str(path)) from None
    return parse_text(text, str(path), base=base or path.absolute().parent)


def parse_text(text: str, source: str = "experiment", base: Path | None = None) -> Experiment:
    """`base`: the folder relative paths in the file are taken from (default: the current
    directory)."""
    try:
        document = _nesting_checked(text)
    except DuplicateKey as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        raise ExperimentError([Problem(f"line {line}", str(exc.problem),
                                       "keep one of them")], source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(YAML)"
        detail = getattr(exc, "problem", None) or str(exc)
        raise ExperimentError([Problem(where, f"not valid YAML: {detail}",
                                       "check indentation and quoting there")], source) from exc
    _count_values(document, source)
    return parse_document(document, source, base)


def _nesting_checked(text: str) -> Any:
    """The YAML document, refused when nested deeper than MAX_DEPTH (before PyYAML
    recurses into it): the deepest indentation or bracket level bounds the nesting."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested more than {MAX_DEPTH} levels deep",
                                           problem_mark=event.start_mark)  # type: ignore[arg-type]
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return load_yaml(text)


def _count_values(document: Any, source: str) -> None:
    """Refuse a document that aliases expand beyond MAX_VALUES values (walked without
    expanding, and stopped at the limit)."""
    todo, seen = [document], 0
    while todo:
        node = todo.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ExperimentError([Problem("(YAML)", f"expands to more than {MAX_VALUES} "
                                           "values", "use fewer aliases (*name) of aliases")],
                                  source)
        if isinstance(node, dict):
            todo += node.values()
        elif isinstance(node, list):
            todo += node


def parse_document(document: Any, source: str = "experiment",
                   base: Path | None = None) -> Experiment:
    """The Experiment a document describes, or one ExperimentError listing every problem in it,
    each naming the field and the fix."""
    problems: list[Problem] = []
    r = Reader(document, "", problems, base, F.FIELDS)
    name = r.get(F.NAME)
    if (why := fieldrules.name_problem(name)) is not None:
        r.problem("name", why, "name it like plain-vs-stripe")
    targets, names = _targets(r, problems)
    workloads = _workloads(r)
    hosts = parse_hosts(r)
    # Each binding only acts on its own kind (hosts targets; pgbench's clients_from), so a
    # file with neither does not import them (start-up: docs/architecture.md).
    if any(t.type == "hosts" for t in targets):
        from volbench.targets.multihost import bind_hosts

        targets = bind_hosts(targets, hosts, [(w.name, w.tool) for w in workloads], problems)
    if any(getattr(w, "clients_from", ()) for w in workloads):
        from volbench.workloads.pgbench_hosts import bind_client_hosts

        workloads = bind_client_hosts(workloads, hosts, problems)
    repeat = _repeat(r)
    baseline = r.get(F.BASELINE) or None
    if baseline is not None and names and baseline not in names:
        r.problem("baseline", f"'{baseline}' is not a target name",
                  did_you_mean(baseline, names) or f"targets are: {', '.join(names)}")
    seed = r.raw(F.SEED.name, None)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        r.problem("seed", f"expected a whole number, got {seed!r}")
        seed = None
    experiment = Experiment(
        name=name, targets=tuple(targets), workloads=tuple(workloads), repeat=repeat,
        warmup=r.get(F.WARMUP),
        order=r.get(F.ORDER),
        seed=seed, baseline=baseline,
        drop_caches=r.get(F.DROP_CACHES),
        workdir=_workdir(r),
        description=r.get(F.DESCRIPTION),
        thresholds=_thresholds(r),
        document=document if isinstance(document, dict) else {},
        hosts=hosts,
        lab=parse_lab_section(r),
        steady=parse_steady(r),
        series=series_field(r),
    )
    steady = experiment.steady
    if experiment.repeat.until == "steady" and steady is None:
        experiment = replace(experiment, steady=SteadySpec())  # the SNIA defaults
    elif experiment.repeat.until == "steady" and steady is not None and steady.in_run:
        r.problem("repeat", "until: steady counts rounds, and steady.within: run stops each "
                  "fio run itself once steady", "remove until: steady, or within: run")
    if experiment.repeat.adaptive and experiment.order == "sequential":
        r.problem("repeat", "adaptive repetition compares targets round by round, so every "
                  "target must exist at once", "use order: interleaved or shuffled")
    problems += shared_device_problems(experiment.targets, experiment.order == "sequential")
    if any(w.faults for w in experiment.workloads):  # the fault kinds load only then
        from volbench.faults.check import problems as fault_problems
        from volbench.faults.powercheck import problems as power_cut_problems

        problems += fault_problems(experiment.targets, experiment.workloads,
                                   [d.by_id for d in experiment.lab.disks]
                                   if experiment.lab else [])
        problems += power_cut_problems(experiment.targets, experiment.workloads,
                                       experiment.lab is not None,
                                       {d.name: d.size for d in experiment.lab.disks}
                                       if experiment.lab else {})
    _size_problems(r, experiment)
    r.finish()
    if problems:
        raise ExperimentError(problems, source)
    return experiment


def series_field(r: Reader) -> str:
    """The optional `series:` key of an experiment, target or workload ("" when absent):
    checked like a name, so it is safe in every place a name goes."""
    value = r.get(F.SERIES)
    given = isinstance(r.raw(F.SERIES.name, None), str)  # other types: r.text said so
    if given and (why := fieldrules.name_problem(value)) is not None:
        r.problem("series", why, "give a key like nfs-tier: experiments (targets, workloads) "
                  "with the same key are one history in `volbench history`")
    return value


def _unique(key: str, items: list[Reader]) -> list[str]:
    names: list[str] = []
    for item in items:
        name = item.text("name")
        if name and name in names:
            item.problem("name", f"'{name}' is used by another entry of {key}",
                         "give every entry its own name")
        why = fieldrules.name_problem(name)
        if why is not None and item.has("name"):
            item.problem("name", why, "rename it, e.g. xfs-1disk")
        names.append(name)
    return names


def _targets(r: Reader, problems: list[Problem]) -> tuple[list[TargetSpec], list[str]]:
    """The parsed targets, and every name given (also of entries with other problems)."""
    items = r.get(F.TARGETS)
    if r.has("targets") and not items and not any(p.path == "targets" for p in problems):
        r.problem("targets", "no targets", "list at least one storage layout to test")
    names = _unique("targets", items)
    specs: list[TargetSpec] = []
    for item, name in zip(items, names, strict=True):
        kind_name = item.get(F.TYPE)
        kind = TARGET_KINDS.get(kind_name)
        if kind is not None:
            item.declare(F.TARGETS.of(kind_name))
        else:
            if kind_name:
                item.problem("type", f"unknown target type '{kind_name}'",
                             did_you_mean(kind_name, list(TARGET_KINDS))
                             or f"known types: {', '.join(TARGET_KINDS)}")
            continue
        limits = _limits(item)
        on = tuple(item.get(F.ON))
        low, high = kind.on_count
        if not low <= len(on) <= high:
            want = "no other target" if high == 0 else (
                f"exactly {low} other target" if low == high else f"{low} to {high} targets")
            item.problem("on", f"type {kind_name} is built on {want}, got {len(on)}",
                         "remove on:" if high == 0 else "name the target(s) it is built on")
        pre = precondition_field(item)
        series_field(item)  # kept in the document, read by `volbench history`
        spec = kind.parse(item, name, limits)
        specs.append(replace(spec, on=on, precondition=pre))
        item.finish()
    _check_dependencies(items, specs, names)
    _check_preconditions(items, specs, names)
    return specs, [n for n in names if n]


def _check_dependencies(items: list[Reader], specs: list[TargetSpec], names: list[str]) -> None:
    """`on:` names existing targets and forms no cycle."""
    by_name = {spec.name: spec for spec in specs}
    readers = dict(zip(names, items, strict=True))
    for spec in specs:
        for dep in spec.on:
            if dep not in names:
                readers[spec.name].problem("on", f"'{dep}' is not a target name",
                                           did_you_mean(dep, names) or
                                           f"targets are: {', '.join(names)}")
            elif dep == spec.name:
                readers[spec.name].problem("on", "a target cannot be built on itself")
    for spec in specs:
        seen, todo = set(), list(spec.on)
        while todo:
            dep = todo.pop()
            if dep == spec.name:
                readers[spec.name].problem("on", "targets build on each other in a circle",
                                           "break the cycle")
                break
            if dep not in seen and dep in by_name:
                seen.add(dep)
                todo += by_name[dep].on


def _check_preconditions(items: list[Reader], specs: list[TargetSpec], names: list[str]
                         ) -> None:
    """Discard and fill only where they cannot hit data of yours (docs/safety.md)."""
    readers = dict(zip(names, items, strict=True))
    by_name = {spec.name: spec for spec in specs}
    for spec in specs:
        for key, message, fix in precondition_problems(spec, by_name):
            readers[spec.name].problem(key, message, fix)


def _limits(item: Reader) -> Limits:
    if not item.has("limits"):
        return Limits()
    lr = item.get(F.LIMITS)

    def optional_int(key: str) -> int | None:
        if not lr.has(key):
            return None
        return lr.integer(key, minimum=1)

    def optional_rate(key: str) -> int | None:
        if not lr.has(key):
            return None
        value = lr.size(key)
        if value < 1:
            lr.problem(key, "must be positive, e.g. 50M (bytes per second)")
        return value

    limits = Limits(optional_int("read_iops"), optional_int("write_iops"),
                            optional_rate("read_bps"), optional_rate("write_bps"))
    lr.finish()
    if not limits:
        lr.problem("", "no limits given",
                   "set read_iops, write_iops, read_bps or write_bps (or remove limits)")
    return limits


def _workloads(r: Reader) -> list[WorkloadSpec]:
    items = r.get(F.WORKLOADS)
    if r.has("workloads") and not items and isinstance(r.data.get("workloads"), list):
        r.problem("workloads", "no workloads", "list at least one, e.g. {tool: fio}")
    names = _unique("workloads", items)
    specs: list[WorkloadSpec] = []
    for item, name in zip(items, names, strict=True):
        tool = item.get(F.TOOL)
        kind = WORKLOAD_KINDS.get(tool)
        if kind is not None:
            item.declare(F.WORKLOADS.of(tool))
        else:
            if tool:
                item.problem("tool", f"unknown tool '{tool}'",
                             did_you_mean(tool, list(WORKLOAD_KINDS))
                             or f"known tools: {', '.join(WORKLOAD_KINDS)}")
            continue
        faults = parse_faults(item)  # read first: the kind's parse reports unread fields
        series_field(item)  # kept in the document, read by `volbench history`
        spec = replace(kind.parse(item, name), faults=faults)
        if faults:  # imported here: a file without faults loads none of their code
            from volbench.engine.faultrun import fault_times

            fault_times(item, spec, kind)
        specs.append(spec)
    return specs


def _repeat(r: Reader) -> RepeatPolicy:
    value = r.get(F.REPEAT)
    if isinstance(value, int) and not isinstance(value, bool):
        value = r.get(F.COUNT)
        return RepeatPolicy(value, value)
    if isinstance(value, dict):
        rr = r.sub(F.REPEAT.name)
        low = rr.get(F.MIN)
        high = rr.get(F.MAX.defaulting(max(low, 10)))
        until = rr.get(F.REPEAT_UNTIL)
        metrics = tuple(rr.get(F.METRICS)) or None
        if high < low:
            rr.problem("max", f"must be at least min ({low}), got {high}")
        rr.finish()
        return RepeatPolicy(low, high, until, metrics)
    r.problem("repeat", f"expected a number of runs or {{min, max, until}}, got {value!r}",
              "e.g. repeat: 5 or repeat: {min: 3, max: 20, until: decided}")
    return RepeatPolicy()


def _workdir(r: Reader) -> Path:
    path = r.get(F.WORKDIR)
    if path.exists() and not path.is_dir():
        r.problem("workdir", f"{path} exists and is not a directory",
                  "name a directory; volbench creates it if missing")
    return path


def _size_problems(r: Reader, experiment: Experiment) -> None:
    """Refuse matrices and plans too large to run, before anything enumerates them."""
    cases = 0
    for i, spec in enumerate(experiment.workloads):
        count = math.prod(len(values) for values in spec.matrix.values())
        if count > fieldrules.MAX_CASES:
            r.problem(f"workloads[{i}]", f"its matrix makes {count} cases, at most "
                      f"{fieldrules.MAX_CASES} are allowed", "give its axes fewer values")
        cases += count
    rounds = experiment.repeat.max + experiment.warmup
    runs = len(experiment.targets) * cases * rounds
    if runs > fieldrules.MAX_RUNS:
        r.problem("repeat", f"the plan has {runs} runs ({len(experiment.targets)} targets x "
                  f"{cases} cases x {rounds} rounds), at most {fieldrules.MAX_RUNS} are "
                  "allowed", "split the experiment or repeat fewer times")


def _thresholds(r: Reader) -> dict[str, float]:
    if not r.has(F.THRESHOLDS.name):
        return {}
    tr = r.sub(F.THRESHOLDS.name)
    out: dict[str, float] = {}
    for key in list(tr.data):
        value = tr.number(str(key))
        if not 0 < value < 1:
            tr.problem(str(key), f"expected a fraction between 0 and 1 (0.02 = 2 %), got {value}")
        out[str(key)] = value
    return out


def root_problems(experiment: Experiment) -> list[Problem]:
    """Targets and workloads that cannot run without root, when not running as root."""
    if os.geteuid() == 0:
        return []
    problems = []
    for i, spec in enumerate(experiment.targets):
        kind = TARGET_KINDS[spec.type]
        if kind.needs_root or spec.limits:
            what = "limits" if not kind.needs_root else f"type {spec.type}"
            problems.append(Problem(f"targets[{i}]", f"{what} needs root",
                                    "run volbench as root, or use type: directory"))
    for i, workload in enumerate(experiment.workloads):
        if WORKLOAD_KINDS[workload.tool].needs_root:
            problems.append(Problem(f"workloads[{i}]", f"tool {workload.tool} needs root",
                                    "run volbench as root"))
    return problems
