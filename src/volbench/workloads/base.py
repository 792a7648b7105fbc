"""What every workload module provides. Workloads build argv and parse output; they never run.

A workload spec holds a *matrix*: each axis is a parameter with one or more
values; its cases are the cross product. The runner starts the processes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from volbench.fields import Reader
from volbench.model import Params, Parsed, Scalar
from volbench.targets.base import Built


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    tool: str
    # Axis name -> its values, in the order the user wrote them.
    matrix: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)

    def cases(self) -> list[dict[str, Scalar]]:
        keys = list(self.matrix)
        combos = itertools.product(*(self.matrix[k] for k in keys))
        return [dict(zip(keys, combo, strict=True)) for combo in combos]


@dataclass(frozen=True)
class Invocation:
    """One process to run: everything the runner needs, nothing it must guess."""

    argv: tuple[str, ...]
    timeout: float
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # Files the tool writes that hold results (name -> path), read after it exits.
    outputs: Mapping[str, Path] = field(default_factory=dict)
    # Globs of extra files (logs) to keep, relative to `cwd`.
    output_globs: tuple[str, ...] = ()
    user: str | None = None
    # Join the target's cgroup (throttled disk class)? Setup steps may not want to.
    throttled: bool = True


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    summary: str
    parse: Callable[[Reader, str], WorkloadSpec]
    # The cases of a spec (the matrix's product, minus combinations that mean nothing).
    cases: Callable[[Any], list[dict[str, Scalar]]]
    # Untimed setup before the first measured run of a case (e.g. laying out fio's file).
    # Cases with the same setup key share one setup per target.
    setup: Callable[[Any, Params, Built, Path], list[Invocation]]
    setup_key: Callable[[Any, Params], str]
    command: Callable[[Any, Params, Built, Path], Invocation]
    parse_output: Callable[[Any, Params, Mapping[str, str]], Parsed]
    # Expected seconds per run (for plan estimates and the progress bar ETA).
    estimate: Callable[[Any, Params], float]
    tools: tuple[str, ...] = ()
    needs_root: bool = False
    # Working set in bytes for a case (compared with RAM), if the workload knows it.
    working_set: Callable[[Any, Params], int | None] = lambda spec, params: None
