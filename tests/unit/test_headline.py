"""One headline metric per workload kind (volbench.core.headline)."""

from __future__ import annotations

from volbench.core.headline import has_headline, headline


def test_random_io_headlines_iops_and_sequential_io_bandwidth() -> None:
    assert headline("iops", {"op": "read"}, {"rw": "randread", "bs": "4k"})
    assert not headline("bw", {"op": "read"}, {"rw": "randread"})
    assert headline("bw", {"op": "write"}, {"rw": "write", "bs": "1M"})
    assert not headline("iops", {"op": "write"}, {"rw": "write"})
    assert headline("bw", {}, {})  # dd, hdparm: sequential by nature
    assert not headline("lat_mean", {"op": "read"}, {"rw": "randread"})


def test_pgbench_and_jobs() -> None:
    assert headline("tps", {}, {"clients": 8})
    assert not headline("latency_avg", {}, {"clients": 8})
    assert headline("real", {}, {}) and headline("other", {}, {})
    assert not headline("user", {}, {})
    assert headline("real", {"phase": "total"}, {})
    assert not headline("real", {"phase": "commit"}, {})  # smallfiles: the total only


def test_a_case_without_a_headline_is_recognised() -> None:
    assert not has_headline([("put_block", {}), ("cpu", {})], {})
    assert has_headline([("lat_mean", {}), ("iops", {})], {"rw": "randrw"})
