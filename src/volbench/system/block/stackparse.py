"""Pure parsers for the storage-stack tools: LVM, mdadm, iscsiadm, exportfs, tgtadm.

Each function takes a tool's text output and returns plain data; none runs
anything (the targets run the tools, tests feed captured real outputs from
tests/data/<tool>/<version>/). LVM is read as `--reportformat json` with
`--units b --nosuffix`, so sizes are whole bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from volbench.core.errors import ParseError

# -- LVM ---------------------------------------------------------------------------------------

# Report sections: lvs -> "lv", pvs -> "pv", vgs -> "vg", lvs --segments -> "seg".
LVM_SECTIONS = ("lv", "pv", "vg", "seg")


def lvm_report(text: str, section: str, source: str = "lvm") -> list[dict[str, str]]:
    """Rows of an `lvs/pvs/vgs --reportformat json` report (all report blocks joined).

    A VG that does not exist still prints an empty report (and exits 5); that is
    an empty list here, the exit code is the caller's business.
    """
    if section not in LVM_SECTIONS:
        raise ValueError(f"unknown LVM report section {section!r}")
    start = text.find("{")
    if start < 0:
        raise ParseError("lvm", source, "no JSON report in the output")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ParseError("lvm", source, f"invalid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("report"), list):
        raise ParseError("lvm", source, "no 'report' list in the JSON")
    rows: list[dict[str, str]] = []
    for block in data["report"]:
        for row in block.get(section, []) if isinstance(block, dict) else []:
            rows.append({str(k): str(v) for k, v in row.items()})
    return rows


def lvm_int(value: str) -> int | None:
    """A byte count or number from a report cell (`--units b --nosuffix`); '' is None."""
    value = value.strip()
    if not value:
        return None
    return int(float(value))


def lvm_percent(value: str) -> float | None:
    value = value.strip()
    return float(value) if value else None


_PV_EXTENT = re.compile(r"^(?P<dev>.+?)\((?P<extent>\d+)\)$")


def lvm_devices(cell: str) -> list[str]:
    """The devices of a `devices` cell: '/dev/vdb(45),/dev/vdc(0)' -> ['/dev/vdb', '/dev/vdc'].

    Sub-LVs ('pool_tdata(0)') are returned as they are named.
    """
    found = []
    for part in cell.split(","):
        part = part.strip()
        if not part:
            continue
        m = _PV_EXTENT.match(part)
        found.append(m.group("dev") if m else part)
    return found


def lv_visible(row: dict[str, str]) -> bool:
    """False for LVM's hidden sub-LVs ('[pool_tdata]', '[lvol0_pmspare]')."""
    return not row.get("lv_name", "").startswith("[")


def merge_lv_rows(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """`lvs` repeats an LV once per segment when asked for `devices`: one entry per LV,
    with the devices of all its segments in order."""
    merged: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = row.get("lv_name", "")
        entry = merged.get(name)
        if entry is None:
            entry = {k: v for k, v in row.items() if k != "devices"}
            entry["devices"] = []
            merged[name] = entry
        for dev in lvm_devices(row.get("devices", "")):
            if dev not in entry["devices"]:
                entry["devices"].append(dev)
    return list(merged.values())


# -- mdadm -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MdMember:
    number: int
    major: int
    minor: int
    role: str
    state: str
    device: str


@dataclass(frozen=True)
class MdDetail:
    device: str
    fields: dict[str, str]
    members: tuple[MdMember, ...] = ()

    @property
    def level(self) -> str:
        return self.fields.get("Raid Level", "")

    @property
    def chunk_size(self) -> str | None:
        return self.fields.get("Chunk Size")

    @property
    def state(self) -> str:
        return self.fields.get("State", "").strip()


_MD_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s+:\s?(?P<value>.*)$")
_MD_MEMBER = re.compile(
    r"^\s*(?P<number>\d+|-)\s+(?P<major>\d+)\s+(?P<minor>\d+)\s+(?P<role>\d+|-)\s+"
    r"(?P<state>.*?)\s+(?P<device>/dev/\S+)\s*$"
)


def mdadm_detail(text: str, source: str = "mdadm --detail") -> MdDetail:
    """`mdadm --detail /dev/md/X`: the 'Key : Value' fields and the member table."""
    lines = text.splitlines()
    head = next((ln for ln in lines if ln.strip()), "")
    if not head.rstrip().endswith(":") or not head.startswith("/dev/"):
        raise ParseError("mdadm", source, f"expected '/dev/…:' first, got {head!r}")
    fields: dict[str, str] = {}
    members: list[MdMember] = []
    in_table = False
    for line in lines[lines.index(head) + 1 :]:
        if line.split()[:2] == ["Number", "Major"]:
            in_table = True
            continue
        if in_table:
            m = _MD_MEMBER.match(line)
            if m:
                members.append(
                    MdMember(
                        int(m["number"]) if m["number"] != "-" else -1,
                        int(m["major"]),
                        int(m["minor"]),
                        m["role"],
                        m["state"].strip(),
                        m["device"],
                    )
                )
            continue
        m = _MD_FIELD.match(line)
        if m:
            fields[m["key"].strip()] = m["value"].strip()
    if "Raid Level" not in fields:
        raise ParseError("mdadm", source, "no 'Raid Level' field")
    return MdDetail(head.rstrip().rstrip(":"), fields, tuple(members))


def mdadm_export(text: str) -> dict[str, str]:
    """`mdadm --detail --export`: KEY=VALUE lines."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key:
            found[key] = value
    return found


@dataclass(frozen=True)
class MdstatArray:
    name: str
    state: str
    level: str | None
    members: tuple[str, ...]


_MDSTAT_LINE = re.compile(r"^(?P<name>md\S+) : (?P<state>\S+)(?P<rest>.*)$")
_MDSTAT_MEMBER = re.compile(r"^(?P<dev>[^\[\s]+)\[\d+\](?:\([A-Z]\))?$")


def mdstat(text: str) -> list[MdstatArray]:
    """Arrays in /proc/mdstat: name, state (active/inactive), level, member devices."""
    found = []
    for line in text.splitlines():
        m = _MDSTAT_LINE.match(line)
        if not m:
            continue
        words = m["rest"].split()
        level = None
        if words and not _MDSTAT_MEMBER.match(words[0]):
            level = words.pop(0)
        members = tuple(mm["dev"] for w in words if (mm := _MDSTAT_MEMBER.match(w)))
        found.append(MdstatArray(m["name"], m["state"], level, members))
    return found


# -- iSCSI initiator ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IscsiSession:
    transport: str
    sid: int
    portal: str  # "127.0.0.1:3260"
    tpgt: int
    target: str  # the IQN


_SESSION = re.compile(
    r"^(?P<transport>\S+): \[(?P<sid>\d+)\] (?P<portal>\S+?),(?P<tpgt>-?\d+) (?P<iqn>\S+)"
)


def iscsi_sessions(text: str) -> list[IscsiSession]:
    """`iscsiadm -m session` (-P 0). 'No active sessions.' (exit 21) is an empty list."""
    found = []
    for line in text.splitlines():
        m = _SESSION.match(line.strip())
        if m:
            found.append(
                IscsiSession(m["transport"], int(m["sid"]), m["portal"], int(m["tpgt"]), m["iqn"])
            )
    return found


@dataclass(frozen=True)
class IscsiTargetView:
    """One target in `iscsiadm -m session -P 3`: its state and attached disks."""

    target: str
    portal: str | None = None
    session_state: str | None = None
    disks: tuple[str, ...] = ()
    params: dict[str, str] = field(default_factory=dict)


_P3_TARGET = re.compile(r"^Target: (?P<iqn>\S+)")
_P3_DISK = re.compile(r"Attached scsi disk (?P<disk>\S+)")
_P3_KV = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 ]*?): (?P<value>.*)$")
# Negotiated parameters worth keeping with a target's record.
P3_PARAMS = (
    "HeaderDigest",
    "DataDigest",
    "MaxRecvDataSegmentLength",
    "MaxXmitDataSegmentLength",
    "FirstBurstLength",
    "MaxBurstLength",
    "ImmediateData",
    "InitialR2T",
    "MaxOutstandingR2T",
    "Iface Initiatorname",
    "Recovery Timeout",
)


def iscsi_session_detail(text: str) -> list[IscsiTargetView]:
    """Targets in `iscsiadm -m session -P 3`, with the SCSI disks attached so far.

    The 'Attached scsi disk sdX' line appears only once the kernel has scanned
    the LUN: right after login it may be missing (captured both ways).
    """
    views: list[IscsiTargetView] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            views.append(
                IscsiTargetView(
                    current["target"],
                    current["portal"],
                    current["state"],
                    tuple(current["disks"]),
                    current["params"],
                )
            )

    for raw in text.splitlines():
        line = raw.strip()
        m = _P3_TARGET.match(line)
        if m:
            close()
            current = {"target": m["iqn"], "portal": None, "state": None, "disks": [], "params": {}}
            continue
        if current is None:
            continue
        disk = _P3_DISK.search(line)
        if disk:
            current["disks"].append(disk["disk"])
            continue
        kv = _P3_KV.match(line)
        if not kv:
            continue
        key, value = kv["key"], kv["value"].strip()
        if key == "Current Portal":
            current["portal"] = value.rsplit(",", 1)[0]
        elif key == "iSCSI Session State":
            current["state"] = value
        elif key in P3_PARAMS:
            current["params"][key] = value
    close()
    return views


# -- NFS server --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    path: str
    client: str
    options: tuple[str, ...]

    def option(self, name: str) -> str | None:
        """Value of 'name=value', '' for a flag present, None when absent."""
        for opt in self.options:
            key, sep, value = opt.partition("=")
            if key == name:
                return value if sep else ""
        return None


_CLIENT = re.compile(r"^(?P<client>[^\s(]+)\((?P<opts>[^)]*)\)$")


def exportfs_v(text: str) -> list[Export]:
    """`exportfs -v`: one entry per path and client.

    exportfs puts a long path alone on its line and the client on the next
    (indented); a short path shares the line with its client.
    """
    found: list[Export] = []
    path: str | None = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        words = raw.split()
        if not raw[0].isspace():
            path = words.pop(0)
        for word in words:
            m = _CLIENT.match(word)
            if m and path is not None:
                opts = tuple(o for o in m["opts"].split(",") if o)
                found.append(Export(path, m["client"], opts))
    return found


# -- tgt ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TgtTarget:
    tid: int
    name: str
    backing: tuple[str, ...]


_TGT_TARGET = re.compile(r"^Target (?P<tid>\d+): (?P<name>\S+)")
_TGT_BACKING = re.compile(r"^\s*Backing store path: (?P<path>.+)$")


def tgtadm_targets(text: str) -> list[TgtTarget]:
    """`tgtadm --lld iscsi --op show --mode target`: targets and their backing stores."""
    found: list[TgtTarget] = []
    tid, name = -1, ""
    backing: list[str] = []
    for line in text.splitlines():
        m = _TGT_TARGET.match(line)
        if m:
            if tid >= 0:
                found.append(TgtTarget(tid, name, tuple(backing)))
            tid, name, backing = int(m["tid"]), m["name"], []
            continue
        b = _TGT_BACKING.match(line)
        if b and b["path"].strip() != "None":
            backing.append(b["path"].strip())
    if tid >= 0:
        found.append(TgtTarget(tid, name, tuple(backing)))
    return found
