"""fio options and block sizes refused when the experiment file is read (issue 25): a
newline in a value or a key that is not an fio option name would reach fio's command
line or a client's job file as further options; a direct-I/O block size that is not a
multiple of 512 bytes could only fail at run time with fio's "Invalid argument"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from volbench.config.spec import control_character
from volbench.core.errors import ExperimentError
from volbench.engine.experiment import parse_document
from volbench.targets.base import Built
from volbench.workloads import fiochecks


def doc(tmp_path: Path, **workload: Any) -> dict[str, Any]:
    return {"name": "o", "workdir": str(tmp_path / "w"),
            "targets": [{"name": "d", "type": "directory", "path": str(tmp_path)}],
            "workloads": [{"name": "f", "tool": "fio", **workload}]}


def refused(tmp_path: Path, **workload: Any) -> str:
    with pytest.raises(ExperimentError) as err:
        parse_document(doc(tmp_path, **workload))
    return str(err.value)


@pytest.mark.parametrize("value", ["4k\nfilename=/dev/loop0", "4k\rx", "a\tb", "x\x1b[2J"])
def test_a_control_character_in_an_option_value_is_refused(tmp_path: Path, value: str) -> None:
    text = refused(tmp_path, options={"bs": value})
    assert "workloads[0].options.bs:" in text and "has a control character" in text
    assert "on one line" in text


@pytest.mark.parametrize("key", ["bs=4k filename", "bs 4k", "--output", "-x", "a==b"])
def test_a_key_that_is_not_an_fio_option_name_is_refused(tmp_path: Path, key: str) -> None:
    text = refused(tmp_path, options={key: "1"})
    assert f"workloads[0].options.{key}: {key!r} is not an fio option name" in text


def test_fio_option_names_pass(tmp_path: Path) -> None:
    exp = parse_document(doc(tmp_path, options={"iodepth_batch_complete_min": "1",
                                                "hugepage-size": "2m"}))
    assert exp.workloads[0].options["hugepage-size"] == "2m"


def test_control_characters_are_named() -> None:
    assert control_character("4k\n") == "U+000A"
    assert control_character("x\u2028") == "U+2028"
    assert control_character("ümlaut and spaces ok") is None


@pytest.mark.parametrize("bs", ["1000", "4100", ["4k", "1000"]])
def test_a_direct_block_size_not_a_multiple_of_512_is_refused(tmp_path: Path, bs: Any) -> None:
    text = refused(tmp_path, bs=bs)
    assert "workloads[0].bs: 1000" in text or "workloads[0].bs: 4100" in text
    assert "not a multiple of 512 bytes, which direct I/O needs" in text


def test_the_same_block_size_without_direct_io_is_accepted(tmp_path: Path) -> None:
    exp = parse_document(doc(tmp_path, bs="1000", direct=False))
    assert exp.workloads[0].matrix["bs"] == ("1000",)


def test_the_built_device_s_own_logical_block_size_is_checked() -> None:
    built = Built("d", "disk", path=None, block_device="/dev/x")
    params = {"bs": "2k", "direct": 1}
    problem = fiochecks.block_size_problem(params, built, 4096)
    assert problem is not None and "logical block size of target d (4096 bytes)" in str(problem)
    assert fiochecks.block_size_problem(params, built, 512) is None
    assert fiochecks.block_size_problem({**params, "direct": 0}, built, 4096) is None
