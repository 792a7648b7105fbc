"""pgbench scripts that would run shell commands as root are refused when the file is read
(issue 25): `\\shell` and `\\setshell`, in `script:` or through `options: [-f, FILE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document


def doc(tmp_path: Path, **workload: Any) -> dict[str, Any]:
    return {"name": "s", "workdir": str(tmp_path / "w"),
            "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
            "workloads": [{"name": "pg", "tool": "pgbench", **workload}]}


@pytest.mark.parametrize("line", ["\\shell touch /tmp/owned", "  \\SetShell x id -u"])
def test_a_shell_meta_command_in_a_script_is_refused(tmp_path: Path, line: str) -> None:
    script = tmp_path / "s.sql"
    script.write_text(f"\\set aid random(1, 10)\n{line}\nSELECT 1;\n")
    with pytest.raises(ExperimentError) as err:
        parse_document(doc(tmp_path, script=str(script)))
    text = str(err.value)
    assert "workloads[0].script" in text and f"{script}:2 uses \\" in text
    assert "runs a shell command" in text
    assert "`command` workload" in text


@pytest.mark.parametrize("form", [["-f", "{}"], ["--file={}@3"], ["-f{}"]])
def test_a_shell_script_through_options_is_refused(tmp_path: Path, form: list[str]) -> None:
    script = tmp_path / "s.sql"
    script.write_text("\\shell rm -rf /srv/x\n")
    options = [f.format(script) for f in form]
    with pytest.raises(ExperimentError) as err:
        parse_document(doc(tmp_path, options=options))
    assert "workloads[0].options[0]" in str(err.value)
    assert "\\shell" in str(err.value)


def test_a_script_without_shell_commands_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "ok.sql"
    script.write_text("\\set aid random(1, 10)\n-- \\shell in a comment is SQL's\n"
                      "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n")
    exp = parse_document(doc(tmp_path, script=str(script), options=["-f", str(script)]))
    assert exp.workloads[0].matrix["script"] == (str(script.resolve()),)


@pytest.mark.parametrize("how", ["group-writable", "another user's"])
def test_a_pg_bin_another_user_could_change_is_refused(tmp_path: Path, how: str) -> None:
    """volbench runs psql from pg_bin as root and initdb/postgres as postgres: a program
    someone else can replace would run as them (issue 34)."""
    import os

    from volbench.system.host import pgfind

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in pgfind.PROGRAMS:
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    if how == "group-writable":
        (bindir / "psql").chmod(0o775)
    elif os.geteuid() == 0:
        os.chown(bindir / "initdb", 65534, 65534)
    else:
        pytest.skip("giving a file to another user needs root")
    with pytest.raises(ExperimentError) as err:
        parse_document(doc(tmp_path, pg_bin=str(bindir)))
    assert "workloads[0].pg_bin" in str(err.value)
    assert ("may be changed by its group or by others" if how == "group-writable"
            else "belongs to uid 65534, not root") in str(err.value)
