"""Degenerate markets the Shockwave policy produces: they are solved, not crashed on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from shockwave import market
from tests.market_reference import Market, random_market


def test_an_empty_market_has_an_empty_solution() -> None:
    solution = market.solve(np.zeros((0, 20)), np.zeros(0, dtype=int), 32)
    assert solution.shares.shape == (0, 20)
    assert solution.prices.shape == (20,)
    assert solution.utilities.shape == (0,)
    assert solution.converged
    assert solution.gap == 0.0
    assert (solution.jobs, solution.rounds) == (0, 20)


def test_a_single_job_holds_every_round_it_fits_at_price_zero() -> None:
    solution = market.solve([[0.1, 0.2, 0.3]], [8], [8, 4, 8], progress=[0.1])
    np.testing.assert_array_equal(solution.shares, [[1.0, 0.0, 1.0]])
    np.testing.assert_array_equal(solution.prices, [0.0, 0.0, 0.0])
    assert solution.utilities[0] == pytest.approx(0.5)


def test_a_single_job_stops_at_its_ceiling() -> None:
    solution = market.solve([[0.3, 0.3, 0.3]], [1], 1, progress=[0.5])
    assert solution.converged
    assert solution.utilities[0] == pytest.approx(1.0, rel=1e-12)
    assert solution.shares.sum() == pytest.approx(0.5 / 0.3, rel=1e-9)


def test_one_round_is_a_plain_fisher_market() -> None:
    # Equal budgets, unit gangs, no progress: each job spends its budget on 1/N of the round.
    solution = market.solve(np.array([[0.1], [0.2], [0.4], [0.8]]), [1, 1, 1, 1], 2)
    np.testing.assert_allclose(solution.shares[:, 0], 0.5, rtol=1e-9)
    np.testing.assert_allclose(solution.prices, [2.0], rtol=1e-6)


def test_jobs_with_nothing_to_gain_get_nothing() -> None:
    m = random_market(30, 8, 2)
    valuations, progress = m.valuations.copy(), m.progress.copy()
    valuations[:4] = 0.0
    progress[:2] = 0.0
    solution = replace(m, valuations=valuations, progress=progress).solve()
    assert solution.converged
    assert np.all(solution.shares[:4] == 0.0)
    np.testing.assert_array_equal(solution.utilities[:4], progress[:4])
    assert np.isfinite(solution.objective)


def test_every_job_with_nothing_to_gain_is_a_trivial_market() -> None:
    solution = market.solve(np.zeros((3, 5)), [1, 2, 4], 8, progress=[0.0, 0.2, 0.5])
    assert solution.converged
    assert np.all(solution.shares == 0.0)
    assert solution.objective == pytest.approx(float(np.log(0.2) + np.log(0.5)))


def test_zero_budgets_buy_nothing() -> None:
    m = random_market(10, 4, 3)
    budgets = m.budgets.copy()
    budgets[0] = 0.0
    solution = replace(m, budgets=budgets).solve()
    assert solution.converged
    assert np.all(solution.shares[0] == 0.0)


def test_jobs_almost_done_are_held_to_their_ceiling() -> None:
    m = random_market(40, 10, 4)
    progress = m.progress.copy()
    progress[:5] = 1.0 - 1e-6
    solution = replace(m, progress=progress).solve()
    assert solution.converged
    assert np.all(solution.utilities <= 1.0 + 1e-12)
    assert np.all(solution.utilities[:5] >= progress[:5])


def test_gangs_larger_than_some_rounds_skip_them() -> None:
    m = random_market(40, 10, 5)
    supply = m.supply.copy()
    supply[1::2] = 2.0
    solution = replace(m, supply=supply).solve()
    assert solution.converged
    too_big = m.gang_sizes[:, None] > supply[None, :]
    assert np.all(solution.shares[too_big] == 0.0)
    assert np.all(m.gang_sizes @ solution.shares <= supply * (1 + 1e-12))


def test_identical_jobs_get_identical_utilities() -> None:
    row = np.linspace(0.01, 0.02, 6)
    solution = market.solve(np.tile(row, (9, 1)), [2] * 9, 6, progress=[0.3] * 9, tol=1e-9)
    np.testing.assert_allclose(solution.utilities, solution.utilities[0], rtol=1e-6)


def test_budgets_spanning_one_to_three_to_the_twelve() -> None:
    m = random_market(200, 20, 6)
    budgets = 3.0 ** np.random.default_rng(0).integers(0, 13, m.jobs)
    solution = replace(m, budgets=budgets).solve()
    assert solution.converged
    assert np.all(np.isfinite(solution.prices))
    assert np.all(np.isfinite(solution.bids))


@pytest.mark.parametrize("tol", [1e-4, 1e-6])
def test_budgets_spanning_seventeen_orders_of_magnitude(tol: float) -> None:
    """A market the policy built on a generated 460-job trace (128 GPUs): budgets from 2 to
    4.6e17, so the prices the poor jobs set are 1e-17 of the total budget. The interior point
    used to start with round slacks 1e9 times the supply there and stop idle at a gap of 1.1e-4."""
    data = np.load(Path(__file__).with_name("data") / "wide_budget_market.npz")
    m = Market(**{name: data[name] for name in data.files})
    solution = m.solve(tol=tol)
    assert m.budgets.max() / m.budgets.min() > 1e17
    assert solution.converged, solution.gap
    assert solution.iterations <= 12


def test_running_out_of_iterations_is_reported_with_a_feasible_plan() -> None:
    m = random_market(100, 20, 7)
    solution = m.solve(max_iter=3)
    assert not solution.converged
    assert solution.iterations <= 3
    assert solution.gap > 1e-6
    assert np.all(m.gang_sizes @ solution.shares <= m.supply * (1 + 1e-12))
    assert solution.objective <= solution.dual_bound


@pytest.mark.parametrize("method", ["interior_point", "proportional_response"])
def test_both_methods_reach_the_default_tolerance(method: str) -> None:
    solution = random_market(60, 10, 8).solve(method=method, max_iter=100_000)
    assert solution.converged
    assert solution.gap <= 1e-6
