"""Knee and SLA rate on a simulated M/M/1 device (stats.simulate_curves, seeded)."""

from __future__ import annotations

import pytest

from volbench.stats.simulate_curves import curve_errors


@pytest.mark.parametrize(("latency_cv", "probes"), [(0.05, 3), (0.10, 1), (0.20, 3)])
def test_knee_within_3_percent_and_sla_rate_unbiased(latency_cv: float, probes: int) -> None:
    found = curve_errors(400, probes=probes, latency_cv=latency_cv)
    assert abs(found.knee_new) <= 0.03  # median error of the knee
    assert abs(found.sla_new) <= 0.01  # mean error (bias) of the SLA rate
    # The step rules they replace: the knee snapped to the 50 % step (-9 %), the SLA
    # rate sat half a bracket low.
    assert found.knee_old < -0.05
    assert found.sla_old < -0.01
