"""Error rates of the phase rules (volbench.stats.phases) on simulated per-second series.

Each trial: a 60 s run at a level of 500 op/s with noise, a fault from a random time in
[15, 20) s (sub-second, as real events land) that cuts the rate to 50 % until a random
time in [30, 40) s, then back at the level. The simulation's seconds hold what a
per-second log holds: the second's I/Os, the seconds a fault starts and ends in mixing
both levels by the time spent in each. Noise: AR(1) with phi 0 / 0.5 / 0.9 (sd 5 % of the
level), heavy tails (Student t, 3 degrees of freedom), stalls (a second with no I/O, at
any moment including the first and last seconds), a busy host (10 % of seconds at 60 %).

Reported per noise: the phase rate's error against the true level (median and 95th
percentile of |error|, whole seconds vs the boundary seconds counted pro rata), the
recovery rule's answer measured from the fault's end (the level is back then): within
2 s, later, or "not recovered" although the level came back. The rule cannot answer
before the fault's end: it only looks after it.

    .venv/bin/python bench/phase_rules.py [--trials 2000] [--seed 23]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from volbench.stats import phases

LEVEL = 500.0
END = 60


def trial(rng: random.Random, phi: float, tails: bool, stalls: bool, busy: bool
          ) -> tuple[list[tuple[float, float]], float, float]:
    start, back = rng.uniform(15, 20), rng.uniform(30, 40)
    noise, points = 0.0, []
    sd = 0.05 * LEVEL * math.sqrt(1 - phi**2)
    for t in range(1, END + 1):
        inside = max(0.0, min(t, back) - max(t - 1, start))  # share of the second faulted
        rate = LEVEL * (1 - 0.5 * inside)
        shock = rng.gauss(0, 1) if not tails else rng.gauss(0, 1) / math.sqrt(
            sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3) / math.sqrt(3)
        noise = phi * noise + sd * shock
        value = max(0.0, rate + noise)
        if busy and rng.random() < 0.1:
            value *= 0.6
        if stalls and rng.random() < 0.03:
            continue  # no log line: no I/O that second
        points.append((float(t), value))
    return points, start, back


def prorata(points: list[tuple[float, float]], start: float, end: float) -> float:
    return phases.completed(points, start, end) / (end - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print("| noise | fault-phase error, whole s (median / p95) | pro rata (median / p95) | "
          "recovery within 2 s | later | not recovered |")
    print("|---|---|---|---|---|---|")
    for name, phi, tails, stalls, busy in (
            ("iid", 0.0, False, False, False), ("AR(1) 0.5", 0.5, False, False, False),
            ("AR(1) 0.9", 0.9, False, False, False), ("t3 tails", 0.5, True, False, False),
            ("stalls", 0.5, False, True, False), ("busy host", 0.5, False, False, True),
            ("all", 0.9, True, True, True)):
        whole, spread = [], []
        hits = misses = late = 0
        for _ in range(args.trials):
            points, start, back = trial(rng, phi, tails, stalls, busy)
            whole.append(abs((phases.rate(points, start, back) or 0) / (LEVEL / 2) - 1))
            spread.append(abs(prorata(points, start, back) / (LEVEL / 2) - 1))
            before = phases.rate(points, 0.0, start) or 0.0
            got = phases.recovery(points, before, back, END)
            if got is None:
                misses += 1
            elif got <= 2.0:  # the level is back at `back` itself
                hits += 1
            else:
                late += 1
        n = args.trials

        def pct(xs: list[float]) -> str:
            xs = sorted(xs)
            return f"{100 * statistics.median(xs):.1f} % / {100 * xs[int(0.95 * len(xs))]:.1f} %"

        print(f"| {name} | {pct(whole)} | {pct(spread)} | {100 * hits / n:.1f} % | "
              f"{100 * late / n:.1f} % | {100 * misses / n:.1f} % |")


if __name__ == "__main__":
    main()
