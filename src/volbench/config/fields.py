"""Reading a YAML mapping field by field, collecting every problem with its path.

Parsing goes on after a problem (with a placeholder value) so that one pass
reports all mistakes in a file, each naming the field and the fix.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from volbench.config import fieldrules
from volbench.core import units
from volbench.core.errors import Problem

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
# The default of a field that must be given.
REQUIRED: Any = object()


class Declared(Protocol[T_co]):
    """A field declared once with its default and checks (config/spec.py)."""

    @property
    def name(self) -> str: ...

    def read(self, r: Reader) -> T_co: ...


# Every field read where the reader's declarations do not name it, as "path.key": the
# schema (`volbench schema`) is derived from the declarations, so a field read without
# one is a field the schema does not know. The tests fail on any (tests/conftest.py).
undeclared: list[str] = []


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text", int: "a number", float: "a number",
            bool: "true/false", type(None): "nothing"}.get(type(value), type(value).__name__)


class Reader:
    # Told of every problem recorded, with the reader and the key: the tests check with it
    # that the schema refuses what volbench refuses (tests/conftest.py).
    watch: ClassVar[Callable[[Reader, str | int, str], None] | None] = None

    def __init__(self, data: Any, path: str, problems: list[Problem],
                 base: Path | None = None, declared: Sequence[Declared[Any]] | None = None
                 ) -> None:
        self.path = path
        self.problems = problems
        # The experiment file's folder: relative paths in it are taken from there.
        self.base = base
        self._used: set[str] = set()
        # The fields this mapping may hold (config/spec.py), when declared: a sub-mapping
        # or list of mappings read from one of them gets the declarations inside it.
        self.declared: dict[str, Declared[Any]] | None = None
        # A mapping of free names (lab classes), each holding these fields.
        self.each: Sequence[Declared[Any]] | None = None
        if declared is not None:
            self.declare(declared)
        if not isinstance(data, Mapping):
            self.problem("", f"expected a mapping of fields, got {_type_name(data)}")
            data = {}
        self.data: Mapping[str, Any] = data

    # -- plumbing -----------------------------------------------------------------------
    def declare(self, fields: Sequence[Declared[Any]]) -> Reader:
        """The fields this mapping may hold (a target's type decides them once read)."""
        self.declared = {f.name: f for f in fields}
        return self

    def field(self, key: str) -> Declared[Any] | None:
        """The declaration of `key` here, if there is one."""
        return None if self.declared is None else self.declared.get(key)

    def _inner(self, key: str) -> tuple[Sequence[Declared[Any]] | None,
                                        Sequence[Declared[Any]] | None]:
        """(fields, fields of each free name) of the mapping(s) under `key`."""
        if self.each is not None:
            return self.each, None
        declared = self.field(key)
        return getattr(declared, "fields", None), getattr(declared, "each", None)

    def at(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def problem(self, key: str | int, message: str, fix: str = "") -> None:
        path = self.at(key) if key != "" else (self.path or "(top level)")
        self.problems.append(Problem(path, message, fix))
        if Reader.watch is not None:
            Reader.watch(self, key, message)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = REQUIRED) -> Any:
        self._used.add(key)
        if self.declared is not None and key not in self.declared and self.each is None:
            undeclared.append(self.at(key))
        if key in self.data:
            return self.data[key]
        if default is REQUIRED:
            self.problem(key, "is required")
            return None
        return default

    def finish(self, allowed_extra: Sequence[str] = ()) -> None:
        """Report fields nobody read: typos, or options of another type."""
        known = sorted(self._used | set(allowed_extra))
        for key in self.data:
            if key not in self._used and key not in allowed_extra:
                self.problem(str(key), "unknown field",
                             did_you_mean(str(key), known) or f"known fields: {', '.join(known)}")

    def _convert(self, key: str, value: Any, convert: Callable[[Any], T], expected: str,
                 placeholder: T) -> T:
        try:
            return convert(value)
        except (ValueError, TypeError, OverflowError) as exc:
            # A converter's own message is specific ("'x' is not one of …"); use it as is.
            self.problem(key, str(exc) or f"expected {expected}")
            return placeholder

    def get(self, declared: Declared[T]) -> T:
        """A declared field's value (config/spec.py): its default, choices and bounds are
        the declaration's, the checks and messages the typed readers' below."""
        return declared.read(self)

    # -- typed fields -------------------------------------------------------------------
    def text(self, key: str, default: Any = REQUIRED, choices: Sequence[str] = ()) -> str:
        value = self.raw(key, default)
        if value is None:
            return "" if default is REQUIRED or default is None else str(default)
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            self.problem(key, f"expected text, got {_type_name(value)}")
            return ""
        value = str(value)
        if choices and value not in choices:
            hint = did_you_mean(value, choices)
            self.problem(key, f"'{value}' is not one of: {', '.join(choices)}", hint)
        return value

    def integer(self, key: str, default: Any = REQUIRED, minimum: int | None = None,
                maximum: int | None = None) -> int:
        value = self.raw(key, default)
        if value is None:
            return 0 if default is REQUIRED or default is None else int(default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(key, f"expected a whole number, got {value!r}")
            return minimum or 0
        return self._bounded(key, value, minimum, maximum)

    def _bounded(self, key: str, value: int, minimum: int | None, maximum: int | None) -> int:
        # Out of range: the problem is recorded (the file is refused) and the value comes
        # back clamped, so what is read after it never sizes anything by it (a lab disk
        # `count: 10**400` made a list of that many names: 24 GiB, then the OOM killer).
        if minimum is not None and value < minimum:
            self.problem(key, f"must be at least {minimum}, got {value}")
            return minimum
        if maximum is not None and value > maximum:
            self.problem(key, f"must be at most {maximum}, got {value}")
            return maximum
        return value

    def number(self, key: str, default: Any = REQUIRED) -> float:
        value = self.raw(key, default)
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(key, f"expected a number, got {value!r}")
            return 0.0
        if isinstance(value, int) and abs(value) > 2**53:
            self.problem(key, f"is too large ({len(str(abs(value)))} digits)")
            return 0.0
        if not math.isfinite(value):
            self.problem(key, f"expected a finite number, got {value}")
            return 0.0
        return float(value)

    def boolean(self, key: str, default: Any = REQUIRED) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            self.problem(key, f"expected true or false, got {value!r}")
            return False
        return value

    def size(self, key: str, default: Any = REQUIRED) -> int:
        value = self.raw(key, default)
        if value is None:
            return 0
        return self._convert(key, value, units.parse_size, "a size such as 4k, 1M or 2G", 0)

    def duration(self, key: str, default: Any = REQUIRED) -> float:
        value = self.raw(key, default)
        if value is None:
            return 0.0
        return self._convert(key, value, units.parse_duration, "a duration such as 10s or 2m",
                             0.0)

    def text_list(self, key: str, default: Any = REQUIRED) -> list[str]:
        value = self.raw(key, default)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
            self.problem(key, f"expected a list of text, got {_type_name(value)}")
            return []
        return [str(v) for v in value]

    def location(self, key: str, default: Any = REQUIRED) -> Path:
        """A directory or file volbench works in: absolute (a relative one is taken from
        the experiment file's folder), and not `/` nor a system directory."""
        text = self.text(key, default)
        if not text:
            if self.has(key):
                self.problem(key, "is empty", "give a path")
            return Path(".")
        if "\0" in text:
            self.problem(key, "contains a NUL character", "give a path")
            return Path(".")
        path = fieldrules.absolute(text, self.base)
        why = fieldrules.system_problem(path)
        if why is not None:
            self.problem(key, why, "use a directory of its own, e.g. /srv/bench or "
                         "/var/tmp/volbench")
        return path

    def sub(self, key: str, default: Any = REQUIRED) -> Reader:
        value = self.raw(key, default)
        fields, each = self._inner(key)
        child = Reader({} if value is None else value, self.at(key), self.problems, self.base,
                       fields)
        child.each = each
        return child

    def items(self, key: str, default: Any = REQUIRED) -> list[Reader]:
        value = self.raw(key, default)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(key, f"expected a list, got {_type_name(value)}",
                         "write one entry per line starting with '- '")
            return []
        fields, _ = self._inner(key)
        return [Reader(v, f"{self.at(key)}[{i}]", self.problems, self.base, fields)
                for i, v in enumerate(value)]

    def axis(self, key: str, default: Any, convert: Callable[[Any], T], expected: str,
             placeholder: T) -> list[T]:
        """A matrix dimension: one value or a list of values (each converted and checked)."""
        value = self.raw(key, default)
        values = value if isinstance(value, list) else [value]
        if not values:
            self.problem(key, "an empty list gives no cases", "give at least one value")
            return [placeholder]
        out: list[T] = []
        for i, item in enumerate(values):
            where = f"{key}[{i}]" if isinstance(value, list) else key
            out.append(self._convert(where, item, convert, expected, placeholder))
        return out


# Converters for matrix axes (Reader.axis): one value in, the typed value out, or a
# ValueError whose message is what the user reads after the field's path.

@dataclass(frozen=True)
class Checked(Generic[T]):
    """A converter and the JSON Schema of the values it takes (`volbench schema` shows
    an axis's values with it; tests/unit/test_schema.py checks the two agree)."""

    convert: Callable[[Any], T]
    schema: Mapping[str, Any]

    def __call__(self, value: Any) -> T:
        return self.convert(value)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"expected true or false, got {value!r}")


# true/false (1 and 0 are accepted too: fio users write direct=1).
flag = Checked(_flag, {"anyOf": [{"type": "boolean"}, {"enum": [0, 1]}]})


def whole(minimum: int, what: str = "a whole number", maximum: int | None = None
          ) -> Checked[int]:
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"expected {what}, at least {minimum}, got {value!r}")
        if maximum is not None and value > maximum:
            raise ValueError(f"expected {what}, at most {maximum}, got {value!r}")
        return value

    bounds = {"minimum": minimum, **({"maximum": maximum} if maximum is not None else {})}
    return Checked(convert, {"type": "integer", **bounds})


def _percent(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise ValueError(f"expected a percentage 0..100, got {value!r}")
    return value


percent = Checked(_percent, {"type": "integer", "minimum": 0, "maximum": 100})


def choice(options: Sequence[str]) -> Checked[str]:
    def convert(value: Any) -> str:
        if value not in options:
            hint = did_you_mean(str(value), options)
            raise ValueError(f"'{value}' is not one of: {', '.join(options)}"
                             + (f" ({hint})" if hint else ""))
        return str(value)

    return Checked(convert, {"enum": list(options)})
