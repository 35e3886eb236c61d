"""shockwave.testing: the independent equilibrium check and the market strategies.

The check must pass what the solver certifies (it shares no code with it), and must catch each
invariant broken on purpose."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from shockwave import InputError, market
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.testing import Market, check_equilibrium, random_market, random_typed_market
from shockwave.testing.strategies import (
    DEGENERATE,
    degenerate_markets,
    markets,
    policy_markets,
    workloads,
)

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def solved(m: Market) -> market.MarketSolution:
    """Solved tight; the certified gap (whatever the status) is what the check is held to."""
    return m.solve(tol=1e-9, max_iter=100_000)


def passes(m: Market, solution: market.MarketSolution, *, factor: float = 10.0) -> None:
    """The check passes at its default tolerance, or at ``factor`` times the solver's certified
    gap when that is larger: reading its own prices off the shares, and starting from the
    solver's (its bound is its own either way)."""
    assert np.isfinite(solution.gap)
    tol = max(1e-6, factor * solution.gap)
    assert m.check(solution.shares, tol=tol) == []
    assert m.check(solution.shares, tol=max(1e-6, 10 * solution.gap), prices=solution.prices) == []


@FAST
@given(markets())
def test_certified_solutions_of_random_markets_pass(m: Market) -> None:
    passes(m, solved(m))


@FAST
@given(policy_markets(max_jobs=40))
def test_certified_solutions_of_policy_markets_pass(m: Market) -> None:
    passes(m, solved(m))


@pytest.mark.parametrize("name", sorted(DEGENERATE))
def test_certified_solutions_of_the_degenerate_markets_pass(name: str) -> None:
    m = DEGENERATE[name]()
    # Budgets spanning 3^12 (a gap of 7e-7, numerical trouble): the prices read off the shares
    # alone give a bound some twenty times the solver's.
    passes(m, solved(m), factor=100.0 if name == "budgets spanning 3^12" else 10.0)


@settings(max_examples=10, deadline=None)
@given(degenerate_markets())
def test_the_degenerate_strategy_draws_one_type_by_default(m: Market) -> None:
    assert m.valuations.shape == (m.jobs, m.rounds)
    assert m.supply.shape == (m.rounds,)


@settings(max_examples=30, deadline=None)
@given(degenerate_markets(max_types=2))
def test_the_degenerate_strategy_draws_gpu_types_up_to_max_types(m: Market) -> None:
    assert m.valuations.shape in ((m.jobs, m.rounds), (m.jobs, m.rounds, m.types))
    assert m.types <= 2
    assert m.supply.shape == m.valuations.shape[1:]


def test_every_degenerate_case_can_be_drawn() -> None:
    drawn: set[tuple[int, ...]] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(degenerate_markets(max_types=8))
    def draw(m: Market) -> None:
        drawn.add(m.valuations.shape)

    draw()
    assert drawn == {DEGENERATE[name]().valuations.shape for name in DEGENERATE}


def test_each_broken_invariant_is_named() -> None:
    m = random_market(60, 10, 3)
    x = solved(m).shares

    def named(shares: np.ndarray, **changes: object) -> set[str]:
        problem = replace(m, **changes) if changes else m
        return {line.split(":")[0] for line in problem.check(shares)}

    assert named(x) == set()
    assert named(np.where(x > 0.5, 1.2, x)) >= {"feasibility"}
    oversold = x.copy()
    oversold[:, 0] = np.minimum(1.0, 2 * oversold[:, 0] + 0.1)
    assert "supply" in named(oversold)
    assert "ceilings" in named(x, ceilings=np.full(m.jobs, 0.5) + m.progress * 0.5)
    idle = x.copy()
    idle[np.argmax(x[:, 0])] = 0.0  # a buyer walks away: GPUs unsold, and it regrets it
    assert {"optimality", "market clearing"} <= named(idle)

    # Feasible and sold out, but split unevenly between two equal jobs: optimality alone.
    two = {"valuations": [[0.1], [0.1]], "gang_sizes": [1, 1], "supply": 1.0}
    assert check_equilibrium(**two, shares=[[0.5], [0.5]], progress=0.1) == []
    uneven = check_equilibrium(**two, shares=[[0.8], [0.2]], progress=0.1)
    assert [line.split(":")[0] for line in uneven] == ["optimality"]


def test_a_loose_solve_fails_a_tight_check_and_passes_a_loose_one() -> None:
    m = random_market(100, 20, 1)
    loose = m.solve(tol=1e-2)
    assert loose.gap > 1e-3
    assert any(line.startswith("optimality") for line in m.check(loose.shares, tol=1e-6))
    assert m.check(loose.shares, tol=10 * loose.gap) == []


def test_a_gang_in_a_round_it_does_not_fit_is_infeasible() -> None:
    violations = check_equilibrium([[0.1, 0.1]], [4], [4, 2], [[0.5, 0.5]])
    assert len(violations) == 1 and violations[0].startswith("feasibility: job 0")


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"shares": np.zeros((2, 2))}, "shares"),
        ({"shares": [[np.nan, 0.0, 0.0]]}, "shares"),
        ({"tol": 0.0}, "tol"),
        ({"budgets": [-1.0]}, "budgets"),
        ({"gang_sizes": [0]}, "gang_sizes"),
        ({"supply": [1.0, 1.0]}, "supply"),
    ],
)
def test_bad_inputs_name_the_argument(arguments: dict[str, object], argument: str) -> None:
    call: dict[str, object] = {
        "valuations": [[0.1, 0.2, 0.3]],
        "gang_sizes": [1],
        "supply": 1.0,
        "shares": [[1.0, 1.0, 1.0]],
    }
    call.update(arguments)
    with pytest.raises(InputError) as info:
        check_equilibrium(**call)  # type: ignore[arg-type]
    assert info.value.argument == argument


@settings(max_examples=10, deadline=None)
@given(workloads(max_jobs=6, max_gang=2))
def test_drawn_workloads_simulate_to_completion(workload: object) -> None:
    result = simulate(workload, "shockwave", SimulationConfig(gpus=2))  # type: ignore[arg-type]
    assert np.all(np.isfinite(result.to_dict()["jct"]))


# --- GPU types ---------------------------------------------------------------------------------


@FAST
@given(markets(max_jobs=20, max_rounds=6, min_types=2, max_types=5))
def test_certified_solutions_of_random_markets_with_types_pass(m: Market) -> None:
    assert m.valuations.ndim == 3
    passes(m, solved(m))


@FAST
@given(policy_markets(max_jobs=40, rounds=10, types=3))
def test_certified_solutions_of_policy_markets_with_types_pass(m: Market) -> None:
    passes(m, solved(m))


def test_each_broken_invariant_with_types_is_named() -> None:
    m = random_typed_market(60, 10, 3, 3)
    x = solved(m).shares

    def named(shares: np.ndarray) -> set[str]:
        return {line.split(":")[0] for line in m.check(shares)}

    assert named(x) == set()
    two = x.copy()
    two[:, :, :] = np.where(x.sum(axis=2, keepdims=True) > 0.9, 0.6, x)  # 1.8 gangs a round
    assert "feasibility" in named(two)
    moved = x.copy()
    moved[:, 0, 0] += moved[:, 0, 1]  # type 1's round-0 gangs onto type 0
    moved[:, 0, 1] = 0.0
    assert "supply" in named(np.minimum(moved, 1.0))
    swapped = x[:, :, [1, 0, 2]]  # every job on the other type: feasible supplies aside, wrong
    assert named(swapped) != set()
    idle = x.copy()
    idle[np.argmax(x[:, 0, 0]), 0, 0] = 0.0
    assert {"optimality", "market clearing"} <= named(idle)


def test_the_best_response_with_types_matches_a_convex_solve() -> None:
    """The check's best response (hull walk) against cvxpy + Clarabel on the same job's problem:
    max w log(c + a.x) - n p.x, x >= 0, one gang per round, c + a.x <= ubar."""
    import cvxpy as cp

    from shockwave.testing.equilibrium import _best_response

    rng = np.random.default_rng(5)
    for case in range(40):
        rounds, types = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        a = rng.uniform(0.0, 0.3, (rounds, types)) * (rng.random((rounds, types)) < 0.8)
        prices = rng.uniform(0.0, 2.0, (rounds, types)) * (rng.random((rounds, types)) < 0.85)
        buyable = a > 0
        n, w = int(rng.integers(1, 4)), float(rng.uniform(0.2, 3.0))
        c = float(rng.uniform(0.0, 0.5)) if case % 2 else 0.0
        ceiling = c + float(rng.uniform(0.05, 1.0)) if case % 3 else np.inf
        if c == 0.0 and not buyable.any():
            continue  # log 0 whatever the plan
        value, shares = _best_response(a, n, prices, c, ceiling, w, buyable)
        x = cp.Variable((rounds, types), nonneg=True)
        u = c + cp.sum(cp.multiply(a, x))
        constraints = [cp.sum(x, axis=1) <= 1]
        if (~buyable).any():
            constraints.append(x[~buyable] == 0)
        if np.isfinite(ceiling):
            constraints.append(u <= ceiling)
        paid = n * cp.sum(cp.multiply(prices, x))
        problem = cp.Problem(cp.Maximize(w * cp.log(u) - paid), constraints)
        problem.solve(solver=cp.CLARABEL)
        assert problem.status in ("optimal", "optimal_inaccurate")
        assert value == pytest.approx(problem.value, rel=1e-6, abs=1e-7)
        # the shares attain it and are feasible
        assert np.all(shares >= 0) and np.all(shares.sum(axis=1) <= 1 + 1e-12)
        attained = w * np.log(c + (a * shares).sum()) - n * (prices * shares).sum()
        assert attained == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"shares": np.ones((1, 3))}, "shares"),
        ({"supply": [1.0, 1.0, 1.0]}, "supply"),
        ({"prices": [0.1, 0.1, 0.1]}, "prices"),
        ({"valuations": np.ones((1, 3, 2, 1))}, "valuations"),
    ],
)
def test_bad_inputs_with_types_name_the_argument(
    arguments: dict[str, object], argument: str
) -> None:
    call: dict[str, object] = {
        "valuations": np.full((1, 3, 2), 0.1),
        "gang_sizes": [1],
        "supply": [1.0, 2.0],
        "shares": np.full((1, 3, 2), 0.5),
    }
    call.update(arguments)
    with pytest.raises(InputError) as info:
        check_equilibrium(**call)  # type: ignore[arg-type]
    assert info.value.argument == argument
