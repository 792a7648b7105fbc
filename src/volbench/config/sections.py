"""What holds declared fields: a mapping of them (`lab:`), a list of such mappings
(`faults:`), free names each holding them (lab classes), one field of several shapes
(`repeat:`), and the lists of targets and workloads whose entries take their kind's fields.

Each states itself as JSON Schema (`volbench schema`), and a Reader of such a mapping
knows its fields (config/fields.py), so what validation reads is what the schema says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from volbench.config.fields import Reader
from volbench.config.spec import Field


def object_schema(fields: Sequence[Field[Any]]) -> dict[str, Any]:
    """A mapping of these fields and no others (a misspelt key is an error, as volbench
    says "unknown field")."""
    out: dict[str, Any] = {"type": "object",
                           "properties": {f.name: f.json_schema() for f in fields},
                           "additionalProperties": False}
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    conditions = [{"if": {"properties": {f.when[0]: {"not": {"enum": list(f.when[1])}}},
                          "required": [f.when[0]]},
                   "then": {"not": {"required": [f.name]}}}
                  for f in fields if f.when is not None]
    if conditions:
        out["allOf"] = conditions
    return out


@dataclass(frozen=True)
class Section(Field[Reader]):
    """A mapping of declared fields (`lab:`, `steady:`, a host's `ssh:`); read, it is the
    Reader of that mapping, which knows its fields."""

    what: ClassVar[str] = "mapping"
    fields: tuple[Field[Any], ...] = field(default=(), kw_only=True)

    def read(self, r: Reader) -> Reader:
        return r.sub(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return object_schema(self.fields)


@dataclass(frozen=True)
class Items(Field[list[Reader]]):
    """A list of mappings of declared fields (lab disks, faults, hosts)."""

    what: ClassVar[str] = "list"
    fields: tuple[Field[Any], ...] = field(default=(), kw_only=True)

    def read(self, r: Reader) -> list[Reader]:
        return r.items(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return {"type": "array", "items": object_schema(self.fields)}


@dataclass(frozen=True)
class Named(Field[Reader]):
    """A mapping of names the file chooses, each to a mapping of the declared fields
    (lab classes: `standard: {iops: 500}`)."""

    what: ClassVar[str] = "mapping"
    each: tuple[Field[Any], ...] = field(default=(), kw_only=True)
    # What a name must look like (a regular expression, also in JSON Schema).
    names: str = field(default="", kw_only=True)

    def read(self, r: Reader) -> Reader:
        return r.sub(self.name, self.default)

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "additionalProperties": object_schema(self.each)}
        if self.names:
            out["propertyNames"] = {"pattern": self.names}
        return out


@dataclass(frozen=True)
class Numbers(Field[dict[str, float]]):
    """A mapping of names the file chooses to numbers strictly between `above` and `below`
    (`thresholds: {iops: 0.05}`); read by its own code, declared here."""

    what: ClassVar[str] = "mapping"
    above: float | None = field(default=None, kw_only=True)
    below: float | None = field(default=None, kw_only=True)

    def read(self, r: Reader) -> dict[str, float]:
        sub = r.sub(self.name, {} if self.default is None else self.default)
        return {str(k): sub.number(str(k)) for k in list(sub.data)}

    def values(self) -> dict[str, Any]:
        number: dict[str, Any] = {"type": "number"}
        if self.above is not None:
            number["exclusiveMinimum"] = self.above
        if self.below is not None:
            number["exclusiveMaximum"] = self.below
        return {"type": "object", "additionalProperties": number}


@dataclass(frozen=True)
class Value(Field[Any]):
    """A field whose own code reads and checks it (a share such as `20%`, `fill: 2x`), with
    the JSON Schema of what that code takes."""

    value: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    def read(self, r: Reader) -> Any:
        return r.raw(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return dict(self.value)


@dataclass(frozen=True)
class Either(Field[Any]):
    """One field that takes one of several shapes (`repeat: 5` or `repeat: {min, max}`):
    the code reads the shape it finds; each shape is one of `shapes`."""

    shapes: tuple[Field[Any], ...] = field(default=(), kw_only=True)

    def read(self, r: Reader) -> Any:
        return r.raw(self.name, self.default)

    @property
    def fields(self) -> tuple[Field[Any], ...]:
        """The fields of the mapping shape (a Section among the shapes), for its Reader."""
        return next((s.fields for s in self.shapes if isinstance(s, Section)), ())

    def values(self) -> dict[str, Any]:
        return {"anyOf": [s.values() for s in self.shapes]}


class Kind(Protocol):
    """A target type or workload tool as a Kinds field sees it."""

    @property
    def summary(self) -> str: ...

    @property
    def fields(self) -> tuple[Field[Any], ...]: ...


@dataclass(frozen=True)
class Kinds(Field[list[Reader]]):
    """The list of targets or workloads: each entry's `key` (type, tool) names its kind,
    and the kind's table says which fields it takes beside the `common` ones."""

    what: ClassVar[str] = "list"
    key: str = field(default="type", kw_only=True)
    kinds: Mapping[str, Kind] = field(default_factory=dict, kw_only=True)
    common: tuple[Field[Any], ...] = field(default=(), kw_only=True)

    def read(self, r: Reader) -> list[Reader]:
        return r.items(self.name, self.default)

    def of(self, kind: str) -> tuple[Field[Any], ...]:
        """Every field an entry of this kind takes."""
        own = self.kinds[kind].fields
        names = {f.name for f in own}
        return (*(f for f in self.common if f.name not in names), *own)

    def values(self) -> dict[str, Any]:
        cases = []
        for name in self.kinds:
            entry = object_schema(self.of(name))
            entry["description"] = self.kinds[name].summary
            cases.append({"if": {"properties": {self.key: {"const": name}},
                                 "required": [self.key]}, "then": entry})
        head = {"type": "object", "required": [self.key],
                "properties": {self.key: {"enum": list(self.kinds)}}}
        return {"type": "array", "items": {**head, "allOf": cases}}
