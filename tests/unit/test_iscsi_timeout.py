"""An iSCSI target's replacement_timeout: read from the experiment file, set on the node
record before the login (faults/iscsi.py's `cut` records what the session reports)."""

from __future__ import annotations

from typing import Any

import pytest

from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_text
from volbench.system import proc
from volbench.system.block import stackparse
from volbench.targets import iscsi

TARGETS = """
targets:
  - {name: plain, type: loopdisk, size: 1G}
  - {name: i1, type: iscsi, on: [plain], fs: none TIMEOUT}
workloads:
  - {name: reads, tool: fio, rw: randread, runtime: 10s}
"""


def spec(timeout: str) -> Any:
    exp = parse_text(TARGETS.replace("TIMEOUT", timeout), "exp.yaml")
    return next(t for t in exp.targets if t.name == "i1")


def test_replacement_timeout_defaults_to_15_s_and_is_set_in_whole_seconds() -> None:
    assert spec("").replacement_timeout == 15
    assert spec(", replacement_timeout: 5s").replacement_timeout == 5
    assert spec(", replacement_timeout: 2m").replacement_timeout == 120


@pytest.mark.parametrize(("value", "expected"), [
    ("0s", "targets[1].replacement_timeout: 0 s is not a whole number of seconds from 1 to "
           "3600 (e.g. replacement_timeout: 5s)"),
    ("1.5s", "targets[1].replacement_timeout: 1.5 s is not a whole number"),
    ("2h", "targets[1].replacement_timeout: 7200 s is not a whole number"),
])
def test_a_replacement_timeout_out_of_range_is_refused_with_the_fix(value: str,
                                                                   expected: str) -> None:
    with pytest.raises(ExperimentError) as info:
        spec(f", replacement_timeout: {value}")
    found = [str(p) for p in info.value.problems]
    assert any(p.startswith(expected) for p in found), found


class Steps:
    """A recipe and a scope that record what the login asked for and run nothing."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def run(self, argv: list[str], *, timeout: float) -> proc.Completed:
        self.argvs.append(list(argv))
        return proc.Completed(tuple(argv), 0, "", "", 0.0, 0.0, 0.0, 0.0)

    def add(self, kind: str, **data: Any) -> None:
        pass


def test_login_sets_the_replacement_timeout_on_the_node_record_before_logging_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    iqn = "iqn.2003-01.org.volbench:vb-i1"
    view = stackparse.IscsiTargetView(iqn, disks=("null",))  # /dev/null: "the disk is there"
    monkeypatch.setattr(iscsi, "session_views", lambda: [view])
    steps = Steps()
    assert iscsi.login(steps, steps, iqn, "127.0.0.1:3260", 5) is view  # type: ignore[arg-type]
    node = ["iscsiadm", "-m", "node", "-T", iqn, "-p", "127.0.0.1:3260"]
    assert steps.argvs == [
        [*node, "-o", "new"],
        [*node, "-o", "update", "-n", "node.session.timeo.replacement_timeout", "-v", "5"],
        [*node, "--login"]]
