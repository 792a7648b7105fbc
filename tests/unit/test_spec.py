"""Fields declared once (config/spec.py): a declaration reads like the typed reader it names,
with the same messages; an axis goes on with its converted default after a bad value; every
field a kind declares is one its parse function reads."""

from __future__ import annotations

from typing import Any

import pytest

from volbench import targets, workloads
from volbench.config.fields import Reader, choice, whole
from volbench.config.limits import Limits
from volbench.config.spec import (
    Axis,
    Boolean,
    Field,
    Integer,
    Size,
    Text,
    TextList,
    TextMap,
    show,
)
from volbench.core.errors import Problem
from volbench.workloads import dd, fio


def read(data: dict[str, Any], declared: Field[Any]) -> tuple[Any, list[str]]:
    problems: list[Problem] = []
    value = Reader(data, "w", problems).get(declared)
    return value, [str(p) for p in problems]


def test_a_declared_text_field_checks_its_choices_with_the_readers_message() -> None:
    field = Text("mode", "fast", choices=("fast", "slow"))
    assert read({}, field) == ("fast", [])
    assert read({"mode": "slwo"}, field) == (
        "slwo", ["w.mode: 'slwo' is not one of: fast, slow (did you mean 'slow'?)"])


def test_a_declared_integer_checks_its_bounds_and_a_required_field_is_required() -> None:
    field = Integer("disks", 2, minimum=1, maximum=8)
    assert read({"disks": 9}, field)[1] == ["w.disks: must be at most 8, got 9"]
    assert read({}, Integer("disks", minimum=1))[1] == ["w.disks: is required"]
    assert read({}, Size("size", "1G"))[0] == 1024**3
    assert read({"on": 1}, Boolean("on", False))[1] == ["w.on: expected true or false, got 1"]


def test_an_axis_goes_on_with_its_converted_default_after_a_bad_value() -> None:
    assert fio.AXES[5].name == "runtime" and fio.AXES[5].placeholder == 10.0  # "10s"
    assert fio.AXES[7].placeholder == 1  # direct: true, as fio's 1
    assert dd.FIELDS[0].placeholder == "write"  # the first of the default list
    field = Axis("depth", 4, convert=whole(1), expected="a whole number")
    assert read({"depth": [2, 0]}, field) == (
        (2, 4), ["w.depth[1]: expected a whole number, at least 1, got 0"])


def test_an_axis_placeholder_may_differ_from_its_default() -> None:
    field = Axis("clients", 10, convert=whole(1), placeholder=1)
    assert read({"clients": "x"}, field)[0] == (1,)
    assert read({}, field)[0] == (10,)


def test_a_default_its_own_converter_refuses_fails_at_declaration() -> None:
    with pytest.raises(ValueError, match="'sideways' is not one of: read, write"):
        Axis("rw", "sideways", convert=choice(("read", "write")))


def test_a_default_worked_out_at_parse_time() -> None:
    field = Text("metadata", None, choices=("dup", "raid1"))
    assert read({}, field.defaulting("dup")) == ("dup", [])
    assert read({"metadata": "raid1"}, field.defaulting("dup")) == ("raid1", [])


def test_a_default_list_is_never_shared_between_specs() -> None:
    field = TextList("options", ["a"])
    first, _ = read({}, field)
    first.append("b")
    assert read({}, field)[0] == ["a"]
    assert read({"env": {"A": 1}}, TextMap("env", None))[0] == {"A": "1"}


def test_defaults_are_shown_as_an_experiment_file_writes_them() -> None:
    assert [show(v) for v in (True, False, "4k", 1, ["write", "read"], None, "", [])] == [
        "true", "false", "4k", "1", "[write, read]", None, None, None]


SAMPLE = {Text: "x", Integer: 1, Size: "64M", Boolean: True, TextList: ["x"], TextMap: {}}


def _sample(field: Field[Any]) -> Any:
    if field.default is not None and field.shown() is not None:
        return field.default
    return next((v for t, v in SAMPLE.items() if isinstance(field, t)), "x")


def _unknown(problems: list[Problem], name: str) -> list[str]:
    return [str(p) for p in problems
            if p.path.endswith(f".{name}") and p.message == "unknown field"]


@pytest.mark.parametrize("kind", sorted(workloads.KINDS))
def test_every_field_a_workload_declares_is_read_by_its_parse(kind: str) -> None:
    parse = workloads.KINDS[kind].parse
    assert workloads.KINDS[kind].fields, f"workload {kind} declares no fields"
    for field in workloads.KINDS[kind].fields:
        problems: list[Problem] = []
        r = Reader({field.name: _sample(field)}, "w", problems)
        parse(r, "w")
        assert not _unknown(problems, field.name), (kind, field.name)


@pytest.mark.parametrize("kind", sorted(targets.KINDS))
def test_every_field_a_target_type_declares_is_read_by_its_parse(kind: str) -> None:
    for field in targets.KINDS[kind].fields:
        problems: list[Problem] = []
        r = Reader({field.name: _sample(field)}, "t", problems)
        targets.KINDS[kind].parse(r, "t", Limits())
        r.finish()
        assert not _unknown(problems, field.name), (kind, field.name)


ALL_TARGET_FIELDS = {f.name: f for k in targets.KINDS.values() for f in k.fields}


@pytest.mark.parametrize("kind", sorted(targets.KINDS))
def test_a_target_type_declares_every_field_of_another_type_it_reads(kind: str) -> None:
    """The converse: no field is read but left out of the table (a shared one, say)."""
    declared = {f.name for f in targets.KINDS[kind].fields}
    for name, field in ALL_TARGET_FIELDS.items():
        problems: list[Problem] = []
        r = Reader({name: _sample(field)}, "t", problems)
        targets.KINDS[kind].parse(r, "t", Limits())
        r.finish()
        assert bool(_unknown(problems, name)) == (name not in declared), (kind, name)
