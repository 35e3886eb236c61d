"""Benchmarks of the Shockwave policy: the whole canonical simulation, and one planning step at
900 active jobs (targets: <= 10 s and <= 50 ms)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.policies.shockwave import Shockwave
from shockwave.scheduling import SimulationConfig, SimulationStalledError
from shockwave.sim import simulate
from shockwave.traces import GeneratorParameters, generate_workload, load_workload
from shockwave.workload import Workload

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.fixture(scope="module")
def canonical() -> Workload:
    return load_workload(TRACES / "canonical_120jobs.trace", TRACES / "tacc_throughputs.json")


@pytest.mark.parametrize("mechanics", ["gavel", "exact"])
def test_canonical_simulation(
    benchmark: BenchmarkFixture, canonical: Workload, mechanics: str
) -> None:
    config = SimulationConfig(gpus=32, mechanics=mechanics)  # type: ignore[arg-type]
    result = benchmark.pedantic(
        lambda: simulate(canonical, Shockwave(), config), rounds=3, iterations=1
    )
    assert len(result.to_dict()["jct"]) == 120


@pytest.fixture(scope="module")
def crowd() -> Workload:
    """900 generated jobs (256 GPUs' parameters), all submitted at t = 0: 900 active jobs."""
    workload = generate_workload(GeneratorParameters(jobs=900, gpus=256, seed=7))
    return workload.with_jobs([dataclasses.replace(job, arrival_time=0.0) for job in workload])


def test_planning_step_at_900_active_jobs(benchmark: BenchmarkFixture, crowd: Workload) -> None:
    """Ten rounds on 256 GPUs; per-round planning time reported in ``extra_info``."""
    policies: list[Shockwave] = []

    def run() -> None:
        policy = Shockwave()
        policies.append(policy)
        config = SimulationConfig(gpus=256, max_rounds=10, mechanics="gavel")
        with pytest.raises(SimulationStalledError):  # stopped on purpose after 10 rounds
            simulate(crowd, policy, config)

    benchmark.pedantic(run, rounds=1, iterations=1)
    seconds = np.array(policies[-1].stats.planning_seconds)
    assert seconds.shape[0] >= 9
    benchmark.extra_info["planning_ms_first"] = 1e3 * float(seconds[0])
    benchmark.extra_info["planning_ms_median_warm"] = 1e3 * float(np.median(seconds[1:]))
    benchmark.extra_info["planning_ms_max_warm"] = 1e3 * float(seconds[1:].max())
