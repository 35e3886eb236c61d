"""The market solve gives the same bits on any number of threads (issue 24).

The interior-point passes, the proportional-response warm-up and the certificate split their work
over threads (at least 128 jobs per thread), with one GPU type or several; the sums over jobs keep
the single-threaded order, so shares, prices, gap and iteration counts are identical for 1, 2 and
7 threads.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from shockwave import market
from shockwave.errors import InputError
from shockwave.policies.shockwave import Shockwave
from shockwave.policies.shockwave.typed_policy import TypedShockwave


def random_market(jobs: int, rounds: int, types: int, seed: int) -> dict[str, Any]:
    """A market of the kind the policy builds: gangs of 1 to 8, budgets spanning 3^5."""
    rng = np.random.default_rng(seed)
    shape = (jobs, rounds) if types == 1 else (jobs, rounds, types)
    speed = rng.uniform(0.1, 1.1, (jobs,) + (1,) * (len(shape) - 1))
    valuations = rng.uniform(0.01, 0.2, shape) * speed
    valuations[rng.uniform(size=shape) < 0.1] = 0.0
    gangs = rng.choice([1, 2, 4, 8], size=jobs, p=[0.6, 0.2, 0.12, 0.08])
    return {
        "valuations": valuations,
        "gang_sizes": gangs,
        "supply": float(gangs.sum() // (3 * types)),
        "budgets": 3.0 ** rng.integers(0, 6, jobs),
        "progress": rng.uniform(0.0, 0.9, jobs),
    }


def bits(solution: market.MarketSolution) -> str:
    """Digest of what a caller sees: shares, prices, gap and the iteration counts."""
    h = hashlib.sha256()
    for array in (solution.shares, solution.prices):
        h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    h.update(float(solution.gap).hex().encode())
    h.update(f"{solution.iterations} {solution.pr_iterations} {solution.ipm_iterations}".encode())
    return h.hexdigest()


@pytest.mark.parametrize(
    ("jobs", "rounds", "types", "seed"),
    [
        (100, 20, 1, 1),
        (900, 20, 1, 2),
        (1900, 20, 1, 3),
        (1300, 9, 1, 4),
        (400, 20, 3, 5),
        (1000, 7, 4, 6),
    ],
)
def test_any_number_of_threads_gives_the_same_bits(
    jobs: int, rounds: int, types: int, seed: int
) -> None:
    m = random_market(jobs, rounds, types, seed)
    for tol in (1e-6, 1e-8):
        one = market.solve(**m, tol=tol, threads=1)
        assert one.ipm_iterations > 0
        warm = market.shift_bids(one.bids, 1)
        one_warm = market.solve(**m, tol=tol, threads=1, warm_start=warm)
        for threads in (2, 7, 0):
            assert bits(market.solve(**m, tol=tol, threads=threads)) == bits(one), threads
            again = market.solve(**m, tol=tol, threads=threads, warm_start=warm)
            assert bits(again) == bits(one_warm), threads


@pytest.mark.parametrize(("jobs", "seed"), [(300, 7), (1500, 8)])
def test_proportional_response_alone_gives_the_same_bits(jobs: int, seed: int) -> None:
    m = random_market(jobs, 20, 1, seed)
    m["ceilings"] = np.where(np.arange(jobs) % 3 == 0, m["progress"] + 0.05, np.inf)
    settings = {"method": "proportional_response", "tol": 1e-5, "max_iter": 60}
    one = market.solve(**m, **settings, threads=1)
    assert one.pr_iterations > 1
    warm = market.shift_bids(one.bids, 1)
    one_warm = market.solve(**m, **settings, threads=1, warm_start=warm)
    for threads in (2, 7, 0):
        assert bits(market.solve(**m, **settings, threads=threads)) == bits(one), threads
        again = market.solve(**m, **settings, threads=threads, warm_start=warm)
        assert bits(again) == bits(one_warm), threads


@pytest.mark.parametrize("threads", [-1, market.MAX_SOLVER_THREADS + 1, 1.5, "2", True])
def test_threads_are_checked(threads: object) -> None:
    m = random_market(10, 4, 1, 6)
    with pytest.raises(InputError) as error:
        market.solve(**m, threads=threads)  # type: ignore[arg-type]
    assert error.value.argument == "threads"


@pytest.mark.parametrize("policy", [Shockwave, TypedShockwave])
def test_the_policy_takes_the_thread_count(policy: type[Shockwave] | type[TypedShockwave]) -> None:
    assert policy(solver_threads=2).solver_threads == 2
    for threads in (-1, market.MAX_SOLVER_THREADS + 1, 0.5):
        with pytest.raises(InputError) as error:
            policy(solver_threads=threads)  # type: ignore[arg-type]
        assert error.value.argument == "solver_threads"
