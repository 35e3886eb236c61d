"""How far above its equal share any policy can lift the worst-off job, round by round.

Issue 23 asks the typed ``shockwave`` policy for a worst finish-time fairness rho at least 2x
better than the heterogeneity-aware ``gavel``'s. ``gavel`` solves, every round, Gavel's
max-min-fairness program over the active jobs: it maximises ``t`` with every job's effective
throughput ``sum_k T[i, k] X[i, k]`` at least ``t`` times its rate on an equal split of the
types. No allocation of that round can give every job more than ``t*`` times that rate, so ``t*``
(scaled to the rho metric's isolated share, ``docs/simulator.md``) is a ceiling on the smallest
ratio "throughput received / equal-share throughput" of the round, for every policy. This script
runs ``shockwave simulate ... --policy gavel`` and prints that ceiling's distribution over the
rounds next to the run's own summary. Run::

    python benches/gavel_fairness_ceiling.py --trace a12_s11.jsonl \\
        --cluster v100:12,p100:12,k80:12 [--mechanics exact]

(the trace from ``shockwave trace generate --jobs 100 --cluster v100:12,p100:12,k80:12 --seed 11
-o a12_s11.jsonl``). The ceiling is per round, over the jobs active in it (``m`` of the round);
the metric averages ``m`` over each job's life, so the two are close, not equal.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from shockwave.cli import main as cli_main
from shockwave.heterogeneous.gavel_policies import TypedMaxMinFairness
from shockwave.heterogeneous.protocol import TypedAllocationState


def ceilings(state: TypedAllocationState, shares: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Each job's throughput under ``shares`` over its equal-share (isolated) throughput.

    The smallest of them is the round's max-min value ``t*`` in the rho metric's units:
    ``g_i sum_k T[i, k] X[i, k] / P_i`` scaled by ``m / N`` (``P_i`` the rate on Gavel's equal
    split of the types, ``N`` the cluster's GPUs, ``m`` the active jobs), and by the isolated
    share's cap at all of a job's time (``m g_i < N``).
    """
    n, _ = state.throughput.shape
    counts = state.counts.astype(np.float64)
    gang = state.gang.astype(np.float64)
    split = counts / counts.sum()
    proportional = state.throughput @ split
    received = np.sum(state.throughput * shares, axis=1)
    uncapped = counts.sum() / (n * gang)
    ratio: np.ndarray[Any, Any] = (
        received * gang / proportional * n / counts.sum() * uncapped / np.minimum(1.0, uncapped)
    )
    return ratio


def run(argv: list[str]) -> tuple[int, list[tuple[int, float]]]:
    """Run the simulation with ``gavel`` and record ``(active jobs, min ratio)`` per solve."""
    record: list[tuple[int, float]] = []
    solve = TypedMaxMinFairness.allocate

    def allocate(self: TypedMaxMinFairness, state: TypedAllocationState) -> Any:
        shares = solve(self, state)
        record.append((state.throughput.shape[0], float(ceilings(state, shares).min())))
        return shares

    TypedMaxMinFairness.allocate = allocate  # type: ignore[method-assign]
    try:
        status = cli_main(["simulate", *argv, "--policy", "gavel"])
    finally:
        TypedMaxMinFairness.allocate = solve  # type: ignore[method-assign]
    return status, record


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--mechanics", default="exact")
    args = parser.parse_args()
    status, record = run(
        ["--trace", args.trace, "--cluster", args.cluster, "--mechanics", args.mechanics]
    )
    if status or not record:
        return status or 1
    values = np.array([value for _, value in record])
    active = np.array([count for count, _ in record])
    print(
        f"{len(record)} solves, median {np.median(active):.0f} active jobs; ceiling on the "
        f"smallest ratio to the equal share: median {np.median(values):.3f}, 10th percentile "
        f"{np.percentile(values, 10):.3f}, 90th {np.percentile(values, 90):.3f}, "
        f"max {values.max():.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(_main())
