"""Warm starts and the bid helpers a receding-horizon scheduler uses every round."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shockwave import market
from tests.market_reference import next_round_market, policy_markets, random_market


def test_shift_bids_drops_the_past_and_repeats_the_last_round() -> None:
    bids = np.arange(1.0, 9.0).reshape(2, 4)
    np.testing.assert_array_equal(
        market.shift_bids(bids, 1), [[2.0, 3.0, 4.0, 4.0], [6.0, 7.0, 8.0, 8.0]]
    )
    np.testing.assert_array_equal(market.shift_bids(bids, 0), bids)
    np.testing.assert_array_equal(market.shift_bids(bids, 4), np.zeros((2, 4)))


def test_align_bids_follows_job_identifiers() -> None:
    bids = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    aligned = market.align_bids(bids, ["a", "b", "c"], ["c", "new", "a"])
    np.testing.assert_array_equal(aligned, [[3.0, 3.0], [0.0, 0.0], [1.0, 1.0]])


@given(
    previous=st.lists(st.integers(-5, 40), unique=True, max_size=30),
    current=st.lists(st.integers(-5, 40), unique=True, max_size=30),
)
def test_align_bids_by_integer_array_matches_the_mapping(
    previous: list[int], current: list[int]
) -> None:
    bids = np.arange(3.0 * len(previous)).reshape(len(previous), 3) + 1.0
    by_array = market.align_bids(bids, np.array(previous, dtype=np.int64), np.array(current))
    by_name = market.align_bids(bids, [str(j) for j in previous], [str(j) for j in current])
    np.testing.assert_array_equal(by_array, by_name)


def test_align_bids_rejects_repeated_integer_identifiers() -> None:
    with pytest.raises(ValueError, match="previous_jobs"):
        market.align_bids(np.ones((2, 3)), np.array([4, 4]), np.array([4]))
    with pytest.raises(ValueError, match="current_jobs"):
        market.align_bids(np.ones((2, 3)), np.array([4, 5]), np.array([5, 5]))


def test_warm_start_bids_shift_then_align() -> None:
    m = random_market(5, 4, 1)
    plan = m.solve()
    warm = market.warm_start_bids(plan, previous_jobs=[10, 11, 12, 13, 14], current_jobs=[12, 99])
    np.testing.assert_array_equal(warm[0], market.shift_bids(plan.bids, 1)[2])
    np.testing.assert_array_equal(warm[1], 0.0)
    np.testing.assert_array_equal(plan.shifted_bids(2), market.shift_bids(plan.bids, 2))


def test_proportional_response_resumes_from_its_own_bids() -> None:
    m = random_market(80, 12, 2)
    plan = m.solve(method="proportional_response", tol=1e-4)
    again = m.solve(method="proportional_response", tol=1e-4, warm_start=plan)
    assert again.converged
    assert 2 * again.iterations <= plan.iterations


def test_the_equilibrium_bids_reproduce_the_equilibrium() -> None:
    """Water-filling the reported bids (one allocation of proportional response) gives back the
    reported plan, so a warm start from the same market starts certified."""
    m = random_market(80, 12, 2)
    plan = m.solve(tol=1e-9)
    again = m.solve(method="proportional_response", max_iter=1, tol=1e-9, warm_start=plan)
    assert again.gap <= 1e-8


def test_next_rounds_market_solves_from_the_shifted_plan() -> None:
    m = random_market(150, 20, 3)
    plan = m.solve()
    following = next_round_market(m, plan.shares[:, 0])
    warm = following.solve(warm_start=market.warm_start_bids(plan))
    cold = following.solve()
    assert warm.converged
    total = following.budgets.sum()
    assert abs(warm.objective - cold.objective) <= 2e-6 * total


def test_all_zero_rows_start_cold_and_arrivals_are_served() -> None:
    m = random_market(60, 10, 4)
    plan = m.solve()
    ids = list(range(m.jobs))
    arrivals = random_market(5, 10, 5)
    merged = replace(
        m,
        valuations=np.vstack([m.valuations, arrivals.valuations]),
        gang_sizes=np.concatenate([m.gang_sizes, arrivals.gang_sizes]),
        budgets=np.concatenate([m.budgets, arrivals.budgets]),
        progress=np.concatenate([m.progress, np.zeros(5)]),
        ceilings=np.concatenate([m.ceilings, arrivals.ceilings]),
    )
    warm = market.align_bids(plan.bids, ids, ids + ["new"] * 0 + list(range(100, 105)))
    assert np.all(warm[-5:] == 0.0)
    solution = merged.solve(warm_start=warm)
    assert solution.converged
    # A job with no progress must hold something (its log utility would be -inf otherwise).
    assert np.all(solution.utilities[-5:] > 0.0)


def test_warm_started_proportional_response_needs_no_more_iterations_to_a_coarse_gap() -> None:
    m = random_market(300, 20, 6)
    plan = m.solve(method="proportional_response", tol=1e-4)
    following = next_round_market(m, plan.shares[:, 0])
    cold = following.solve(method="proportional_response", tol=1e-4)
    warm = following.solve(
        method="proportional_response", tol=1e-4, warm_start=market.warm_start_bids(plan)
    )
    assert warm.converged
    assert warm.iterations <= cold.iterations


def test_warm_start_bids_follow_the_budgets() -> None:
    """Rows are rescaled by the job's budget ratio; a job whose budget moved more than
    ``max_budget_change`` (or that had no budget) starts cold."""
    bids = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    warm = market.warm_start_bids(
        bids,
        previous_jobs=[1, 2, 3, 4],
        current_jobs=[4, 3, 2, 1, 9],
        elapsed_rounds=0,
        previous_budgets=[2.0, 2.0, 0.0, 1.0],
        budgets=[1.5, 1.0, 8.0, 3.0, 1.0],
    )
    np.testing.assert_array_equal(
        warm,
        [
            [10.5, 12.0],  # job 4: budget 1 -> 1.5, rescaled
            [0.0, 0.0],  # job 3: no previous budget
            [0.0, 0.0],  # job 2: 2 -> 8, more than a factor 2
            [1.5, 3.0],  # job 1: 2 -> 3
            [0.0, 0.0],  # job 9: new
        ],
    )
    loose = market.warm_start_bids(
        bids,
        elapsed_rounds=0,
        previous_budgets=[2.0, 2.0, 1.0, 1.0],
        budgets=[2.0, 8.0, 1.0, 0.25],
        max_budget_change=4.0,
    )
    np.testing.assert_array_equal(loose, [[1.0, 2.0], [12.0, 16.0], [5.0, 6.0], [1.75, 2.0]])


def test_budget_aware_warm_start_reaches_the_same_equilibrium() -> None:
    m = random_market(120, 20, 8)
    plan = m.solve()
    following = replace(
        next_round_market(m, plan.shares[:, 0]),
        budgets=m.budgets * np.where(np.arange(m.jobs) % 5 == 0, 30.0, 1.1),
    )
    warm_bids = market.warm_start_bids(plan, previous_budgets=m.budgets, budgets=following.budgets)
    assert np.all(warm_bids[::5] == 0.0)
    warm = following.solve(warm_start=warm_bids)
    cold = following.solve()
    assert warm.converged
    total = following.budgets.sum()
    assert abs(warm.objective - cold.objective) <= 2e-6 * total


def test_smoothing_spreads_a_share_of_each_row_over_the_window() -> None:
    bids = np.array([[4.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    warm = market.warm_start_bids(bids, elapsed_rounds=0, smoothing=0.25)
    np.testing.assert_allclose(warm, [[3.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(warm.sum(axis=1), bids.sum(axis=1))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"previous_budgets": [1.0, 1.0]}, "give previous_budgets and budgets together"),
        ({"budgets": [1.0, 1.0]}, "give previous_budgets and budgets together"),
        ({"previous_budgets": [1.0], "budgets": [1.0, 1.0]}, "previous_budgets"),
        ({"previous_budgets": [1.0, -1.0], "budgets": [1.0, 1.0]}, "previous_budgets"),
        ({"previous_budgets": [1.0, 1.0], "budgets": [1.0, np.nan]}, "budgets"),
        ({"previous_budgets": [1.0, 1.0], "budgets": [1.0]}, "budgets"),
        (
            {"previous_budgets": [1.0, 1.0], "budgets": [1.0, 1.0], "max_budget_change": 0.5},
            "max_budget_change",
        ),
        ({"previous_jobs": [1, 2]}, "previous_jobs and current_jobs"),
        ({"smoothing": 1.5}, "smoothing"),
        ({"smoothing": float("nan")}, "smoothing"),
    ],
)
def test_warm_start_bids_rejects_bad_budgets(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        market.warm_start_bids(np.ones((2, 3)), **arguments)  # type: ignore[arg-type]


def test_the_policys_markets_are_recorded_in_order_with_their_jobs() -> None:
    markets = policy_markets()
    assert len(markets) > 100
    assert markets[0].elapsed_rounds == 0
    for before, step in itertools.pairwise(markets):
        assert step.elapsed_rounds >= 1
        assert len(step.job_ids) == step.market.jobs == len(set(step.job_ids.tolist()))
        assert set(step.job_ids.tolist()) & set(before.job_ids.tolist())
