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
  solve time and the total through cvxpy, each divided by our cold time to 1e-6 (the ratios);
* the markets the Shockwave policy itself solves on the canonical trace
  (``tests.market_reference.policy_markets``), each solved cold and warm from the previous
  market's plan: the warm start from the shifted bids as they were, then with the budgets
  (``warm_start_bids(..., previous_budgets=, budgets=)``), then also smoothed (as the policy
  does): mean iterations, total time, and the share of warm starts certified
  by their first allocation (one iteration). ``--policy-only`` makes just this table.

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
    PolicyMarket,
    next_round_market,
    oracle_solve,
    policy_markets,
    random_market,
)

from shockwave import market  # noqa: E402
from shockwave.atomic import atomic_write_text  # noqa: E402
from shockwave.market import MarketSolution, Method  # noqa: E402
from shockwave.policies.shockwave.policy import WARM_START_SMOOTHING  # noqa: E402
from shockwave.traces import GeneratorParameters, generate_workload  # noqa: E402

SIZES = [(100, 20), (500, 20), (1000, 20), (10_000, 20), (100, 60), (1000, 60), (10_000, 60)]
TOLERANCES = [1e-4, 1e-6]
START, END = "<!-- market-table:start -->", "<!-- market-table:end -->"
POLICY_START, POLICY_END = "<!-- market-policy-warm:start -->", "<!-- market-policy-warm:end -->"


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


def policy_rows(label: str, markets: list[PolicyMarket]) -> list[str]:
    """Cold against warm (bids only, and budget-aware) on consecutive policy markets."""
    lines = []
    sizes = [step.market.jobs for step in markets]
    for tol in TOLERANCES:
        iterations: dict[str, list[int]] = {"cold": [], "bids": [], "budgets": [], "smooth": []}
        seconds = dict.fromkeys(iterations, 0.0)
        previous = None
        for step in markets:
            plan = step.market.solve(tol=tol)
            if previous is not None and step.elapsed_rounds > 0:
                before, before_plan = previous
                link = {
                    "previous_jobs": before.job_ids,
                    "current_jobs": step.job_ids,
                    "elapsed_rounds": step.elapsed_rounds,
                }
                budgets = {
                    "previous_budgets": before.market.budgets,
                    "budgets": step.market.budgets,
                }
                starts = {
                    "cold": None,
                    "bids": market.warm_start_bids(before_plan, **link),
                    "budgets": market.warm_start_bids(before_plan, **link, **budgets),
                    "smooth": market.warm_start_bids(
                        before_plan, **link, **budgets, smoothing=WARM_START_SMOOTHING
                    ),
                }
                for name, bids in starts.items():
                    start = time.perf_counter()
                    solution = step.market.solve(tol=tol, warm_start=bids)
                    seconds[name] += time.perf_counter() - start
                    if not solution.converged:
                        raise RuntimeError(f"{name} start did not converge (gap {solution.gap})")
                    iterations[name].append(solution.iterations)
            previous = (step, plan)
        cold = np.array(iterations["cold"])
        cells = [f"{cold.mean():.2f} / {seconds['cold'] * 1e3:.0f}"]
        for name in ("bids", "budgets", "smooth"):
            warm = np.array(iterations[name])
            cells.append(
                f"{warm.mean():.2f} / {seconds[name] * 1e3:.0f} "
                f"({cold.sum() / warm.sum():.2f}x; {np.mean(warm == 1):.0%} in one)"
            )
        where = f"{label} ({cold.size} markets, median {int(np.median(sizes))} jobs)"
        lines.append(f"| {where} | {tol:.0e} | " + " | ".join(cells) + " |")
    return lines


def policy_table() -> str:
    generated = generate_workload(GeneratorParameters(jobs=460, gpus=128, seed=1))
    sets = [
        ("canonical trace, 32 GPUs", policy_markets()),
        ("generated, 460 jobs, 128 GPUs (seed 1)", policy_markets(generated, gpus=128)),
    ]
    header = [
        POLICY_START,
        "",
        f"Machine: {machine()}.",
        "",
        f"T = {sets[0][1][0].market.rounds}. Cells: mean iterations / total wall time in ms over "
        "the markets; for the warm starts, the ratio of cold to warm iterations and the share "
        "certified in one iteration.",
        "",
        "| policy markets | tol | cold | warm: shifted bids | warm: and budgets "
        f"| warm: and smoothing {WARM_START_SMOOTHING} (the policy's) |",
        "|---|---|---|---|---|---|",
    ]
    rows = [line for label, markets in sets for line in policy_rows(label, markets)]
    return "\n".join([*header, *rows, "", POLICY_END])


def replace_block(content: str, text: str, start: str, end: str) -> str:
    before, _, rest = content.partition(start)
    _, _, after = rest.partition(end)
    return before + text + after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the tables in README.md")
    parser.add_argument(
        "--clarabel-max-jobs",
        type=int,
        default=1000,
        help="skip Clarabel above this many jobs (default 1000: it takes minutes at 10,000)",
    )
    parser.add_argument(
        "--policy-only", action="store_true", help="only the policy markets' warm-start table"
    )
    args = parser.parse_args()
    blocks = [] if args.policy_only else [(table(args.clarabel_max_jobs), START, END)]
    blocks.append((policy_table(), POLICY_START, POLICY_END))
    for text, _, _ in blocks:
        print(text)
    if args.write:
        readme = Path(__file__).with_name("README.md")
        content = readme.read_text()
        for text, start, end in blocks:
            if start not in content:
                raise SystemExit(f"{readme}: no {start} marker")
            content = replace_block(content, text, start, end)
        atomic_write_text(readme, content)


if __name__ == "__main__":
    main()
