"""Benchmarks of the adaptation model: one planning step for 10,000 active jobs.

The jobs are drawn (seeded) from the canonical trace's 120 profiles and placed at random points
of their training. One step is what the Shockwave policy does every round: report one round of
progress and one throughput sample per job, then predict the remaining runtimes and the
``(N, T)`` valuations for a window of ``T = 20`` rounds of 120 s. Target: <= 20 ms per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from shockwave.adaptation import ESTIMATORS, Estimator, JobModels, Prediction
from shockwave.traces import load_workload

TRACES = Path(__file__).resolve().parent.parent / "traces"
JOBS = 10_000
ROUNDS = 20
ROUND_SECONDS = 120.0


@dataclass
class Step:
    """A container of ``JOBS`` jobs and what one round of service brings them."""

    models: JobModels
    job_ids: npt.NDArray[np.int64]
    epochs_done: npt.NDArray[np.float64]
    total_epochs: npt.NDArray[np.float64]
    epochs_per_round: npt.NDArray[np.float64]
    current: npt.NDArray[np.int64]
    epoch_seconds: npt.NDArray[np.float64]
    round_index: int = 0

    def advance(self, share: float) -> None:
        """Progress by ``share`` of a round of service (capped at the end of each job)."""
        self.epochs_done = np.minimum(
            self.total_epochs, self.epochs_done + share * self.epochs_per_round
        )
        self.round_index += 1


def make_step(seed: int = 0) -> Step:
    profiles = load_workload(TRACES / "canonical_120jobs.trace", TRACES / "tacc_throughputs.json")
    rng = np.random.default_rng(seed)
    picks = [profiles[int(i)] for i in rng.integers(0, len(profiles), JOBS)]
    models = JobModels()
    start = np.empty(JOBS)
    rate = np.empty(JOBS)
    current = np.empty(JOBS, dtype=np.int64)
    measured = np.empty(JOBS)
    for job_id, job in enumerate(picks):
        models.add(job_id, job.batch_sizes, job.epoch_seconds)
        e = int(rng.uniform(0.0, 0.9) * job.num_epochs)
        start[job_id] = e
        rate[job_id] = ROUND_SECONDS / job.epoch_seconds[e]
        current[job_id] = job.batch_sizes[e]
        measured[job_id] = job.epoch_seconds[e] * rng.lognormal(0.0, 0.1)
    ids = np.arange(JOBS, dtype=np.int64)
    models.observe(ids, start, current)
    total = np.array([float(job.num_epochs) for job in picks])
    return Step(models, ids, start, total, rate, current, measured)


def planning_step(step: Step) -> Prediction:
    """One round: progress and a throughput sample for every job, then the prediction."""
    step.advance(0.01)  # small steps keep the state comparable over the benchmark's rounds
    step.models.observe(step.job_ids, step.epochs_done, step.current)
    step.models.observe_throughput(
        step.job_ids,
        np.full(JOBS, step.round_index, dtype=np.int64),
        step.current,
        epoch_seconds=step.epoch_seconds,
    )
    return step.models.predict(ROUNDS, ROUND_SECONDS)


@pytest.fixture(scope="module")
def observed() -> Step:
    step = make_step()
    planning_step(step)
    return step


def test_observe_and_predict_10k_jobs(benchmark: BenchmarkFixture, observed: Step) -> None:
    prediction = benchmark(planning_step, observed)
    assert prediction.valuations.shape == (JOBS, ROUNDS)
    assert np.isfinite(prediction.remaining_mean_seconds).all()
    assert (prediction.valuations.sum(axis=1) <= 1.0 - prediction.offsets + 1e-9).all()


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_predict_10k_jobs(
    benchmark: BenchmarkFixture, observed: Step, estimator: Estimator
) -> None:
    prediction = benchmark(observed.models.predict, ROUNDS, ROUND_SECONDS, estimator=estimator)
    assert prediction.valuations.shape == (JOBS, ROUNDS)
    assert np.isfinite(prediction.remaining_mean_seconds).all()
