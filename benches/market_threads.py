"""Issue 24's market measurements, all ratios from one run (``benches/README.md``).

    python benches/market_threads.py [--repeats 7] [--no-clarabel]

Prints, for cold solves to ``1e-6`` of the benchmark recipe's markets
(:func:`shockwave.testing.markets.random_market`, T = 20): the median wall time at N = 500
against Clarabel's own solve time of the same program (cvxpy, ``accuracy=1e-6``); N = 10,000
against N = 1,000; one thread against two; K = 3 GPU types at N = 1,000 and 4,000, on one
thread and two; and K = 3 at N = 500 against Clarabel (issue 23's target; three markets, as
Clarabel needs other settings on some of them: ``oracle_solve``). Solves of different settings
are interleaved, so that the machine's load falls on all of them alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from shockwave.bench.markets import oracle_solve
from shockwave.testing.markets import Market, random_market, random_typed_market


def medians(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each case, the cases interleaved repeat by repeat."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, solve in cases.items():
            start = time.perf_counter()
            solve()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def solver(m: Market, threads: int) -> Callable[[], object]:
    def solve() -> object:
        return m.solve(tol=1e-6, threads=threads)

    return solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-clarabel", action="store_true")
    args = parser.parse_args()
    markets = {jobs: random_market(jobs, 20, seed=1) for jobs in (500, 1000, 10_000)}
    typed = {jobs: random_typed_market(jobs, 20, 3, seed=1) for jobs in (1000, 4000)}
    small_typed = {seed: random_typed_market(500, 20, 3, seed=seed) for seed in (1, 2, 3)}
    cases = {
        f"N={jobs} threads={threads}": solver(m, threads)
        for jobs, m in markets.items()
        for threads in (1, 2)
    }
    for jobs, m in typed.items():
        for threads in (1, 2):
            cases[f"K=3 N={jobs} threads={threads}"] = solver(m, threads)
    if not args.no_clarabel:
        for seed, m in small_typed.items():
            for threads in (1, 2):
                cases[f"K=3 N=500 seed={seed} threads={threads}"] = solver(m, threads)
    times = medians(cases, args.repeats)
    for name, seconds in times.items():
        print(f"{name:<22} {1e3 * seconds:9.2f} ms")
    for threads in (1, 2):
        ratio = times[f"N=10000 threads={threads}"] / times[f"N=1000 threads={threads}"]
        print(f"N=10000 / N=1000, {threads} thread(s): {ratio:.2f}x (target: at most 12x)")
    for jobs in markets:
        speedup = times[f"N={jobs} threads=1"] / times[f"N={jobs} threads=2"]
        print(f"N={jobs}: 1 thread / 2 threads: {speedup:.2f}x")
    for jobs in typed:
        speedup = times[f"K=3 N={jobs} threads=1"] / times[f"K=3 N={jobs} threads=2"]
        print(f"K=3 N={jobs}: 1 thread / 2 threads: {speedup:.2f}x")
    ratio = times["K=3 N=1000 threads=1"] / times["N=1000 threads=1"]
    print(f"K=3 / K=1 at N=1000 (1 thread): {ratio:.2f}x")
    if not args.no_clarabel:
        oracle = oracle_solve(markets[500], accuracy=1e-6)
        for threads in (1, 2):
            ours = times[f"N=500 threads={threads}"]
            print(
                f"Clarabel at N=500: {1e3 * oracle.solve_seconds:.0f} ms solve "
                f"({oracle.solve_seconds / ours:.0f}x ours with {threads} thread(s)), "
                f"{1e3 * oracle.total_seconds:.0f} ms with cvxpy's compilation "
                f"({oracle.total_seconds / ours:.0f}x)"
            )
        for seed, m in small_typed.items():
            try:
                oracle = oracle_solve(m, accuracy=1e-6)
            except RuntimeError as error:
                print(f"Clarabel at K=3 N=500 seed {seed}: {error}")
                continue
            ratios = ", ".join(
                f"{oracle.solve_seconds / times[f'K=3 N=500 seed={seed} threads={threads}']:.0f}x "
                f"ours with {threads} thread(s)"
                for threads in (1, 2)
            )
            print(
                f"Clarabel at K=3 N=500 seed {seed} ({oracle.attempt}): "
                f"{1e3 * oracle.solve_seconds:.0f} ms solve ({ratios}; target: at least 50x)"
            )


if __name__ == "__main__":
    main()
