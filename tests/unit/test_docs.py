"""Documentation keeps up with the code: every command has help and a line in the README,
every target type a section in docs/layouts.md, every workload tool its page (the
sqlite-utils habit: a test fails when something new is left undocumented)."""

from __future__ import annotations

import argparse
import re

import pytest

from support import ROOT
from volbench import targets, workloads
from volbench.cli.main import parser

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
