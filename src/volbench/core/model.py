"""The one result shape every tool produces and every report consumes.

Values are stored in base units: bytes (B), seconds (s), operations per second
(op/s), bytes per second (B/s), transactions per second (tx/s), percent (%).
Parameters such as operation, block size or queue depth are *tags*, never parts
of a metric name.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Scalar = str | int | float | bool
Params = Mapping[str, Scalar]


def canonical_json(value: Any) -> str:
    """Stable JSON used for keys and hashing (sorted keys, no whitespace)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


_PARAMS_KEYS: dict[int, tuple[Any, str]] = {}


def params_key(params: Params) -> str:
    """canonical_json of a case's parameters, remembered per mapping object.

    The runs of one case share one parameter mapping (the store hands them out that
    way), so a report over 100 000 runs computes a few hundred keys instead of 100 000.
    The cache holds the mapping itself, so its id cannot be reused while cached;
    parameter mappings are never changed once made.
    """
    hit = _PARAMS_KEYS.get(id(params))
    if hit is not None and hit[0] is params:
        return hit[1]
    key = canonical_json(dict(params))
    if len(_PARAMS_KEYS) > 100_000:
        _PARAMS_KEYS.clear()
    _PARAMS_KEYS[id(params)] = (params, key)
    return key


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Metric:
    name: str
    value: float | None
    unit: str
    tags: Mapping[str, str] = field(default_factory=dict)
    # Why a value is missing or special, e.g. "too fast to measure" for bonnie++'s +++++.
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "value": self.value, "unit": self.unit,
                               "tags": dict(self.tags)}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Series:
    """A time series within one run: (seconds since run start, value) points."""

    name: str
    unit: str
    points: tuple[tuple[float, float], ...]
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Histogram:
    """Latency histogram (fio json+ bins): bin value in `unit` -> count.

    Kept so percentiles across repetitions can be computed by merging bins
    instead of averaging percentiles.
    """

    name: str
    unit: str
    bins: tuple[tuple[float, int], ...]
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CaseHistogram:
    """All measured runs' histograms of one case (target × workload × params), added up."""

    target: str
    workload: str
    params: Params
    name: str
    unit: str
    tags: Mapping[str, str]
    runs: int
    bins: tuple[tuple[float, int], ...]


@dataclass(frozen=True)
class Parsed:
    """What a workload parser extracts from one run's raw outputs."""

    metrics: tuple[Metric, ...] = ()
    series: tuple[Series, ...] = ()
    histograms: tuple[Histogram, ...] = ()


class Status(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"

    @property
    def finished(self) -> bool:
        """A finished run is not repeated by --resume; an interrupted one is."""
        return self is not Status.INTERRUPTED


@dataclass(frozen=True)
class RunResult:
    target: str
    workload: str
    params: Params
    repetition: int
    status: Status
    started: float
    ended: float
    warmup: bool = False
    argv: tuple[str, ...] = ()
    exit_code: int | None = None
    error: str = ""
    parsed: Parsed = Parsed()
    # Raw outputs by name ("stdout", "stderr", "fio.json", …), kept verbatim.
    outputs: Mapping[str, str] = field(default_factory=dict)
    # Per-run facts that are not metrics: cache warnings, device I/O seen, …
    annotations: Mapping[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return self.parsed.metrics

    @property
    def case_key(self) -> str:
        return case_key(self.target, self.workload, self.params)

    @property
    def duration(self) -> float:
        return self.ended - self.started


def case_key(target: str, workload: str, params: Params) -> str:
    """Identity of a case (target × workload × parameter values), independent of order."""
    return canonical_json({"target": target, "workload": workload, "params": dict(params)})


@dataclass(frozen=True)
class ExperimentRow:
    id: int
    name: str
    spec_hash: str
    document: dict[str, Any]
    environment: dict[str, Any]
    seed: int | None
    created: float
    finished: float | None
    status: str


@dataclass(frozen=True)
class TargetRow:
    experiment_id: int
    name: str
    type: str
    status: str
    error: str
    info: dict[str, Any]
