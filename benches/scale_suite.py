"""Scale suite: generated traces of thousands of jobs and GPUs under Shockwave and baselines.

    python benches/scale_suite.py --output benches/scale_results.md
    python benches/scale_suite.py --sizes 1000:256 --policies shockwave,fifo   # a subset

Each (size, policy) runs in a fresh Python process so that its peak memory is its own. The trace
is generated at run time from its seed (nothing large is committed): ``shockwave trace generate``
with the original's parameters for the given jobs and GPUs (arrival rate keeping the original's
contention; WISR throughputs above 32 GPUs). Reported per run: wall time of the simulation (the
trace already generated in memory) and of generation, peak resident memory of the process,
rounds, per-round policy time (median and max over rounds with jobs), and the scheduling
metrics (makespan, average JCT, worst rho, unfair fraction). Mechanics: ``exact``.

The cost exponent: for each policy, a least-squares fit of ``log(wall) = a + b log(jobs x
rounds)`` over the sizes; ``b`` near 1 means the cost grows linearly in jobs x rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shockwave.atomic import atomic_write_text

DEFAULT_SIZES = [(1000, 256), (5000, 1024), (20000, 6500)]
DEFAULT_POLICIES = ["shockwave", "gavel", "themis", "fifo"]
SEED = 1


def one(jobs: int, gpus: int, policy: str, mechanics: str) -> dict[str, Any]:
    """Generate the trace, simulate it once, return the measurements (runs in a child)."""
    from shockwave.policies import make_policy
    from shockwave.sim import SimulationConfig, simulate
    from shockwave.traces import GeneratorParameters, generate_workload

    started = time.perf_counter()
    workload = generate_workload(GeneratorParameters(jobs=jobs, gpus=gpus, seed=SEED))
    generated = time.perf_counter()
    result = simulate(
        workload,
        make_policy(policy),
        SimulationConfig(gpus=gpus, mechanics=mechanics),  # type: ignore[arg-type]
    )
    finished = time.perf_counter()
    d = result.to_dict()
    per_round = np.array(result.policy_seconds, dtype=np.float64)
    per_round = per_round[per_round > 0] if (per_round > 0).any() else per_round
    return {
        "jobs": jobs,
        "gpus": gpus,
        "policy": policy,
        "mechanics": mechanics,
        "generate_seconds": generated - started,
        "simulate_seconds": finished - generated,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "rounds": d["rounds"],
        "policy_ms_median": 1e3 * float(np.median(per_round)) if per_round.size else 0.0,
        "policy_ms_max": 1e3 * float(per_round.max()) if per_round.size else 0.0,
        "makespan": d["makespan"],
        "avg_jct": d["avg_jct"],
        "worst_ftf": d["worst_ftf"],
        "unfair_fraction": d["unfair_fraction"],
    }


def fitted_exponent(rows: Sequence[dict[str, Any]]) -> float:
    """Slope of log(simulate seconds) against log(jobs x rounds)."""
    x = np.log([r["jobs"] * r["rounds"] for r in rows])
    y = np.log([r["simulate_seconds"] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default=",".join(f"{j}:{g}" for j, g in DEFAULT_SIZES),
        help="comma-separated JOBS:GPUS pairs",
    )  # fmt: skip
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    parser.add_argument("--mechanics", default="exact", choices=["exact", "gavel"])
    parser.add_argument("--output", type=Path, default=None, help="Markdown table to write")
    parser.add_argument("--one", nargs=4, metavar=("JOBS", "GPUS", "POLICY", "MECHANICS"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    if args.one:
        jobs, gpus, policy, mechanics = args.one
        print(json.dumps(one(int(jobs), int(gpus), policy, mechanics)))
        return
    sizes = [tuple(int(v) for v in pair.split(":")) for pair in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    for jobs, gpus in sizes:
        for policy in args.policies.split(","):
            child = subprocess.run(
                [sys.executable, __file__, "--one", str(jobs), str(gpus), policy, args.mechanics],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if child.returncode != 0:
                print(child.stderr, file=sys.stderr)
                raise SystemExit(f"{jobs} jobs / {gpus} GPUs / {policy} failed")
            rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
            print(format_row(rows[-1]), flush=True)
    exponents = {
        p: fitted_exponent([r for r in rows if r["policy"] == p])
        for p in args.policies.split(",")
        if len({r["jobs"] for r in rows if r["policy"] == p}) >= 2
    }
    for policy, b in exponents.items():
        print(f"fitted exponent {policy}: {b:.2f}")
    if args.output is not None:
        atomic_write_text(args.output, report(rows, exponents, args.mechanics))


HEADER = (
    "| jobs | GPUs | policy | simulate (s) | generate (s) | peak RSS (MB) | rounds | "
    "policy ms/round (median / max) | makespan (s) | avg JCT (s) | worst rho | unfair % |"
)


def format_row(r: dict[str, Any]) -> str:
    return (
        f"| {r['jobs']:,} | {r['gpus']:,} | {r['policy']} | {r['simulate_seconds']:.1f} | "
        f"{r['generate_seconds']:.1f} | {r['peak_rss_mb']:,.0f} | {r['rounds']:,} | "
        f"{r['policy_ms_median']:.1f} / {r['policy_ms_max']:.1f} | {r['makespan']:,.0f} | "
        f"{r['avg_jct']:,.0f} | {r['worst_ftf']:.2f} | {100 * r['unfair_fraction']:.1f} |"
    )


def report(rows: Sequence[dict[str, Any]], exponents: dict[str, float], mechanics: str) -> str:
    machine = (
        f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
    )
    lines = [
        f"Machine: the 2-core development VM ({machine}); `{mechanics}` mechanics; generator "
        f"seed {SEED}. Regenerate with `python benches/scale_suite.py`.",
        "",
        HEADER,
        "|" + "---|" * 12,
        *(format_row(r) for r in rows),
        "",
        "Fitted exponent of simulate time against jobs x rounds: "
        + ", ".join(f"`{p}` {b:.2f}" for p, b in exponents.items())
        + ".",
        "",
    ]
    if any(math.isnan(b) for b in exponents.values()):
        lines.append("(NaN: fewer than two sizes.)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
