"""The market-solver table: iterations and wall time of both methods, cold and warm, against
Clarabel, and warm starts on the markets the Shockwave policy solves.

``shockwave bench market`` (``benches/market_table.py`` writes the same tables into
``benches/README.md``). For each size (N jobs, T rounds) of
:func:`~shockwave.testing.random_market`:

* the interior-point method (default) and proportional response, to a relative gap of 1e-4 and
  1e-6: iterations and median wall time, cold and warm. "Warm" solves the next round's market
  (:func:`~shockwave.testing.next_round_market`: the first round ran, the window moved on) from
  the previous plan's bids (:func:`~shockwave.market.warm_start_bids`); "cold" solves that same
  next-round market from scratch, so the two compare like with like;
* Clarabel through cvxpy on the same (first) market, asked for a relative gap of 1e-6, when cvxpy
  is installed: its own solve time and the total through cvxpy, each divided by our cold time to
  1e-6;
* the markets the Shockwave policy itself solves on the canonical trace (and a generated 460-job
  trace on 128 GPUs), each solved cold and warm from the previous market's plan: the warm start
  from the shifted bids as they were, then with the budgets, then also smoothed (as the policy
  does): mean iterations, total time, and the share of warm starts certified by their first
  allocation;
* with GPU types (:func:`typed_records`): the same jobs on ``K`` types
  (:func:`~shockwave.testing.random_typed_market`) against one type
  (:func:`~shockwave.testing.random_market`: the same jobs and GPUs), both to 1e-6, timed in
  alternation in the same run, with their ratio; and Clarabel's own solve of the ``K``-type
  program against ours.

Times are medians over repeats in one process, one thread; the machine and its load are recorded.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shockwave import market
from shockwave.bench.markets import PolicyMarket, oracle_solve, policy_markets
from shockwave.market import MarketSolution, Method
from shockwave.policies.shockwave.backends import WARM_START_SMOOTHING
from shockwave.testing.markets import (
    Market,
    next_round_market,
    random_market,
    random_typed_market,
)
from shockwave.traces import GeneratorParameters, generate_workload

__all__ = [
    "SIZES",
    "TOLERANCES",
    "TYPED_SIZES",
    "machine",
    "policy_records",
    "policy_table",
    "solver_records",
    "solver_table",
    "typed_records",
    "typed_table",
]

#: (N, T) of the solver table.
SIZES = [(100, 20), (500, 20), (1000, 20), (10_000, 20), (100, 60), (1000, 60), (10_000, 60)]
#: Relative gaps of the solver table.
TOLERANCES = [1e-4, 1e-6]
#: (N, T) of the table with GPU types.
TYPED_SIZES = [(500, 20), (1000, 20)]
METHODS: tuple[Method, ...] = ("interior_point", "proportional_response")


def timed(solve: Callable[[], MarketSolution], repeats: int) -> tuple[float, MarketSolution]:
    """Median wall time of ``repeats`` solves (seconds) and the last solution."""
    times, solution = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        solution = solve()
        times.append(time.perf_counter() - start)
    assert solution is not None
    return statistics.median(times), solution


def _solver(
    m: Market, tol: float, method: Method, warm: np.ndarray[Any, Any] | None
) -> Callable[[], MarketSolution]:
    def solve() -> MarketSolution:
        return m.solve(tol=tol, method=method, max_iter=100_000, warm_start=warm)

    return solve


def _measure(seconds: float, solution: MarketSolution) -> dict[str, Any]:
    return {
        "iterations": solution.iterations,
        "milliseconds": 1e3 * seconds,
        "converged": solution.converged,
        "status": solution.status.value,
    }


def solver_records(
    sizes: Sequence[tuple[int, int]] = SIZES,
    *,
    clarabel_max_jobs: int = 1000,
    repeats: int | None = None,
) -> list[dict[str, Any]]:
    """One record per size and method: cold and warm measurements at each tolerance, and
    Clarabel's (interior point only; ``None`` when skipped)."""
    records = []
    for jobs, rounds in sizes:
        first = random_market(jobs, rounds, seed=1)
        default_repeats = 3 if jobs >= 10_000 else 7
        for method in METHODS:
            record: dict[str, Any] = {"jobs": jobs, "rounds": rounds, "method": method}
            cold_1e6 = float("nan")
            for tol in TOLERANCES:
                reps = repeats or default_repeats
                if method == "proportional_response" and jobs >= 10_000:
                    reps = 1

                def solve(m: Market = first, t: float = tol, k: Method = method) -> MarketSolution:
                    return m.solve(tol=t, method=k, max_iter=100_000)

                _, plan = timed(solve, 1)
                following = next_round_market(first, plan.shares[:, 0])
                warm_bids = market.warm_start_bids(plan)
                cold_s, cold = timed(_solver(following, tol, method, None), reps)
                warm_s, warm = timed(_solver(following, tol, method, warm_bids), reps)
                record[f"{tol:.0e}"] = {
                    "cold": _measure(cold_s, cold),
                    "warm": _measure(warm_s, warm),
                }
                if method == "interior_point" and tol == 1e-6:
                    cold_1e6, _ = timed(solve, reps)
            record["clarabel"] = (
                _clarabel(first, cold_1e6, jobs <= clarabel_max_jobs)
                if method == "interior_point"
                else None
            )
            records.append(record)
    return records


def _clarabel(first: Market, ours: float, run: bool) -> dict[str, Any]:
    if not run:
        return {"skipped": "more jobs than --clarabel-max-jobs (it takes minutes)"}
    try:
        oracle = oracle_solve(first, accuracy=1e-6)
    except ImportError:
        return {"skipped": "cvxpy is not installed"}
    except RuntimeError as error:
        return {"skipped": str(error).split(":")[0]}
    return {
        "solve_ms": 1e3 * oracle.solve_seconds,
        "total_ms": 1e3 * oracle.total_seconds,
        "solve_ratio": oracle.solve_seconds / ours,
        "total_ratio": oracle.total_seconds / ours,
    }


def _cell(measure: dict[str, Any]) -> str:
    mark = "" if measure["converged"] else f" ({measure['status']})"
    return f"{measure['iterations']} / {measure['milliseconds']:.1f}{mark}"


def solver_table(records: Sequence[dict[str, Any]], machine_line: str) -> str:
    """The solver table in Markdown."""
    lines = [
        f"Machine: {machine_line}.",
        "",
        "Cells: iterations / median wall time in ms (proportional-response iterations plus",
        "interior-point iterations for the interior-point method). Clarabel: relative gap 1e-6,",
        "own solve time and total through cvxpy, with the ratio to our cold time to 1e-6.",
        "",
        "| N | T | method | 1e-4 cold | 1e-4 warm | 1e-6 cold | 1e-6 warm "
        "| Clarabel solve (ratio) | Clarabel + cvxpy (ratio) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        cells = [_cell(r[f"{tol:.0e}"][start]) for tol in TOLERANCES for start in ("cold", "warm")]
        clarabel = r["clarabel"]
        if clarabel is None:
            extra = ["", ""]
        elif "skipped" in clarabel:
            extra = [f"skipped ({clarabel['skipped']})", ""]
        else:
            extra = [
                f"{clarabel['solve_ms']:.0f} ms ({clarabel['solve_ratio']:.0f}x)",
                f"{clarabel['total_ms']:.0f} ms ({clarabel['total_ratio']:.0f}x)",
            ]
        name = "interior point" if r["method"] == "interior_point" else "prop. response"
        row = [f"{r['jobs']:,}", str(r["rounds"]), name, *cells, *extra]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def policy_records(
    sets: Sequence[tuple[str, list[PolicyMarket]]] | None = None,
) -> list[dict[str, Any]]:
    """Cold against warm (bids only, budget-aware, smoothed) on consecutive policy markets; by
    default the canonical trace on 32 GPUs and a generated 460-job trace on 128 GPUs."""
    if sets is None:
        generated = generate_workload(GeneratorParameters(jobs=460, gpus=128, seed=1))
        sets = [
            ("canonical trace, 32 GPUs", policy_markets()),
            ("generated, 460 jobs, 128 GPUs (seed 1)", policy_markets(generated, gpus=128)),
        ]
    records = []
    for label, markets in sets:
        sizes = [step.market.jobs for step in markets]
        for tol in TOLERANCES:
            iterations: dict[str, list[int]] = {"cold": [], "bids": [], "budgets": [], "smooth": []}
            seconds = dict.fromkeys(iterations, 0.0)
            previous = None
            for step in markets:
                plan = step.market.solve(tol=tol)
                if previous is not None and step.elapsed_rounds > 0:
                    before, before_plan = previous
                    link: dict[str, Any] = {
                        "previous_jobs": before.job_ids,
                        "current_jobs": step.job_ids,
                        "elapsed_rounds": step.elapsed_rounds,
                    }
                    budgets: dict[str, Any] = {
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
                            raise RuntimeError(
                                f"{name} start did not converge ({solution.status.value}, "
                                f"gap {solution.gap})"
                            )
                        iterations[name].append(solution.iterations)
                previous = (step, plan)
            records.append(
                {
                    "markets": label,
                    "count": len(iterations["cold"]),
                    "median_jobs": int(np.median(sizes)) if sizes else 0,
                    "rounds": markets[0].market.rounds if markets else 0,
                    "tol": tol,
                    **{
                        name: {
                            "mean_iterations": float(np.mean(its)) if its else 0.0,
                            "total_ms": 1e3 * seconds[name],
                            "certified_in_one": float(np.mean(np.array(its) == 1)) if its else 0.0,
                        }
                        for name, its in iterations.items()
                    },
                }
            )
    return records


def policy_table(records: Sequence[dict[str, Any]], machine_line: str) -> str:
    """The warm-start table in Markdown."""
    rounds = records[0]["rounds"] if records else 0
    lines = [
        f"Machine: {machine_line}.",
        "",
        f"T = {rounds}. Cells: mean iterations / total wall time in ms over the markets; for the "
        "warm starts, the ratio of cold to warm iterations and the share certified in one "
        "iteration.",
        "",
        "| policy markets | tol | cold | warm: shifted bids | warm: and budgets "
        f"| warm: and smoothing {WARM_START_SMOOTHING} (the policy's) |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        cold = r["cold"]
        cells = [f"{cold['mean_iterations']:.2f} / {cold['total_ms']:.0f}"]
        for name in ("bids", "budgets", "smooth"):
            warm = r[name]
            ratio = (
                cold["mean_iterations"] / warm["mean_iterations"]
                if warm["mean_iterations"]
                else 0.0
            )
            cells.append(
                f"{warm['mean_iterations']:.2f} / {warm['total_ms']:.0f} "
                f"({ratio:.2f}x; {warm['certified_in_one']:.0%} in one)"
            )
        where = f"{r['markets']} ({r['count']} markets, median {r['median_jobs']} jobs)"
        lines.append(f"| {where} | {r['tol']:.0e} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def typed_records(
    sizes: Sequence[tuple[int, int]] = TYPED_SIZES,
    types: int = 3,
    *,
    tol: float = 1e-6,
    clarabel_max_jobs: int = 1000,
    repeats: int | None = None,
    seed: int = 1,
) -> list[dict[str, Any]]:
    """One record per size: the market of ``types`` GPU types and the same jobs on one type,
    each solved cold to ``tol``, timed in alternation (``repeats`` pairs, 7 by default; so both
    see the same machine load): medians, iterations, statuses and the ratio of the medians; and
    Clarabel's own solve of the typed program (relative gap ``tol``) with its ratio to ours (for
    ``N <= clarabel_max_jobs``)."""
    records = []
    for jobs, rounds in sizes:
        one = random_market(jobs, rounds, seed)
        typed = random_typed_market(jobs, rounds, types, seed)
        times: dict[str, list[float]] = {"one": [], "typed": []}
        solutions: dict[str, MarketSolution] = {}
        for _ in range(repeats or 7):
            for name, m in (("one", one), ("typed", typed)):
                start = time.perf_counter()
                solutions[name] = m.solve(tol=tol)
                times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(values) for name, values in times.items()}
        record: dict[str, Any] = {
            "jobs": jobs,
            "rounds": rounds,
            "types": types,
            "tol": tol,
            **{
                name: {
                    **_measure(medians[name], solutions[name]),
                    "gap": solutions[name].gap,
                    "min_milliseconds": 1e3 * min(times[name]),
                }
                for name in ("one", "typed")
            },
            "ratio": medians["typed"] / medians["one"],
            "min_ratio": min(times["typed"]) / min(times["one"]),
        }
        run_clarabel = jobs <= clarabel_max_jobs
        record["clarabel"] = _typed_clarabel(typed, tol, medians["typed"], run_clarabel)
        records.append(record)
    return records


def _typed_clarabel(typed: Market, tol: float, ours: float, run: bool) -> dict[str, Any]:
    if not run:
        return {"skipped": "more jobs than --clarabel-max-jobs"}
    try:
        oracle = oracle_solve(typed, accuracy=tol)
    except ImportError:
        return {"skipped": "cvxpy is not installed"}
    except RuntimeError as error:
        return {"skipped": str(error).split(":")[0]}
    return {
        "solve_ms": 1e3 * oracle.solve_seconds,
        "total_ms": 1e3 * oracle.total_seconds,
        "solve_ratio": oracle.solve_seconds / ours,
        "attempt": oracle.attempt,
    }


def typed_table(records: Sequence[dict[str, Any]], machine_line: str) -> str:
    """The table with GPU types in Markdown."""
    lines = [
        f"Machine: {machine_line}.",
        "",
        "Each row: the same jobs and GPUs on one type and on K types, cold to the tolerance, "
        "solved in alternation; cells: iterations / median wall time in ms; ratio: K types over "
        "one type (medians; minima in brackets). Clarabel: its own solve time of the K-type "
        "program (relative gap the same), and its ratio to ours; where its default settings "
        "stop short, the settings that solved it (`oracle_solve`).",
        "",
        "| N | T | K | tol | one type | K types | ratio K / 1 | Clarabel solve (ratio) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        clarabel = r["clarabel"]
        extra = (
            f"skipped ({clarabel['skipped']})"
            if "skipped" in clarabel
            else f"{clarabel['solve_ms']:.0f} ms ({clarabel['solve_ratio']:.0f}x)"
            + ("" if clarabel["attempt"] == "default" else f", {clarabel['attempt']}")
        )
        row = [
            f"{r['jobs']:,}",
            str(r["rounds"]),
            str(r["types"]),
            f"{r['tol']:.0e}",
            _cell(r["one"]),
            _cell(r["typed"]),
            f"{r['ratio']:.2f} ({r['min_ratio']:.2f})",
            extra,
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def machine() -> str:
    """The CPU, the interpreter, numpy and the load average."""
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
