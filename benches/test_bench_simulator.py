"""Simulator benchmarks: each baseline on the canonical trace and on 900 jobs / 256 GPUs.

Targets (issue 7): each baseline <= 1 s on the canonical trace, <= 10 s on 900 jobs / 256 GPUs.
Run with ``python -m pytest benches/test_bench_simulator.py --benchmark-enable``; results go
into ``benches/README.md``.
"""

from __future__ import annotations

from functools import cache

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.metrics import SimulationResult
from shockwave.policies import POLICIES
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.workload import Workload
from simulator_workloads import canonical, replicated

POLICY_NAMES = sorted(POLICIES)


@cache
def large() -> Workload:
    return replicated(900, 256)


@pytest.mark.parametrize("mechanics", ["exact", "gavel"])
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_canonical_120_jobs_32_gpus(
    benchmark: BenchmarkFixture, policy: str, mechanics: str
) -> None:
    workload = canonical()
    config = SimulationConfig(gpus=32, mechanics=mechanics)  # type: ignore[arg-type]
    result: SimulationResult = benchmark.pedantic(
        simulate, args=(workload, policy, config), rounds=3, iterations=1
    )
    assert result.jobs == 120
    assert result.record.round_gpus_used.max() <= 32


@pytest.mark.parametrize("mechanics", ["exact", "gavel"])
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_900_jobs_256_gpus(benchmark: BenchmarkFixture, policy: str, mechanics: str) -> None:
    workload = large()
    config = SimulationConfig(gpus=256, mechanics=mechanics)  # type: ignore[arg-type]
    result: SimulationResult = benchmark.pedantic(
        simulate, args=(workload, policy, config), rounds=1, iterations=1
    )
    assert result.jobs == 900
    assert result.record.round_gpus_used.max() <= 256
