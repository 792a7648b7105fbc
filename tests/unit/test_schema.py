"""`volbench schema`: derived from the declarations validation reads with (issue 33).

Every example validates; every field of every target type, tool and section is in it
with its type, choices and bounds; a bad value of any declared field that volbench
refuses, the schema refuses at the same place (generated here for every field, and
checked on every bad file of the whole test suite by tests/conftest.py); what a schema
cannot say is listed in tests/schemacheck.py, each entry checked on its sample.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from schemacheck import CANNOT, TYPE_CHOICE_BOUND
from support import ROOT
from volbench.cli.main import main
from volbench.config import fields
from volbench.config.fields import Reader
from volbench.config.sections import Either, Items, Kinds, Named, Section
from volbench.config.spec import Field, Integer
from volbench.core.errors import ExperimentError
from volbench.engine import experiment, filefields
from volbench.engine.schema import schema
from volbench.targets import KINDS as TARGET_KINDS
from volbench.workloads import KINDS as WORKLOAD_KINDS

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
DEFAULT = ROOT / "src/volbench/engine/defaults/default.yaml"


def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(schema())


def test_the_schema_is_a_valid_draft_7_schema_and_the_command_prints_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema.Draft7Validator.check_schema(schema())
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema()


@pytest.mark.parametrize("path", [*EXAMPLES, DEFAULT], ids=lambda p: p.name)
def test_every_example_validates(path: Path) -> None:
    document = experiment.load_yaml(path.read_text())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in
              _validator().iter_errors(document)]
    assert errors == []


def _kind_properties(key: str, kind: str) -> set[str]:
    entry = schema()["properties"][key]["items"]
    then = next(c["then"] for c in entry["allOf"] if c["if"]["properties"][
        "type" if key == "targets" else "tool"]["const"] == kind)
    return set(then["properties"])


def test_every_field_of_every_kind_is_in_the_schema() -> None:
    for key, field, registry in (("targets", filefields.TARGETS, TARGET_KINDS),
                                 ("workloads", filefields.WORKLOADS, WORKLOAD_KINDS)):
        for kind in registry:
            assert _kind_properties(key, kind) == {f.name for f in field.of(kind)}, kind


def test_a_field_added_to_a_table_is_in_the_schema_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to register: the schema is built from the tables themselves."""
    kind = TARGET_KINDS["loopdisk"]
    added = Integer("stripes_per_disk", 4, minimum=1, maximum=8, help="a new field")
    monkeypatch.setitem(TARGET_KINDS._loaded, "loopdisk",  # type: ignore[attr-defined]
                        dataclasses.replace(kind, fields=(*kind.fields, added)))
    then = _kind_properties("targets", "loopdisk")
    assert "stripes_per_disk" in then
    entry = schema()["properties"]["targets"]["items"]["allOf"]
    found = next(c["then"]["properties"]["stripes_per_disk"] for c in entry
                 if c["if"]["properties"]["type"]["const"] == "loopdisk")
    assert found == {"type": "integer", "minimum": 1, "maximum": 8,
                     "description": "a new field", "default": 4}


def test_a_field_read_without_a_declaration_is_caught() -> None:
    """Read, but not declared: the schema would not know it, and the tests fail on it
    (tests/conftest.py); here the list is emptied again after the check."""
    r = Reader({"depth": 3, "lab": {"cpus": 2, "gpus": 1}}, "", [],
               declared=(Integer("width", 1), filefields.LAB))
    r.integer("depth", 1)
    lab = r.sub("lab")
    lab.integer("cpus", 2)
    lab.integer("gpus", 0)
    found = list(fields.undeclared)
    fields.undeclared.clear()
    assert found == ["depth", "lab.gpus"]


# -- every declared field: a bad value volbench refuses, the schema refuses ----------------

DIRECTORY = {"name": "t", "type": "directory", "path": "/srv/volbench-schema"}
DD = {"name": "w", "tool": "dd"}
# Siblings an entry needs for its code to read the field under test at all.
SIBLINGS = {"faults": {"at": "5s", "action": "slow", "target": "t"},
            "disks": {"name": "d1"}}


# Values tried on every field: types, signs, sizes and words that some field refuses. The
# verdicts are volbench's and the schema's, each on its own: neither is derived from the
# other, so a bound the schema forgot (or invented) shows.
PROBES: tuple[Any, ...] = (-1, 0, 1, 2, 100, 10**7, 1.5, True, "x", "no-such-choice",
                           "4k", "12 parsecs", "10s", "soon", "50%", {"a": 1}, [], ["x"], [1])


def _bad(field: Field[Any]) -> list[Any]:
    """The probes, and each side of a declared integer's bounds."""
    found = list(PROBES)
    if isinstance(field, Integer):
        found += [b for b in (field.minimum, field.maximum) if b is not None]
        found += [field.minimum - 1] if field.minimum is not None else []
        found += [field.maximum + 1] if field.maximum is not None else []
    return found


Place = Callable[[Any], dict[str, Any]]


def _inside(field: Field[Any], place: Place, path: str
            ) -> Iterator[tuple[Field[Any], Place, str]]:
    """Every field under `field` (itself first), each with how to put a value there."""
    yield field, place, path
    if isinstance(field, Section | Either):
        shape = field if isinstance(field, Section) else next(
            s for s in field.shapes if isinstance(s, Section))
        for f in shape.fields:
            yield from _inside(f, lambda v, f=f: place({f.name: v}), f"{path}.{f.name}")
    elif isinstance(field, Items):
        extra = SIBLINGS.get(field.name, {})
        for f in field.fields:
            yield from _inside(f, lambda v, f=f: place([{**extra, f.name: v}]),
                               f"{path}[0].{f.name}")
    elif isinstance(field, Named):
        for f in field.each:
            yield from _inside(f, lambda v, f=f: place({"c1": {f.name: v}}),
                               f"{path}.c1.{f.name}")


def _places() -> Iterator[tuple[Field[Any], Place, str]]:
    def top(f: Field[Any]) -> Place:
        return lambda v: {"targets": [DIRECTORY], "workloads": [DD], f.name: v}

    for f in filefields.FIELDS:
        if not isinstance(f, Kinds):
            yield from _inside(f, top(f), f.name)
    for kind in TARGET_KINDS:
        for f in filefields.TARGETS.of(kind):
            if f.name not in ("name", "type"):
                yield from _inside(f, lambda v, f=f, k=kind: {
                    "targets": [{"name": "t", "type": k, f.name: v}], "workloads": [DD]},
                    f"targets[0].{f.name}")
    for tool in WORKLOAD_KINDS:
        for f in filefields.WORKLOADS.of(tool):
            if f.name not in ("name", "tool"):
                # An objective is read only beside a load curve.
                curve = {"load": {"steps": ["50%"]}} if f.name == "sla" else {}
                yield from _inside(f, lambda v, f=f, t=tool, c=curve: {
                    "targets": [DIRECTORY],
                    "workloads": [{"name": "w", "tool": t, **c, f.name: v}]},
                    f"workloads[0].{f.name}")


def _refused_at(document: dict[str, Any], path: str) -> list[str]:
    """volbench's problems at `path` or inside it."""
    try:
        experiment.parse_document(document, "bad", Path("/srv"))
    except ExperimentError as exc:
        return [str(p) for p in exc.problems
                if p.path == path or p.path.startswith((path + ".", path + "["))]
    return []


def _schema_path(error: jsonschema.ValidationError) -> str:
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _schema_refuses_at(validator: jsonschema.Draft7Validator, document: dict[str, Any],
                       path: str, name: str) -> bool:
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    for error in validator.iter_errors(document):
        where = _schema_path(error)
        if where == path or where.startswith((path + ".", path + "[")):
            return True
        if where == parent and repr(name) in error.message:  # an unknown or missing key
            return True
    return False


@pytest.mark.slow  # ~20 probes on each of ~700 fields: 20-25 s; CI runs it
def test_every_declared_field_refuses_in_the_schema_what_volbench_refuses() -> None:
    validator = _validator()
    refused_both, missed, strict = 0, [], []
    for field, place, path in _places():
        for bad in _bad(field):
            document = place(bad)
            found = _refused_at(document, path)
            # Type, choice and bound problems: what one field's schema can say.
            refused = [r for r in found if TYPE_CHOICE_BOUND.match(r.split(": ", 1)[-1])]
            in_schema = _schema_refuses_at(validator, document, path, field.name)
            if refused and not in_schema:
                if not any(re.fullmatch(c.path, path) and any(
                        r.split(": ", 1)[-1].startswith(c.message) for r in refused)
                           for c in CANNOT):
                    missed.append(f"{path} = {bad!r}: {refused[0]}")
            elif in_schema and not found:
                strict.append(f"{path} = {bad!r}")
            refused_both += bool(refused) and in_schema
    assert missed == [], "volbench refuses, the schema lets pass:\n" + "\n".join(missed)
    assert strict == [], "the schema refuses what volbench takes:\n" + "\n".join(strict)
    assert refused_both > 1000  # the walk reached every kind's fields


def test_an_unknown_field_is_refused_in_every_target_type_and_tool() -> None:
    validator = _validator()
    for kind in TARGET_KINDS:
        document = {"targets": [{"name": "t", "type": kind, "colour": "red"}]}
        assert _schema_refuses_at(validator, document, "targets[0].colour", "colour"), kind
    for tool in WORKLOAD_KINDS:
        document = {"workloads": [{"name": "w", "tool": tool, "colour": "red"}]}
        assert _schema_refuses_at(validator, document, "workloads[0].colour", "colour"), tool


@pytest.mark.parametrize("entry", CANNOT, ids=lambda c: c.path)
def test_what_the_schema_cannot_say_is_refused_by_volbench_only(entry: Any) -> None:
    """Each listed case: volbench refuses its sample with that message, the schema lets it
    pass (so the entry is still needed, and still true)."""
    with pytest.raises(ExperimentError) as caught:
        experiment.parse_document(entry.sample, "sample", Path("/srv"))
    messages = [p.message for p in caught.value.problems
                if re.fullmatch(entry.path, p.path)]
    assert any(m.startswith(entry.message) for m in messages), messages
    assert _validator().is_valid(entry.sample)
    assert entry.why


def test_no_enum_repeats_a_value() -> None:
    """The YAML language server refuses a schema whose enum repeats a value ("4" and
    "4.0" of NFS's versions, as numbers, were 4 twice): tests/system/test_editor_schema.py
    reads the schema with the real server."""
    def enums(node: Any) -> Iterator[list[Any]]:
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list):
                yield node["enum"]
            for value in node.values():
                yield from enums(value)
        elif isinstance(node, list):
            for value in node:
                yield from enums(value)

    found = list(enums(schema()))
    assert len(found) > 20
    for values in found:
        assert len({json.dumps(v) if not isinstance(v, float | int) or isinstance(v, bool)
                    else float(v) for v in values}) == len(values), values
