"""Error rates of volbench.stats.changepoint on seeded synthetic per-second series.

False detections: flat series (60 s, Gaussian noise of a given coefficient of variation,
or Student-t with 3 degrees of freedom for occasional wild seconds) classified as burst or
warm-up. Detection: a burst at 2x the sustained level for 10 s out of 60, same noise, and
the error of its detected length.

    .venv/bin/python bench/changepoint_rates.py [--trials 1000]
"""

from __future__ import annotations

import argparse
import random
import statistics

from volbench.stats.changepoint import BURST, FLAT, regimes


def noise(rng: random.Random, cv: float, heavy: bool) -> float:
    if heavy:  # Student t, 3 degrees of freedom, scaled to the same cv
        return cv * rng.gauss(0, 1) / (rng.gammavariate(1.5, 2) / 3) ** 0.5
    return cv * rng.gauss(0, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    print("| noise | flat series flagged | 10 s burst at 2x found | burst length error (median) |")
    print("|---|---|---|---|")
    for cv, heavy in ((0.003, False), (0.05, False), (0.10, False), (0.20, False),
                      (0.05, True), (0.10, True)):
        rng = random.Random(20261124)
        false = found = 0
        errors: list[float] = []
        for _ in range(args.trials):
            flat = [500 * (1 + noise(rng, cv, heavy)) for _ in range(60)]
            false += regimes(flat).kind != FLAT
            burst = [(1000 if i < 10 else 500) * (1 + noise(rng, cv, heavy)) for i in range(60)]
            got = regimes(burst)
            if got.kind == BURST:
                found += 1
                errors.append(abs(got.burst_seconds - 10))
        label = f"{'t3' if heavy else 'normal'}, cv {cv * 100:g} %"
        err = f"{statistics.median(errors):.1f} s" if errors else "-"
        print(f"| {label} | {false / args.trials * 100:.1f} % | {found / args.trials * 100:.1f} % "
              f"| {err} |")


if __name__ == "__main__":
    main()
