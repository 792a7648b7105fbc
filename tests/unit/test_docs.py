"""Documentation keeps up with the code: every command has help and a line in the README,
every target type a section in docs/layouts.md, every workload tool its page (the
sqlite-utils habit: a test fails when something new is left undocumented)."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from typing import Any

import pytest

from support import ROOT
from volbench import targets, workloads
from volbench.cli.main import main, parser
from volbench.config.spec import Field, Text
from volbench.system.block.disks import DEVICE, SourceRules
from volbench.system.block.filesystems import fs_fields

DOCS = ROOT / "docs"


def _subcommands(p: argparse.ArgumentParser, prefix: str = "") -> dict[str, str]:
    """'run', 'lab run', … -> help text, from the real parser."""
    found: dict[str, str] = {}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found[f"{prefix}{name}"] = helps.get(name, "")
                found.update(_subcommands(sub, f"{prefix}{name} "))
    return found


COMMANDS = _subcommands(parser())


def test_the_parser_has_the_commands_the_readme_lists() -> None:
    assert {"run", "plan", "report", "compare", "import", "cleanup", "doctor", "lab run"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_and_a_line_in_the_readme(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert COMMANDS[name].strip(), f"volbench {name} has no help text"
    with pytest.raises(SystemExit) as done:
        parser().parse_args([*name.split(), "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: volbench")
    readme = (ROOT / "README.md").read_text()
    top = name.split()[0]
    assert re.search(rf"^volbench {re.escape(top)}\b", readme, re.M), (
        f"README's Commands block does not list `volbench {top}`"
    )


@pytest.mark.parametrize("kind", sorted(targets.KINDS))
def test_every_target_type_has_a_section(kind: str) -> None:
    text = (DOCS / "layouts.md").read_text()
    assert re.search(rf"^#+ `{re.escape(kind)}`", text, re.M), (
        f"docs/layouts.md has no section for target type `{kind}`"
    )


@pytest.mark.parametrize("tool", sorted(workloads.KINDS))
def test_every_workload_tool_has_its_page(tool: str) -> None:
    pages = {p.stem: p.read_text() for p in (DOCS / "workloads").glob("*.md")}
    titled = [
        stem for stem, text in pages.items()
        if re.search(rf"^#+ .*\b{re.escape(tool)}\b", text, re.M)
    ]
    assert tool.rstrip("+") in pages or titled, f"docs/workloads/ has no page for `{tool}`"


# -- every declared field, with its default, in the docs -----------------------------------

def _workload_page(tool: str) -> str:
    pages = {p.stem: p.read_text() for p in (DOCS / "workloads").glob("*.md")}
    if tool.rstrip("+") in pages:
        return pages[tool.rstrip("+")]
    return next(text for text in pages.values()
                if re.search(rf"^#+ .*\b{re.escape(tool)}\b", text, re.M))


def _section(heading: str) -> str:
    """docs/layouts.md from a heading (a regex) to the next heading of its level or above."""
    text = (DOCS / "layouts.md").read_text()
    start = re.search(rf"^(#+) {heading}.*$", text, re.M)
    assert start, f"docs/layouts.md has no section {heading}"
    end = re.compile(rf"^#{{1,{len(start.group(1))}}} ", re.M).search(text, start.end())
    return text[start.start():end.start() if end else len(text)]


def _target_section(kind: str) -> str:
    return _section(f"`{re.escape(kind)}`")


# Where what is said about one field ends: the next field named, the next YAML key, a blank
# line or a heading.
_NEXT = re.compile(r"`[\w.]+[`:]|\n\s*-?\s*[\w.]+:|\n\s*\n|\n#")


def _mentions(field: Field[Any], text: str) -> list[tuple[str, str]]:
    """Where the text names the field (`name`, `name:`, a YAML key, also commented out): for
    each mention, its line before the name, and what is said after it (prose wraps: up to
    160 characters)."""
    name = re.escape(field.name)
    named = re.compile(rf"`{name}[`:]|^\s*#?\s*-?\s*{name}:|[{{,]\s*{name}:", re.M)
    found = []
    for m in named.finditer(text):
        end = _NEXT.search(text, m.end())
        after = text[m.start():min(m.end() + 160, end.start() if end else len(text))]
        found.append((text[text.rfind("\n", 0, m.start()) + 1:m.start()], after))
    return found


def _gives_default(name: str, default: str, before: str, after: str) -> bool:
    """What is said about the field gives its default: "default 4k", "thin (sparse, the
    default)", `size: 512M  # default; …`, or "Defaults: `mode: run`, `scale: 10`"."""
    value = rf"(?<![\w.%])\"?{re.escape(default)}\"?(?![\w%])"
    forms = (rf"\bdefaults?\W{{0,3}}(?:is |= ?)?{value}",
             rf"{value} \((?:[^)]*\W)?default\b",
             # the YAML line's value, marked "# default;" (not "# default 8k")
             rf"^{re.escape(name)}: {value} +# (?:the )?default(?:[;,.]| \(|$)")
    if any(re.search(form, after.lstrip("`#- "), re.I) for form in forms):
        return True
    return "default" in before.lower() and bool(re.match(rf"`{re.escape(name)}: {value}`",
                                                         after))


def _undocumented(fields: tuple[Field[Any], ...], text: str) -> list[str]:
    """Fields the text never names, or never says the default of (as an experiment file
    writes it: 4k, true, [write, read] …), and choices of a text field it never names."""
    missing = []
    for field in fields:
        mentions = _mentions(field, text)
        default = field.shown()
        if not mentions:
            missing.append(f"{field.name} (not named)")
        elif default is not None and not any(
                _gives_default(field.name, default, *m) for m in mentions):
            missing.append(f"{field.name} (default {default} not said)")
        for choice in getattr(field, "choices", ()):  # anywhere in the section
            if not re.search(rf"(?<![\w.-]){re.escape(choice)}(?![\w-])", text):
                missing.append(f"{field.name} (choice {choice} not named)")
    return missing


@pytest.mark.parametrize("tool", sorted(workloads.KINDS))
def test_every_workload_field_is_documented_with_its_default(tool: str) -> None:
    missing = _undocumented(workloads.KINDS[tool].fields, _workload_page(tool))
    assert not missing, f"docs/workloads/ page of `{tool}` lacks: {', '.join(missing)}"


# Fields several target types read through shared code, documented once, by section.
SHARED_BY_SECTION: dict[str, tuple[Field[Any], ...]] = {
    "Filesystems": fs_fields(),
    "Disks": (DEVICE, *SourceRules().fields()),
}
SHARED = {f.name: f for fields in SHARED_BY_SECTION.values() for f in fields}


@pytest.mark.parametrize("section", sorted(SHARED_BY_SECTION))
def test_the_shared_target_fields_are_documented_once(section: str) -> None:
    missing = _undocumented(SHARED_BY_SECTION[section], _section(section))
    assert not missing, f"docs/layouts.md section {section} lacks: {', '.join(missing)}"


def _without_choices(field: Field[Any]) -> Field[Any]:
    return replace(field, choices=()) if isinstance(field, Text) else field


@pytest.mark.parametrize("kind", sorted(targets.KINDS))
def test_every_target_field_is_documented_with_its_default(kind: str) -> None:
    """A type's own fields in its section; a shared field there only when the type changes
    its default (zram's fs: ext4, mdraid's disks: 2), and then only that default."""
    fields = targets.KINDS[kind].fields
    own = tuple(f for f in fields if f.name not in SHARED)
    changed = tuple(_without_choices(f) for f in fields
                    if f.name in SHARED and f.shown() != SHARED[f.name].shown())
    missing = _undocumented((*own, *changed), _target_section(kind))
    assert not missing, f"docs/layouts.md section `{kind}` lacks: {', '.join(missing)}"


def test_the_volbench_fields_example_is_what_the_command_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / "experiments.md").read_text()
    shown = re.search(r"^\$ volbench fields dd\n(.*?)^```", text, re.M | re.S)
    assert shown, "docs/experiments.md shows no `volbench fields dd`"
    assert main(["fields", "dd"]) == 0
    assert capsys.readouterr().out == shown.group(1)


# A project path in prose: src/…, tests/…, bench/…; placeholders (VERSION, NAME) and globs
# are not paths.
PROJECT_PATH = re.compile(r"(?<![\w/.-])((?:src|tests|bench|scripts|docs|examples|\.ci)/"
                          r"[A-Za-z0-9_./-]*[A-Za-z0-9_])")


def named_paths(text: str) -> set[str]:
    return {p for p in PROJECT_PATH.findall(text)
            if not any(part.isupper() for part in p.split("/"))}


def test_every_path_the_docs_name_exists() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    sources = sorted((ROOT / "src").rglob("*.py"))
    missing = {}
    for page in [*pages, *sources]:
        found = named_paths(page.read_text())
        if page.suffix == ".py":  # in code, only the tests it points at
            found = {p for p in found if p.startswith("tests/")}
        if gone := sorted(p for p in found if not (ROOT / p).exists()):
            missing[str(page.relative_to(ROOT))] = gone
    assert missing == {}, f"paths named but not in the project: {missing}"


def test_the_path_check_sees_stale_test_paths() -> None:
    stale = "tests/" + "test_lab.py"  # split, or the path fixer would "fix" it too
    text = f"see {stale} and tests/lab/test_lab.py, tests/data/pgbench/VERSION/"
    assert named_paths(text) == {stale, "tests/lab/test_lab.py"}
    assert not (ROOT / stale).exists() and (ROOT / "tests/lab/test_lab.py").exists()
