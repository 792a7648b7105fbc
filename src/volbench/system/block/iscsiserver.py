"""The target side of the `iscsi` target: LIO (the kernel's target, through targetcli) or tgt.

LIO: one targetcli process reads all commands from stdin (each start costs seconds
under the lab's emulated CPU). targetcli runs with a private TARGETCLI_HOME whose
first commands turn off `auto_save_on_exit` and `auto_add_default_portal`: the
system's saved configuration (/etc/rtslib-fb-target/saveconfig.json) is never
written, so a reboot never brings volbench's target back, and only the 127.0.0.1
portal exists. targetcli talks to the system D-Bus: when none answers, volbench
starts `dbus-daemon --system` in the foreground (journaled). The target is journaled
(`iscsi-target`) before it is created; its undo deletes the target and the backstore
if configfs still has them.

tgt: a `tgtd` of volbench's own, in the foreground on its own control port and
portal; ending the process (journaled) removes its targets.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volbench.core.errors import ResourceError
from volbench.system import daemons, proc
from volbench.system.block import blockstack, stackparse
from volbench.system.journal import Scope, undoer
from volbench.system.recipe import Recipe

CONFIGFS = Path("/sys/kernel/config/target")
DBUS_SOCKET = "/run/dbus/system_bus_socket"
TGTD_SOCKETS = Path("/var/run/tgtd")
TIMEOUT = 300.0
# First lines of every targetcli batch (private preferences, see the module doc).
PREFS = ("set global auto_save_on_exit=false", "set global auto_add_default_portal=false")


def _targetcli(commands: list[str], home: Path, recipe: Recipe | None = None) -> str:
    """Run targetcli once with `commands` on stdin; returns its output."""
    home.mkdir(parents=True, exist_ok=True)
    lines = [*PREFS, *commands]
    argv = ["targetcli"]
    env = {"TARGETCLI_HOME": str(home)}
    if recipe is None:
        done = proc.run(argv, timeout=TIMEOUT, env=env, input="\n".join(lines) + "\n")
    else:
        recipe.note("targetcli reads these commands from stdin:")
        for line in lines:
            recipe.note(f"  {line}")
        done = recipe.run(argv, timeout=TIMEOUT, env=env, input="\n".join(lines) + "\n")
    # targetcli reports a failed command on stdout and still exits 0: check the result.
    return done.stdout


def ensure_dbus(scope: Scope, recipe: Recipe, logs: Path) -> str:
    if blockstack.unix_socket_listening(DBUS_SOCKET):
        return "already running"
    Path(DBUS_SOCKET).parent.mkdir(parents=True, exist_ok=True)
    daemons.start(
        scope,
        recipe,
        ["dbus-daemon", "--system", "--nofork", "--nopidfile"],
        logs / "dbus.log",
        lambda: blockstack.unix_socket_listening(DBUS_SOCKET),
        what="the system D-Bus (targetcli needs it)",
    )
    return "started by volbench"


def lio_target_exists(iqn: str) -> bool:
    return (CONFIGFS / "iscsi" / iqn).exists()


def lio_backstore_exists(name: str) -> bool:
    return any((CONFIGFS / "core").glob(f"iblock_*/{name}"))


def create_lio(
    scope: Scope,
    recipe: Recipe,
    *,
    iqn: str,
    backstore: str,
    device: str,
    portal: tuple[str, int],
    home: Path,
) -> dict[str, Any]:
    """Backstore, target, LUN 0, one portal, demo mode (no ACLs, no CHAP)."""
    scope.add("iscsi-target", name=iqn, server="lio", iqn=iqn, backstore=backstore)
    tpg = f"/iscsi/{iqn}/tpg1"
    out = _targetcli(
        [
            f"/backstores/block create name={backstore} dev={device}",
            f"/iscsi create {iqn}",
            f"{tpg}/luns create /backstores/block/{backstore}",
            f"{tpg}/portals create {portal[0]} {portal[1]}",
            f"{tpg} set attribute authentication=0 demo_mode_write_protect=0 "
            "generate_node_acls=1 cache_dynamic_acls=1",
        ],
        home,
        recipe,
    )
    np = CONFIGFS / "iscsi" / iqn / "tpgt_1" / "np" / f"{portal[0]}:{portal[1]}"
    if not (
        lio_target_exists(iqn)
        and np.exists()
        and list((CONFIGFS / "iscsi" / iqn / "tpgt_1" / "lun").glob("lun_*"))
    ):
        raise ResourceError(
            f"targetcli did not create {iqn} with a LUN and portal "
            f"{portal[0]}:{portal[1]}: " + " | ".join(out.splitlines()[-4:])
        )
    return {"server": "lio", "iqn": iqn, "backstore": backstore, "lun": 0}


def some_dbus() -> contextlib.AbstractContextManager[None]:
    """The system D-Bus targetcli needs, for an undo (a temporary one if none answers)."""
    Path(DBUS_SOCKET).parent.mkdir(parents=True, exist_ok=True)
    return daemons.temporary(
        ["dbus-daemon", "--system", "--nofork", "--nopidfile"],
        lambda: blockstack.unix_socket_listening(DBUS_SOCKET),
        "the system D-Bus",
    )


@undoer("iscsi-target")
def _undo_target(data: Mapping[str, Any]) -> None:
    if data.get("server") != "lio":
        return  # tgt: its tgtd process is journaled on its own
    iqn, backstore = str(data["iqn"]), str(data["backstore"])
    commands = []
    if lio_target_exists(iqn):
        commands.append(f"/iscsi delete {iqn}")
    if lio_backstore_exists(backstore):
        commands.append(f"/backstores/block delete {backstore}")
    if not commands:
        return
    with some_dbus(), tempfile.TemporaryDirectory() as home:
        _targetcli(commands, Path(home))
    if lio_target_exists(iqn) or lio_backstore_exists(backstore):
        raise ResourceError(f"targetcli could not delete {iqn} / {backstore}; see `targetcli ls`")


# -- tgt ---------------------------------------------------------------------------------------


def free_control_port() -> int:
    """A tgtd control port no other tgtd uses (its socket is /var/run/tgtd/socket.N)."""
    for port in range(17, 100):
        if not (TGTD_SOCKETS / f"socket.{port}").exists():
            return port
    raise ResourceError("no free tgtd control port (17..99); stop other tgtd instances")


def _tgtadm(control: int, *args: str) -> list[str]:
    return ["tgtadm", "-C", str(control), "--lld", "iscsi", *args]


def tgt_show(control: int) -> str:
    return proc.run(
        _tgtadm(control, "--op", "show", "--mode", "target"), timeout=60, check=False
    ).stdout


def create_tgt(
    scope: Scope, recipe: Recipe, *, iqn: str, device: str, portal: tuple[str, int], logs: Path
) -> dict[str, Any]:
    control = free_control_port()
    argv = ["tgtd", "-f", "-C", str(control), "--iscsi", f"portal={portal[0]}:{portal[1]}"]
    daemons.start(
        scope,
        recipe,
        argv,
        logs / "tgtd.log",
        lambda: (
            proc.run(
                _tgtadm(control, "--op", "show", "--mode", "sys"), timeout=30, check=False
            ).returncode
            == 0
        ),
        what="tgtd",
    )
    scope.add("iscsi-target", name=iqn, server="tgt", iqn=iqn, control=control)
    recipe.run(
        _tgtadm(control, "--op", "new", "--mode", "target", "--tid", "1", "-T", iqn),
        timeout=TIMEOUT,
    )
    recipe.run(
        _tgtadm(
            control,
            "--op",
            "new",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "-b",
            device,
        ),
        timeout=TIMEOUT,
    )
    recipe.run(
        _tgtadm(control, "--op", "bind", "--mode", "target", "--tid", "1", "-I", portal[0]),
        timeout=TIMEOUT,
    )
    shown = stackparse.tgtadm_targets(tgt_show(control))
    return {
        "server": "tgt",
        "iqn": iqn,
        "control_port": control,
        "lun": 1,
        "targets": [t.__dict__ for t in shown],
    }
