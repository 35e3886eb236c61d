"""Equilibrium invariants of the market solution, as hypothesis properties.

Markets are drawn small (so the solves are fast) but with every feature: gangs of 1 to 8 GPUs,
supply that varies by round (sometimes too small for the largest gangs), jobs with nothing to
gain, progress, ceilings, and budgets from 1 to 3^12.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shockwave.testing import Market
from shockwave.testing.strategies import markets

TOL = 1e-7
# Markets with equal budgets are well conditioned: solved tighter, checked tighter.
FAIR_TOL = 1e-10
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def gains(market: Market, shares: np.ndarray) -> np.ndarray:
    return np.asarray((market.valuations * shares).sum(axis=1))


def assert_same_utilities(
    market: Market, first: np.ndarray, second: np.ndarray, gap: float
) -> None:
    """Two solutions certified within ``gap`` have utilities that agree as far as the
    certificate determines them: Eisenberg-Gale is strongly concave in log u, so
    sum_i w_i (log u_i - log u*_i)^2 <~ 2 gap W, i.e. a job with budget share s_i is pinned to
    |log u_i - log u*_i| <~ sqrt(2 gap / s_i) (plus solver noise)."""
    positive = (first > 0) & (market.budgets > 0)
    np.testing.assert_array_equal(first > 0, second > 0)
    share = market.budgets[positive] / market.budgets[positive].sum()
    allowed = 2 * np.sqrt(2 * gap / share) + 1e-6
    assert np.all(np.abs(np.log(first[positive]) - np.log(second[positive])) <= allowed)


@FAST
@given(markets())
def test_the_plan_is_feasible(market: Market) -> None:
    solution = market.solve(tol=TOL)
    x = solution.shares
    assert np.all(x >= 0.0)
    assert np.all(x <= 1.0)
    used = market.gang_sizes @ x
    assert np.all(used <= market.supply * (1 + 1e-12))
    assert np.all(x[market.gang_sizes[:, None] > market.supply[None, :]] == 0.0)
    utilities = market.progress + gains(market, x)
    np.testing.assert_allclose(solution.utilities, utilities, rtol=1e-12, atol=0.0)
    assert np.all(utilities <= market.ceilings * (1 + 1e-12))


@FAST
@given(markets())
def test_the_certificate_holds_and_converges(market: Market) -> None:
    solution = market.solve(tol=TOL)
    assert solution.converged
    assert solution.gap <= TOL
    assert solution.objective <= solution.dual_bound
    total = market.budgets[(market.budgets > 0) & (solution.utilities > 0)].sum()
    rounding = 1e-12 * max(1.0, abs(solution.objective))
    assert np.isclose(solution.dual_bound - solution.objective, solution.gap * total, atol=rounding)


@FAST
@given(markets())
def test_unsold_value_and_regrets_add_up_to_the_gap(market: Market) -> None:
    """Weak duality term by term: dual bound - objective = sum_t p_t (unsold GPUs of t) +
    sum_i (job i's best response at the prices - what its plan gives it at those prices), every
    term nonnegative. So the certified gap bounds the money left on the table (market clearing)
    and every job's regret (optimal bundles), weighted by budget."""
    solution = market.solve(tol=TOL)
    prices, x = solution.prices, solution.shares
    unsold = prices * (market.supply - market.gang_sizes @ x)
    regrets = []
    for i in np.flatnonzero((solution.utilities > 0) & (market.budgets > 0)):
        best = best_response_value(market, i, prices)
        plan = market.budgets[i] * np.log(solution.utilities[i])
        regrets.append(best - plan + market.gang_sizes[i] * (prices @ x[i]))
    scale = 1e-10 * max(1.0, abs(solution.objective))
    assert np.all(unsold >= -scale)
    assert np.all(np.array(regrets) >= -scale)
    total = float(unsold.sum() + np.sum(regrets))
    np.testing.assert_allclose(total, solution.dual_bound - solution.objective, atol=scale)


def best_response_value(market: Market, job: int, prices: np.ndarray) -> float:
    """max w log u - n p.x over the job's own plans (0 <= x <= 1, x = 0 where the gang does not
    fit, u = c + a.x <= ceiling): rounds bought in decreasing order of bang per buck until the
    marginal value w / u falls to the price of utility. Independent of the Rust certificate."""
    budget, gang = market.budgets[job], int(market.gang_sizes[job])
    valuations, ceiling = market.valuations[job], market.ceilings[job]
    fits = (valuations > 0) & (gang <= market.supply)
    u = min(market.progress[job] + valuations[fits & (prices <= 0)].sum(), ceiling)
    spend = 0.0
    priced = np.flatnonzero(fits & (prices > 0))
    ratio = valuations[priced] / (gang * prices[priced])
    for k in np.argsort(-ratio, kind="stable"):
        if u >= ceiling or budget * ratio[k] <= u:
            break
        reach = min(u + valuations[priced[k]], ceiling)
        target = min(budget * ratio[k], reach)
        spend += (target - u) / ratio[k]
        u = target
        if target < reach:
            break
    return float(budget * np.log(u) - spend)


@FAST
@given(markets())
def test_budget_identity_and_bids(market: Market) -> None:
    """A job below its ceiling bids w_i (u_i - c_i) / u_i in all (what the bids pay beyond the
    prices, the cap rents, is checked with equal budgets below)."""
    solution = market.solve(tol=TOL)
    jobs = (solution.utilities < market.ceilings * (1 - 1e-6)) & (solution.utilities > 0)
    u, c, w = solution.utilities[jobs], market.progress[jobs], market.budgets[jobs]
    np.testing.assert_allclose(
        solution.bids[jobs].sum(axis=1), w * (u - c) / u, rtol=1e-9, atol=1e-12 * w.max(initial=0)
    )


@st.composite
def fair_markets(draw: st.DrawFn) -> Market:
    """Equal budgets, equal (unit) gangs, no ceilings, no progress: where envy-freeness and the
    sharing incentive hold exactly."""
    jobs = draw(st.integers(2, 20))
    rounds = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    supply = rng.integers(1, max(2, jobs // 3) + 1, rounds).astype(float)
    return Market(
        valuations=rng.uniform(0.01, 0.1, (jobs, rounds)),
        gang_sizes=np.ones(jobs, dtype=np.int64),
        supply=supply,
        budgets=np.ones(jobs),
        progress=np.zeros(jobs),
        ceilings=np.full(jobs, np.inf),
    )


@FAST
@given(fair_markets())
def test_with_equal_budgets_each_job_buys_only_its_best_bang_per_buck(market: Market) -> None:
    """Job i holds round t only if w a_it / (n u_i) >= p_t, and all of it if that is larger; its
    bid pays at least the price of what it holds, exactly on a round it holds in part; a round
    with a positive price is sold out. (With equal budgets the gap bounds every job's conditions
    alike; a violation times the share involved is at most about the gap.)"""
    solution = market.solve(tol=FAIR_TOL)
    value = market.valuations / solution.utilities[:, None]  # w = n = 1
    prices = np.broadcast_to(solution.prices, value.shape)
    scale = 1e-4 * solution.prices.max()
    x = solution.shares
    assert np.all(value[x > 1e-4] >= prices[x > 1e-4] - scale)
    assert np.all(value[x < 1 - 1e-4] <= prices[x < 1 - 1e-4] + scale)
    cost = solution.prices * x
    assert np.all(solution.bids[x > 1e-4] >= cost[x > 1e-4] * (1 - 1e-4))
    partial = (x > 1e-4) & (x < 1 - 1e-4)
    np.testing.assert_allclose(solution.bids[partial], cost[partial], rtol=1e-4)
    priced = solution.prices > scale
    # Unsold GPUs times their price are bounded by the gap (the regret test).
    unsold = market.supply[priced] - x.sum(axis=0)[priced]
    bound = solution.dual_bound - solution.objective + 1e-12
    assert np.all(unsold * solution.prices[priced] <= bound)


@FAST
@given(fair_markets())
def test_envy_free_when_no_job_holds_a_whole_round(market: Market) -> None:
    """With a job holding a whole round, the cap x <= 1 can create envy (a rent the job pays
    for the cap); without, no job prefers another's plan."""
    solution = market.solve(tol=FAIR_TOL)
    assume(solution.shares.max() < 0.999)  # a share this close to 1 may be capped at the optimum
    own = gains(market, solution.shares)
    others = market.valuations @ solution.shares.T  # [i, j]: job i's value for j's plan
    assert np.all(others <= own[:, None] * (1 + 1e-6))


@FAST
@given(fair_markets())
def test_sharing_incentive_when_no_job_holds_a_whole_round(market: Market) -> None:
    solution = market.solve(tol=FAIR_TOL)
    assume(solution.shares.max() < 0.999)
    equal_share = np.minimum(1.0, market.supply / market.jobs)
    floor = market.valuations @ equal_share * (1 - 1e-6)
    assert np.all(gains(market, solution.shares) >= floor)


@FAST
@given(markets())
def test_scaling_every_budget_scales_only_the_prices(market: Market) -> None:
    base = market.solve(tol=TOL)
    scaled = replace(market, budgets=market.budgets * 3.0**12).solve(tol=TOL)
    assert_same_utilities(market, scaled.utilities, base.utilities, TOL)
    scale = max(float(base.prices.max()), 1e-300)
    np.testing.assert_allclose(scaled.prices / 3.0**12, base.prices, rtol=1e-2, atol=1e-4 * scale)


@FAST
@given(markets(), st.floats(1e-3, 1e3))
def test_scaling_one_jobs_utility_changes_nothing_else(market: Market, factor: float) -> None:
    base = market.solve(tol=TOL)
    valuations, progress, ceilings = (
        market.valuations.copy(),
        market.progress.copy(),
        market.ceilings.copy(),
    )
    valuations[0] *= factor
    ceilings[0] *= factor
    progress[0] = min(progress[0] * factor, 0.99 * ceilings[0])
    assume(progress[0] < 1.0)
    assume(progress[0] == market.progress[0] * factor)
    scaled = replace(market, valuations=valuations, progress=progress, ceilings=ceilings).solve(
        tol=TOL
    )
    rescaled = scaled.utilities.copy()
    rescaled[0] /= factor
    assert_same_utilities(market, rescaled, base.utilities, TOL)


@FAST
@given(markets(), st.randoms(use_true_random=False))
def test_permuting_jobs_permutes_the_answer(market: Market, random: object) -> None:
    order = np.arange(market.jobs)
    random.shuffle(order)  # type: ignore[attr-defined]
    base = market.solve(tol=TOL)
    shuffled = replace(
        market,
        valuations=market.valuations[order],
        gang_sizes=market.gang_sizes[order],
        budgets=market.budgets[order],
        progress=market.progress[order],
        ceilings=market.ceilings[order],
    )
    assert_same_utilities(shuffled, shuffled.solve(tol=TOL).utilities, base.utilities[order], TOL)


@FAST
@given(markets(), st.integers(1, 8))
def test_more_supply_never_lowers_welfare(market: Market, extra: int) -> None:
    base = market.solve(tol=TOL)
    richer = replace(market, supply=market.supply + extra).solve(tol=TOL)
    total = market.budgets.sum()
    assert richer.objective >= base.objective - 2 * TOL * total


@settings(max_examples=10, deadline=None)
@given(markets())
def test_identical_inputs_give_identical_bits(market: Market) -> None:
    first, second = market.solve(), market.solve()
    for name in ("shares", "prices", "utilities", "bids"):
        assert np.array_equal(getattr(first, name), getattr(second, name))
    assert (first.objective, first.gap, first.iterations) == (
        second.objective,
        second.gap,
        second.iterations,
    )


@settings(max_examples=20, deadline=None)
@given(markets(max_jobs=12, max_rounds=5))
def test_proportional_response_satisfies_the_same_certificate(market: Market) -> None:
    solution = market.solve(tol=1e-5, method="proportional_response", max_iter=200_000)
    assert solution.converged
    reference = market.solve(tol=TOL)
    total = market.budgets[(market.budgets > 0) & (reference.utilities > 0)].sum()
    assert solution.objective >= reference.objective - 1e-5 * total - 1e-12
    assert solution.objective <= reference.dual_bound + 1e-12 * abs(reference.dual_bound)
