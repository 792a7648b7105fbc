"""Report tables on a small database built through Store.save_run with known values.

Expected outputs are written out by hand from the values below (worked figures in the
comments), not produced by the code under test.
"""
# The expected tables are as wide as the real output: long lines are the point here.
# ruff: noqa: E501

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import load, make_db, make_run
from volbench import report
from volbench.cli.main import main
from volbench.core.model import RunResult
from volbench.report.options import ReportOptions
from volbench.stats import mean_interval

# -- the demo database -------------------------------------------------------------------
# a and b (workload w): zero spread, so every figure is exact: b's IOPS are 110 / 100 =
# 110.0 % of a's (faster by +10.0 %, p = 0 → "<0.001"); b's latency is 10.4 ms / 10 ms =
# 104.0 %, inside the experiment's lat_mean threshold of ±5 % → "no difference beyond ±5 %".
# c (workload v, not in the baseline): IOPS 90, 100, 110, 95, 105, 100:
#   mean 100, stdev sqrt(250 / 5) = 7.0711, cv 7.1 %,
#   95 % CI of the mean 100 ± t(0.975, 5) · 7.0711 / sqrt(6) = 100 ± 2.5706 · 2.8868
#   = [92.58, 107.42]; median CI for n = 6 is [x(1), x(6)] = [90, 110] (96.9 %).
C_IOPS = (90.0, 100.0, 110.0, 95.0, 105.0, 100.0)
IO = 2_048_000.0  # bytes fio says it read; the devices read the same (disk I/O r 100 %)


def demo_runs() -> list[RunResult]:
    runs = []
    t = 1000.0
    for rep in (1, 2, 3):
        for target, iops, lat in (("a", 100.0, 0.01), ("b", 110.0, 0.0104)):
            runs.append(
                make_run(
                    target,
                    {"iops": iops, "lat_mean": lat, "io_bytes": IO},
                    rep,
                    started=t,
                    annotations={"device_io": {"read_bytes": int(IO), "write_bytes": 0}},
                )
            )
            t += 10
    for rep, iops in enumerate(C_IOPS, 1):
        runs.append(make_run("c", {"iops": iops, "lat_mean": 0.001}, rep, started=t, workload="v"))
        t += 10
    return runs


def demo(tmp_path: Path) -> Path:
    return make_db(
        tmp_path / "demo.db",
        demo_runs(),
        document={"name": "demo", "baseline": "a", "thresholds": {"lat_mean": 0.05}},
    )


TERMINAL = """\
experiment 1: demo (done)
baseline: a; practical threshold ±2 % (lat_mean ±5 % set in the experiment); ratios of geometric means (arithmetic means shown where they read differently); one headline verdict at 5 %; runs per case: 3–6

Headline: each target vs a (IOPS for random I/O, bandwidth for sequential, tps, real/other for jobs)
target  workload  case  metric  op      n  % of baseline         95 % CI   ±T       p  verdict
------  --------  ----  ------  ----  ---  -------------  --------------  ---  ------  ------------------------------
b       w               iops    read  3/3        110.0 %  [110.0, 110.0]  2 %  <0.001  faster: +10.0 % [+10.0, +10.0]

Verdicts: each target vs a
target  workload  case  metric    op      n  % of baseline         95 % CI   ±T       p  verdict
------  --------  ----  --------  ----  ---  -------------  --------------  ---  ------  ---------------------------------------------
b       w               iops      read  3/3        110.0 %  [110.0, 110.0]  2 %  <0.001  faster: +10.0 % [+10.0, +10.0]
b       w               lat_mean  read  3/3        104.0 %  [104.0, 104.0]  5 %  <0.001  secondary, not a verdict: +4.0 % [+4.0, +4.0]

Summary
target  workload  case  metric    op    n      mean                   95 % CI    median        median 95 % CI       min       max       stdev     cv
------  --------  ----  --------  ----  -  --------  ------------------------  --------  --------------------  --------  --------  ----------  -----
a       w               iops      read  3  100 op/s      [100 op/s, 100 op/s]  100 op/s  [100 op/s, 100 op/s]  100 op/s  100 op/s      0 op/s  0.0 %
b       w               iops      read  3  110 op/s      [110 op/s, 110 op/s]  110 op/s  [110 op/s, 110 op/s]  110 op/s  110 op/s      0 op/s  0.0 %
a       w               lat_mean  read  3     10 ms            [10 ms, 10 ms]     10 ms        [10 ms, 10 ms]     10 ms     10 ms         0 s  0.0 %
b       w               lat_mean  read  3   10.4 ms        [10.4 ms, 10.4 ms]   10.4 ms    [10.4 ms, 10.4 ms]   10.4 ms   10.4 ms         0 s  0.0 %
c       v               iops      read  6  100 op/s  [92.85 op/s, 107.8 op/s]  100 op/s   [90 op/s, 110 op/s]   90 op/s  110 op/s  7.071 op/s  7.1 %
c       v               lat_mean  read  6      1 ms              [1 ms, 1 ms]      1 ms          [1 ms, 1 ms]      1 ms      1 ms         0 s  0.0 %
"""


ANSWER = """\
Answer: each target vs a (geometric mean of runs [95 % interval]; verdict in words)
w — read IOPS
  a  100 op/s [100, 100]  baseline
  b  110 op/s [110, 110]  1.1× faster [1.1, 1.1]
v — read IOPS
  c  99.79 op/s [92.63, 107.5]  no baseline to compare with

- noisiest: v — read IOPS on c: run-to-run CV 7 %
"""
TERMINAL_ANSWER = f"""\
experiment 1: demo (done)
baseline: a; practical threshold ±2 %; runs per case: 3–6

{ANSWER}all metrics, summaries and time windows: volbench report --details
"""


def test_terminal_exact(tmp_path: Path) -> None:
    text = report.render(load(demo(tmp_path)), "table")
    assert text == TERMINAL_ANSWER


def test_terminal_details_exact(tmp_path: Path) -> None:
    text = report.render(load(demo(tmp_path)), "table", ReportOptions(details=True))
    first, rest = TERMINAL.split("\n\n", 1)
    answer = TERMINAL_ANSWER.split("\n\n", 1)[1].rsplit("\n", 2)[0]  # no "--details" hint
    assert text == f"{first}\n\n{answer}\n\n{rest}"


MARKDOWN = f"""\
# demo

baseline **a**; practical threshold ±2 % (lat_mean ±5 % set in the experiment); ratios of geometric means (arithmetic means shown where they read differently); one headline verdict at 5 %; runs per case: 3–6.

## Answer

```text
{ANSWER}```

## Headline: each target vs a (IOPS for random I/O, bandwidth for sequential, tps, real/other for jobs)

| target | workload | case | metric | op | n | % of baseline | 95 % CI | ±T | p | verdict |
|---|---|---|---|---|---:|---:|---:|---:|---:|---|
| b | w |  | iops | read | 3/3 | 110.0 % | [110.0, 110.0] | 2 % | <0.001 | faster: +10.0 % [+10.0, +10.0] |

## Verdicts: each target vs a

| target | workload | case | metric | op | n | % of baseline | 95 % CI | ±T | p | verdict |
|---|---|---|---|---|---:|---:|---:|---:|---:|---|
| b | w |  | iops | read | 3/3 | 110.0 % | [110.0, 110.0] | 2 % | <0.001 | faster: +10.0 % [+10.0, +10.0] |
| b | w |  | lat_mean | read | 3/3 | 104.0 % | [104.0, 104.0] | 5 % | <0.001 | secondary, not a verdict: +4.0 % [+4.0, +4.0] |

## % of a [95 % CI]

| workload | case | metric | op | b |
|---|---|---|---|---:|
| w |  | iops | read | 110.0 % [110.0, 110.0] |
| w |  | lat_mean | read | 104.0 % [104.0, 104.0] |

## Summary

| target | workload | case | metric | op | n | mean | 95 % CI | median | median 95 % CI | min | max | stdev | cv |
|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| a | w |  | iops | read | 3 | 100 op/s | [100 op/s, 100 op/s] | 100 op/s | [100 op/s, 100 op/s] | 100 op/s | 100 op/s | 0 op/s | 0.0 % |
| b | w |  | iops | read | 3 | 110 op/s | [110 op/s, 110 op/s] | 110 op/s | [110 op/s, 110 op/s] | 110 op/s | 110 op/s | 0 op/s | 0.0 % |
| a | w |  | lat_mean | read | 3 | 10 ms | [10 ms, 10 ms] | 10 ms | [10 ms, 10 ms] | 10 ms | 10 ms | 0 s | 0.0 % |
| b | w |  | lat_mean | read | 3 | 10.4 ms | [10.4 ms, 10.4 ms] | 10.4 ms | [10.4 ms, 10.4 ms] | 10.4 ms | 10.4 ms | 0 s | 0.0 % |
| c | v |  | iops | read | 6 | 100 op/s | [92.85 op/s, 107.8 op/s] | 100 op/s | [90 op/s, 110 op/s] | 90 op/s | 110 op/s | 7.071 op/s | 7.1 % |
| c | v |  | lat_mean | read | 6 | 1 ms | [1 ms, 1 ms] | 1 ms | [1 ms, 1 ms] | 1 ms | 1 ms | 0 s | 0.0 % |

## Per-run values

Runs in the order they ran; * marks an outlier (MAD rule), kept in every statistic.

### w — iops read

| target | 1 | 2 | 3 |
|---|---:|---:|---:|
| a | 100 op/s | 100 op/s | 100 op/s |
| b | 110 op/s | 110 op/s | 110 op/s |

### w — lat_mean read

| target | 1 | 2 | 3 |
|---|---:|---:|---:|
| a | 10 ms | 10 ms | 10 ms |
| b | 10.4 ms | 10.4 ms | 10.4 ms |

### v — iops read

| target | 1 | 2 | 3 | 4 | 5 | 6 |
|---|---:|---:|---:|---:|---:|---:|
| c | 90 op/s | 100 op/s | 110 op/s | 95 op/s | 105 op/s | 100 op/s |

### v — lat_mean read

| target | 1 | 2 | 3 | 4 | 5 | 6 |
|---|---:|---:|---:|---:|---:|---:|
| c | 1 ms | 1 ms | 1 ms | 1 ms | 1 ms | 1 ms |

## Runs

| # | target | workload | case | rep | status | duration | disk I/O | error |
|---:|---|---|---|---|---|---:|---|---|
| 1 | a | w |  | 1 | ok | 5.0 s | r 100 % |  |
| 2 | b | w |  | 1 | ok | 5.0 s | r 100 % |  |
| 3 | a | w |  | 2 | ok | 5.0 s | r 100 % |  |
| 4 | b | w |  | 2 | ok | 5.0 s | r 100 % |  |
| 5 | a | w |  | 3 | ok | 5.0 s | r 100 % |  |
| 6 | b | w |  | 3 | ok | 5.0 s | r 100 % |  |
| 7 | c | v |  | 1 | ok | 5.0 s | — |  |
| 8 | c | v |  | 2 | ok | 5.0 s | — |  |
| 9 | c | v |  | 3 | ok | 5.0 s | — |  |
| 10 | c | v |  | 4 | ok | 5.0 s | — |  |
| 11 | c | v |  | 5 | ok | 5.0 s | — |  |
| 12 | c | v |  | 6 | ok | 5.0 s | — |  |

## Environment

- cpu: Test CPU
- kernel: 6.1.0
- memory: 8G
- fio: fio-3.33
- hostname: h1

### Recipe: a

```sh
mkfs.xfs /dev/a
```

### Recipe: b

```sh
mkfs.xfs /dev/b
```

### Recipe: c

```sh
mkfs.xfs /dev/c
```
"""


def test_another_baseline_without_rerunning(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = demo(tmp_path)
    rep = load(db, ReportOptions(baseline="b"))
    assert rep.baseline == "b"
    (iops,) = [v for v in rep.verdicts if v.candidate.metric == "iops"]
    # a against b now: 100 / 110 IOPS
    assert iops.target == "a" and iops.comparison is not None
    assert iops.comparison.ratio == pytest.approx(100 / 110)
    assert main(["report", "--db", str(db), "--baseline", "b"]) == 0
    assert "Answer: each target vs b" in capsys.readouterr().out
    assert main(["report", "--db", str(db), "--baseline", "bb"]) == 1
    assert capsys.readouterr().err.strip() == (
        "volbench: baseline bb: no target of that name in these results (targets: a, b, c); "
        "did you mean 'b'?")


def test_markdown_exact(tmp_path: Path) -> None:
    # The store keeps documents as canonical JSON (sorted keys): cpu comes before kernel.
    assert report.render(load(demo(tmp_path)), "markdown") == MARKDOWN


# CSV: one row per metric per run in base units; --metrics iops keeps the IOPS rows.
CSV_HEAD = "experiment,target,workload,params,repetition,metric,value,unit,tags,note\n"
PARAMS = '"{""bs"":""4k"",""rw"":""randread""}"'
TAGS = '"{""op"":""read""}"'


def test_csv_exact(tmp_path: Path) -> None:
    options = ReportOptions(("iops",))
    text = report.render(load(demo(tmp_path), options), "csv", options)
    expected = [
        f"demo,{t},w,{PARAMS},{rep},iops,{v},op/s,{TAGS},"
        for rep in (1, 2, 3)
        for t, v in (("a", "100.0"), ("b", "110.0"))
    ]
    expected += [
        f"demo,c,v,{PARAMS},{rep},iops,{v!r},op/s,{TAGS}," for rep, v in enumerate(C_IOPS, 1)
    ]
    assert text == CSV_HEAD + "\n".join(expected) + "\n"


def test_json_keeps_the_contract_and_adds_verdicts(tmp_path: Path) -> None:
    import json

    data = json.loads(report.render(load(demo(tmp_path)), "json"))
    assert data["experiment"]["name"] == "demo"
    assert data["environment"]["checked"]["kernel"] == "6.1.0"
    first = data["runs"][0]
    assert {"target", "workload", "params", "repetition", "status", "metrics"} <= set(first)
    assert first["metrics"][0] == {
        "name": "iops",
        "value": 100.0,
        "unit": "op/s",
        "tags": {"op": "read"},
    }
    assert data["baseline"] == "a"
    assert data["thresholds"] == {"lat_mean": 0.05}
    verdicts = {(v["target"], v["metric"]): v for v in data["verdicts"]}
    assert verdicts[("b", "iops")]["verdict"] == "better"
    assert abs(verdicts[("b", "iops")]["comparison"]["ratio"] - 1.1) < 1e-12
    assert verdicts[("b", "lat_mean")]["verdict"] == "equivalent"
    assert verdicts[("b", "lat_mean")]["role"] == "secondary"
    assert verdicts[("b", "iops")]["family"] == {"method": "Holm", "size": 1, "alpha": 0.05}
    c_iops = next(s for s in data["summaries"] if s["target"] == "c" and s["metric"] == "iops")
    assert c_iops["n"] == 6 and c_iops["values"] == list(C_IOPS)
    assert c_iops["mean_ci"]["low"] == pytest.approx(mean_interval(C_IOPS).low, rel=1e-12)
    assert 0 < c_iops["mean_ci"]["low"] < 100
    assert data["runs_per_case"] == {"min": 3, "max": 6}
    assert "io_check" not in data["runs"][0]  # nothing found: nothing added


def test_adaptive_repetition_verdicts_are_looks_of_the_sequential_design(
        tmp_path: Path) -> None:
    # +9 % from 3 runs per side: faster at a plain 5 %, open at the first of 18 looks.
    runs = [make_run(t, {"iops": v}, rep, started=10.0 * i)
            for i, (t, v, rep) in enumerate(
                [("a", 100.0, 1), ("b", 109.0, 1), ("a", 104.0, 2), ("b", 113.0, 2),
                 ("a", 97.0, 3), ("b", 106.0, 3)])]
    fixed = load(make_db(tmp_path / "f.db", runs, document={"name": "f", "repeat": 3}))
    adaptive = load(make_db(tmp_path / "a.db", runs, document={
        "name": "a", "repeat": {"min": 3, "max": 20, "until": "decided"}}))
    assert fixed.design is None and fixed.verdicts[0].verdict == "better"
    assert adaptive.design is not None and adaptive.design.looks == 18
    (row,) = adaptive.verdicts
    assert row.verdict == "inconclusive" and row.comparison is not None
    assert row.comparison.look == 1
    text = report.render(adaptive, "table", ReportOptions(details=True))
    assert "pocock group-sequential design over 18 looks (3–20 runs)" in text


def test_json_names_the_headline_the_design_and_the_arithmetic_means(tmp_path: Path) -> None:
    doc = json.loads(report.render(load(demo(tmp_path)), "json"))
    assert doc["sequential_design"] is None
    rows = {v["metric"]: v for v in doc["verdicts"]}
    assert rows["iops"]["headline"] and not rows["lat_mean"]["headline"]
    # Zero spread on both sides: the arithmetic means' ratio is 110 / 100 exactly.
    assert rows["iops"]["arithmetic_means"]["ratio"] == pytest.approx(1.1)
