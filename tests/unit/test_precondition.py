"""precondition: on targets: the field, the refusals (docs/safety.md), the recorded state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import ENV, load, make_run
from volbench.cli.main import main
from volbench.config.precondition import Precondition
from volbench.core.errors import CommandFailed, ExperimentError, ResourceError
from volbench.engine.experiment import parse_document
from volbench.engine.runner import required_tools
from volbench.report.compare import compare_reports
from volbench.store.db import Store
from volbench.system.journal import Journal
from volbench.system.recipe import Recipe
from volbench.targets import precondition
from volbench.targets.base import BuildContext, Built

D = "/dev/disk/by-id/virtio-d{}".format


def doc(*targets: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"targets": list(targets), "workloads": [{"name": "f", "tool": "fio"}]} | more


def problems(*targets: dict[str, Any]) -> list[str]:
    with pytest.raises(ExperimentError) as info:
        parse_document(doc(*targets))
    return [line.strip() for line in str(info.value).splitlines()[1:]]


def loop(pre: Any, **more: Any) -> dict[str, Any]:
    return {"name": "l", "type": "loopdisk", "size": "512M", "precondition": pre, **more}


def test_the_field() -> None:
    exp = parse_document(doc(loop({"discard": True, "fill": "2x"}),
                             loop({"fill": "3X"}, name="m"), loop({"fill": 1}, name="n"),
                             {"name": "p", "type": "loopdisk"}))
    assert [t.precondition for t in exp.targets] == [
        Precondition(True, 2), Precondition(False, 3), Precondition(False, 1), Precondition()]
    assert not Precondition() and Precondition(fill=1)


def test_bad_values_are_named_with_their_fix() -> None:
    assert problems(loop({"fill": "two"})) == [
        "targets[0].precondition.fill: expected a count such as 1x or 2x, got 'two' "
        "(write it as 1x, 2x or 3x)"]
    assert problems(loop({"fill": "11x"})) == [
        "targets[0].precondition.fill: expected 0x to 10x, got '11x' (write it as 1x, 2x or 3x)"]
    assert problems(loop({"fil": "2x"}))[0].startswith(
        "targets[0].precondition.fil: unknown field (did you mean 'fill'?)")
    assert problems(loop({})) == [
        "targets[0].precondition: asks for nothing "
        "(set discard: true and/or fill: 2x, or remove it)"]
    assert problems(loop({"discard": "yes please"}))[0].startswith(
        "targets[0].precondition.discard: expected true or false")


def test_discard_only_where_volbench_made_the_device_or_wipe_is_true() -> None:
    disk = {"name": "d", "type": "disk", "device": D(1), "fs": "none",
            "precondition": {"discard": True}}
    assert problems(disk) == [
        f"targets[0].precondition.discard: discard erases every block; {D(1)} is a disk you "
        "listed without wipe: true (add wipe: true to that disk if its data may go, or "
        "remove discard)"]
    parse_document(doc({**disk, "wipe": True}))
    lvm = {"name": "v", "type": "lvm", "devices": [D(1), {"path": D(2), "wipe": True}],
           "precondition": {"discard": True}}
    parse_document(doc(lvm))  # the LV is volbench's own, whatever it sits on
    iscsi = {"name": "i", "type": "iscsi", "devices": [D(3)], "precondition": {"discard": True}}
    assert "without wipe: true" in problems(iscsi)[0]
    parse_document(doc(loop({"discard": True}), {"name": "z", "type": "zram",
                                                 "precondition": {"discard": True}}))


def test_no_discard_or_fill_on_a_filesystem_of_yours(tmp_path: Any) -> None:
    directory = {"name": "dir", "type": "directory", "path": str(tmp_path),
                 "precondition": {"discard": True, "fill": "1x"}}
    found = problems(directory)
    assert found[0] == (
        "targets[0].precondition.discard: a directory target has no block device of volbench's "
        "own to discard (remove discard (discard the target it is built on instead))")
    assert found[1] == (
        "targets[0].precondition.fill: target dir is on a filesystem volbench did not make: "
        "filling its free space would fill yours (use a loopdisk or image target for "
        "preconditioning, or remove fill)")
    # through an `on:` chain: an image on the directory would fill it just the same
    plain = {k: v for k, v in directory.items() if k != "precondition"}
    image = {"name": "img", "type": "image", "size": "64M", "on": ["dir"],
             "precondition": {"fill": "1x"}}
    assert problems(plain, image) == [
        "targets[1].precondition.fill: target dir is on a filesystem volbench did not make: "
        "filling its free space would fill yours (use a loopdisk or image target for "
        "preconditioning, or remove fill)"]
    parse_document(doc(plain, {**image, "precondition": {"discard": True}}))


def test_the_recorded_state() -> None:
    exp = parse_document(doc(
        loop({"discard": True, "fill": "2x"}, name="both"), loop({"fill": "1x"}, name="fill"),
        loop({"discard": True}, name="discard"), {"name": "new", "type": "loopdisk"},
        {"name": "yours", "type": "disk", "device": D(1)},
        {"name": "on-yours", "type": "image", "size": "64M", "on": ["yours"]}))
    made = {n: precondition.state(exp.target(n), {}, {})["state"]
            for n in ("both", "fill", "discard", "new", "yours")}
    assert made == {"both": "preconditioned", "fill": "filled", "discard": "fresh",
                    "new": "fresh", "yours": "unknown"}
    deps = {"yours": Built("yours", "disk", None, info={"state": {"state": "unknown"}})}
    assert precondition.state(exp.target("on-yours"), deps, {}) == {"state": "unknown"}
    info = {"state": precondition.state(exp.target("fill"), {}, {"fill": {"passes": 1}})}
    assert info["state"]["precondition"] == {"asked": {"discard": False, "fill": 1},
                                             "fill": {"passes": 1}}
    precondition.after_steady_rounds(info)
    assert info["state"]["state"] == "preconditioned"
    assert "until steady" in info["state"]["how"]


def test_the_lab_disks_are_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = parse_document(doc({"name": "lab", "type": "lvm", "layout": "thin", "devices": [D(1)]},
                             {"name": "yours", "type": "disk",
                              "device": "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"}))
    assert precondition.state(exp.target("lab"), {}, {})["state"] == "unknown"  # on a host
    monkeypatch.setenv("VOLBENCH_LAB", "1")
    assert precondition.state(exp.target("lab"), {}, {})["state"] == "fresh"
    assert precondition.state(exp.target("yours"), {}, {})["state"] == "unknown"


def test_each_run_reads_the_probe() -> None:
    built = Built("t", "lvm", None, info={"state": {"state": "filled"}},
                  probe=lambda: {"thin_pool_data_percent": 97.5})
    assert precondition.run_state(built) == {"state": "filled", "thin_pool_data_percent": 97.5}
    assert precondition.run_state(Built("t", "loopdisk", None)) == {"state": "unknown"}


def state_db(path: Path, state: dict[str, Any], iops: float) -> Path:
    """A result set of one target recorded in `state` (runs carry it too, as volbench's do)."""
    run_state = {"state": state["state"],
                 **{k: v for k, v in state.items() if k == "thin_pool_data_percent"}}
    runs = [make_run("ssd", {"iops": iops + i}, i + 1, started=i * 10.0,
                     annotations={"target_state": run_state}) for i in range(4)]
    with Store(path) as store:
        exp = store.begin_experiment("s", "h", {"name": "s"}, dict(ENV), None)
        store.save_target(exp, "ssd", "loopdisk", "built", {"state": state})
        for r in runs:
            store.save_run(exp, r)
        store.set_status(exp, "done")
    return path


def test_compare_warns_when_the_states_differ(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    fresh = state_db(tmp_path / "a.db", {"state": "fresh"}, 9000.0)
    done = {"state": "preconditioned", "thin_pool_data_percent": 98.5, "precondition": {
        "asked": {"discard": True, "fill": 2},
        "discard": {"devices": ["/dev/loop0"], "seconds": 0.25},
        "fill": {"passes": 2, "what": "whole device", "bytes_written": 2 * 2**30,
                 "seconds": 21.0}}}
    pre = state_db(tmp_path / "b.db", done, 4000.0)
    assert main(["compare", str(fresh), str(pre)]) == 0
    out = capsys.readouterr().out
    assert ("- target ssd: A was fresh, B preconditioned: a device's speed depends on what "
            "was written to it before") in out
    result = compare_reports(load(fresh), load(fresh))
    assert not [w for w in result.warnings if "target ssd" in w]
    thin = state_db(tmp_path / "c.db", {"state": "fresh", "thin_pool_data_percent": 3.2}, 9000)
    assert [w for w in compare_reports(load(thin), load(pre)).warnings if "thin pool was" in w] == [
        "target ssd: its thin pool was 3 % full in A, 98 % in B when built: writes to blocks "
        "the pool does not hold yet pay for provisioning them (precondition: {fill: 1x} fills it)"]
    # the report shows the state of each target
    assert main(["report", "--db", str(pre), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert ("- ssd: preconditioned: discard 250 ms; fill 2x whole device, 2 GiB in 21.0 s; "
            "thin pool 98.5 % full when built; thin pool 98.5 % full as runs started") in md
    assert main(["report", "--db", str(fresh), "--details"]) == 0
    assert "target ssd: fresh" in capsys.readouterr().out
    assert main(["report", "--db", str(pre), "--format", "html", "-o",
                 str(tmp_path / "r.html")]) == 0
    assert ("<p>State: preconditioned: discard 250 ms; fill 2x whole device"
            in (tmp_path / "r.html").read_text())


def test_the_tools_a_precondition_needs_are_checked_before_the_run() -> None:
    exp = parse_document(doc({"name": "z", "type": "zram",
                              "precondition": {"discard": True, "fill": "1x"}},
                             workloads=[{"name": "d", "tool": "dd"}]))
    assert {"blkdiscard", "fio"} <= set(required_tools(exp))
    plain = parse_document(doc({"name": "z", "type": "zram"},
                               workloads=[{"name": "d", "tool": "dd"}]))
    assert "blkdiscard" not in required_tools(plain) and "fio" not in required_tools(plain)


def test_plan_names_the_preconditioning(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "e.yaml").write_text(
        "name: p\ntargets:\n  - {name: pre, type: loopdisk, size: 512M,"
        " precondition: {discard: true, fill: 2x}}\n  - {name: plain, type: loopdisk}\n"
        "workloads:\n  - {name: w, tool: dd}\n")
    assert main(["plan", str(tmp_path / "e.yaml")]) == 0
    out = capsys.readouterr().out
    assert ("precondition pre: discard before mkfs, then fill 2x with sequential 128k writes "
            "(once when built, untimed, not in the estimate)") in out
    assert "precondition plain" not in out


def test_a_device_that_takes_no_discards_is_named(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    # No device on this machine takes no discards (loop, zram and vda all do): the sysfs
    # value is stood in for; nothing would run anyway, the check comes first.
    monkeypatch.setattr(precondition.block_devices, "discard_max_bytes", lambda dev: 0)
    spec = parse_document(doc(loop({"discard": True}))).targets[0]
    ctx = BuildContext(Journal(tmp_path / "j.jsonl").scope(), Recipe(), tmp_path)
    with pytest.raises(ResourceError, match=r"/dev/loop7 does not take discards \(its queue's "
                       r"discard_max_bytes is 0\); remove precondition.discard"):
        precondition.discard_before_mkfs(ctx, spec, ["/dev/loop7"])
    assert ctx.recipe.steps == []


def test_a_probe_that_fails_is_recorded_not_fatal() -> None:
    def broken() -> dict[str, Any]:
        raise CommandFailed(["lvs"], 5, "Volume group not found")

    state = precondition.run_state(Built("t", "lvm", None, info={"state": {"state": "fresh"}},
                                         probe=broken))
    assert state["state"] == "fresh" and "Volume group not found" in state["probe_error"]
