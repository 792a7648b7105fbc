"""How often the answer block's figure interval holds the true centre, beside the summary's
arithmetic Student-t interval, on run-to-run noise as this machine gives it.

The answer block (report/answer.py) shows each target's geometric mean of its runs with a
t-interval of the mean log. Runs are repetitions (each a whole-run mean), so the model is
independent runs; what varies is their spread and shape:

- lognormal at CV 5 %, 20 %, 60 % (a quiet disk, a busy host, this machine at load 14);
- a busy host: lognormal CV 5 %, and with probability 0.2 a run slowed to 40-90 % of the
  level by other work (uniform): heavy low tail, the way load-average spikes hit runs;
- normal at CV 20 % (symmetric, the arithmetic interval's own model).

Per cell: coverage of the geometric interval (of the true geometric mean; for the mixture
and the normal, of the population's geometric mean computed from 10^6 draws), coverage of
the arithmetic interval (of the true mean), and how often the arithmetic interval goes
below zero (a rate cannot). Seeded; 20 000 experiments per cell by default.

    .venv/bin/python bench/answer_coverage.py [--trials N]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from volbench.stats import summarize
from volbench.stats.geometric import geometric_figure

Draw = Callable[[random.Random], float]


def lognormal(cv: float) -> Draw:
    sigma = math.sqrt(math.log(1.0 + cv * cv))
    return lambda rng: 1000.0 * math.exp(rng.gauss(-sigma * sigma / 2.0, sigma))


def busy_host(rng: random.Random) -> float:
    base = lognormal(0.05)(rng)
    return base * rng.uniform(0.4, 0.9) if rng.random() < 0.2 else base


def normal(cv: float) -> Draw:
    return lambda rng: max(1e-9, rng.gauss(1000.0, 1000.0 * cv))


def truth(draw: Draw) -> tuple[float, float]:
    rng = random.Random(1)
    values = [draw(rng) for _ in range(1_000_000)]
    return math.exp(statistics.fmean(math.log(v) for v in values)), statistics.fmean(values)


def cell(draw: Draw, n: int, trials: int, seed: int) -> tuple[float, float, float]:
    geo_true, mean_true = truth(draw)
    rng = random.Random(seed)
    geo = arith = negative = 0
    for _ in range(trials):
        values = [draw(rng) for _ in range(n)]
        fig = geometric_figure(values)
        assert fig is not None and fig.interval is not None
        geo += fig.interval.low <= geo_true <= fig.interval.high
        ci = summarize(values).mean_ci
        assert ci is not None
        arith += ci.low <= mean_true <= ci.high
        negative += ci.low < 0
    return geo / trials, arith / trials, negative / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20_000)
    args = ap.parse_args()
    noises: list[tuple[str, Draw]] = [
        ("lognormal CV 5 %", lognormal(0.05)), ("lognormal CV 20 %", lognormal(0.20)),
        ("lognormal CV 60 %", lognormal(0.60)), ("busy host (20 % of runs slowed)", busy_host),
        ("normal CV 20 %", normal(0.20))]
    print("| noise | runs | geometric interval covers | arithmetic covers | arithmetic < 0 |")
    print("|---|---:|---:|---:|---:|")
    for i, (name, draw) in enumerate(noises):
        for n in (3, 5, 10):
            geo, arith, neg = cell(draw, n, args.trials, seed=100 * i + n)
            print(f"| {name} | {n} | {geo * 100:.1f} % | {arith * 100:.1f} % | "
                  f"{neg * 100:.1f} % |")


if __name__ == "__main__":
    main()
