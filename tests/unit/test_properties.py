"""Property-based tests: generated and mutated inputs get volbench's typed errors only.

Tool outputs start from the captured real files under tests/data and are mutated
(values swapped for NaN, 400-digit numbers, text, nothing; lines cut or doubled);
experiment files are generated from valid fields and then mutated the same way. Any
exception that is not a VolbenchError is a traceback a user would see, and fails.

Reproducible and bounded for CI: derandomized (the same examples on every run), a
fixed number of examples, no example database, no per-example deadline (the machine
is shared; the example counts bound the time: ~10 s for the whole file).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import DATA, ROOT
from volbench.core.errors import ExperimentError, VolbenchError
from volbench.engine import experiment
from volbench.engine.importer import IMPORTERS, read_output

CI = settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOOL_DIRS = {"fio": "fio", "bonnie++": "bonnie++", "dd": "dd", "hdparm": "hdparm",
             "pgbench": "pgbench"}
SKIP_SUFFIXES = (".cmd", ".exitcode", ".fio")


def seeds(tool: str) -> list[tuple[str, str]]:
    """(name, text) of every captured output of `tool` with something in it."""
    out = []
    for path in sorted((DATA / TOOL_DIRS[tool]).rglob("*")):
        if path.is_file() and not path.name.endswith(SKIP_SUFFIXES) and "_log" not in path.name \
                and path.stat().st_size > 0:
            out.append((str(path.relative_to(DATA)), path.read_text(errors="replace")))
    return out


# Values that broke parsers or reports before, and their relatives.
NASTY = ["NaN", "nan", "Infinity", "-Infinity", "inf", "1e400", "-1", "0", "", "9" * 400,
         "-" + "9" * 400, "0.0.0", "+++++", "abc", "1e-400", "null", "true", "[]", "{}", ",",
         "\x00", "\ufffd", "1,5", " ", "\n"]
JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(NASTY),
    st.text(max_size=8), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


@st.composite
def mutated_text(draw: st.DrawFn, texts: list[tuple[str, str]]) -> str:
    """A captured output with one to three text edits."""
    _, text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 3))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(at, min(len(text), at + 40)))
        edit = draw(st.sampled_from(["replace", "delete", "cut", "double"]))
        if edit == "replace":
            text = text[:at] + draw(st.sampled_from(NASTY) | st.text(max_size=6)) + text[end:]
        elif edit == "delete":
            text = text[:at] + text[end:]
        elif edit == "cut":
            text = text[:at]
        else:
            lines = text.splitlines(keepends=True)
            i = draw(st.integers(0, len(lines) - 1))
            text = "".join(lines[:i + 1] + lines[i:])
    return text


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_json(draw: st.DrawFn, texts: list[tuple[str, str]]) -> str:
    """fio JSON with one to three values anywhere in the tree replaced or removed."""
    candidates = [t for _, t in texts if t.lstrip().startswith("{")]
    data = json.loads(draw(st.sampled_from(candidates)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return json.dumps(data)


def only_typed_errors(tool: str, text: str) -> None:
    with contextlib.suppress(VolbenchError):
        read_output(tool, text, "mutated")


@pytest.mark.parametrize("tool", sorted(TOOL_DIRS))
def test_every_tool_has_captured_outputs_to_start_from(tool: str) -> None:
    assert tool in IMPORTERS
    assert len(seeds(tool)) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("tool", sorted(TOOL_DIRS))
def test_mutated_tool_outputs_give_typed_errors_only(tool: str) -> None:
    texts = seeds(tool)

    @CI
    @given(mutated_text(texts))
    def check(text: str) -> None:
        only_typed_errors(tool, text)

    check()


@pytest.mark.slow
@CI
@given(mutated_json(seeds("fio")))
def test_fio_json_with_any_value_anywhere_gives_typed_errors_only(text: str) -> None:
    only_typed_errors("fio", text)


@pytest.mark.slow
@CI
@given(mutated_json(seeds("fio")))
def test_an_imported_run_holds_only_believable_values(text: str) -> None:
    """Whatever a mutated file makes it through the importer holds finite values only."""
    try:
        imported = read_output("fio", text, "mutated")
    except VolbenchError:
        return
    for metric in imported.parsed.metrics:
        assert metric.value is None or abs(metric.value) <= 1e18


# -- experiment files -----------------------------------------------------------------------

EXAMPLES = ROOT / "examples"


def experiment_seeds() -> list[tuple[str, str]]:
    files = sorted(EXAMPLES.glob("*.yaml"))
    files.append(Path(experiment.__file__).parent / "defaults" / "default.yaml")
    return [(f.name, f.read_text()) for f in files]


@st.composite
def mutated_document(draw: st.DrawFn) -> Any:
    """An example experiment with one to three values anywhere replaced or removed."""
    _, text = draw(st.sampled_from(experiment_seeds()))
    document = experiment.load_yaml(text)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(document) if p]
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return document


def only_experiment_errors(parse: Any, *args: Any) -> None:
    with contextlib.suppress(ExperimentError):
        parse(*args)


def test_the_examples_are_valid_experiments() -> None:
    paths = sorted(EXAMPLES.glob("*.yaml"))
    assert len(paths) >= 5, f"expected the examples in {EXAMPLES}, found {len(paths)}"
    for path in paths:
        exp = experiment.load(path)  # relative paths (seed004's jobfile) from examples/
        assert exp.targets and exp.workloads, path


@pytest.mark.slow
@CI
@given(mutated_document())
def test_mutated_experiments_give_experiment_errors_only(document: Any) -> None:
    only_experiment_errors(experiment.parse_document, document, "mutated")


@pytest.mark.slow
@CI
@given(mutated_text(experiment_seeds()))
def test_edited_experiment_files_give_experiment_errors_only(text: str) -> None:
    only_experiment_errors(experiment.parse_text, text, "mutated")


NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@pytest.mark.slow
@CI
@given(st.text(max_size=80) | st.sampled_from(["..", ".", "", "a/b", "../x", "a" * 65, "-x"]))
def test_a_target_name_is_refused_unless_it_is_safe(name: str) -> None:
    document = {"targets": [{"name": name, "type": "directory", "path": "/var/tmp"}],
                "workloads": [{"name": "w", "tool": "fio"}]}
    try:
        exp = experiment.parse_document(document)
    except ExperimentError as exc:
        assert not NAME_RULE.fullmatch(name)
        assert any(p.path == "targets[0].name" for p in exc.problems)
        return
    assert NAME_RULE.fullmatch(exp.targets[0].name)
