"""Fidelity of the simulator against real runs: the same workload, physical and simulated.

Profiles the bundled families on this machine (``shockwave cluster profile``), generates a
runnable workload (``shockwave cluster generate``), runs it for real on 2 CPU slots under each
policy (``shockwave cluster run``), and replays it in the ``exact`` simulator in steps that add
one real effect at a time, so that each difference is measured, not guessed:

* ``planned``: the workload as generated (planned batch-size schedules, profiled durations, no
  restart cost): what a user predicts before running;
* ``realized``: every job with the batch size each epoch really ran at (reported by the jobs);
* ``+ restart``: plus the measured start-up cost of a (re)started job as the restart penalty
  (mean seconds from a round's dispatch to the job's first step);
* ``+ measured throughput``: plus each job's measured iterations/s per batch size instead of the
  profiled ones (contention between the two jobs sharing the machine, noise);
* ``+ planned view``: the same jobs (realized schedules, measured throughputs, restart cost),
  but the policy sees the generated plans, as the real scheduler does (``simulate(plans,
  actual=...)``, :mod:`shockwave.sim.plan_view`): the simulator's closest model of the run;
* ``+ throughput noise``: plus the round-to-round variation of the jobs' speed measured in the
  run (``throughput_noise``: the standard deviation of the log of every per-round throughput
  sample around its job's mean at that batch size, read from the run's journal), simulated
  over ``--noise-seeds`` seeds: the median of each metric, and its range.

What is left between the last step and the physical run is the round overhead (the boundary
wait and the decision, measured per round) and what the simulator does not model.

Run (about 45 minutes on a 2-core machine; nothing else should run meanwhile)::

    python benches/runtime_fidelity.py --out results/fidelity --write

``--write`` replaces the fidelity section of ``benches/README.md``. ``--replay DIR`` recomputes
the simulated steps and the report from the physical runs an earlier invocation left in ``DIR``
(its ``workload.jsonl``, ``fidelity.json`` and ``run-POLICY/result.json``), without running
anything for real.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from shockwave.atomic import atomic_write_text
from shockwave.metrics import SimulationResult
from shockwave.runtime import RuntimeConfig, run_workload
from shockwave.runtime.engine import RuntimeEngine
from shockwave.runtime.generate import generate_real_workload
from shockwave.runtime.journal import Journal
from shockwave.runtime.profile import profile_families, write_throughput_file
from shockwave.runtime.realized import realized_workload
from shockwave.runtime.result import read_run_result
from shockwave.sim import SimulationConfig, simulate
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_throughputs, load_workload, write_native
from shockwave.workload import Workload

README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- runtime-fidelity:begin -->"
END = "<!-- runtime-fidelity:end -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/fidelity"))
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--round-seconds", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--policies", default="shockwave,gavel")
    parser.add_argument("--throughputs", help="use this table instead of profiling")
    parser.add_argument("--profile-seconds", type=float, default=3.0)
    parser.add_argument("--write", action="store_true", help="update benches/README.md")
    parser.add_argument(
        "--noise-seeds", type=int, default=20, help="seeds of the throughput-noise step"
    )
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="DIR",
        help="recompute the report from the physical runs of an earlier --out DIR",
    )
    args = parser.parse_args(argv)
    report = _replay(args) if args.replay else _run(args)
    markdown = render(report)
    print(markdown)
    if args.write:
        text = README.read_text()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            text = head + BEGIN + "\n" + markdown + "\n" + END + tail
        else:
            text = text.rstrip() + "\n\n" + BEGIN + "\n" + markdown + "\n" + END + "\n"
        atomic_write_text(README, text)
        print(f"updated {README}")
    return 0


def _run(args: argparse.Namespace) -> dict[str, Any]:
    """Profile, generate, run every policy for real, compare; ``fidelity.json`` in ``--out``."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if args.throughputs:
        table = load_throughputs(args.throughputs)
    else:
        print("profiling the bundled families ...", flush=True)
        table = profile_families(seconds=args.profile_seconds)
        write_throughput_file(table, out / "throughputs.json")
    workload = generate_real_workload(
        args.jobs, args.gpus, table, minutes=args.minutes, seed=args.seed
    )
    write_native(workload, out / "workload.jsonl")
    report: dict[str, Any] = {
        "jobs": args.jobs,
        "gpus": args.gpus,
        "minutes": args.minutes,
        "round_seconds": args.round_seconds,
        "seed": args.seed,
        "throughputs": args.throughputs or "throughputs.json",
        "policies": {},
    }
    digests: dict[str, list[str | None]] = {}
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        run_dir = out / f"run-{policy}"
        if (run_dir / "result.json").exists():
            raise SystemExit(f"{run_dir} holds a run already; choose another --out")
        print(f"physical run under {policy} ...", flush=True)
        config = RuntimeConfig(gpus=args.gpus, round_seconds=args.round_seconds, run_dir=run_dir)
        physical = run_workload(workload, policy, config, progress=_progress()).to_dict()
        print()
        digests[policy] = physical["final_digest"]
        report["policies"][policy] = _compare(
            workload, policy, physical, table, args.round_seconds, run_dir, args.noise_seeds
        )
    names = list(digests)
    if len(names) > 1:
        same = sum(1 for values in zip(*digests.values(), strict=True) if len(set(values)) == 1)
        report["digests_identical_across_policies"] = f"{same}/{len(workload)}"
    report["wall_minutes"] = (time.monotonic() - started) / 60.0
    atomic_write_text(out / "fidelity.json", json.dumps(report, indent=1) + "\n")
    return report


def _replay(args: argparse.Namespace) -> dict[str, Any]:
    """The report of an earlier run's directory, its simulated steps computed anew."""
    directory: Path = args.replay
    previous = json.loads((directory / "fidelity.json").read_text())
    source = args.throughputs or previous.get("throughputs", "throughputs.json")
    if source == "throughputs.json":  # profiled by that run
        source = str(directory / source)
    table = load_throughputs(source)
    workload = load_workload(directory / "workload.jsonl", table)
    report = {key: value for key, value in previous.items() if key != "policies"}
    report["policies"] = {}
    for policy in previous["policies"]:
        run_dir = directory / f"run-{policy}"
        physical = read_run_result(run_dir / "result.json")
        report["policies"][policy] = _compare(
            workload,
            policy,
            physical,
            table,
            previous["round_seconds"],
            run_dir,
            args.noise_seeds,
        )
    return report


def _progress() -> Any:
    last = [-1]

    def show(engine: RuntimeEngine) -> None:
        if engine.k != last[0]:
            last[0] = engine.k
            counts = engine.counts()
            done = counts.get("done", 0) + counts.get("failed", 0)
            sys.stdout.write(
                f"\r  round {engine.k:4d}  t={engine.trace_now() - engine.origin:6.0f} s  "
                f"done {done}/{engine.n}"
            )
            sys.stdout.flush()

    return show


def _compare(
    workload: Workload,
    policy: str,
    physical: dict[str, Any],
    table: ThroughputTable,
    round_seconds: float,
    run_dir: Path,
    noise_seeds: int,
) -> dict[str, Any]:
    """The physical run (a ``result.json`` object, its directory) against the simulated steps."""
    starts = [s for job in physical["start_seconds"] for s in job if s[1] > 0]
    restart = statistics.fmean(s[1] for s in starts) if starts else 0.0
    overhead = [
        w + d
        for w, d in zip(
            physical["round_boundary_wait"], physical["round_decision_seconds"], strict=False
        )
    ]
    gpus = int(physical["gpus"])

    def sim(
        w: Workload,
        penalty: float,
        actual: Workload | None = None,
        noise: float = 0.0,
        seed: int = 0,
    ) -> SimulationResult:
        config = SimulationConfig(
            gpus=gpus,
            round_seconds=round_seconds,
            restart_penalty_seconds=penalty,
            throughput_noise=noise,
            seed=seed,
        )
        return simulate(w, policy, config, actual=actual)

    realized = realized_workload(workload, physical, table=table)
    measured = realized_workload(workload, physical, durations="measured", table=table)
    steps = {
        "planned": sim(workload, 0.0),
        "realized": sim(realized, 0.0),
        "+ restart": sim(realized, restart),
        "+ measured throughput": sim(measured, restart),
        "+ planned view": sim(workload, restart, actual=measured),
    }
    sigma = _throughput_sigma(Journal(run_dir / "journal.sqlite", create=False))
    noisy = [
        _metrics(sim(workload, restart, measured, sigma, seed).to_dict())
        for seed in range(noise_seeds)
    ]
    ratios = []
    for job, rates in zip(workload.jobs, physical["measured_throughput"], strict=True):
        for size, rate in rates.items():
            profiled = table.isolated(job.model, int(size), job.gang_size)
            ratios.append(rate / profiled)
    planned_epochs = sum(
        int((job.batch_sizes != real.batch_sizes).sum())
        for job, real in zip(workload.jobs, realized.jobs, strict=True)
    )
    total_epochs = sum(job.num_epochs for job in workload.jobs)
    return {
        "physical": _metrics(physical),
        "simulated": {
            **{name: _metrics(result.to_dict()) for name, result in steps.items()},
            f"+ throughput noise (median of {noise_seeds})": {
                key: statistics.median(m[key] for m in noisy) for key in noisy[0]
            },
        },
        "noise_sigma": sigma,
        "noise_seeds": noise_seeds,
        "noise_range": {
            key: [min(m[key] for m in noisy), max(m[key] for m in noisy)] for key in noisy[0]
        },
        "noise_seeds_matching_unfair": sum(
            1 for m in noisy if m["unfair_fraction"] == float(physical["unfair_fraction"])
        ),
        "launches": sum(physical["launches"]),
        "preemptions": sum(physical["preemptions"]),
        "crash_restarts": sum(physical["restarts"]),
        "failed_jobs": physical["failed_jobs"],
        "restart_seconds_mean": restart,
        "restart_seconds_max": max((s[1] for s in starts), default=0.0),
        "round_overhead_ms_mean": 1000 * statistics.fmean(overhead) if overhead else 0.0,
        "round_overhead_ms_max": 1000 * max(overhead, default=0.0),
        "throughput_ratio_mean": statistics.fmean(ratios) if ratios else math.nan,
        "throughput_ratio_min": min(ratios, default=math.nan),
        "throughput_ratio_max": max(ratios, default=math.nan),
        "epochs_off_plan": f"{planned_epochs}/{total_epochs}",
    }


def _throughput_sigma(journal: Journal) -> float:
    """Standard deviation of the log of the per-round throughput samples around each job's mean
    at the same batch size (every sample counted once; jobs and sizes with one sample skipped)."""
    samples: dict[tuple[int, int], dict[int, float]] = {}
    try:
        for journaled in journal.rounds():
            state = journaled.state
            for job, when, rate, size in zip(
                state["job_ids"],
                state["last_sample_round"],
                state["last_sample_steps_per_second"],
                state["last_sample_batch_size"],
                strict=True,
            ):
                if when >= 0 and math.isfinite(rate) and rate > 0:
                    samples.setdefault((int(job), int(size)), {})[int(when)] = math.log(rate)
    finally:
        journal.close()
    deviations: list[float] = []
    for logs in samples.values():
        if len(logs) > 1:
            mean = statistics.fmean(logs.values())
            deviations.extend(value - mean for value in logs.values())
    return math.sqrt(statistics.fmean(d * d for d in deviations)) if deviations else 0.0


def _metrics(result: dict[str, Any]) -> dict[str, float]:
    keys = ("makespan", "avg_jct", "unfair_fraction", "worst_ftf")
    return {key: float(result[key]) for key in keys}


def render(report: dict[str, Any]) -> str:
    lines = [
        f"Workload: {report['jobs']} jobs of the bundled families on {report['gpus']} CPU slots, "
        f"generated for about {report['minutes']:g} minutes (seed {report['seed']}), rounds of "
        f"{report['round_seconds']:g} s. Differences are simulated minus physical "
        "(makespan, average JCT: relative; unfair fraction: points).",
        "",
        "| policy | run | makespan (s) | avg JCT (s) | unfair | worst rho | makespan diff | "
        "avg JCT diff | unfair diff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for policy, data in report["policies"].items():
        physical = data["physical"]
        rows = [("physical", physical), *data["simulated"].items()]
        for name, m in rows:
            diff = ""
            if name != "physical":
                diff = (
                    f" | {100 * (m['makespan'] / physical['makespan'] - 1):+.1f} % "
                    f"| {100 * (m['avg_jct'] / physical['avg_jct'] - 1):+.1f} % "
                    f"| {100 * (m['unfair_fraction'] - physical['unfair_fraction']):+.1f} pt"
                )
            else:
                diff = " | | |"
            lines.append(
                f"| {policy} | {name} | {m['makespan']:,.0f} | {m['avg_jct']:,.0f} | "
                f"{100 * m['unfair_fraction']:.1f} % | {m['worst_ftf']:.2f}{diff} |"
            )
    lines += ["", "Measured effects per policy:", ""]
    lines.append(
        "| policy | launches | preemptions | crash restarts | restart cost mean / max (s) | "
        "round overhead mean / max (ms) | measured / profiled throughput mean [min, max] | "
        "epochs off the planned schedule |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    for policy, d in report["policies"].items():
        lines.append(
            f"| {policy} | {d['launches']} | {d['preemptions']} | {d['crash_restarts']} | "
            f"{d['restart_seconds_mean']:.2f} / {d['restart_seconds_max']:.2f} | "
            f"{d['round_overhead_ms_mean']:.0f} / {d['round_overhead_ms_max']:.0f} | "
            f"{d['throughput_ratio_mean']:.3f} [{d['throughput_ratio_min']:.3f}, "
            f"{d['throughput_ratio_max']:.3f}] | {d['epochs_off_plan']} |"
        )
    lines += [
        "",
        "Simulated with the measured throughput noise, one run per seed: range of each metric",
        "(the physical value in brackets).",
        "",
        "| policy | sigma | makespan (s) | avg JCT (s) | unfair | seeds with the physical "
        "unfair fraction |",
        "|---|---|---|---|---|---|",
    ]
    for policy, d in report["policies"].items():
        band, phys = d["noise_range"], d["physical"]
        lines.append(
            f"| {policy} | {d['noise_sigma']:.3f} | "
            f"{band['makespan'][0]:,.0f} to {band['makespan'][1]:,.0f} ({phys['makespan']:,.0f}) | "
            f"{band['avg_jct'][0]:,.0f} to {band['avg_jct'][1]:,.0f} ({phys['avg_jct']:,.0f}) | "
            f"{100 * band['unfair_fraction'][0]:.1f} to {100 * band['unfair_fraction'][1]:.1f} % "
            f"({100 * phys['unfair_fraction']:.1f} %) | "
            f"{d['noise_seeds_matching_unfair']}/{d['noise_seeds']} |"
        )
    if "digests_identical_across_policies" in report:
        lines += [
            "",
            "Final digests identical under every policy (preemption never changes a job's "
            f"result): {report['digests_identical_across_policies']} jobs. Total wall time "
            f"{report['wall_minutes']:.0f} minutes.",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
