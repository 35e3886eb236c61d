"""Benchmarks of the trace generator at the scale of the issue's largest trace (20,000 jobs).

Run with timings: ``python -m pytest benches/test_bench_generate.py --benchmark-enable``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.traces import (
    GeneratorParameters,
    generate_records,
    generate_workload,
    write_generated,
)

#: 20,000 jobs for 6,500 GPUs with every other parameter at the original's value.
LARGE = GeneratorParameters(jobs=20_000, gpus=6_500, seed=1)


def test_draw_20000_jobs(benchmark: BenchmarkFixture) -> None:
    records = benchmark.pedantic(generate_records, args=(LARGE,), rounds=3, iterations=1)
    assert len(records) == LARGE.jobs


def test_draw_and_profile_20000_jobs(benchmark: BenchmarkFixture) -> None:
    workload = benchmark.pedantic(generate_workload, args=(LARGE,), rounds=3, iterations=1)
    assert len(workload) == LARGE.jobs


def test_write_20000_jobs_as_trace(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    out = tmp_path / "large.trace"
    jobs = benchmark.pedantic(write_generated, args=(LARGE, out), rounds=3, iterations=1)
    assert jobs == LARGE.jobs
    assert len(out.read_text().splitlines()) == LARGE.jobs


def test_write_20000_jobs_as_jsonl(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    out = tmp_path / "large.jsonl"
    jobs = benchmark.pedantic(write_generated, args=(LARGE, out), rounds=1, iterations=1)
    assert jobs == LARGE.jobs
    with out.open() as lines:
        assert sum(1 for _ in lines) == LARGE.jobs + 1
    out.unlink()  # about 560 MB
