"""Benchmark of the production-trace conversion on a small Helios-like file (the streaming
benchmark at a million rows is ``benches/production_convert.py``)."""

from __future__ import annotations

from pathlib import Path

from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.traces import read_native
from shockwave.traces.production import convert_production
from shockwave.traces.production.synthetic import write_helios_like


def test_convert_a_helios_like_file(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    trace = tmp_path / "cluster_log.csv"
    write_helios_like(trace, 5000, seed=0, days=3)
    output = tmp_path / "converted.jsonl"
    report = benchmark(convert_production, "helios", trace, output)
    assert report.read == 5000
    assert len(read_native(output)) == report.kept > 3000
