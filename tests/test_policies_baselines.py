"""The seven baselines, each against its definition (small hand-made cluster states)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from shockwave.policies import (
    POLICIES,
    AlloX,
    Fifo,
    FinishTimeFairness,
    GandivaFair,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    make_policy,
    policy_parameters,
    resolve_policy_name,
)
from shockwave.scheduling import AllocationPolicy, ClusterState, SampleLog
from shockwave.workload import Job, Workload


def make_state(
    gang: list[int],
    *,
    gpus: int,
    remaining_seconds: list[float] | None = None,
    throughput: list[float] | None = None,
    waited: list[float] | None = None,
    weight: list[float] | None = None,
    job_ids: list[int] | None = None,
    original: bool = False,
    time: float = 10_000.0,
) -> ClusterState:
    """A state of jobs with one-epoch profiles; ``original``: as the original simulator's
    mechanics build it (step counters, runtime batch-size rules, the original's quirks)."""
    n = len(gang)
    ids = np.array(job_ids if job_ids is not None else range(n), dtype=np.int64)
    thr = np.array(throughput if throughput is not None else [1.0] * n, dtype=np.float64)
    seconds = np.array(remaining_seconds or [1000.0] * n, dtype=np.float64)
    jobs = tuple(
        Job(
            job_id=int(i),
            arrival_time=0.0,
            gang_size=g,
            model="LM",
            dataset="Wikitext-2",
            mode="static",
            batch_sizes=np.array([10]),
            epoch_seconds=np.array([100.0]),
        )
        for i, g in zip(ids, gang, strict=True)
    )
    arrival = time - np.array(waited if waited is not None else [100.0] * n, dtype=np.float64)
    zeros_i = np.zeros(n, dtype=np.int64)
    return ClusterState(
        time=time,
        round_index=5,
        gpus=gpus,
        round_seconds=120.0,
        progress_counter="steps" if original else "profile",
        batch_size_changes="runtime-rules" if original else "profile",
        original_quirks=original,
        workload=Workload(jobs),
        positions=np.arange(n, dtype=np.int64),
        job_ids=ids,
        arrival_time=arrival,
        admission_time=arrival,
        admission_round=zeros_i,
        gang_size=np.array(gang, dtype=np.int64),
        weight=np.array(weight or [1.0] * n, dtype=np.float64),
        num_epochs=np.ones(n, dtype=np.int64),
        epochs_done=zeros_i,
        epoch_progress=np.zeros(n),
        steps_run=np.zeros(n),
        total_steps=seconds * thr,
        remaining_steps=seconds * thr,
        batch_size=np.full(n, 10, dtype=np.int64),
        throughput=thr,
        remaining_seconds=seconds,
        service_seconds=np.zeros(n),
        rounds_run=zeros_i,
        rounds_queued=zeros_i,
        ran_last_round=np.zeros(n, dtype=bool),
        last_sample_round=np.full(n, -1, dtype=np.int64),
        last_sample_steps_per_second=np.zeros(n),
        last_sample_batch_size=zeros_i,
        arrived=np.zeros(0, dtype=np.int64),
        completed=np.zeros(0, dtype=np.int64),
        _samples=SampleLog(np.arange(n, dtype=np.int64)),
    )


def load(x: npt.NDArray[np.float64], gang: list[int]) -> float:
    return float(np.dot(x, gang))


# ------------------------------------------------------------------------- max-min fairness
def test_max_min_fairness_equalises_gpu_shares_when_the_cluster_is_full() -> None:
    gang = [1, 2, 4, 1, 1, 2]
    x = MaxMinFairness().allocate(make_state(gang, gpus=4))
    assert np.allclose(x * np.array(gang), 4 / 6)
    assert load(x, gang) == pytest.approx(4.0)


def test_max_min_fairness_with_spare_gpus_pins_the_minimum_and_centres_the_rest() -> None:
    gang = [1, 2, 4]
    x = MaxMinFairness().allocate(make_state(gang, gpus=6))
    assert x[0] == 1.0  # at the bottleneck
    assert 0.5 < x[1] < 1.0
    assert 0.25 < x[2] < 1.0
    assert load(x, gang) < 6.0
    weighted = MaxMinFairness().allocate(make_state([1, 1], gpus=1, weight=[1.0, 3.0]))
    assert weighted.tolist() == pytest.approx([0.25, 0.75])


# -------------------------------------------------------------------------- gandiva-fair
def test_gandiva_fair_gives_equal_shares_whatever_the_gang() -> None:
    assert GandivaFair().allocate(make_state([1, 4, 2], gpus=2)).tolist() == pytest.approx(
        [2 / 3] * 3
    )
    assert GandivaFair().allocate(make_state([1, 4], gpus=8)).tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------------ mst
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([1.0, 2.5, 7.0, 13.0])),
        min_size=1,
        max_size=25,
    ),
    st.integers(1, 16),
)
def test_mst_is_the_lp_optimum(jobs: list[tuple[int, float]], gpus: int) -> None:
    gang = [g for g, _ in jobs]
    thr = [t for _, t in jobs]
    x = MaxSumThroughput().allocate(make_state(gang, gpus=gpus, throughput=thr))
    lp = linprog(-np.array(thr), A_ub=[gang], b_ub=[gpus], bounds=[(0, 1)] * len(gang))
    assert lp.status == 0
    assert np.all((x > 0) & (x < 1))  # an interior-point answer, never exactly at a bound
    assert load(x, gang) <= gpus * (1 + 1e-12)
    assert float(np.dot(thr, x)) == pytest.approx(-lp.fun, rel=1e-6, abs=1e-6)
    # identical jobs get identical shares
    for g, t in set(jobs):
        same = [i for i, job in enumerate(jobs) if job == (g, t)]
        assert np.ptp(x[same]) == pytest.approx(0.0, abs=1e-9)


def test_mst_ranks_left_out_jobs_by_how_close_they_came() -> None:
    gang = [1, 1, 1, 1]
    x = MaxSumThroughput().allocate(make_state(gang, gpus=1, throughput=[10.0, 9.0, 5.0, 1.0]))
    assert x[0] == pytest.approx(1.0, abs=1e-6)
    assert x[1] > x[2] > x[3] > 0.0


# ----------------------------------------------------------------------------------- ossp
def test_ossp_finishes_every_job_within_the_searched_horizon() -> None:
    gang = [1, 2, 1, 4]
    remaining = [1000.0, 4000.0, 300.0, 8000.0]
    policy = MinTotalDuration()
    x = policy.allocate(make_state(gang, gpus=4, remaining_seconds=remaining))
    horizon = max(r / xi for r, xi in zip(remaining, x, strict=True))
    # the smallest feasible horizon: every job at exactly the share that finishes it by T*
    best = sum(g * r for g, r in zip(gang, remaining, strict=True)) / 4
    assert best <= horizon <= 1.05 * best * 1.05
    assert load(x, gang) <= 4.0 + 1e-9
    assert np.all(x <= 1.0)


# --------------------------------------------------------------------------------- themis
def ratio(
    x: npt.NDArray[np.float64],
    waited: list[float],
    remaining: list[float],
    iso: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    w = np.array(waited)
    r = np.array(remaining)
    return (w + r / x) / (r / iso)


def test_themis_minimises_the_worst_finish_time_ratio() -> None:
    gang = [1, 1, 2, 1]
    waited = [3000.0, 100.0, 500.0, 0.0]
    remaining = [500.0, 5000.0, 2000.0, 10_000.0]
    x = FinishTimeFairness().allocate(
        make_state(gang, gpus=2, waited=waited, remaining_seconds=remaining)
    )
    iso = np.minimum(1.0, 2 / (4 * np.array(gang, dtype=float)))
    worst = ratio(x, waited, remaining, iso).max()
    assert load(x, gang) <= 2.0 + 1e-9
    # no feasible allocation does better (random feasible points)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        y = rng.uniform(0.01, 1.0, 4)
        y *= min(1.0, 2.0 / load(y, gang))
        assert ratio(y, waited, remaining, iso).max() >= worst - 1e-9


def test_themis_keeps_the_isolated_time_it_has_used() -> None:
    policy = FinishTimeFairness()
    policy.allocate(make_state([1, 1], gpus=1, remaining_seconds=[1000.0, 1000.0]))
    policy.allocate(make_state([1, 1], gpus=1, remaining_seconds=[400.0, 1000.0]))
    # job 0 progressed 600 s at an isolated share of 1/2: 1200 s of isolated time used
    assert policy._used[0] == pytest.approx(1200.0)
    assert policy._used[1] == 0.0


def test_themis_falls_back_to_isolated_shares_for_a_stuck_job() -> None:
    state = make_state([1, 1], gpus=1, remaining_seconds=[-5.0, 1000.0], original=True)
    assert FinishTimeFairness().allocate(state).tolist() == [0.5, 0.5]


# ---------------------------------------------------------------------------------- allox
def test_allox_gives_each_free_gpu_to_one_job_and_keeps_it() -> None:
    policy = AlloX()
    first = policy.allocate(make_state([1, 1, 2], gpus=4, waited=[300.0, 200.0, 100.0]))
    assert first.tolist() == [1.0, 1.0, 0.5]
    # sticky: the same jobs keep their shares, a newcomer fills the free GPU
    second = policy.allocate(
        make_state([1, 1, 2, 1], gpus=4, waited=[400, 300, 200, 10], job_ids=[0, 1, 2, 3])
    )
    assert second.tolist() == [1.0, 1.0, 0.5, 1.0]


def test_allox_starts_the_jobs_its_min_cost_matching_puts_first() -> None:
    # Shortest-processing-time on 2 identical GPUs: 50 runs first on one GPU; the other GPU's
    # first job is 100 or 800 (both optimal: the matching has tied optima), never 3000 or 5000.
    remaining = [5000.0, 100.0, 3000.0, 50.0, 800.0]
    x = AlloX(alpha=1.0).allocate(
        make_state([1] * 5, gpus=2, remaining_seconds=remaining, waited=[500, 400, 300, 200, 100])
    )
    assert x[3] == 1.0
    assert x[0] == x[2] == 0.0
    assert x.sum() == 2.0


# ----------------------------------------------------------------------------------- fifo
def test_fifo_blocks_behind_the_head_of_the_queue() -> None:
    policy = Fifo()
    x = policy.allocate(make_state([2, 4, 1], gpus=4))
    assert x.tolist() == [1.0, 0.0, 0.0]  # job 1 does not fit; job 2 may not jump it
    later = policy.allocate(make_state([4, 1], gpus=4, job_ids=[1, 2]))
    assert later.tolist() == [1.0, 0.0]


def test_fifo_oversubscribes_like_the_original_under_gavel_mechanics() -> None:
    policy = Fifo()
    policy.allocate(make_state([1, 1, 1], gpus=2, original=True))
    # job 0 completes: the original counts free GPUs before subtracting job 1's
    x = policy.allocate(make_state([1, 1, 1], gpus=2, job_ids=[1, 2, 3], original=True))
    assert x.tolist() == [1.0, 1.0, 0.0]
    exact = Fifo()
    exact.allocate(make_state([1, 1, 1], gpus=2))
    assert exact.allocate(make_state([1, 1, 1], gpus=2, job_ids=[1, 2, 3])).tolist() == [
        1.0,
        1.0,
        0.0,
    ]


# -------------------------------------------------------------------------------- registry
@pytest.mark.parametrize(
    "name", sorted(n for n in POLICIES if isinstance(make_policy(n), AllocationPolicy))
)
def test_every_allocation_policy_returns_valid_fractions(name: str) -> None:
    state = make_state([1, 2, 1, 4, 1], gpus=4, remaining_seconds=[10, 2000, 300, 40, 5000])
    x = make_policy(name).allocate(state)  # type: ignore[union-attr]
    assert x.shape == (5,)
    assert np.all((x >= 0.0) & (x <= 1.0))


def test_make_policy_rejects_unknown_names_and_parameters() -> None:
    assert resolve_policy_name("max_min_fairness") == "gavel"
    assert policy_parameters("allox") == {"alpha": 0.2, "full_matrix_limit": 4_000_000}
    assert isinstance(make_policy("allox", {"alpha": 1}), AlloX)
    with pytest.raises(ValueError, match="unknown policy 'shortest'"):
        make_policy("shortest")
    with pytest.raises(ValueError, match="has no parameter 'beta'"):
        make_policy("allox", {"beta": 1.0})
    with pytest.raises(ValueError, match="must be a float"):
        make_policy("allox", {"alpha": "high"})
    with pytest.raises(ValueError, match="alpha must be in"):
        make_policy("allox", {"alpha": 2.0})
