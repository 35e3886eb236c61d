"""The market over (round, GPU type): the Python API and the equilibrium's invariants, as
hypothesis properties where they hold for every market.

Markets are drawn small (the solves are fast) with every feature of the one-type tests (gangs of
1 to 8 GPUs, supply that varies by round, jobs with nothing to gain, progress, ceilings, budgets
from 1 to 3^12) on 2 to 5 GPU types, each type's supply a random share of the GPUs and some types
out of reach of some jobs. The independent checks are ``shockwave.testing.check_equilibrium``
(KKT conditions in numpy, ``tests/test_testing_tools.py``) and Clarabel
(``tests/test_market_oracle.py``).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shockwave import InputError, market
from shockwave.testing import Market, random_market, random_typed_market
from shockwave.testing.equilibrium import _best_response
from shockwave.testing.strategies import markets

TOL = 1e-7
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
typed_markets = markets(max_jobs=20, max_rounds=6, min_types=2, max_types=5)


@FAST
@given(typed_markets)
def test_the_plan_is_feasible(m: Market) -> None:
    solution = m.solve(tol=TOL)
    x = solution.shares
    assert x.shape == m.valuations.shape and solution.bids.shape == x.shape
    assert solution.prices.shape == m.supply.shape
    assert solution.types == m.types
    assert np.all(x >= 0.0) and np.all(x <= 1.0)
    assert np.all(x.sum(axis=2) <= 1.0 + 1e-12)  # one gang per job and round
    used = np.einsum("i,itk->tk", m.gang_sizes.astype(float), x)
    assert np.all(used <= m.supply * (1 + 1e-12))
    assert np.all(x[m.gang_sizes[:, None, None] > m.supply[None, :, :]] == 0.0)
    utilities = m.progress + (m.valuations * x).sum(axis=(1, 2))
    np.testing.assert_allclose(solution.utilities, utilities, rtol=1e-12, atol=0.0)
    assert np.all(utilities <= m.ceilings * (1 + 1e-12))


@FAST
@given(typed_markets)
def test_the_certificate_holds_and_converges(m: Market) -> None:
    solution = m.solve(tol=TOL)
    assert solution.converged, (solution.status, solution.gap)
    assert solution.gap <= TOL
    assert solution.objective <= solution.dual_bound
    total = m.budgets[(m.budgets > 0) & (solution.utilities > 0)].sum()
    rounding = 1e-12 * max(1.0, abs(solution.objective))
    assert np.isclose(solution.dual_bound - solution.objective, solution.gap * total, atol=rounding)


@FAST
@given(typed_markets)
def test_unsold_value_and_regrets_add_up_to_the_gap(m: Market) -> None:
    """Weak duality term by term, the dual computed here (each job's best response along its
    rounds' hulls, in numpy): dual bound - objective = sum p (unsold GPUs) + sum of regrets,
    every term nonnegative. So the Rust certificate's dual is the program's."""
    solution = m.solve(tol=TOL)
    prices, x = solution.prices, solution.shares
    used = np.einsum("i,itk->tk", m.gang_sizes.astype(float), x)
    unsold = prices * (m.supply - used)
    fits = m.gang_sizes[:, None, None] <= m.supply[None, :, :]
    regrets = []
    for i in np.flatnonzero((solution.utilities > 0) & (m.budgets > 0)):
        buyable = (m.valuations[i] > 0) & fits[i]
        best, _ = _best_response(
            m.valuations[i], int(m.gang_sizes[i]), prices, m.progress[i], m.ceilings[i],
            m.budgets[i], buyable,
        )  # fmt: skip
        plan = m.budgets[i] * math.log(solution.utilities[i])
        regrets.append(best - plan + m.gang_sizes[i] * float((prices * x[i]).sum()))
    scale = 1e-9 * max(1.0, abs(solution.objective))
    assert np.all(unsold >= -scale)
    assert np.all(np.array(regrets) >= -scale)
    total = float(unsold.sum() + np.sum(regrets))
    np.testing.assert_allclose(total, solution.dual_bound - solution.objective, atol=scale)


@FAST
@given(typed_markets)
def test_budget_identity_and_bids(m: Market) -> None:
    """A job below its ceiling bids w (u - c) / u in all; every bid pays at least the job's GPUs
    of the good, within what the certificate pins down (a job's regret is at most the gap times
    the total budget: the smallest budgets' plans are the loosest)."""
    solution = m.solve(tol=TOL)
    jobs = (solution.utilities < m.ceilings * (1 - 1e-6)) & (solution.utilities > 0)
    u, c, w = solution.utilities[jobs], m.progress[jobs], m.budgets[jobs]
    np.testing.assert_allclose(
        solution.bids[jobs].sum(axis=(1, 2)), w * (u - c) / u, rtol=1e-9,
        atol=1e-12 * w.max(initial=0),
    )  # fmt: skip
    pay = m.gang_sizes[:, None, None] * solution.prices[None] * solution.shares
    held = solution.shares > 1e-3
    slack = solution.gap * m.budgets[m.budgets > 0].sum()
    assert np.all(solution.bids[held] >= pay[held] * (1 - 1e-3) - slack)


@FAST
@given(typed_markets, st.integers(-200, 200))
def test_scaling_all_budgets_moves_nothing(m: Market, power: int) -> None:
    """(Prices need not be unique with types: in a round where every buyer pays rent for its
    whole gang, raising the round's prices together only lowers the rents.)"""
    scale = 10.0**power
    one, two = m.solve(tol=1e-9), replace(m, budgets=m.budgets * scale).solve(tol=1e-9)
    assert_same_utilities(m, one.utilities, two.utilities, max(one.gap, two.gap, 1e-9))
    assert abs(two.gap - one.gap) <= 1e-6


@FAST
@given(typed_markets, st.randoms(use_true_random=False))
def test_permuting_the_types_permutes_the_equilibrium(m: Market, rng: object) -> None:
    order = list(range(m.types))
    rng.shuffle(order)  # type: ignore[attr-defined]
    permuted = replace(m, valuations=m.valuations[:, :, order], supply=m.supply[:, order])
    one, two = m.solve(tol=1e-9), permuted.solve(tol=1e-9)
    assert_same_utilities(m, one.utilities, two.utilities, max(one.gap, two.gap, 1e-9))
    total = m.budgets[m.budgets > 0].sum()
    assert abs(one.objective - two.objective) <= 2 * max(one.gap, two.gap, 1e-9) * total


def assert_same_utilities(m: Market, first: np.ndarray, second: np.ndarray, gap: float) -> None:
    """Utilities of two solutions certified within ``gap`` agree as far as the certificate pins
    them (|log u_i - log u*_i| <~ sqrt(2 gap / s_i), s_i job i's share of the budget)."""
    positive = (first > 0) & (m.budgets > 0)
    np.testing.assert_array_equal(first > 0, second > 0)
    share = m.budgets[positive] / m.budgets[positive].sum()
    allowed = 2 * np.sqrt(2 * gap / share) + 1e-6
    assert np.all(np.abs(np.log(first[positive]) - np.log(second[positive])) <= allowed)


@pytest.mark.parametrize(("jobs", "seed"), [(40, 1), (120, 2)])
def test_types_nobody_can_use_give_the_one_type_equilibrium(jobs: int, seed: int) -> None:
    """The one-type market, and the same jobs with two more types: one nobody values, one too
    small for every gang. Same equilibrium (to the certificate)."""
    one = random_market(jobs, 10, seed)
    valuations = np.stack([one.valuations, np.zeros_like(one.valuations), one.valuations], axis=2)
    supply = np.stack([one.supply, one.supply, np.full_like(one.supply, 0.5)], axis=1)
    typed = replace(one, valuations=valuations, supply=supply)
    a, b = one.solve(tol=1e-9), typed.solve(tol=1e-9)
    assert a.converged and b.converged
    np.testing.assert_allclose(b.utilities, a.utilities, rtol=1e-5)
    assert np.all(b.shares[:, :, 1:] == 0.0)
    np.testing.assert_allclose(b.prices[:, 0], a.prices, rtol=1e-3, atol=1e-9)


def test_one_type_as_n_t_1_is_the_same_solve() -> None:
    m = random_market(80, 12, 5)
    flat = m.solve()
    typed = market.solve(
        m.valuations[:, :, None], m.gang_sizes, m.supply[:, None], budgets=m.budgets,
        progress=m.progress, ceilings=m.ceilings,
    )  # fmt: skip
    assert typed.shares.shape == (80, 12, 1) and typed.prices.shape == (12, 1)
    np.testing.assert_array_equal(typed.shares[:, :, 0], flat.shares)
    np.testing.assert_array_equal(typed.bids[:, :, 0], flat.bids)
    np.testing.assert_array_equal(typed.prices[:, 0], flat.prices)
    assert (typed.objective, typed.gap, typed.iterations) == (
        flat.objective,
        flat.gap,
        flat.iterations,
    )


@pytest.mark.parametrize("supply", [12.0, [12.0, 6.0, 4.0], "per round and type"])
def test_supply_a_scalar_per_type_or_per_round_and_type(supply: object) -> None:
    m = random_typed_market(30, 5, 3, 3)
    if supply == "per round and type":
        supply = np.tile([12.0, 6.0, 4.0], (5, 1))
    s = market.solve(m.valuations, m.gang_sizes, supply, progress=m.progress, ceilings=m.ceilings)
    full = np.full((5, 3), 12.0) if isinstance(supply, float) else np.tile([12.0, 6.0, 4.0], (5, 1))
    reference = market.solve(
        m.valuations, m.gang_sizes, full, progress=m.progress, ceilings=m.ceilings
    )
    assert s.converged
    np.testing.assert_array_equal(s.shares, reference.shares)


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"supply": np.ones(5)}, "supply"),  # (T,) with (N, T, K) valuations
        ({"supply": np.ones((5, 2))}, "supply"),
        ({"supply": np.ones((4, 3))}, "supply"),
        ({"valuations": np.ones((3, 5, 3, 1))}, "valuations"),
        ({"valuations": np.ones((3, 5, 9)) * 0.1, "supply": 8.0}, "valuations"),  # 9 > 8 types
        ({"valuations": np.ones((3, 5, 0)), "supply": 8.0}, "valuations"),
        ({"warm_start": np.ones((3, 5))}, "warm_start"),
        ({"warm_start": -np.ones((3, 5, 3))}, "warm_start"),
        ({"method": "proportional_response"}, "method"),
        ({"gang_sizes": [9, 1, 1]}, "gang_sizes"),
    ],
)
def test_inputs_with_types_are_checked_naming_the_argument(
    change: dict[str, object], argument: str
) -> None:
    call: dict[str, object] = {
        "valuations": np.full((3, 5, 3), 0.1),
        "gang_sizes": [1, 2, 1],
        "supply": [8.0, 4.0, 2.0],
    }
    call.update(change)
    with pytest.raises(InputError) as info:
        market.solve(**call)  # type: ignore[arg-type]
    assert info.value.argument == argument


@pytest.mark.parametrize("supply", [4.0, np.ones(1)])
def test_a_type_count_past_the_limit_is_refused_before_the_supply_is_spread(
    supply: object,
) -> None:
    # A zero-size array may claim 10**12 types; a scalar supply spread over them would ask for
    # terabytes before the core saw the count.
    empty = np.zeros((0, 5, 10**12))
    with pytest.raises(InputError) as info:
        market.solve(empty, np.zeros(0, dtype=np.int64), supply)  # type: ignore[arg-type]
    assert info.value.argument == "valuations"
    with pytest.raises(InputError) as info:
        market.round_schedule(empty, np.zeros(0, dtype=np.int64), supply)  # type: ignore[arg-type]
    assert info.value.argument == "shares"


def test_warm_start_bids_shift_align_and_rescale_with_types() -> None:
    m = random_typed_market(40, 8, 3, 4)
    plan = m.solve()
    shifted = market.shift_bids(plan.bids, 2)
    assert shifted.shape == plan.bids.shape
    np.testing.assert_array_equal(shifted[:, :6], plan.bids[:, 2:])
    np.testing.assert_array_equal(shifted[:, 7], plan.bids[:, 7])
    np.testing.assert_array_equal(plan.shifted_bids(2), shifted)
    ids = np.arange(40)
    current = np.concatenate([ids[5:], [100, 101]])
    warm = market.warm_start_bids(
        plan, previous_jobs=ids, current_jobs=current, previous_budgets=m.budgets,
        budgets=np.concatenate([m.budgets[5:] * 2.0, [1.0, 1.0]]), smoothing=0.1,
    )  # fmt: skip
    assert warm.shape == (37, 8, 3)
    assert np.all(warm[-2:] == 0.0)
    expected = market.shift_bids(plan.bids, 1)[5:] * 2.0
    expected = 0.9 * expected + 0.1 * expected.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(warm[:-2], expected, rtol=1e-12)
    following = replace(
        m, valuations=np.concatenate([m.valuations[5:], m.valuations[:2]]),
        gang_sizes=np.concatenate([m.gang_sizes[5:], m.gang_sizes[:2]]),
        budgets=np.concatenate([m.budgets[5:] * 2.0, [1.0, 1.0]]),
        progress=np.concatenate([m.progress[5:], [0.0, 0.0]]),
        ceilings=np.concatenate([m.ceilings[5:], [1.0, 1.0]]),
    )  # fmt: skip
    solution = following.solve(warm_start=warm)
    assert solution.converged


def test_solutions_with_types_pickle() -> None:
    import pickle

    plan = random_typed_market(20, 4, 2, 6).solve()
    back = pickle.loads(pickle.dumps(plan))
    assert back.types == 2 and back.shares.shape == (20, 4, 2)
    np.testing.assert_array_equal(back.shares, plan.shares)
    np.testing.assert_array_equal(back.prices, plan.prices)
    assert repr(back) == repr(plan)
    with pytest.raises(InputError) as info:
        market.MarketSolution(
            shares=plan.shares, prices=plan.prices[:, 0], utilities=plan.utilities,
            bids=plan.bids, objective=0.0, dual_bound=0.0, gap=0.0, iterations=0,
            pr_iterations=0, ipm_iterations=0, converged=False,
            status=market.SolverStatus.STALLED,
        )  # fmt: skip
    assert info.value.argument == "prices"
