"""Lab VM: boot to first command (median of a few boots) and throttled disk speed vs its cap.

Each boot runs, in the guest, fio on a "standard" disk (500 IOPS, 50 MiB/s) and a
"fast" disk (2000 IOPS, 200 MiB/s): random 4k reads at QD32 (capped by IOPS),
sequential 1M reads at QD4 on the standard disk (capped by bandwidth), and random 4k
writes at QD32 on the standard disk (write-through classes: each write is FUA, which
must not cost more than the cap). Target: within ±3 % of the cap. Prints the figures
and a Markdown table for docs/lab.md.

    .venv/bin/python bench/lab_boot.py [--boots 3] [--runtime 8]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from volbench.lab import LabDisk, LabSpec, ensure_kernel, run_in_vm

MiB = 2**20
# (job, disk, fio arguments, metric, cap): the cap comes from the disk's class.
JOBS = (
    ("rand4k-standard", "d1", "--rw=randread --bs=4k --iodepth=32", "iops", 500),
    ("rand4k-fast", "d2", "--rw=randread --bs=4k --iodepth=32", "iops", 2000),
    ("seq1m-standard", "d1", "--rw=read --bs=1M --iodepth=4", "bw", 50 * MiB),
    ("randwrite4k-standard", "d1", "--rw=randwrite --bs=4k --iodepth=32", "iops", 500),
)


def guest_command(outdir: Path, runtime: int) -> list[str]:
    lines = []
    for job, disk, args, _, _ in JOBS:
        lines.append(
            f"fio --name={job} --filename=/dev/disk/by-id/virtio-{disk} --direct=1 "
            f"--ioengine=libaio {args} --runtime={runtime} --ramp_time=2 --time_based "
            f"--output-format=json --output={shlex.quote(str(outdir / job))}.json"
        )
    return ["sh", "-c", " && ".join(lines)]


def measured(outdir: Path, job: str, metric: str) -> float:
    data = json.loads((outdir / f"{job}.json").read_text())["jobs"][0]
    side = data["write"] if "write" in job else data["read"]
    return float(side["iops"]) if metric == "iops" else float(side["bw_bytes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--runtime", type=int, default=8)
    args = parser.parse_args()
    t0 = time.monotonic()
    kernel = ensure_kernel()
    print(f"kernel {kernel.package} ready in {time.monotonic() - t0:.1f} s")
    spec = LabSpec(disks=(LabDisk("d1", 2**30, "standard"), LabDisk("d2", 2**30, "fast")))
    boots: list[float] = []
    ready: list[float] = []
    values: dict[str, list[float]] = {job: [] for job, *_ in JOBS}
    for i in range(args.boots):
        # Each boot's outdir is removed afterwards (the images are removed by run_in_vm).
        with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volbench-labbench-") as tmp:
            out = Path(tmp)
            result = run_in_vm(spec, guest_command(out, args.runtime), out, timeout=900)
            if result.returncode != 0:
                sys.exit(f"boot {i + 1}: fio failed in the guest\n{result.console[-3000:]}")
            assert result.boot_seconds is not None
            boots.append(result.boot_seconds)
            up = [float((out / ".lab" / m).read_text().split()[0]) for m in ("booted", "ready")]
            ready.append(result.boot_seconds + up[1] - up[0])
            for job, _, _, metric, _ in JOBS:
                values[job].append(measured(out, job, metric))
        print(
            f"boot {i + 1}: first command after {result.boot_seconds:.1f} s, guest ready "
            f"(modules, udev) after {ready[-1]:.1f} s, VM ran {result.elapsed:.1f} s"
        )
    print(
        f"\nboot to first command: median {statistics.median(boots):.1f} s "
        f"(min {min(boots):.1f}, max {max(boots):.1f}, {len(boots)} boots); "
        f"to ready: median {statistics.median(ready):.1f} s"
    )
    print("\n| disk / job | cap | measured (each boot) | median / cap |")
    print("|---|---|---|---|")
    worst = 0.0
    for job, _, _, metric, cap in JOBS:
        vals = values[job]
        ratio = statistics.median(vals) / cap
        worst = max(worst, abs(ratio - 1))
        unit = (
            (lambda v: f"{v:.0f} IOPS") if metric == "iops" else (lambda v: f"{v / MiB:.1f} MiB/s")
        )
        print(f"| {job} | {unit(cap)} | {', '.join(unit(v) for v in vals)} | {ratio * 100:.1f} % |")
    print(f"\nworst deviation from the cap: {worst * 100:.1f} % (target: within 3 %)")


if __name__ == "__main__":
    main()
