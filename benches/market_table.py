"""Regenerate the market-solver table of ``benches/README.md``.

    python benches/market_table.py            # print the table
    python benches/market_table.py --write    # and replace it in benches/README.md

For each size (N jobs, T rounds) of ``tests/market_reference.random_market``:

* the interior-point method (default) and proportional response, to a relative gap of 1e-4 and
  1e-6: iterations and median wall time, cold and warm. "Warm" solves the next round's market
  (``next_round_market``: the first round ran, the window moved on) from the previous plan's
  bids (``warm_start_bids``); "cold" solves that same next-round market from scratch, so the
  two columns compare like with like;
* Clarabel through cvxpy on the same (first) market, asked for a relative gap of 1e-6: its own
  solve time and the total through cvxpy, each divided by our cold time to 1e-6 (the ratios).

Times are medians over repeats in one process, one thread; the machine and its load are printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # for tests.market_reference when run as a script

import numpy as np  # noqa: E402
from tests.market_reference import (  # noqa: E402
    Market,
    next_round_market,
    oracle_solve,
    random_market,
)

from shockwave import market  # noqa: E402
from shockwave.market import MarketSolution, Method  # noqa: E402

SIZES = [(100, 20), (500, 20), (1000, 20), (10_000, 20), (100, 60), (1000, 60), (10_000, 60)]
TOLERANCES = [1e-4, 1e-6]
START, END = "<!-- market-table:start -->", "<!-- market-table:end -->"


def timed(solve: Callable[[], MarketSolution], repeats: int) -> tuple[float, MarketSolution]:
    """Median wall time of ``repeats`` solves (seconds) and the last solution."""
    times, solution = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        solution = solve()
        times.append(time.perf_counter() - start)
    assert solution is not None
    return statistics.median(times), solution


def cell(seconds: float, solution: MarketSolution) -> str:
    mark = "" if solution.converged else " (not converged)"
    return f"{solution.iterations} / {seconds * 1e3:.1f}{mark}"


def rows(clarabel_limit: int) -> list[str]:
    lines = []
    for jobs, rounds in SIZES:
        first = random_market(jobs, rounds, seed=1)
        repeats = 3 if jobs >= 10_000 else 7
        methods: list[Method] = ["interior_point", "proportional_response"]
        cold_1e6 = float("nan")
        for method in methods:
            cells = []
            for tol in TOLERANCES:
                reps = 1 if method == "proportional_response" and jobs >= 10_000 else repeats

                def solve(m: Market = first, t: float = tol, k: Method = method) -> MarketSolution:
                    return m.solve(tol=t, method=k, max_iter=100_000)

                _, plan = timed(solve, 1)
                following = next_round_market(first, plan.shares[:, 0])
                warm_bids = market.warm_start_bids(plan)
                cold_s, cold = timed(
                    lambda f=following, t=tol, k=method: f.solve(tol=t, method=k, max_iter=100_000),
                    reps,
                )
                warm_s, warm = timed(
                    lambda f=following, t=tol, k=method, b=warm_bids: f.solve(
                        tol=t, method=k, max_iter=100_000, warm_start=b
                    ),
                    reps,
                )
                cells += [cell(cold_s, cold), cell(warm_s, warm)]
                if method == "interior_point" and tol == 1e-6:
                    cold_1e6, _ = timed(solve, reps)
            name = "interior point" if method == "interior_point" else "prop. response"
            clarabel = " |  |"
            if method == "interior_point":
                clarabel = clarabel_cells(first, cold_1e6, jobs <= clarabel_limit)
            row = " | ".join([f"{jobs:,}", str(rounds), name, *cells])
            lines.append(f"| {row} | {clarabel}")
    return lines


def clarabel_cells(first: Market, ours: float, run: bool) -> str:
    if not run:
        return "skipped (minutes) |  |"
    try:
        oracle = oracle_solve(first, accuracy=1e-6)
    except RuntimeError as error:
        return f"{str(error).split(':')[0]} |  |"
    return (
        f"{oracle.solve_seconds * 1e3:.0f} ms ({oracle.solve_seconds / ours:.0f}x) | "
        f"{oracle.total_seconds * 1e3:.0f} ms ({oracle.total_seconds / ours:.0f}x) |"
    )


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        "(1 / 5 / 15 min) when the table was made"
    )


def table(clarabel_limit: int) -> str:
    header = [
        START,
        "",
        f"Machine: {machine()}.",
        "",
        "Cells: iterations / median wall time in ms (proportional-response iterations plus",
        "interior-point iterations for the interior-point method). Clarabel: relative gap 1e-6,",
        "own solve time and total through cvxpy, with the ratio to our cold time to 1e-6.",
        "",
        "| N | T | method | 1e-4 cold | 1e-4 warm | 1e-6 cold | 1e-6 warm "
        "| Clarabel solve (ratio) | Clarabel + cvxpy (ratio) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join([*header, *rows(clarabel_limit), "", END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    parser.add_argument(
        "--clarabel-max-jobs",
        type=int,
        default=1000,
        help="skip Clarabel above this many jobs (default 1000: it takes minutes at 10,000)",
    )
    args = parser.parse_args()
    text = table(args.clarabel_max_jobs)
    print(text)
    if args.write:
        readme = Path(__file__).with_name("README.md")
        content = readme.read_text()
        before, _, rest = content.partition(START)
        _, _, after = rest.partition(END)
        readme.write_text(before + text + after)


if __name__ == "__main__":
    main()
