"""Rounding planned shares into whole-gang rounds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave import market
from tests.market_reference import random_market

FAST = settings(max_examples=60, deadline=None)


@st.composite
def plans(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random shares (not necessarily a feasible plan), gangs and supplies."""
    jobs = draw(st.integers(1, 30))
    rounds = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    gangs = rng.choice([1, 2, 4, 8], size=jobs)
    shares = rng.uniform(0.0, 1.0, (jobs, rounds)) * (rng.random((jobs, rounds)) < 0.7)
    supply = rng.integers(0, 24, rounds).astype(float)
    return shares, gangs, supply


@FAST
@given(plans(), st.booleans())
def test_capacity_is_never_exceeded(plan: tuple[np.ndarray, ...], backfill: bool) -> None:
    shares, gangs, supply = plan
    order = np.arange(len(gangs))[::-1] if backfill else None
    schedule = market.round_schedule(shares, gangs, supply, backfill_order=order)
    assert schedule.dtype == np.bool_
    assert np.all(gangs @ schedule <= supply)


@st.composite
def unit_gang_plans(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Unit gangs, integral supply and per-round shares that fit it: the instance allows every
    job's count to track its plan within one round."""
    jobs = draw(st.integers(1, 30))
    rounds = draw(st.integers(1, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    supply = rng.integers(1, max(2, jobs), rounds).astype(float)
    raw = rng.uniform(0.0, 1.0, (jobs, rounds))
    shares = np.minimum(1.0, raw / raw.sum(axis=0) * supply * rng.uniform(0.5, 1.0))
    return shares, supply


@FAST
@given(unit_gang_plans())
def test_counts_track_plans_within_one_round(plan: tuple[np.ndarray, np.ndarray]) -> None:
    shares, supply = plan
    gangs = np.ones(shares.shape[0], dtype=int)
    schedule = market.round_schedule(shares, gangs, supply)
    assert np.all(schedule.sum(axis=0) <= supply)
    # At the end of the window and at every round on the way.
    planned = np.cumsum(shares, axis=1)
    received = np.cumsum(schedule, axis=1)
    assert np.all(np.abs(received - planned) < 1.0 + 1e-9)


def test_counts_track_a_solved_plan() -> None:
    m = random_market(300, 20, 1)
    solution = m.solve()
    schedule = market.round_schedule(solution.shares, m.gang_sizes, m.supply)
    assert np.all(m.gang_sizes @ schedule <= m.supply)
    gap = schedule.sum(axis=1) - solution.shares.sum(axis=1)
    # Mixed gang sizes do not always pack, but almost every job stays within one round.
    assert np.mean(np.abs(gap) < 1.0) >= 0.95


@FAST
@given(plans())
def test_jobs_run_only_when_owed_time_and_gangs_fit(plan: tuple[np.ndarray, ...]) -> None:
    shares, gangs, supply = plan
    schedule = market.round_schedule(shares, gangs, supply)
    owed_before = np.cumsum(shares, axis=1) - np.cumsum(schedule, axis=1) + schedule
    assert np.all(owed_before[schedule] > 0.0)
    assert not np.any(schedule & (gangs[:, None] > supply[None, :]))


@FAST
@given(plans())
def test_backfill_leaves_no_listed_gang_idle_that_would_fit(plan: tuple[np.ndarray, ...]) -> None:
    shares, gangs, supply = plan
    order = np.argsort(-gangs, kind="stable")
    schedule = market.round_schedule(shares, gangs, supply, backfill_order=order)
    free = supply - gangs @ schedule
    idle = ~schedule
    assert not np.any(idle & (gangs[:, None] <= free[None, :]))


def test_backfill_goes_in_the_given_order() -> None:
    shares = np.zeros((3, 1))
    schedule = market.round_schedule(shares, [4, 4, 4], 8, backfill_order=[2, 0, 1])
    np.testing.assert_array_equal(schedule[:, 0], [True, False, True])


def test_carried_deficit_keeps_receding_horizon_counts_honest() -> None:
    """Re-planning every round with the same shares and dispatching only round 0: carrying the
    deficit makes each job's rounds over the run track its planned first-round shares."""
    rng = np.random.default_rng(3)
    jobs, rounds, gpus = 12, 20, 4.0
    raw = rng.uniform(0.1, 1.0, jobs)
    first_round = raw / raw.sum() * gpus
    shares = np.repeat(first_round[:, None], rounds, axis=1)
    gangs = np.ones(jobs, dtype=int)
    deficit = np.zeros(jobs)
    ran = np.zeros(jobs)
    steps = 200
    for _ in range(steps):
        schedule = market.round_schedule(shares, gangs, gpus, deficit=deficit)
        deficit += shares[:, 0] - schedule[:, 0]
        ran += schedule[:, 0]
    assert np.all(np.abs(ran - steps * first_round) < 1.0 + 1e-9)


def test_ties_break_by_share_then_index() -> None:
    shares = np.array([[0.5], [0.5], [0.5]])
    schedule = market.round_schedule(shares, [1, 1, 1], 1)
    np.testing.assert_array_equal(schedule[:, 0], [True, False, False])


def test_rounding_is_deterministic() -> None:
    m = random_market(100, 20, 2)
    solution = m.solve()
    first = market.round_schedule(solution.shares, m.gang_sizes, m.supply)
    second = market.round_schedule(solution.shares, m.gang_sizes, m.supply)
    np.testing.assert_array_equal(first, second)
