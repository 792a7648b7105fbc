"""The installable wheel: `python -m build` makes it; it installs into a fresh virtual
environment (and with pipx) and runs the built-in default experiment and the HTML report
from there, away from the checkout (package data: the default experiment, the report's
assets)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, tool

REPO = ROOT
pytestmark = [pytest.mark.slow, pytest.mark.root]


def run(argv: list[str | Path], cwd: Path, timeout: float = 900,
        env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--wheel", "--outdir", out, REPO], cwd=out)
    (found,) = out.glob("volbench-*-py3-none-any.whl")
    return found


def test_the_wheel_runs_the_default_and_the_html_report(wheel: Path, tmp_path: Path) -> None:
    for name in ("fio", "mkfs.xfs", "mkfs.btrfs", "losetup"):
        tool(name)
    venv = tmp_path / "venv"
    # The system's Python, not this test's venv: a user's fresh environment.
    run(["/usr/bin/python3", "-m", "venv", venv], cwd=tmp_path)
    run([venv / "bin/pip", "install", "--quiet", wheel], cwd=tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    # The checkout must not be importable from there: only the installed package counts.
    where = run([venv / "bin/python", "-c", "import volbench; print(volbench.__file__)"],
                cwd=cwd, env={"PYTHONPATH": ""})
    assert where.startswith(str(venv)), where
    out = run([venv / "bin/volbench", "run", "--runs", "1", "--quiet", "--db", "v.db"], cwd=cwd,
              env={"PYTHONPATH": ""})
    assert "8 ok; results in v.db" in out, out[-1500:]
    run([venv / "bin/volbench", "report", "--db", "v.db", "--format", "html", "-o", "r.html"],
        cwd=cwd, env={"PYTHONPATH": ""})
    html = (cwd / "r.html").read_text()
    css = (REPO / "src/volbench/report/assets/report.css").read_text().strip()
    assert css.splitlines()[0] in html and "xfs-standard" in html


def test_pipx_installs_the_wheel(wheel: Path, tmp_path: Path) -> None:
    tools_env = tmp_path / "tools"
    run(["/usr/bin/python3", "-m", "venv", tools_env], cwd=tmp_path)
    run([tools_env / "bin/pip", "install", "--quiet", "pipx"], cwd=tmp_path)
    env = {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin"),
           "PYTHONPATH": ""}
    run([tools_env / "bin/pipx", "install", wheel], cwd=tmp_path, env=env)
    out = run([tmp_path / "bin/volbench", "plan"], cwd=tmp_path, env=env)
    assert out.startswith("experiment default:")
