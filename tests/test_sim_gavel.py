"""The gavel mechanics: the original simulator's rules, one by one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.policies import GandivaFair, MaxMinFairness
from shockwave.scheduling import AllocationPolicy, ClusterState, SimulationConfig
from shockwave.sim import simulate
from shockwave.sim.runtime_batch_size import (
    epoch_counter,
    rescale,
    steps_per_epoch,
    wants_change,
)
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_workload
from shockwave.workload import Job, Workload

ROOT = Path(__file__).resolve().parents[1]
GAVEL = SimulationConfig(gpus=32, mechanics="gavel")


def canonical() -> Workload:
    return load_workload(
        ROOT / "traces/canonical_120jobs.trace", ROOT / "traces/tacc_throughputs.json"
    )


def test_the_epoch_counter_counts_epochs_started() -> None:
    per_epoch = steps_per_epoch(50_000, 32)
    assert per_epoch == 1563
    assert epoch_counter(0, 50_000, 32) == 0
    assert epoch_counter(1, 50_000, 32) == 1
    assert epoch_counter(per_epoch, 50_000, 32) == 1
    assert epoch_counter(per_epoch + 1, 50_000, 32) == 2


def test_a_rescale_keeps_the_epoch_count_and_rounds_progress_up() -> None:
    # the reference notes' worked example: job 40, LM at batch size 10 -> 80
    change = rescale("accordion", "LM", 10, 10, True, 1_625_539, 68_334, 59_675)
    assert change is not None
    assert (change.batch_size, change.total_steps, change.steps_run) == (80, 203_193, 8_952)
    # GNS doubles once per consumption
    gns = rescale("gns", "ResNet-18", 32, 64, True, 10_000, 3_000, 50_000)
    assert gns is not None
    assert gns.batch_size == 128
    # refused when the initial batch size is already the model's maximum
    assert rescale("accordion", "LM", 80, 80, True, 1000, 10, 59_675) is None


def test_runtime_rules_differ_from_the_profile_rules() -> None:
    # Accordion LM: critical below 10 epochs started, no 30 % rule
    assert wants_change("accordion", "LM", 10, 1, 10, 9) == (False, False)
    assert wants_change("accordion", "LM", 10, 1, 10, 10) == (True, False)
    assert wants_change("accordion", "LM", 10, 1, 80, 5) == (False, True)
    assert wants_change("accordion", "Transformer", 32, 1, 32, 100) == (False, False)
    # GNS ResNet-18/32/1 doubles at epoch 21: the look-ahead fires one counter early
    assert wants_change("gns", "ResNet-18", 32, 1, 32, 19) == (False, False)
    assert wants_change("gns", "ResNet-18", 32, 1, 32, 20) == (True, False)
    assert wants_change("gns", "ResNet-18", 256, 1, 256, 500) == (False, False)


@dataclass
class Spy(AllocationPolicy):
    inner: AllocationPolicy
    rounds: list[int] = field(default_factory=list)
    name = "spy"

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        self.rounds.append(state.round_index)
        return self.inner.allocate(state)


def test_allocations_are_recomputed_at_most_every_1000_seconds() -> None:
    spy = Spy(MaxMinFairness())
    simulate(canonical(), spy, GAVEL)
    assert spy.rounds[:5] == [0, 1, 10, 19, 28]
    faster = Spy(MaxMinFairness())
    simulate(canonical(), faster, dataclasses.replace(GAVEL, recompute_interval_seconds=0.0))
    assert faster.rounds[:5] == [0, 1, 2, 3, 4]


def test_the_stuck_job_is_dropped_after_five_zero_progress_rounds() -> None:
    result = simulate(canonical(), "gandiva-fair", GAVEL)
    assert result.dropped_jobs == [35]
    assert 35 not in simulate(canonical(), "gandiva-fair", SimulationConfig(gpus=32)).dropped_jobs


def lone_job(arrival: float) -> Workload:
    table = ThroughputTable({("ResNet-18", 64, 1): 10.0})
    job = Job(
        job_id=0,
        arrival_time=arrival,
        gang_size=1,
        model="ResNet-18",
        dataset="CIFAR-10",
        mode="static",
        batch_sizes=np.array([64, 64]),
        epoch_seconds=np.array([78.2, 78.2]),
        total_steps=1_500,
        samples_per_epoch=50_000,
    )
    return Workload((job,), table)


def test_the_first_round_of_the_simulation_pays_no_restart_penalty() -> None:
    result = simulate(lone_job(0.0), GandivaFair(), SimulationConfig(gpus=1, mechanics="gavel"))
    assert result.completion_time == [pytest.approx(150.0)]  # 1500 steps at 10 steps/s


def test_a_later_first_start_pays_the_penalty() -> None:
    two = lone_job(0.0)
    late = dataclasses.replace(two.jobs[0], job_id=1, arrival_time=1.0)
    workload = two.with_jobs([two.jobs[0], late])
    result = simulate(workload, GandivaFair(), SimulationConfig(gpus=1, mechanics="gavel"))
    # job 1 waits for job 0; its first 120 s round loses 20 s of work
    assert result.completion_time[0] == pytest.approx(150.0)
    assert result.completion_time[1] > 150.0 + 150.0


def test_the_gavel_mechanics_need_step_counts_and_throughputs() -> None:
    workload = lone_job(0.0)
    with pytest.raises(ValueError, match="throughput table"):
        simulate(Workload(workload.jobs), "gavel", SimulationConfig(gpus=1, mechanics="gavel"))
    bare = dataclasses.replace(workload.jobs[0], total_steps=None)
    with pytest.raises(ValueError, match="total_steps"):
        simulate(workload.with_jobs([bare]), "gavel", SimulationConfig(gpus=1, mechanics="gavel"))


def test_gavel_runs_are_deterministic() -> None:
    a = simulate(canonical(), "allox", GAVEL)
    b = simulate(canonical(), "allox", GAVEL)
    assert a.jct == b.jct
    assert a.utilization == b.utilization


def test_a_missing_initial_throughput_names_the_job() -> None:
    workload = lone_job(0.0)
    bare = Workload(workload.jobs, ThroughputTable({("ResNet-18", 32, 1): 10.0}))
    with pytest.raises(ValueError, match=r"job 0: .*no throughput for"):
        simulate(bare, "gavel", SimulationConfig(gpus=1, mechanics="gavel"))
