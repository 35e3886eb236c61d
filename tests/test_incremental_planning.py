"""Incremental planning is bit for bit the same as rebuilding every planning step.

The Shockwave policy reuses what did not change between rounds: the adaptation model answers
jobs whose state is unchanged from their memoised prediction, only jobs whose progress or batch
size changed are told again, and a plan's schedule is rounded only as far as it is read. Here a
policy that throws all of that away every round (a model rebuilt from its bytes, which hold no
memo; every job told again; every plan's whole window rounded at once) must take the same
decisions and make the same plans.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.adaptation import JobModels
from shockwave.policies.shockwave import Plan, Shockwave
from shockwave.scheduling import ClusterState, SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import GeneratorParameters, generate_workload


class Recording(Shockwave):
    """Shockwave that keeps every decision and every plan's arrays."""

    def __init__(self, **parameters: Any) -> None:
        super().__init__(**parameters)
        self.decisions: list[npt.NDArray[np.int64]] = []
        self.plans: list[Plan] = []

    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        chosen = np.asarray(super().schedule(state), dtype=np.int64)
        self.decisions.append(chosen)
        assert self.last_plan is not None
        self.plans.append(self.last_plan)
        return chosen


class Rebuilding(Recording):
    """Recording that rebuilds everything every round: no memoised prediction, every job told
    its progress, every plan rounded over its whole window as soon as it is made."""

    def schedule(self, state: ClusterState) -> npt.ArrayLike:
        if self._models is not None:
            self._models = JobModels.from_bytes(self._models.to_bytes())
            self._observed[:] = -1
        chosen = super().schedule(state)
        self.plans[-1].schedule  # noqa: B018  (rounds the whole window now)
        return chosen


def bits(array: npt.NDArray[Any]) -> bytes:
    return np.ascontiguousarray(array).tobytes()


@pytest.mark.parametrize(
    ("mechanics", "parameters"),
    [
        ("exact", {}),
        ("gavel", {"replan_period": 3}),  # later columns of a plan are read
        ("exact", {"estimator": "dirichlet", "planning_rounds": 7}),
    ],
)
def test_incremental_planning_equals_rebuilding(mechanics: Any, parameters: dict[str, Any]) -> None:
    workload = generate_workload(GeneratorParameters(jobs=60, gpus=8, seed=5))
    config = SimulationConfig(gpus=8, mechanics=mechanics)
    incremental, rebuilt = Recording(**parameters), Rebuilding(**parameters)
    first = simulate(workload, incremental, config)
    second = simulate(workload, rebuilt, config)
    assert first.to_json() == second.to_json()
    assert len(incremental.decisions) == len(rebuilt.decisions) > 20
    for a, b in zip(incremental.decisions, rebuilt.decisions, strict=True):
        assert bits(a) == bits(b)
    planned = 0
    for plan, again in zip(incremental.plans, rebuilt.plans, strict=True):
        assert plan.round_index == again.round_index
        for name in ("job_ids", "backfill_order", "remaining_seconds", "rho_hat", "budgets"):
            assert bits(getattr(plan, name)) == bits(getattr(again, name)), name
        assert bits(plan.schedule) == bits(again.schedule)
        planned += plan.job_ids.size > 0
    assert planned > 20


def test_memoised_predictions_equal_fresh_ones() -> None:
    """Predictions after any mix of changes (some jobs progress, some are measured, the window
    or estimator changes) equal those of a model rebuilt from its bytes (no memo)."""
    models = JobModels()
    rng = np.random.default_rng(3)
    for job in range(40):
        epochs = 5 + job
        sizes = np.where(np.arange(epochs) < epochs // 2, 32, 64)
        models.add(job, sizes, np.where(sizes == 32, 30.0, 20.0), samples_per_epoch=6400.0)
    done = np.zeros(40)
    requests: list[tuple[int, float, Any]] = [
        (6, 120.0, "markov"), (6, 60.0, "markov"), (4, 120.0, "markov"), (6, 120.0, "dirichlet"),
    ]  # fmt: skip
    arrays = ("remaining_mean_seconds", "remaining_std_seconds", "valuations", "offsets")
    for step in range(12):
        moved = np.flatnonzero(rng.random(40) < 0.4)
        done[moved] = np.minimum(done[moved] + rng.random(moved.size) * 2, 5 + moved)
        models.observe(moved, done[moved], np.full(moved.size, 32))
        measured = moved[::2]
        models.observe_throughput(
            measured, np.full(measured.size, step), np.full(measured.size, 32),
            epoch_seconds=np.full(measured.size, 25.0 + step),
        )  # fmt: skip
        for rounds, seconds, estimator in requests:
            memo = models.predict(rounds, seconds, estimator=estimator)
            fresh = JobModels.from_bytes(models.to_bytes())
            again = fresh.predict(rounds, seconds, estimator=estimator)
            for name in arrays:
                assert bits(getattr(memo, name)) == bits(getattr(again, name)), (step, name)
