"""The schema refuses what volbench refuses: checked on every bad file the tests feed it.

tests/conftest.py watches every problem volbench's Reader records during a test
(`Reader.watch`). A problem of a field's type, choice or bound, or an unknown field or a
missing required one, is a thing a JSON Schema can say: the field's own declaration
(config/spec.py) must refuse the value too, or the test fails, naming the field. What a
schema cannot say is listed in CANNOT, each entry with why; tests/unit/test_schema.py
checks each entry on its sample (volbench refuses it, the schema lets it pass).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsonschema

from volbench.config.fields import Reader
from volbench.config.spec import Field

# Messages of a field's type, choice or bound: what a JSON Schema can state of one value.
TYPE_CHOICE_BOUND = re.compile(
    r"^(expected (text|a whole number|a number|true or false|a list|a mapping|a finite "
    r"number|a size|a duration|a percentage|a share|a count)|'.*' is not one of: |"
    r"must be at (least|most) |is too large|must be longer than 0 s|must be positive|"
    r"must be larger than 0|a (size|duration) cannot be negative|must be a fraction)")
_INDEXED = re.compile(r"^(?P<name>[^\[]+)\[\d+\]$")


@dataclass(frozen=True)
class Cannot:
    """A refusal the schema does not state: where (a regular expression over the field's
    path), which message, why, and a sample document volbench refuses with it."""

    path: str
    message: str
    why: str
    sample: dict[str, Any]


_DD = {"name": "w", "tool": "dd"}
_DIR = {"name": "t", "type": "directory", "path": "/srv/x"}
# A size's least value: a size is mostly written as text (16M), and a schema bounds numbers.
_SIZE_TEXT = "a size is mostly text (16M): a schema bounds numbers only"
CANNOT: tuple[Cannot, ...] = (
    Cannot(r"lab\.disks\[\d+\]\.size", "must be at least 16M", _SIZE_TEXT,
           {"lab": {"disks": [{"name": "d1", "size": "8M"}]}, "targets": [_DIR],
            "workloads": [_DD]}),
    Cannot(r"targets\[\d+\]\.size", "must be at least 16M", _SIZE_TEXT,
           {"targets": [{"name": "t", "type": "image", "dir": "/srv/x", "size": "8M"}],
            "workloads": [_DD]}),
    Cannot(r"lab\.memory", "must be at least 512M", _SIZE_TEXT,
           {"lab": {"memory": "256M"}, "targets": [_DIR], "workloads": [_DD]}),
    Cannot(r"targets\[\d+\]\.lv_size", "must be at least 8M", _SIZE_TEXT,
           {"targets": [{"name": "t", "type": "lvm", "lv_size": "4M"}], "workloads": [_DD]}),
    Cannot(r"repeat\.max", "must be at least min", "a bound set by another field (min)",
           {"repeat": {"min": 5, "max": 4}, "targets": [_DIR], "workloads": [_DD]}),
    Cannot(r"steady\.window", "must be at most 100",
           "rounds: at most 100, within: run: 3600 seconds; the schema states the larger",
           {"steady": {"window": 200}, "targets": [_DIR], "workloads": [_DD]}),
)


def cannot(path: str, message: str) -> Cannot | None:
    return next((c for c in CANNOT if re.fullmatch(c.path, path)
                 and message.startswith(c.message)), None)


@dataclass(frozen=True)
class Seen:
    path: str
    key: str
    message: str
    field: Field[Any] | None
    value: Any
    declared: bool  # the reader knew its fields
    # The value of the field it is only taken beside (Field.when), if it has one.
    beside: Any = None


def seen(reader: Reader, key: str | int, message: str) -> Seen | None:
    """What a problem says of one field, or None when it is not about one."""
    if not isinstance(key, str) or not key:
        return None
    name = m.group("name") if (m := _INDEXED.match(key)) else key
    value = reader.data.get(name) if hasattr(reader.data, "get") else None
    found = reader.field(name)
    if reader.each is not None:
        return None  # a free name (a lab class): its fields are checked one level down
    field = found if isinstance(found, Field) else None
    beside = reader.data.get(field.when[0]) if field is not None and field.when else None
    return Seen(reader.at(key), name, message, field, value, reader.declared is not None,
                beside)


def missed(found: Seen) -> str | None:
    """Why the schema would let this refused value pass (None: it refuses it too, or the
    problem is not one a schema can state)."""
    if not found.declared:
        return None
    if found.message == "unknown field":
        when = found.field.when if found.field is not None else None
        if found.field is None or (when is not None and found.beside not in when[1]):
            return None  # not declared, or only beside another value: the schema says so
        return f"{found.path}: declared yet called unknown"
    if found.field is None:
        return None
    if found.message == "is required":
        return None if found.field.required else f"{found.path}: required, not declared so"
    if not TYPE_CHOICE_BOUND.match(found.message):
        return None
    try:
        schema = found.field.json_schema()
    except NotImplementedError as exc:
        return f"{found.path}: {exc}"
    if not jsonschema.Draft7Validator(schema).is_valid(found.value):
        return None
    if cannot(found.path, found.message) is not None:
        return None
    return (f"{found.path}: volbench refuses {found.value!r} ({found.message}) but the "
            f"schema of `{found.key}` lets it pass; state it in the field's declaration, "
            "or list it in tests/schemacheck.py CANNOT with why")
