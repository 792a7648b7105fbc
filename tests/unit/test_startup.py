"""Start-up: a command imports what it uses and nothing else (issue 33).

`volbench --version` and `--help` load the command line's parser only; `volbench plan
FILE` loads the target types and workload tools its file names. Each check runs the
command in a fresh Python (a test's own process has imported everything already) and
reads that interpreter's sys.modules. The time each takes is measured by
bench/startup.py, not here (docs/architecture.md, "Start-up").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from volbench.cli import options
from volbench.core.registry import LazyKinds
from volbench.engine.importer import IMPORTERS
from volbench.report import EXPORTERS
from volbench.targets import KINDS as TARGET_KINDS
from volbench.workloads import KINDS as WORKLOAD_KINDS

# What no command's parser may need: the report, any target or workload module, the
# engine, the statistics, the store's database code, the lab, YAML.
HEAVY = ("volbench.report", "volbench.targets", "volbench.workloads", "volbench.engine",
         "volbench.stats", "volbench.store.db", "volbench.lab", "volbench.faults", "yaml")

PROBE = """
import json, sys
from volbench.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def _imported(*argv: str) -> set[str]:
    """The modules a fresh interpreter has imported after `volbench ARGV`."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"],
                                  ["report", "--help"]])
def test_the_parser_imports_no_report_workload_or_target(argv: list[str]) -> None:
    assert _heavy(_imported(*argv)) == []


def test_plan_imports_only_the_kinds_its_file_uses(tmp_path: Path) -> None:
    file = tmp_path / "e.yaml"
    file.write_text("name: e\ntargets:\n  - {name: a, type: directory, path: " + str(tmp_path)
                    + "}\nworkloads:\n  - {name: w, tool: dd, count: 4}\n")
    found = _imported("plan", str(file))
    assert "volbench.targets.directory" in found and "volbench.workloads.dd" in found
    others = [m for m in (*(TARGET_KINDS.module(k) for k in TARGET_KINDS),
                          *(WORKLOAD_KINDS.module(k) for k in WORKLOAD_KINDS))
              if m not in ("volbench.targets.directory", "volbench.workloads.dd")]
    assert sorted(m for m in others if m in found) == []
    # nor the report, the runner and what only a run needs, the store, the fault kinds
    assert [m for m in found if m.startswith(("volbench.report", "volbench.engine.runner",
                                              "volbench.store.db", "volbench.faults",
                                              "volbench.lab"))] == []


def test_the_parsers_choices_are_the_registries() -> None:
    assert tuple(sorted(EXPORTERS)) == options.REPORT_FORMATS
    assert tuple(sorted(IMPORTERS)) == options.IMPORT_TOOLS


def test_every_registered_kind_loads_under_its_own_name() -> None:
    for registry in (TARGET_KINDS, WORKLOAD_KINDS):
        for name, kind in registry.items():
            assert kind.name == name


def test_a_kind_registered_under_another_name_is_refused() -> None:
    wrong = LazyKinds({"dd2": "volbench.workloads.dd:KIND"})
    with pytest.raises(RuntimeError, match="registered as 'dd2' but is named 'dd'"):
        wrong["dd2"]
    assert "dd2" in wrong and list(wrong) == ["dd2"] and len(wrong) == 1
