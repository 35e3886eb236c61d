"""Benchmarks of the workload readers (the canonical trace, and its native conversion)."""

from __future__ import annotations

from pathlib import Path

from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.traces import convert_trace, load_workload

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_read_and_profile_the_canonical_trace(benchmark: BenchmarkFixture) -> None:
    workload = benchmark(
        load_workload, TRACES / "canonical_120jobs.trace", TRACES / "tacc_throughputs.json"
    )
    assert len(workload) == 120


def test_read_the_canonical_trace_in_native_format(
    benchmark: BenchmarkFixture, tmp_path: Path
) -> None:
    native = tmp_path / "canonical.jsonl"
    convert_trace(TRACES / "canonical_120jobs.trace", TRACES / "tacc_throughputs.json", native)
    workload = benchmark(load_workload, native)
    assert len(workload) == 120
