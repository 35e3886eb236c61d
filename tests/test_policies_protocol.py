"""User-written policies plug into the simulator through the protocol (the docs' examples)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from shockwave.scheduling import AllocationPolicy, ClusterState, RoundPolicy, SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import load_workload

ROOT = Path(__file__).resolve().parents[1]


class ShortestRemainingFirst(RoundPolicy):
    """Run the jobs with the least exclusive work left, packing whole gangs (docs example)."""

    name = "srtf"

    def schedule(self, state: ClusterState) -> npt.NDArray[np.int64]:
        order = np.argsort(state.remaining_seconds, kind="stable")
        fits = np.cumsum(state.gang_size[order]) <= state.gpus
        return state.job_ids[order[fits]]


class ProportionalToGang(AllocationPolicy):
    """Time shares proportional to the gang size, scaled to fill the cluster (docs example)."""

    name = "proportional"

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        gang = state.gang_size.astype(np.float64)
        return np.minimum(1.0, state.gpus / gang.sum() * np.ones_like(gang))


def canonical_path() -> tuple[Path, Path]:
    return ROOT / "traces/canonical_120jobs.trace", ROOT / "traces/tacc_throughputs.json"


def test_a_round_policy_runs_under_both_mechanics() -> None:
    workload = load_workload(*canonical_path())
    for mechanics in ("exact", "gavel"):
        result = simulate(workload, ShortestRemainingFirst(), SimulationConfig(32, mechanics))
        assert result.policy == "srtf"
        assert np.all(np.isfinite(result.record.completion_time))
        assert result.record.round_gpus_used.max() <= 32


def test_a_round_policy_is_asked_every_round_even_under_gavel_mechanics() -> None:
    class Counting(ShortestRemainingFirst):
        def __init__(self) -> None:
            self.states: list[ClusterState] = []

        def schedule(self, state: ClusterState) -> npt.NDArray[np.int64]:
            self.states.append(state)
            return super().schedule(state)

    policy = Counting()
    result = simulate(load_workload(*canonical_path()), policy, SimulationConfig(32, "gavel"))
    assert [s.round_index for s in policy.states] == list(range(result.rounds))
    assert sorted(j for s in policy.states for j in s.arrived.tolist()) == list(range(120))
    # no 1,000 s gating: job 1 runs in the very round that starts at its admission
    admitted = int(result.record.admission_round[1])
    after = policy.states[admitted + 1]
    assert bool(after.ran_last_round[after.index_of([1])][0])


def test_an_allocation_policy_goes_through_the_mechanism() -> None:
    result = simulate(load_workload(*canonical_path()), ProportionalToGang(), SimulationConfig(32))
    assert result.policy == "proportional"
    assert result.jobs == 120
