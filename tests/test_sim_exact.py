"""The exact mechanics: profiles followed exactly, capacity, work conservation, determinism."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.policies import make_policy
from shockwave.scheduling import (
    AllocationPolicy,
    ClusterState,
    PolicyOutputError,
    RoundPolicy,
    SimulationConfig,
    SimulationStalledError,
)
from shockwave.sim import simulate
from shockwave.traces import load_workload
from shockwave.workload import Job, Workload

ROOT = Path(__file__).resolve().parents[1]


def make_job(
    job_id: int,
    arrival: float,
    gang: int,
    seconds: list[float],
    batch_sizes: list[int] | None = None,
) -> Job:
    return Job(
        job_id=job_id,
        arrival_time=arrival,
        gang_size=gang,
        model="ResNet-18",
        dataset="CIFAR-10",
        mode="static",
        batch_sizes=np.array(batch_sizes or [32] * len(seconds)),
        epoch_seconds=np.array(seconds, dtype=np.float64),
    )


@dataclass
class Recorder(RoundPolicy):
    """Runs every active job it can (admission order) and keeps every state it saw."""

    states: list[ClusterState] = field(default_factory=list)
    name = "recorder"

    def schedule(self, state: ClusterState) -> npt.NDArray[np.int64]:
        self.states.append(state)
        room = state.gpus
        chosen = []
        for job_id, gang in zip(state.job_ids.tolist(), state.gang_size.tolist(), strict=True):
            if gang <= room:
                chosen.append(job_id)
                room -= gang
        return np.array(chosen, dtype=np.int64)


def test_a_lone_job_finishes_after_its_profile_plus_one_start_penalty() -> None:
    job = make_job(0, 0.0, 1, [100.0, 250.5, 33.25])
    result = simulate(Workload((job,)), Recorder(), SimulationConfig(gpus=1))
    assert result.completion_time == [pytest.approx(20.0 + 383.75, abs=1e-9)]
    assert result.makespan == pytest.approx(403.75, abs=1e-9)
    no_penalty = simulate(
        Workload((job,)), Recorder(), SimulationConfig(gpus=1, restart_penalty_seconds=0.0)
    )
    assert no_penalty.completion_time == [pytest.approx(383.75, abs=1e-9)]


def test_arrivals_are_admitted_at_the_next_round_boundary() -> None:
    first = make_job(0, 0.0, 1, [1000.0])
    late = make_job(1, 50.0, 1, [10.0])
    recorder = Recorder()
    result = simulate(Workload((first, late)), recorder, SimulationConfig(gpus=2))
    assert result.record.admission_time.tolist() == [0.0, 120.0]
    assert result.completion_time[1] == pytest.approx(120.0 + 20.0 + 10.0)
    assert recorder.states[1].arrived.tolist() == [1]


def test_epoch_boundaries_inside_rounds_are_exact() -> None:
    seconds = [50.0, 70.0, 30.0, 400.0]
    sizes = [32, 64, 128, 256]
    job = make_job(0, 0.0, 1, seconds, sizes)
    recorder = Recorder()
    simulate(Workload((job,)), recorder, SimulationConfig(gpus=1, restart_penalty_seconds=0.0))
    cumulative = np.concatenate(([0.0], np.cumsum(seconds)))
    for k, state in enumerate(recorder.states):
        done = k * 120.0
        epoch = int(np.searchsorted(cumulative, done, side="right") - 1)
        fraction = (done - cumulative[epoch]) / seconds[epoch]
        assert state.epochs_done.tolist() == [epoch]
        assert state.epoch_progress[0] == pytest.approx(epoch + fraction)
        assert state.batch_size.tolist() == [sizes[epoch]]
        assert state.remaining_seconds[0] == pytest.approx(cumulative[-1] - done)
        per_epoch = -(-50_000 // sizes[epoch])
        assert state.throughput[0] == pytest.approx(per_epoch / seconds[epoch])


def test_throughput_samples_measure_the_iterations_run() -> None:
    job = make_job(0, 0.0, 1, [100.0, 100.0, 100.0], [32, 64, 64])
    recorder = Recorder()
    simulate(Workload((job,)), recorder, SimulationConfig(gpus=1))
    samples = recorder.states[-1].throughput_samples(0)
    assert samples.rounds.tolist() == [1, 2]
    # round 0: 20 s penalty, then 100 s of epoch 0 (1563 iterations)
    assert samples.steps_per_second[0] == pytest.approx(1563 / 100.0)
    # round 1: 120 s over the 782-iteration epochs at 64
    assert samples.steps_per_second[1] == pytest.approx(782 * 1.2 / 120.0)
    assert samples.batch_sizes.tolist() == [32, 64]


def test_empty_cluster_rounds_are_skipped() -> None:
    early = make_job(0, 0.0, 1, [100.0])
    late = make_job(1, 10_000.0, 1, [100.0])
    result = simulate(Workload((early, late)), Recorder(), SimulationConfig(gpus=1))
    assert result.record.admission_time.tolist() == [0.0, 10_080.0]
    assert result.rounds == 2
    assert result.makespan == pytest.approx(10_080.0 + 120.0)


def canonical() -> Workload:
    return load_workload(
        ROOT / "traces/canonical_120jobs.trace", ROOT / "traces/tacc_throughputs.json"
    )


@pytest.mark.parametrize("policy", ["fifo", "gavel", "mst", "allox", "gandiva-fair"])
def test_rounds_never_exceed_the_cluster(policy: str) -> None:
    result = simulate(canonical(), policy, SimulationConfig(gpus=32))
    assert result.record.round_gpus_used.max() <= 32
    assert np.all(np.isfinite(result.record.completion_time))


@dataclass
class Spy(AllocationPolicy):
    """Wraps a policy and keeps the states it is given."""

    inner: AllocationPolicy
    states: list[ClusterState] = field(default_factory=list)
    name = "spy"

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        self.states.append(state)
        return self.inner.allocate(state)

    def reset(self) -> None:
        self.inner.reset()
        self.states = []


@pytest.mark.parametrize("policy", ["gavel", "mst", "ossp", "fifo"])
def test_no_gpu_idles_while_a_queued_job_fits(policy: str) -> None:
    inner = make_policy(policy)
    assert isinstance(inner, AllocationPolicy)
    spy = Spy(inner)
    simulate(canonical(), spy, SimulationConfig(gpus=32))
    for before, after in zip(spy.states, spy.states[1:], strict=False):
        still = set(after.job_ids[after.ran_last_round].tolist())
        ran = still | set(after.completed.tolist())
        gang = dict(zip(before.job_ids.tolist(), before.gang_size.tolist(), strict=True))
        idle = before.gpus - sum(gang[j] for j in ran)
        waiting = [gang[j] for j in gang if j not in ran]
        assert not waiting or min(waiting) > idle, f"round {before.round_index}"


def test_same_seed_same_result_and_noise_changes_it() -> None:
    workload = canonical()
    config = SimulationConfig(gpus=32, throughput_noise=0.1, seed=7)
    a = simulate(workload, "gavel", config).to_dict()
    b = simulate(workload, "gavel", config).to_dict()
    assert "wall_seconds" not in a  # timing lives apart (SimulationResult.timing)
    assert a == b
    other = simulate(workload, "gavel", SimulationConfig(gpus=32, throughput_noise=0.1, seed=8))
    assert other.jct != a["jct"]
    quiet = simulate(workload, "gavel", SimulationConfig(gpus=32))
    assert quiet.makespan == pytest.approx(a["makespan"], rel=0.05)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 2000),
            st.sampled_from([1, 2, 4]),
            st.lists(st.floats(1.0, 500.0), min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["fifo", "gavel", "themis", "allox", "mst", "ossp", "gandiva-fair"]),
    st.integers(4, 9),
)
def test_every_job_completes_no_earlier_than_its_profile_allows(
    specs: list[tuple[float, int, list[float]]], policy: str, gpus: int
) -> None:
    jobs = tuple(make_job(i, a, g, s) for i, (a, g, s) in enumerate(specs))
    result = simulate(Workload(jobs), policy, SimulationConfig(gpus=gpus))
    record = result.record
    assert np.all(record.round_gpus_used <= gpus)
    exclusive = np.array([sum(s) for _, _, s in specs])
    # admitted at a boundary, then at least the profile (the first start pays the penalty)
    assert np.all(record.completion_time >= record.admission_time + exclusive + 20.0 - 1e-6)
    assert np.allclose(record.service_seconds, exclusive)


class Greedy(RoundPolicy):
    """Returns a fixed answer, for the validation tests."""

    def __init__(self, answer: list[int]) -> None:
        self.answer = answer

    def schedule(self, state: ClusterState) -> list[int]:
        return self.answer


@pytest.mark.parametrize(
    ("answer", "message"),
    [([5], "not an active job"), ([0, 0], "twice"), ([0, 1, 2], "needs 3 GPUs")],
)
def test_an_unexecutable_round_is_an_error(answer: list[int], message: str) -> None:
    jobs = tuple(make_job(i, 0.0, 1, [100.0]) for i in range(3))
    with pytest.raises(PolicyOutputError, match=message):
        simulate(Workload(jobs), Greedy(answer), SimulationConfig(gpus=2))


class Fixed(AllocationPolicy):
    def __init__(self, value: object) -> None:
        self.value = value

    def allocate(self, state: ClusterState) -> npt.NDArray[np.float64]:
        return np.asarray(self.value, dtype=np.float64)


@pytest.mark.parametrize(
    ("value", "message"),
    [([0.5, 0.5, 0.5], "expected 2"), ([0.5, np.nan], "finite"), ([0.5, 1.5], "outside")],
)
def test_bad_time_fractions_are_an_error(value: object, message: str) -> None:
    jobs = tuple(make_job(i, 0.0, 1, [100.0]) for i in range(2))
    with pytest.raises(PolicyOutputError, match=message):
        simulate(Workload(jobs), Fixed(value), SimulationConfig(gpus=2))


def test_a_starving_policy_is_stopped() -> None:
    jobs = (make_job(0, 0.0, 1, [100.0]),)
    with pytest.raises(SimulationStalledError, match="after 50 rounds"):
        simulate(Workload(jobs), Greedy([]), SimulationConfig(gpus=1, max_rounds=50))


def test_a_gang_larger_than_the_cluster_is_rejected() -> None:
    with pytest.raises(ValueError, match="needs 4 GPUs but the cluster has 2"):
        simulate(Workload((make_job(0, 0.0, 4, [10.0]),)), "gavel", SimulationConfig(gpus=2))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpus": 0}, "gpus"),
        ({"gpus": 4, "mechanics": "fast"}, "mechanics"),
        ({"gpus": 4, "restart_penalty_seconds": 120.0}, "shorter than round_seconds"),
        ({"gpus": 4, "round_seconds": float("nan")}, "round_seconds"),
        ({"gpus": 4, "throughput_noise": 0.1, "mechanics": "gavel"}, "exact mechanics only"),
        ({"gpus": 4, "seed": -1}, "seed"),
        ({"gpus": 4, "max_rounds": 0}, "max_rounds"),
    ],
)
def test_config_validation_names_the_bad_setting(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimulationConfig(**kwargs)  # type: ignore[arg-type]
