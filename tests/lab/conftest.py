"""One lab boot shared by most lab test files (a boot costs ~20 s quiet, a minute or more
under load, plus the guest's setup). The session-scoped `shared_boot` boots one guest
with every disk its steps need and runs the steps one after the other, never two at
once, so no step's disk or CPU sees another's load; each test file reads its own results.

Steps (in this order; each writes into the shared folder):
- `nfshop`: test_nfs_hop_lab.py's GUEST_SCRIPT (two client namespaces over veth with
  `tc netem`, then hop.yaml and curve.yaml): hop.db, curve.db, checks.json. First: its
  latency checks need the guest's CPU, and in CI the lab tests with boots of their own
  start ~12 min in, beside this boot (scripts/test); at its old place, last, it measured
  the hop at 5.1 ms instead of 2 ms beside that second VM (2026-11-27);
- `guard`: test_lab.py's GUARD_SCRIPT on disks g1-g4 and w1 (guard.json);
- `thin`, `precondition`, `burst`, `qmpiscsi`, `pull`, `timeouts`, `faults`, `rebuild`,
  `commit`: `volbench run` of that
  test file's EXPERIMENT (its `lab:` section names its own disks and classes; the boot
  carries all of them and the run records its own section): NAME.db and NAME-report.md;
- `faultkill`: test_fault_kills_lab.py's GUEST_SCRIPT (volbench killed during each kind of
  fault, a power cut among them, then `volbench cleanup`): kills.json;
- `powercut`: test_powercut_lab.py's GUEST_SCRIPT (the power-cut ground truth: every
  stack of its EXPERIMENT built on wrapped lab disks, CUTS cuts of all of them at once,
  each recovered and counted; tests/lab/powertruth.py): powercut.json.
steps.json has every step's exit code and seconds. The bursting disk (b1) is touched by
nothing before its run, so its QEMU bucket is full as on a fresh boot.

`lab run` through the CLI, kill -9, SIGTERM and the boot failures keep boots of their
own (test_lab.py), and so does test_stacks_lab.py (fifteen disks of its own).

The boot carries the disks and runs the steps of the test files pytest selected, and
only those (STEP_FILES): `pytest tests/lab/test_rebuild_lab.py` boots with the rebuild's
two disks and runs that step alone (a few minutes), while CI, selecting every file, runs
them all (~25 min on a quiet host; in CI, beside the rest, 29 min: faults 444 s, faultkill
256 s, timeouts 193 s, nfshop 157 s, qmpiscsi 154 s, rebuild 152 s, burst 91 s, pull 88 s,
thin 78 s, precondition 46 s, guard 36 s, and the boot; the commit step, added after
those figures, took 126-185 s alone at load 9-11 (12 disks for its LVM, 4 rounds of
1 s) and brings the boot's disks from 31 to 45).

To put another lab test on the shared boot: its disks must have names of their own and
its step must leave the guest as it found it; add the step below and read its files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from test_burst_lab import EXPERIMENT as BURST
from test_commit_lab import EXPERIMENT as COMMIT
from test_curves_lab import EXPERIMENT as CURVE
from test_fault_kills_lab import GUEST_SCRIPT as KILLS_SCRIPT
from test_fault_kills_lab import KILL_LAB, SEED
from test_fault_kills_lab import plan as kills_plan
from test_faults_lab import EXPERIMENT as FAULTS
from test_faults_pull_lab import EXPERIMENT as PULL
from test_faults_qmp_iscsi_lab import EXPERIMENT as QMP_ISCSI
from test_faults_timeouts_lab import EXPERIMENT as TIMEOUTS
from test_lab import GUARD_CLASSES, GUARD_DISKS, GUARD_SCRIPT
from test_nfs_hop_lab import DELAY_MS, PING_INTERVAL_S
from test_nfs_hop_lab import EXPERIMENT as HOP
from test_nfs_hop_lab import GUEST_SCRIPT as NFSHOP_SCRIPT
from test_powercut_lab import EXPERIMENT as POWERCUT
from test_powercut_lab import GUEST_SCRIPT as POWERCUT_SCRIPT
from test_powercut_lab import step_args as powercut_args
from test_powercut_run_lab import EXPERIMENT as POWERCUT_RUN
from test_precondition_lab import EXPERIMENT as PRECONDITION
from test_rebuild_lab import EXPERIMENT as REBUILD
from test_thin_first_touch_lab import experiment_text as thin_experiment

import hostload
from support import TESTS, need_lab
from volbench.config.lab import DEFAULT_CLASSES, DiskClass, LabDisk, LabSpec
from volbench.engine import experiment
from volbench.faults import powercut
from volbench.faults.powerstack import lab_disks
from volbench.lab import DEFAULT_MODULES, run_in_vm
from volbench.lab.labrun import lab_of, with_cut_log

MiB = 1024**2
NFS_DISK = LabDisk("store", 600 * MiB, "fast")
NFS_MODULES = ("veth", "sch_netem")

# Runs each step in the guest, one after the other, in this one Python process (a process
# that imports volbench.cli costs ~15 s in the emulated guest), and records its exit code
# and seconds. Output goes to the console, one "== step NAME" line before each step.
STEPS_SCRIPT = r"""
import json, runpy, shutil, sys, time, traceback
from pathlib import Path
from volbench.cli import main as cli

out = Path(sys.argv[1])
steps, done = json.loads((out / "steps-plan.json").read_text()), {}
for step in steps:
    name, started = step["name"], time.monotonic()
    print(f"== step {name}", flush=True)
    try:
        if "script" in step:
            sys.argv = [step["script"], *step["args"]]
            runpy.run_path(step["script"], run_name="__main__")
            code = 0
        else:
            code = cli.main(["run", str(out / f"{name}.yaml"), "--db", f"/srv/{name}.db",
                             "--quiet"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception:
        traceback.print_exc()
        code = 1
    for file in (f"{name}.db", f"{name}-report.md"):
        if "script" not in step and Path("/srv", file).exists():
            shutil.copyfile(Path("/srv", file), out / file)
    # Wall-clock times too: the host's load during each step goes into the message of a
    # test that fails on it (tests/hostload.py; the guest's clock is the host's, from QEMU).
    done[name] = {"code": code, "seconds": time.monotonic() - started,
                  "ended_at": time.time()}
    done[name]["started_at"] = done[name]["ended_at"] - done[name]["seconds"]
    (out / "steps.json").write_text(json.dumps(done, indent=1))
    print(f"== step {name}: exit {code} in {done[name]['seconds']:.0f} s", flush=True)
"""


def _merged(specs: list[LabSpec]) -> tuple[tuple[LabDisk, ...], dict[str, DiskClass]]:
    """All disks and classes of the steps' labs; a disk or class name may not mean two
    things (the boot would then not be the lab a run records)."""
    disks: dict[str, LabDisk] = {}
    classes: dict[str, DiskClass] = dict(DEFAULT_CLASSES)
    for spec in specs:
        for disk in spec.disks:
            assert disks.setdefault(disk.name, disk) == disk, f"two lab disks {disk.name}"
            cls = spec.disk_class(disk)
            assert classes.setdefault(cls.name, cls) == cls, f"two disk classes {cls.name}"
    return tuple(disks.values()), classes


# The test files that read each step, in the steps' order.
STEP_FILES = {
    "nfshop": ("test_nfs_hop_lab.py", "test_curves_lab.py"),
    "guard": ("test_lab.py",), "thin": ("test_thin_first_touch_lab.py",),
    "precondition": ("test_precondition_lab.py",), "burst": ("test_burst_lab.py",),
    "qmpiscsi": ("test_faults_qmp_iscsi_lab.py",), "pull": ("test_faults_pull_lab.py",),
    "timeouts": ("test_faults_timeouts_lab.py",), "faults": ("test_faults_lab.py",),
    "rebuild": ("test_rebuild_lab.py",), "commit": ("test_commit_lab.py",),
    "faultkill": ("test_fault_kills_lab.py",),
    "powercut": ("test_powercut_lab.py",), "powercutrun": ("test_powercut_run_lab.py",),
}


def wanted_steps(items: list[pytest.Item]) -> list[str]:
    """The steps the selected tests read (a test reads the shared boot through the
    `shared_boot` fixture, directly or through another fixture), in the steps' order."""
    files = {Path(str(item.path)).name for item in items
             if "shared_boot" in getattr(item, "fixturenames", ())}
    return [step for step, owners in STEP_FILES.items() if files & set(owners)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that read the shared boot: scripts/test runs them (`-m shared_boot`)
    in a pytest of their own beside everything else. long_lab tests (too long for CI's
    40 min) are deselected unless VOLBENCH_LONG_LAB=1: an environment switch rather than
    a `-m` in addopts, which scripts/test's own `-m shared_boot` would replace."""
    if os.environ.get("VOLBENCH_LONG_LAB") != "1":
        long = [item for item in items if item.get_closest_marker("long_lab")]
        if long:
            config.hook.pytest_deselected(items=long)
            items[:] = [item for item in items if item not in long]
    for item in items:
        if "shared_boot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_boot)


@pytest.fixture(scope="session")
def shared_boot(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shared folder after the selected tests' steps (see the module doc), the
    boot's LabResult and the steps' exit codes and seconds."""
    need_lab()
    out = tmp_path_factory.mktemp("sharedlab")
    wanted = wanted_steps(request.session.items)
    runs = {name: text for name, text in {
        "thin": thin_experiment(), "precondition": PRECONDITION, "burst": BURST,
        "qmpiscsi": QMP_ISCSI, "pull": PULL, "timeouts": TIMEOUTS, "faults": FAULTS,
        "rebuild": REBUILD, "commit": COMMIT, "powercutrun": POWERCUT_RUN}.items()
        if name in wanted}
    own = {"guard": LabSpec(disks=GUARD_DISKS, classes=GUARD_CLASSES),
           "nfshop": LabSpec(disks=(NFS_DISK,)), "faultkill": KILL_LAB}
    specs = [spec for name, spec in own.items() if name in wanted]
    for name, text in runs.items():
        (out / f"{name}.yaml").write_text(text)
        exp = experiment.load(out / f"{name}.yaml")
        specs.append(with_cut_log(exp, lab_of(exp, name)))
    (out / "guard.py").write_text(GUARD_SCRIPT)
    (out / "nfshop.py").write_text(NFSHOP_SCRIPT)
    (out / "faultkill.py").write_text(KILLS_SCRIPT)
    (out / "powercut.py").write_text(POWERCUT_SCRIPT)
    (out / "powercut.yaml").write_text(POWERCUT)
    if "powercut" in wanted:  # its disks, and the log disk its cuts need
        cut = experiment.load(out / "powercut.yaml")
        specs.append(powercut.with_log_disk(lab_of(cut, "powercut"), sorted(
            {d for t in cut.targets for d in lab_disks(t)})))
    (out / "kills-plan.json").write_text(json.dumps(kills_plan()))
    (out / "steps.py").write_text(STEPS_SCRIPT)
    for name, doc in {"hop": HOP, "curve": CURVE}.items():
        (out / f"{name}.yaml").write_text(json.dumps(doc))
    every: list[dict[str, Any]] = [
        {"name": "nfshop", "script": str(out / "nfshop.py"),
         "args": [str(out), str(TESTS), str(DELAY_MS), str(PING_INTERVAL_S), "hop", "curve"]},
        {"name": "guard", "script": str(out / "guard.py"), "args": [str(out)]},
        *({"name": name} for name in runs),
        {"name": "faultkill", "script": str(out / "faultkill.py"), "args": [str(out), str(SEED)]},
        {"name": "powercut", "script": str(out / "powercut.py"),
         "args": powercut_args(out, TESTS)},
    ]
    # The `volbench run` of a power cut last (after the ground truth's script).
    every.sort(key=lambda step: step["name"] == "powercutrun")
    plan = [step for step in every if step["name"] in wanted]
    (out / "steps-plan.json").write_text(json.dumps(plan))
    disks, classes = _merged(specs)
    spec = LabSpec(disks=disks, classes=classes, modules=(*DEFAULT_MODULES, *NFS_MODULES))
    work = Path("/var/tmp/volbench-tests") / f"shared-{os.getpid()}"
    result = run_in_vm(spec, [sys.executable, str(out / "steps.py"), str(out)], out, timeout=5400,
                       workdir=work)
    assert result.returncode == 0, result.console[-4000:]
    # Every folder of the guest's cached view of the host's files was mounted (lab/guest.py).
    assert not (out / ".lab" / "uncached").exists(), (out / ".lab" / "uncached").read_text()
    assert list(work.iterdir()) == []
    work.rmdir()
    steps = json.loads((out / "steps.json").read_text())
    for name, step in steps.items():
        hostload.add_window(STEP_FILES[name], f"lab step {name}", step["started_at"],
                            step["ended_at"])
    print(f"shared lab boot: guest booted in {result.boot_seconds} s, VM {result.elapsed:.0f} s; "
          + ", ".join(f"{n} {s['seconds']:.0f} s (exit {s['code']})" for n, s in steps.items()))
    (out / "console.log").write_text(result.console)
    return {"out": out, "result": result, "steps": steps,
            "db": lambda name: _step_db(out, steps, name)}


def step_log(out: Path, steps: dict[str, Any], name: str) -> str:
    """The step's exit code and its part of the console, for an assertion's message."""
    console = (out / "console.log").read_text()
    part = console[console.find(f"== step {name}"):]
    return f"{name} exit {steps[name]['code']}: " + part[:3000]


def _step_db(out: Path, steps: dict[str, Any], name: str) -> Path:
    """NAME.db of a `volbench run` step, once the step has succeeded."""
    assert steps[name]["code"] == 0, step_log(out, steps, name)
    return out / f"{name}.db"


@pytest.fixture(scope="session")
def nfs_hop_boot(shared_boot: dict[str, Any]) -> Path:
    """The folder with hop.db, curve.db and checks.json (the NFS hop step)."""
    out, steps = shared_boot["out"], shared_boot["steps"]
    assert steps["nfshop"]["code"] == 0, step_log(out, steps, "nfshop")
    return Path(out)
