"""The scale suite: generated traces of thousands of jobs and GPUs under Shockwave and baselines.

``shockwave bench scale`` (or ``python -m shockwave.bench.scale``). Each (size, policy) runs in a
fresh Python process so that its peak memory is its own. The trace is generated at run time from
its seed (nothing large is stored): the original's generator parameters for the given jobs and
GPUs (arrival rate keeping the original's contention; WISR throughputs above 32 GPUs). Reported
per run: wall time of the simulation (the trace already generated in memory) and of generation,
peak resident memory of the process, rounds, per-round policy time (median and max over rounds
with jobs), and the scheduling metrics (makespan, average JCT, worst rho, unfair fraction).

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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_POLICIES",
    "DEFAULT_SIZES",
    "HEADER",
    "LARGE_SIZES",
    "LONG_REPLAY",
    "Size",
    "check_sizes",
    "fitted_exponents",
    "format_row",
    "one",
    "report",
    "run",
]

#: A size: (jobs, GPUs), or (jobs, GPUs, days) for a long, steady arrival process spread over
#: that many days (``trace generate --days``) instead of the original's contention.
Size = tuple[int, int] | tuple[int, int, float]

#: (jobs, GPUs) of the full suite (the largest takes minutes and a few GB).
DEFAULT_SIZES: list[Size] = [(1000, 256), (5000, 1024), (20000, 6500)]
#: The largest generated cluster (issue 16): 100,000 jobs on 25,000 GPUs.
LARGE_SIZES: list[Size] = [(100000, 25000)]
#: The two-month production-scale replay (issue 16): 1,000,000 jobs over 60 days on 6,500 GPUs.
LONG_REPLAY: list[Size] = [(1000000, 6500, 60.0)]
#: The policies of the full suite.
DEFAULT_POLICIES = ["shockwave", "gavel", "themis", "fifo"]
#: Seed of the generated traces.
SEED = 1

HEADER = (
    "| jobs | GPUs | policy | simulate (s) | generate (s) | peak RSS (MB) | rounds | "
    "policy ms/round (median / max) | makespan (s) | avg JCT (s) | worst rho | unfair % |"
)


def one(
    jobs: int, gpus: int, policy: str, mechanics: str, days: float | None = None
) -> dict[str, Any]:
    """Generate the trace, simulate it once, return the measurements (runs in a child)."""
    from shockwave.policies import make_policy
    from shockwave.scheduling import SimulationConfig
    from shockwave.sim import simulate
    from shockwave.traces import GeneratorParameters, generate_workload

    started = time.perf_counter()
    parameters = GeneratorParameters(jobs=jobs, gpus=gpus, seed=SEED, days=days)
    workload = generate_workload(parameters)
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
        "days": days,
        "offered_load": parameters.offered_load,
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


def check_sizes(sizes: Sequence[Size]) -> None:
    """Check that the generator accepts every size (the children would fail on it).

    Raises:
        ValueError: naming the size and the generator's reason (for example a gang larger
            than the cluster).
    """
    from shockwave.traces import GeneratorParameters

    for size in sizes:
        days = float(size[2]) if len(size) == 3 else None
        text = ":".join(f"{v:g}" for v in size)
        try:
            GeneratorParameters(jobs=size[0], gpus=size[1], seed=SEED, days=days)
        except ValueError as exc:  # GeneratorParameterError: its reason, without the option
            raise ValueError(f"{text}: {getattr(exc, 'reason', exc)}") from None


def run(
    sizes: Sequence[Size],
    policies: Sequence[str],
    mechanics: str = "exact",
    *,
    echo: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every (size, policy), each in a fresh process (this interpreter, ``-m
    shockwave.bench.scale --one``); ``echo`` is called with each row as it is measured.

    Raises:
        RuntimeError: when a run fails (with its standard error).
    """
    rows: list[dict[str, Any]] = []
    for size in sizes:
        jobs, gpus = size[0], size[1]
        for policy in policies:
            command = [sys.executable, "-m", "shockwave.bench.scale", "--one"]
            command += [str(jobs), str(gpus), policy, mechanics]
            if len(size) == 3:
                command += ["--days", repr(float(size[2]))]
            child = subprocess.run(command, capture_output=True, text=True, check=False)
            if child.returncode != 0:
                raise RuntimeError(
                    f"{jobs} jobs / {gpus} GPUs / {policy} failed: {_last_line(child.stderr)}"
                )
            rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
            if echo is not None:
                echo(rows[-1])
    return rows


def _last_line(stderr: str) -> str:
    """The child's one-line error (the last non-blank line of its standard error)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "no message (killed?)"


def fitted_exponents(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per policy measured at two sizes or more, the slope of log(simulate seconds) against
    log(jobs x rounds). Sizes with a steady arrival process (``days``) are left out: their
    contention differs, so they are not points of the same curve."""
    exponents: dict[str, float] = {}
    contended = [r for r in rows if r.get("days") is None]
    for policy in dict.fromkeys(r["policy"] for r in contended):
        mine = [r for r in contended if r["policy"] == policy]
        if len({r["jobs"] for r in mine}) < 2:
            continue
        x = np.log([r["jobs"] * r["rounds"] for r in mine])
        y = np.log([max(r["simulate_seconds"], 1e-9) for r in mine])
        exponents[policy] = float(np.polyfit(x, y, 1)[0])
    return exponents


def format_row(r: dict[str, Any]) -> str:
    """One row of the table."""
    days = r.get("days")
    jobs = f"{r['jobs']:,}" if days is None else f"{r['jobs']:,} over {days:g} days"
    return (
        f"| {jobs} | {r['gpus']:,} | {r['policy']} | {r['simulate_seconds']:.1f} | "
        f"{r['generate_seconds']:.1f} | {r['peak_rss_mb']:,.0f} | {r['rounds']:,} | "
        f"{r['policy_ms_median']:.1f} / {r['policy_ms_max']:.1f} | {r['makespan']:,.0f} | "
        f"{r['avg_jct']:,.0f} | {r['worst_ftf']:.2f} | {100 * r['unfair_fraction']:.1f} |"
    )


def report(rows: Sequence[dict[str, Any]], mechanics: str) -> str:
    """The results as a Markdown table with the machine and the fitted exponents."""
    exponents = fitted_exponents(rows)
    machine = f"{platform.machine()}, {platform.python_implementation()} "
    machine += platform.python_version()
    lines = [
        f"Machine: {machine}; `{mechanics}` mechanics; generator seed {SEED}. Regenerate with "
        "`shockwave bench scale`.",
        "",
        HEADER,
        "|" + "---|" * 12,
        *(format_row(r) for r in rows),
        "",
    ]
    if exponents:
        lines.append(
            "Fitted exponent of simulate time against jobs x rounds: "
            + ", ".join(f"`{p}` {b:.2f}" for p, b in exponents.items())
            + "."
        )
    if any(math.isnan(b) for b in exponents.values()):
        lines.append("(NaN: fewer than two sizes.)")
    return "\n".join(lines) + "\n"


def _child(argv: Sequence[str] | None = None) -> None:
    """``python -m shockwave.bench.scale --one JOBS GPUS POLICY MECHANICS``: one run, as JSON."""
    parser = argparse.ArgumentParser(prog="python -m shockwave.bench.scale")
    parser.add_argument("--one", nargs=4, metavar=("JOBS", "GPUS", "POLICY", "MECHANICS"))
    parser.add_argument("--days", type=float, default=None)
    args = parser.parse_args(argv)
    if args.one is None:
        parser.error("the scale suite runs from 'shockwave bench scale'")
    jobs, gpus, policy, mechanics = args.one
    print(json.dumps(one(int(jobs), int(gpus), policy, mechanics, args.days)))


def _child_main() -> int:
    """:func:`_child` with every failure reported in one line on standard error (the parent
    repeats that line), never a traceback; 130 when interrupted."""
    try:
        _child()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("not enough memory for this size", file=sys.stderr)
        return 1
    except Exception as exc:  # the parent reports it in one line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
