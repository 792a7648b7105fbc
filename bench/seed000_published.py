"""Seed 000's own question, answered on its own numbers: is 0.3 ms (LVM x1) or 3 ms (LVM x25)
a real difference?

The write-up ran `pgbench -c 200 -t 100` ten times per layout on a cloud VM and printed
every run (tables "個別の結果"). Only the first run's full output survives
(tests/data/pgbench/16.2/), so the other runs cannot be imported as pgbench outputs;
this script feeds the published per-run values straight into volbench.stats.compare,
the function behind every verdict in a volbench report, at the default ±2 % threshold
and at the ±10 % that examples/seed000-xfs-lvm-nfs-pgbench.yaml uses.

    .venv/bin/python bench/seed000_published.py
"""

from __future__ import annotations

from volbench.stats import compare, verdict_text

# Transcribed from ../shared/seeds/000_*.txt, runs 1-10 in the published order.
LATENCY_MS = {
    "direct xfs": [182.821, 185.401, 181.519, 188.62, 185.515, 189.893, 181.374, 189.672,
                   184.623, 189.331],
    "LVM x1": [180.691, 180.168, 182.824, 192.308, 181.503, 198.081, 183.759, 191.254,
               182.587, 182.333],
    "LVM x25": [182.428, 186.594, 185.742, 192.513, 187.926, 197.622, 185.209, 187.631,
                186.238, 192.746],
    "nfs": [227.067, 229.767, 248.523, 254.183, 244.819, 247.029, 254.882, 236.622, 254.582,
            241.819],
}
TPS = {
    "direct xfs": [1093.966, 1078.742, 1101.81, 1060.335, 1078.079, 1053.222, 1102.692,
                   1054.451, 1083.29, 1056.351],
    "LVM x1": [1106.864, 1110.075, 1093.947, 1039.999, 1101.913, 1009.69, 1088.381, 1045.73,
               1095.371, 1096.891],
    "LVM x25": [1096.325, 1071.844, 1076.765, 1038.889, 1064.246, 1012.033, 1079.861,
                1065.923, 1073.894, 1037.636],
    "nfs": [880.7962, 870.4461, 804.7554, 786.8345, 816.9299, 809.6224, 784.6754, 845.2306,
            785.601, 827.0654],
}
BASELINE = "direct xfs"


def main() -> None:
    print("| layout | metric | threshold | ratio [95 % CI] | Welch p | verdict |")
    print("|---|---|---|---|---|---|")
    for metric, data, higher in (("latency", LATENCY_MS, False), ("tps", TPS, True)):
        for layout in ("LVM x1", "LVM x25", "nfs"):
            for threshold in (0.02, 0.10):
                c = compare(data[layout], data[BASELINE], higher_is_better=higher,
                            threshold=threshold)
                ci = c.ratio_ci
                span = f"[{ci.low:.3f}, {ci.high:.3f}]" if ci else ""
                p = f"{c.p_value:.3f}" if c.p_value is not None else "—"
                print(f"| {layout} | {metric} | ±{threshold * 100:g} % | {c.ratio:.3f} {span} "
                      f"| {p} | {verdict_text(c, metric)} |")


if __name__ == "__main__":
    main()
