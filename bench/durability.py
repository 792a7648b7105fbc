"""Coverage of the power-cut verdict's bounds (stats/durability.py), for docs/durability.md.

    .venv/bin/python bench/durability.py [--trials 4000] [--seed 1]

Two tables:
  exact      the one-sided 95 % upper bound's coverage for independent cuts, summed over
             every outcome (no simulation): the worst p for each number of cuts
  streaks    seeded simulation: outcomes that persist from one cut to the next (a
             two-state Markov chain with lag-1 correlation rho and the same long-run
             share p), the upper bound's and the two-sided interval's coverage
"""

from __future__ import annotations

import argparse

from volbench.stats.durability import exact_coverage, upper_bound
from volbench.stats.durability_sim import coverage

CUTS = (5, 10, 20, 30, 50)
SHARES = (0.01, 0.05, 0.1, 0.2, 0.5)
RHOS = (0.0, 0.3, 0.5, 0.8)


def exact_table() -> list[str]:
    out = ["| cuts | bound if none lost | worst coverage (p) | coverage at p = 0.05 / 0.2 / 0.5 |",
           "|---|---|---|---|"]
    for n in CUTS:
        grid = [p / 1000 for p in range(1, 1000)]
        worst = min(grid, key=lambda p: exact_coverage(p, n))
        at = " / ".join(f"{exact_coverage(p, n):.3f}" for p in (0.05, 0.2, 0.5))
        out.append(f"| {n} | {100 * upper_bound(0, n):.1f} % | {exact_coverage(worst, n):.4f} "
                   f"({worst:.3f}) | {at} |")
    return out


def streak_table(trials: int, seed: int) -> list[str]:
    out = ["| cuts | rho | " + " | ".join(f"p = {p}" for p in SHARES) + " |",
           "|---|---|" + "---|" * len(SHARES)]
    for n in (10, 20, 50):
        for rho in RHOS:
            cells = []
            for i, p in enumerate(SHARES):
                c = coverage(p, n, trials, seed + i, "runs", rho)
                cells.append(f"{c.upper:.3f} / {c.two_sided:.3f}")
            out.append(f"| {n} | {rho} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print("Exact coverage of the one-sided 95 % upper bound, independent cuts:\n")
    print("\n".join(exact_table()))
    print(f"\nStreaks (seeded, {args.trials} trials per cell; upper bound / two-sided "
          "interval coverage):\n")
    print("\n".join(streak_table(args.trials, args.seed)))


if __name__ == "__main__":
    main()
