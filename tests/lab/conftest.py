"""Lab boots shared by several test files (a boot costs ~20 s quiet, minutes under load,
plus the guest's setup). A session-scoped fixture boots once and runs every experiment
its tests need in that one guest; each test file then reads its own results.

- `nfs_hop_boot`: one disk ("store", 600 MiB, class fast), two client namespaces over
  veth with `tc netem` delaying each direction by DELAY_MS, then the experiments
  hop.yaml (tests/lab/test_nfs_hop_lab.py) and curve.yaml (tests/lab/test_curves_lab.py)
  one after the other. Returns the shared folder: NAME.db per experiment and
  checks.json (exit code per experiment, mounts, exports, namespaces left after both).

To put another lab test on a shared boot: its experiment must fit the boot's disks and
guest setup; add its YAML to the fixture's list and read NAME.db in the test.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_curves_lab import EXPERIMENT as CURVE
from test_nfs_hop_lab import DELAY_MS, GUEST_SCRIPT
from test_nfs_hop_lab import EXPERIMENT as HOP

from support import TESTS, need_lab
from volbench.lab import DEFAULT_MODULES, LabDisk, LabSpec, run_in_vm

MiB = 1024**2


@pytest.fixture(scope="session")
def nfs_hop_boot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_lab()
    out = tmp_path_factory.mktemp("nfshop")
    (out / "guest.py").write_text(GUEST_SCRIPT)
    experiments = {"hop": HOP, "curve": CURVE}
    for name, doc in experiments.items():
        (out / f"{name}.yaml").write_text(json.dumps(doc))
    work = Path("/var/tmp/volbench-tests") / f"nfshop-{os.getpid()}"
    spec = LabSpec(disks=(LabDisk("store", 600 * MiB, "fast"),),
                   modules=(*DEFAULT_MODULES, "veth", "sch_netem"))
    argv = [sys.executable, str(out / "guest.py"), str(out), str(TESTS), str(DELAY_MS),
            *experiments]
    result = run_in_vm(spec, argv, out, timeout=2400, workdir=work)
    assert result.returncode == 0, result.console[-4000:]
    work.rmdir()
    return out
