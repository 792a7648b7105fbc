"""Fields declared once: each field's name, type, default, choices, bounds and one line of help.

A target or workload kind lists its fields in one table (a tuple of these declarations);
its parse function reads each with `Reader.get(FIELD)`, and the docs test checks every
declared field against the kind's docs page, so a default is written in one place only.
The reading itself is the Reader's (config/fields.py): the same one-pass collection of
problems, the same messages and did-you-mean hints whether a field is declared or not.
The model is PerfKitBenchmarker's option decoders (one object per option holding its
default and checks); the one-pass reading with a path and a fix per problem is volbench's.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from volbench.config.fields import REQUIRED, Reader
from volbench.core import units

T = TypeVar("T")


@dataclass(frozen=True)
class Field(ABC, Generic[T]):
    """One field read as a single value. `default` REQUIRED: the field must be given;
    None: it may be left out and has no default (the reader's empty value)."""

    name: str
    default: Any = REQUIRED
    help: str = ""
    # What a value is, in the words of `volbench fields`.
    what: ClassVar[str] = "text"
    # Taken only beside another field with one of these values (a fault's options, by its
    # action): (that field's name, its values). Its code refuses the field otherwise.
    when: tuple[str, tuple[str, ...]] | None = field(default=None, kw_only=True)

    @abstractmethod
    def read(self, r: Reader) -> T:
        """The field's value from `r`, problems recorded there."""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def defaulting(self, value: Any) -> Field[T]:
        """The same field with a default worked out at parse time from other fields (the
        declaration's help says how; its own default is None)."""
        return replace(self, default=value)

    def shown(self) -> str | None:
        """The default as an experiment file (and the docs) write it; None: none to show."""
        return show(self.default)

    def rules(self) -> str:
        """Choices and bounds in words ("" when there are none)."""
        return ""

    def values(self) -> dict[str, Any]:
        """The JSON Schema of the values the field takes (its type, choices, bounds); every
        kind of field states its own (tests/unit/test_schema.py builds the schema)."""
        raise NotImplementedError(f"{type(self).__name__} ({self.name}) states no JSON "
                                  "Schema of its values: give it a values() method")

    def json_schema(self) -> dict[str, Any]:
        """The field in a JSON Schema: its values, its help as the description, its
        default (`volbench schema`, config/schema.py)."""
        out = {**self.values()}
        if self.help:
            out["description"] = self.help
        if (default := json_default(self.default)) is not None:
            out["default"] = default
        return out


# The values of a size and of a duration as an experiment file writes them (core/units.py),
# and the same more than zero.
SIZE: dict[str, Any] = {"anyOf": [{"type": "number", "minimum": 0, "maximum": units.MAX_SIZE},
                                  {"type": "string", "pattern": units.SIZE_PATTERN}]}
DURATION: dict[str, Any] = {"anyOf": [{"type": "number", "minimum": 0},
                                      {"type": "string", "pattern": units.DURATION_PATTERN}]}
SIZE_POSITIVE: dict[str, Any] = {"anyOf": [
    {"type": "number", "exclusiveMinimum": 0, "maximum": units.MAX_SIZE},
    {"type": "string", "pattern": "^" + units.POSITIVE + units.SIZE_PATTERN[1:]}]}
DURATION_POSITIVE: dict[str, Any] = {"anyOf": [
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string", "pattern": "^" + units.POSITIVE + units.DURATION_PATTERN[1:]}]}


def json_default(value: Any) -> Any:
    """A default as JSON (None: no default to state)."""
    if value is REQUIRED or value is None or value == "" or value == [] or value == {}:
        return None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [json_default(v) for v in value]
    return value if isinstance(value, str | int | float | bool) else str(value)


def choices_schema(choices: Sequence[str]) -> dict[str, Any]:
    """Text choices; a choice that YAML reads as a number (version: 4.2) may be one."""
    found: list[Any] = list(dict.fromkeys(choices))
    numbers: list[float] = []
    for choice in choices:
        try:
            number = float(choice)
        except ValueError:
            continue
        if number not in numbers:  # "4" and "4.0" are one number: an enum repeats nothing
            numbers.append(number)
            found.append(int(number) if number.is_integer() and "." not in choice else number)
    return {"enum": found}


def show(value: Any) -> str | None:
    """A default as YAML writes it (true, 4k, [write, read]); None for no default."""
    if value is REQUIRED or value is None or value == "" or value == []:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(show(v)) for v in value) + "]"
    return str(value)


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and minimum == maximum:
        return f"exactly {minimum}"
    if minimum is not None and maximum is not None:
        return f"{minimum} … {maximum}"
    if minimum is not None:
        return f"at least {minimum}"
    return f"at most {maximum}" if maximum is not None else ""


@dataclass(frozen=True)
class Text(Field[str]):
    choices: tuple[str, ...] = ()
    # A rule its own code checks, stated for the schema as a pattern (a name's charset).
    pattern: str = field(default="", kw_only=True)
    # Other spellings its code takes for the choices (mdraid's level: 10 for raid10).
    aliases: tuple[str, ...] = field(default=(), kw_only=True)

    def read(self, r: Reader) -> str:
        return r.text(self.name, self.default, self.choices)

    def rules(self) -> str:
        return " | ".join(self.choices)

    def values(self) -> dict[str, Any]:
        if self.choices:
            return choices_schema((*self.choices, *self.aliases))
        if self.pattern:  # YAML reads `name: 42` as a number; its text is the name
            return {"anyOf": [{"type": "string", "pattern": self.pattern}, {"type": "number"}]}
        return {"type": ["string", "number"]}


@dataclass(frozen=True)
class Integer(Field[int]):
    what: ClassVar[str] = "whole number"
    minimum: int | None = None
    maximum: int | None = None

    def read(self, r: Reader) -> int:
        return r.integer(self.name, self.default, self.minimum, self.maximum)

    def rules(self) -> str:
        return _bounds(self.minimum, self.maximum)

    def values(self) -> dict[str, Any]:
        bounds = {k: v for k, v in (("minimum", self.minimum), ("maximum", self.maximum))
                  if v is not None}
        return {"type": "integer", **bounds}


@dataclass(frozen=True)
class Number(Field[float]):
    what: ClassVar[str] = "number"
    # The bounds its code checks, for the schema: (above, at most).
    bounds: tuple[float, float] | None = field(default=None, kw_only=True)

    def read(self, r: Reader) -> float:
        return r.number(self.name, self.default)

    def values(self) -> dict[str, Any]:
        if self.bounds is None:
            return {"type": "number"}
        return {"type": "number", "exclusiveMinimum": self.bounds[0],
                "maximum": self.bounds[1]}


@dataclass(frozen=True)
class Boolean(Field[bool]):
    what: ClassVar[str] = "true/false"

    def read(self, r: Reader) -> bool:
        return r.boolean(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Size(Field[int]):
    what: ClassVar[str] = "size"
    # Its code refuses 0 ("must be positive"): the schema says so too.
    positive: bool = field(default=False, kw_only=True)

    def read(self, r: Reader) -> int:
        return r.size(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return dict(SIZE_POSITIVE if self.positive else SIZE)


@dataclass(frozen=True)
class Duration(Field[float]):
    what: ClassVar[str] = "duration"
    # Its code refuses 0 ("must be longer than 0 s"): the schema says so too.
    positive: bool = field(default=False, kw_only=True)

    def read(self, r: Reader) -> float:
        return r.duration(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return dict(DURATION_POSITIVE if self.positive else DURATION)


@dataclass(frozen=True)
class TextList(Field[list[str]]):
    what: ClassVar[str] = "list"

    def read(self, r: Reader) -> list[str]:
        # A fresh list per read: a default list is never shared between specs.
        default = list(self.default) if isinstance(self.default, list) else self.default
        return r.text_list(self.name, default)

    def values(self) -> dict[str, Any]:
        word = {"type": ["string", "integer"]}
        return {"anyOf": [{"type": "string"}, {"type": "array", "items": word}]}


@dataclass(frozen=True)
class TextMap(Field[dict[str, str]]):
    """A mapping of names to values, both taken as text (fio options, environment).

    With `keys` (a pattern every key must match in full, `keys_are` what such a key is)
    and `one_line` (no control characters such as a newline in a value), the map is
    refused when read: its keys and values reach a tool's command line or job file, where
    a newline starts a new option and `=`, spaces or `--` in a key smuggle in another."""

    what: ClassVar[str] = "mapping"
    keys: re.Pattern[str] | None = field(default=None, kw_only=True)
    keys_are: str = field(default="", kw_only=True)
    one_line: bool = field(default=False, kw_only=True)

    def read(self, r: Reader) -> dict[str, str]:
        default = {} if self.default is None else self.default
        sub = r.sub(self.name, default)
        data = {str(k): str(v) for k, v in dict(sub.data).items()}
        for key, value in data.items():
            if self.keys is not None and not self.keys.fullmatch(key):
                sub.problem(key, f"{key!r} is not {self.keys_are}",
                            f"give {self.keys_are} as the key (no '=', spaces or leading '-')")
            elif self.one_line and control_character(value) is not None:
                sub.problem(key, f"{value!r} has a control character "
                                 f"({control_character(value)}) in it",
                            "write the value on one line, without control characters")
        return data

    def values(self) -> dict[str, Any]:
        value: dict[str, Any] = {"type": ["string", "number", "boolean"]}
        if self.one_line:
            value = {"anyOf": [{"type": "string", "pattern": ONE_LINE},
                               {"type": ["number", "boolean"]}]}
        out: dict[str, Any] = {"type": "object", "additionalProperties": value}
        if self.keys is not None:
            out["propertyNames"] = {"pattern": f"^(?:{self.keys.pattern})$"}
        return out


# A value without control characters (control_character below), as a JSON Schema pattern.
ONE_LINE = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$"


def control_character(text: str) -> str | None:
    """The first control character of `text` as U+XXXX (newline, tab, escape, …), or None."""
    for char in text:
        if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 or char in "\u2028\u2029":
            return f"U+{ord(char):04X}"
    return None


@dataclass(frozen=True)
class Location(Field[Path]):
    what: ClassVar[str] = "path"

    def read(self, r: Reader) -> Path:
        return r.location(self.name, self.default)

    def values(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "string", "minLength": 1}, {"type": "number"}]}


@dataclass(frozen=True)
class Axis(Field[tuple[T, ...]]):
    """A matrix dimension: one value or a list, each converted by `convert` (a ValueError's
    message is what the user reads). After a bad value parsing goes on with `placeholder`:
    the default (its first value for a list), converted, unless one is given."""

    what: ClassVar[str] = "axis"

    convert: Callable[[Any], T] = field(default=lambda v: v, kw_only=True)
    # What the message says when a converter's error carries no text of its own.
    expected: str = field(default="", kw_only=True)
    placeholder: Any = field(default=REQUIRED, kw_only=True)
    # The JSON Schema of one value, when the converter does not carry one (fields.Checked).
    value: Mapping[str, Any] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.placeholder is REQUIRED and self.default is not REQUIRED:
            first = self.default[0] if isinstance(self.default, list) else self.default
            # Converting the default also checks it, once, when the module is imported.
            object.__setattr__(self, "placeholder", self.convert(first))

    def read(self, r: Reader) -> tuple[T, ...]:
        return tuple(r.axis(self.name, self.default, self.convert, self.expected,
                            self.placeholder))

    def one(self) -> dict[str, Any] | None:
        """The JSON Schema of one value of the axis; None when neither the axis nor its
        converter states one (tests/unit/test_schema.py lists those)."""
        found = self.value if self.value is not None else getattr(self.convert, "schema", None)
        return None if found is None else dict(found)

    def values(self) -> dict[str, Any]:
        one = self.one() or {}
        return {"anyOf": [one, {"type": "array", "items": one, "minItems": 1}]} if one else {}

    def converted_by(self, convert: Callable[[Any], T]) -> Axis[T]:
        """The same field with a converter made at parse time (one that needs the
        experiment file's folder, say); the placeholder stays the declared one."""
        return replace(self, convert=convert)


@dataclass(frozen=True)
class SyncAxis(Axis[T]):
    """The `sync:` axis of a write workload (core/syncmode.py): one mode or a list of them,
    each a word of `words` or a one-key mapping of `calls` to a whole number of writes
    (`{fdatasync: 1}`), also written `fdatasync:1`. As a JSON schema an item is
    `{"enum": words}` or `{"type": "object", "minProperties": 1, "maxProperties": 1,
    "properties": {call: {"type": "integer", "minimum": 1, "maximum": most}}}`, or a
    boolean where `booleans` (bonnie++'s older true/false); a tool that takes fewer modes
    (bonnie++: none or an fsync after every write) lists only those."""

    what: ClassVar[str] = "axis"
    words: tuple[str, ...] = field(default=(), kw_only=True)
    calls: tuple[str, ...] = field(default=(), kw_only=True)
    most: int = field(default=1, kw_only=True)
    booleans: bool = field(default=False, kw_only=True)

    def rules(self) -> str:
        every = "N" if self.most > 1 else str(self.most)
        return " | ".join((*(("true", "false") if self.booleans else ()), *self.words,
                           *(f"{{{c}: {every}}}" for c in self.calls)))

    def one(self) -> dict[str, Any]:
        # A count as a number or as text ("fdatasync:1" and {fdatasync: "1"} both parse);
        # as text bounded exactly for the two bounds in use (bonnie++'s 1, MAX_EVERY).
        most = {1: "1", 1_000_000: "[1-9][0-9]{0,5}|1000000"}.get(self.most, "[1-9][0-9]*")
        digits = rf"\s*0*({most})\s*"
        count = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": self.most},
                           {"type": "string", "pattern": f"^{digits}$"}]}
        calls = "|".join(self.calls)
        forms: list[dict[str, Any]] = [
            {"enum": list(self.words)},
            {"type": "string", "pattern": rf"^\s*({calls})\s*(:{digits})?$"},
            {"type": "object", "minProperties": 1, "maxProperties": 1,
             "properties": {c: count for c in self.calls}, "additionalProperties": False}]
        if self.booleans:
            forms.insert(0, {"anyOf": [{"type": "boolean"}, {"enum": [0, 1]}]})
        return {"anyOf": forms}


def rows(table: Sequence[Field[Any]]) -> list[tuple[str, str, str, str]]:
    """(field, default, what it takes, help) per declared field, for `volbench fields`."""
    out = []
    for f in table:
        default = "required" if f.required else (f.shown() or "-")
        rules = f.rules()
        out.append((f.name, default, f.what + (f": {rules}" if rules else ""), f.help))
    return out
