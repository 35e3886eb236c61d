"""Typed clusters on the one round loop: the exact mechanics' hand-checkable rules (a job that moves
to another GPU type pays the restart penalty, gangs are never split, no type runs more GPUs than
it has), and a typed run saved at a boundary and restored into a fresh loop ends bit for bit as
the straight run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.heterogeneous import (
    ClusterSpec,
    HeterogeneousConfig,
    TypedAllocationPolicy,
    TypedAllocationState,
    TypedJobs,
    load_typed_trace,
    make_typed_policy,
    simulate_heterogeneous,
    typed_result,
    typed_round_loop,
)
from shockwave.persistence import dump_state, load_state
from shockwave.rounds import RoundLoop, RoundObserver, RoundReport, RoundSnapshot

DATA = Path(__file__).parent / "data" / "gavel"
FloatArray = npt.NDArray[np.float64]


def _jobs(
    cluster: str, throughput: list[list[float]], steps: list[int], gang: list[int] | None = None
) -> TypedJobs:
    n = len(steps)
    return TypedJobs(
        job_ids=np.arange(n, dtype=np.int64),
        job_types=("toy",) * n,
        arrival=np.zeros(n),
        gang=np.asarray(gang or [1] * n, dtype=np.int64),
        weight=np.ones(n),
        total_steps=np.asarray(steps, dtype=np.int64),
        throughput=np.asarray(throughput, dtype=np.float64),
        cluster=ClusterSpec.parse(cluster),
    )


class ByTime(TypedAllocationPolicy):
    """Gives every job all its time on the first type before ``switch`` seconds, on the second
    after (a policy that moves a job between types, for hand-checked cases)."""

    def __init__(self, switch: float) -> None:
        self.name = "by-time"
        self.switch = switch

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        x = np.zeros((state.num_active, len(state.types)))
        x[:, 0 if state.time < self.switch else 1] = 1.0
        return x


class Decisions(RoundObserver):
    def __init__(self) -> None:
        self.rounds: list[tuple[list[int], list[int]]] = []

    def round_decided(self, loop: RoundLoop, report: RoundReport) -> None:
        types = report.decision.types
        assert types is not None
        self.rounds.append((report.decision.jobs.tolist(), types.tolist()))


def _exact(round_seconds: float = 60.0, penalty: float = 20.0) -> HeterogeneousConfig:
    return HeterogeneousConfig(
        mechanics="exact", round_seconds=round_seconds, restart_penalty_seconds=penalty
    )


def test_a_job_that_moves_to_another_type_pays_the_restart_penalty() -> None:
    # 1,000 steps at 10/s on "fast", 5/s on "slow"; 60 s rounds, 20 s penalty; the policy moves
    # the job to "slow" after the first round:
    #   round 0 on fast (first start, penalty): 40 s x 10 = 400 steps
    #   round 1 on slow (moved, penalty):       40 s x 5  = 200 steps (600)
    #   round 2 on slow (stays, no penalty):    60 s x 5  = 300 steps (900)
    #   round 3 on slow: the last 100 steps take 20 s: done at 180 + 20 = 200 s
    jobs = _jobs("fast:1,slow:1", [[10.0, 5.0]], [1000])
    loop = typed_round_loop(jobs, ByTime(switch=60.0), _exact())
    seen = Decisions()
    loop.observers = [seen]
    assert loop.run()
    assert seen.rounds == [([0], [0]), ([0], [1]), ([0], [1]), ([0], [1])]
    result = typed_result(loop, jobs, _exact(), 0.0)
    assert result.completion[0] == pytest.approx(200.0)
    # time on each type, net of the penalties
    np.testing.assert_allclose(result.gpu_seconds[0], [40.0, 40.0 + 60.0 + 20.0])
    # staying on one type pays the penalty once: 40 s x 10 = 400, then 600 steps in 60 s
    stay = typed_round_loop(jobs, ByTime(switch=1e9), _exact())
    assert stay.run()
    assert stay.ledger.completion_time[0] == pytest.approx(60.0 + 60.0)


def test_gangs_are_never_split_and_no_type_runs_more_gpus_than_it_has() -> None:
    # three 2-GPU jobs and two 1-GPU jobs on 2 + 3 GPUs: every gang on one type, per round
    throughput = [[4.0, 2.0], [4.0, 2.0], [3.0, 3.0], [2.0, 1.0], [1.0, 0.0]]
    jobs = _jobs("a:2,b:3", throughput, [3000, 2000, 2500, 800, 600], gang=[2, 2, 2, 1, 1])
    for policy in ("gavel", "gavel-agnostic", "fifo", "mst"):
        loop = typed_round_loop(jobs, make_typed_policy(policy), _exact())
        seen = Decisions()
        loop.observers = [seen]
        assert loop.run(), policy
        counts = np.asarray(jobs.cluster.counts)
        for chosen, types in seen.rounds:
            assert len(set(chosen)) == len(chosen)  # one gang, one type, per job
            used = np.bincount(types, weights=jobs.gang[chosen], minlength=2)
            assert np.all(used <= counts), (policy, chosen, types)
            # a job runs only on a type where it has a throughput (job 4 never on "b")
            assert all(jobs.throughput[j, k] > 0 for j, k in zip(chosen, types, strict=True))
        # work conservation: in round 0 (all five jobs active) no job left out fits on a type
        # where it can run
        chosen, types = seen.rounds[0]
        free = counts - np.bincount(types, weights=jobs.gang[chosen], minlength=2)
        for j in sorted(set(range(5)) - set(chosen)):
            assert not any(jobs.throughput[j, k] > 0 and jobs.gang[j] <= free[k] for k in (0, 1))


def test_per_type_capacity_makes_the_third_job_wait() -> None:
    # three identical 1-GPU jobs, one GPU of each of two types: two run, one waits a round
    jobs = _jobs("a:1,b:1", [[1.0, 1.0]] * 3, [30, 30, 30])
    loop = typed_round_loop(jobs, make_typed_policy("gavel"), _exact(penalty=0.0))
    seen = Decisions()
    loop.observers = [seen]
    assert loop.run()
    assert len(seen.rounds[0][0]) == 2 and sorted(seen.rounds[0][1]) == [0, 1]
    assert sorted(loop.ledger.completion_time.tolist()) == [30.0, 30.0, 90.0]


def test_a_packing_policy_is_refused_under_the_exact_mechanics() -> None:
    jobs = _jobs("a:1,b:1", [[1.0, 1.0]], [30])
    with pytest.raises(ValueError, match="gavel mechanics only"):
        simulate_heterogeneous(jobs, "gandiva", _exact())


def _resumed(jobs: TypedJobs, policy: str, config: HeterogeneousConfig, stop: int) -> Any:
    loop = typed_round_loop(jobs, make_typed_policy(policy, config.seed), config)
    assert not loop.run(until_round=stop)
    saved = load_state(dump_state("test", loop.snapshot().to_data()), "test")
    fresh = typed_round_loop(jobs, make_typed_policy(policy, config.seed), config)
    fresh.restore(RoundSnapshot.from_data(saved, "snapshot"), "snapshot")
    assert fresh.run()
    return typed_result(fresh, jobs, config, 0.0).to_json()


@pytest.mark.parametrize(
    ("policy", "mechanics"),
    [
        ("gavel", "gavel"),
        ("fifo-agnostic", "gavel"),  # the policy's and the type order's random generators
        ("gandiva", "gavel"),  # pairs of jobs sharing GPUs, a random generator
        ("themis", "gavel"),  # state kept between calls
        ("gavel", "exact"),
        ("fifo", "exact"),
    ],
)
def test_a_typed_run_restored_from_a_snapshot_ends_bit_for_bit(policy: str, mechanics: Any) -> None:
    jobs = load_typed_trace(
        DATA / "H4.trace", DATA / "simulation_throughputs.json.gz", "v100:6,p100:6,k80:6"
    )
    config = HeterogeneousConfig(mechanics=mechanics)
    straight = simulate_heterogeneous(jobs, policy, config).to_json()
    assert _resumed(jobs, policy, config, stop=40) == straight


@pytest.mark.parametrize(
    ("policy", "makespan", "completion"),
    [
        ("fifo", 5100.0, [100.0, 850.0, 5100.0]),
        ("gavel", 5100.0, [100.0, 850.0, 5100.0]),
        ("gavel-agnostic", 5200.0, [100.0, 1030.0, 5200.0]),
    ],
)
def test_gavels_boundary_with_no_job_is_kept(
    policy: str, makespan: float, completion: list[float]
) -> None:
    # the cluster empties at 850 s (1,030 s) and the third job arrives at 5,000 s: Gavel's loop
    # holds a boundary with no job (6 rounds in all) and draws the type order there (the agnostic
    # policy's later rounds depend on it). The numbers are those of the typed simulator's own
    # loop before it moved onto the round loop (main at facf24a).
    jobs = TypedJobs(
        job_ids=np.arange(3, dtype=np.int64),
        job_types=("toy",) * 3,
        arrival=np.array([0.0, 100.0, 5000.0]),
        gang=np.ones(3, dtype=np.int64),
        weight=np.ones(3),
        total_steps=np.array([1000, 3000, 1000], dtype=np.int64),
        throughput=np.array([[10.0, 5.0], [4.0, 2.0], [10.0, 5.0]]),
        cluster=ClusterSpec.parse("a:1,b:1"),
    )
    result = simulate_heterogeneous(jobs, policy)
    assert result.makespan == makespan and result.rounds == 6
    assert result.completion.tolist() == completion


def test_the_restart_penalty_is_checked_against_the_round_under_exact_only() -> None:
    assert HeterogeneousConfig(round_seconds=10.0).mechanics == "gavel"  # no penalty in Gavel's
    with pytest.raises(ValueError, match="shorter than a round"):
        HeterogeneousConfig(round_seconds=10.0, mechanics="exact")
    with pytest.raises(ValueError, match="mechanics must be"):
        HeterogeneousConfig(mechanics="fast")  # type: ignore[arg-type]


def test_typed_policies_are_asked_on_one_blas_thread() -> None:
    """As the homogeneous loop (``tests/test_round_loop.py``): a typed policy's BLAS calls run
    on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from tests.test_round_loop import blas_threads

    seen: list[int] = []

    class Counting(ByTime):
        def allocate(self, state: TypedAllocationState) -> FloatArray:
            seen.append(blas_threads())
            return super().allocate(state)

    jobs = _jobs("fast:1,slow:1", [[10.0, 5.0]], [1000])
    with threadpool_limits(limits=2, user_api="blas"):
        assert typed_round_loop(jobs, Counting(switch=60.0), _exact()).run()
        assert blas_threads() == 2
    assert seen and set(seen) == {1}
