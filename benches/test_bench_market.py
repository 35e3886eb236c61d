"""Market solver through the Python API (pytest-benchmark).

    python -m pytest benches/test_bench_market.py --benchmark-enable

Instances: ``tests/market_reference.random_market`` (the policy's shape of market: nearly
interchangeable rounds, progress, ceilings, budgets 3^0..3^5, gangs of 1 to 8 GPUs). The table in
``benches/README.md`` (iterations, cold and warm, Clarabel ratios, GPU types against one type)
comes from ``benches/market_table.py``.
"""

from __future__ import annotations

from functools import cache

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from shockwave import market
from shockwave.market import MarketSolution
from shockwave.testing import Market, next_round_market, random_market, random_typed_market


@cache
def instance(jobs: int, rounds: int) -> Market:
    return random_market(jobs, rounds, seed=1)


@cache
def planned(jobs: int, rounds: int) -> MarketSolution:
    return instance(jobs, rounds).solve()


@pytest.mark.parametrize(("jobs", "rounds"), [(100, 20), (1000, 20), (10_000, 20), (1000, 60)])
def test_solve_cold(benchmark: BenchmarkFixture, jobs: int, rounds: int) -> None:
    m = instance(jobs, rounds)
    solution = benchmark(m.solve)
    assert solution.converged


@pytest.mark.parametrize(("jobs", "rounds", "types"), [(500, 20, 3), (1000, 20, 3)])
def test_solve_cold_with_gpu_types(
    benchmark: BenchmarkFixture, jobs: int, rounds: int, types: int
) -> None:
    """The same jobs on ``types`` GPU types (compare with ``test_solve_cold`` at the same N, T;
    ``benches/market_table.py --types-only`` times both in alternation, with their ratio)."""
    m = random_typed_market(jobs, rounds, types, seed=1)
    solution = benchmark(m.solve, tol=1e-6)
    assert solution.converged
    assert solution.shares.shape == (jobs, rounds, types)


@pytest.mark.parametrize(("jobs", "rounds"), [(1000, 20)])
def test_solve_next_round_warm(benchmark: BenchmarkFixture, jobs: int, rounds: int) -> None:
    plan = planned(jobs, rounds)
    following = next_round_market(instance(jobs, rounds), plan.shares[:, 0])
    warm = market.warm_start_bids(plan)
    solution = benchmark(following.solve, warm_start=warm)
    assert solution.converged


@pytest.mark.parametrize("tol", [1e-4, 1e-6])
def test_proportional_response(benchmark: BenchmarkFixture, tol: float) -> None:
    m = instance(1000, 20)
    solution = benchmark(m.solve, method="proportional_response", tol=tol)
    assert solution.converged


def test_round_schedule(benchmark: BenchmarkFixture) -> None:
    m, plan = instance(1000, 20), planned(1000, 20)
    order = plan.utilities.argsort()
    schedule = benchmark(
        market.round_schedule, plan.shares, m.gang_sizes, m.supply, backfill_order=order
    )
    assert (m.gang_sizes @ schedule <= m.supply).all()
