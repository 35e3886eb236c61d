"""Fidelity of the simulator against real runs: predictions first, replays to explain them.

For each of several *fresh* workloads (``--seeds``: generator seeds never used to calibrate or
tune anything; each draws its own jobs, families, modes, gang sizes, arrivals and training
seeds), the benchmark generates a runnable workload with ``shockwave cluster generate``'s
generator and this machine's profile (``shockwave cluster profile``: throughputs on a full
machine, and the restart and round costs, measured just **before** each run: this machine's
speed drifts by up to a third over tens of minutes), runs it for real on 2 CPU slots under each
policy (its planned durations recomputed from that profile, as ``shockwave cluster run`` does),
and compares:

* **prediction** (the headline): ``simulate`` of the workload file alone, with its carried
  costs: only what existed before the run;
* replays, which use what the physical run measured (labelled ``replay``; they explain the
  prediction's error, they do not predict):

  - ``replay: realized``: every job with the batch size each epoch really ran at;
  - ``replay: + measured throughput``: plus each job's throughput measured in the run;
  - ``replay: + planned view``: the same jobs, the policy seeing the generated plans as the real
    scheduler does (``simulate(plans, actual=...)``);
  - ``replay: + throughput noise``: plus the measured round-to-round speed noise (median over
    ``--noise-seeds`` seeds).

Run (about 45 minutes on a 2-core machine; nothing else should run meanwhile)::

    python benches/runtime_fidelity.py --out results/fidelity --write

``--write`` replaces the fidelity section of ``benches/README.md``. ``--replay DIR`` recomputes
every simulated row and the report from the physical runs an earlier invocation left in ``DIR``
(``fidelity.json``, and per workload ``seed-S/workload.jsonl`` and
``seed-S/run-POLICY/result.json``), without running anything for real.
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
from shockwave.runtime import RunStatus, RuntimeConfig, run_workload
from shockwave.runtime.generate import generate_real_workload
from shockwave.runtime.journal import Journal
from shockwave.runtime.machine import refresh_machine_profile
from shockwave.runtime.realized import realized_workload
from shockwave.runtime.result import read_run_result
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_throughputs, load_workload, write_native
from shockwave.workload import Workload

README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- runtime-fidelity:begin -->"
END = "<!-- runtime-fidelity:end -->"
#: Generator seeds of the fresh workloads (never used for any calibration or tuning: the plans
#: were calibrated on jobs trained alone with training seeds 100-102, and earlier fidelity runs
#: used generator seeds 3 and 4).
FRESH_SEEDS = "21,22,23"
PREDICTION = "prediction"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/fidelity"))
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=6.0)
    parser.add_argument("--round-seconds", type=float, default=6.0)
    parser.add_argument("--seeds", default=FRESH_SEEDS, help="generator seeds of the workloads")
    parser.add_argument("--policies", default="shockwave,gavel")
    parser.add_argument(
        "--throughputs", help="use this table instead of this machine's cached profile"
    )
    parser.add_argument(
        "--profile-seconds", type=float, default=1.0, help="measuring time per profile entry"
    )
    parser.add_argument("--write", action="store_true", help="update benches/README.md")
    parser.add_argument(
        "--noise-seeds", type=int, default=10, help="seeds of the throughput-noise replay"
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
    """Generate every workload, run every policy for real, compare; ``fidelity.json``."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    table = load_throughputs(args.throughputs) if args.throughputs else _profile(args)
    report: dict[str, Any] = {
        "jobs": args.jobs,
        "gpus": args.gpus,
        "minutes": args.minutes,
        "round_seconds": args.round_seconds,
        "throughputs": table.source,
        "costs": None if table.costs is None else table.costs.to_dict(),
        "workloads": {},
    }
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    for seed in seeds:
        directory = out / f"seed-{seed}"
        directory.mkdir(exist_ok=True)
        workload = generate_real_workload(
            args.jobs, args.gpus, table, minutes=args.minutes, seed=seed
        )
        write_native(workload, directory / "workload.jsonl")
        entry: dict[str, Any] = {"policies": {}}
        digests: dict[str, list[str | None]] = {}
        for index, policy in enumerate(p.strip() for p in args.policies.split(",") if p.strip()):
            run_dir = directory / f"run-{policy}"
            if (run_dir / "result.json").exists():
                raise SystemExit(f"{run_dir} holds a run already; choose another --out")
            if (index or seed != seeds[0]) and not args.throughputs:
                # this machine's speed drifts over minutes: each run is planned, and predicted,
                # with a profile measured just before it, as `cluster run` re-plans its workload
                # with the machine's profile when it starts
                table = _profile(args)
                workload = load_workload(directory / "workload.jsonl", table)
            write_native(workload, run_dir.with_name(f"planned-{policy}.jsonl"))
            print(f"seed {seed}: physical run under {policy} ...", flush=True)
            config = RuntimeConfig(
                gpus=args.gpus, round_seconds=args.round_seconds, run_dir=run_dir
            )
            physical = run_workload(workload, policy, config, progress=_progress()).to_dict()
            print()
            digests[policy] = physical["final_digest"]
            entry["policies"][policy] = _compare(
                workload, policy, physical, args.round_seconds, run_dir, args.noise_seeds
            )
        if len(digests) > 1:
            same = sum(1 for v in zip(*digests.values(), strict=True) if len(set(v)) == 1)
            entry["digests_identical_across_policies"] = f"{same}/{len(workload)}"
        report["workloads"][str(seed)] = entry
        atomic_write_text(out / "fidelity.json", json.dumps(report, indent=1) + "\n")
    report["wall_minutes"] = (time.monotonic() - started) / 60.0
    atomic_write_text(out / "fidelity.json", json.dumps(report, indent=1) + "\n")
    return report


def _profile(args: argparse.Namespace) -> ThroughputTable:
    """This machine's profile, measured now (and cached, as ``shockwave cluster profile``)."""
    print("profiling this machine ...", flush=True)
    return refresh_machine_profile(seconds=args.profile_seconds)


def _replay(args: argparse.Namespace) -> dict[str, Any]:
    """The report of an earlier run's directory, its simulated rows computed anew."""
    directory: Path = args.replay
    previous = json.loads((directory / "fidelity.json").read_text())
    report = {key: value for key, value in previous.items() if key != "workloads"}
    report["workloads"] = {}
    for seed, entry in previous["workloads"].items():
        seed_dir = directory / f"seed-{seed}"
        fresh: dict[str, Any] = {k: v for k, v in entry.items() if k != "policies"}
        fresh["policies"] = {}
        for policy in entry["policies"]:
            planned = seed_dir / f"planned-{policy}.jsonl"  # as the run was planned
            workload = load_workload(planned if planned.exists() else seed_dir / "workload.jsonl")
            run_dir = seed_dir / f"run-{policy}"
            physical = read_run_result(run_dir / "result.json")
            fresh["policies"][policy] = _compare(
                workload, policy, physical, previous["round_seconds"], run_dir, args.noise_seeds
            )
        report["workloads"][seed] = fresh
    return report


def _progress() -> Any:
    last = [-1]

    def show(status: RunStatus) -> None:
        if status.round_index != last[0]:
            last[0] = status.round_index
            done = status.count("done", "failed")
            sys.stdout.write(
                f"\r  round {status.round_index:4d}  t={status.elapsed_seconds:6.0f} s  "
                f"done {done}/{len(status.jobs)}"
            )
            sys.stdout.flush()

    return show


def _compare(
    workload: Workload,
    policy: str,
    physical: dict[str, Any],
    round_seconds: float,
    run_dir: Path,
    noise_seeds: int,
) -> dict[str, Any]:
    """The physical run (a ``result.json`` object, its directory) against the prediction and
    the replays."""
    costs = workload.costs
    restart = costs.restart_seconds if costs is not None else 0.0
    overhead = costs.round_overhead_seconds if costs is not None else 0.0
    gpus = int(physical["gpus"])
    table = workload.throughputs or ThroughputTable({})

    def sim(
        w: Workload, actual: Workload | None = None, noise: float = 0.0, seed: int = 0
    ) -> SimulationResult:
        config = SimulationConfig(
            gpus=gpus,
            round_seconds=round_seconds,
            restart_penalty_seconds=restart,
            round_overhead_seconds=overhead,
            throughput_noise=noise,
            seed=seed,
        )
        return simulate(w, policy, config, actual=actual)

    realized = realized_workload(workload, physical, table=table)
    measured = realized_workload(workload, physical, durations="measured", table=table)
    steps = {
        PREDICTION: sim(workload),
        "replay: realized": sim(realized),
        "replay: + measured throughput": sim(measured),
        "replay: + planned view": sim(workload, actual=measured),
    }
    sigma = _throughput_sigma(Journal(run_dir / "journal.sqlite", create=False))
    noisy = [
        _metrics(sim(workload, measured, sigma, seed).to_dict()) for seed in range(noise_seeds)
    ]
    ratios = []
    for job, rates in zip(workload.jobs, physical["measured_throughput"], strict=True):
        for size, rate in rates.items():
            if (job.model, int(size), job.gang_size) in table:
                ratios.append(rate / table.isolated(job.model, int(size), job.gang_size))
    off_plan = sum(
        int((job.batch_sizes != real.batch_sizes).sum())
        for job, real in zip(workload.jobs, realized.jobs, strict=True)
    )
    total_epochs = sum(job.num_epochs for job in workload.jobs)
    starts = [s[1] for job in physical["start_seconds"] for s in job if s[1] > 0]
    turnaround = [
        w + d
        for w, d in zip(
            physical["round_boundary_wait"], physical["round_decision_seconds"], strict=False
        )
    ]
    simulated = {name: _metrics(result.to_dict()) for name, result in steps.items()}
    if noisy:
        simulated[f"replay: + throughput noise (median of {noise_seeds})"] = {
            key: statistics.median(m[key] for m in noisy) for key in noisy[0]
        }
    return {
        "physical": _metrics(physical),
        "simulated": simulated,
        "status": physical.get("status", "completed"),
        "noise_sigma": sigma,
        "launches": sum(physical["launches"]),
        "preemptions": sum(physical["preemptions"]),
        "crash_restarts": sum(physical["restarts"]),
        "failed_jobs": physical["failed_jobs"],
        "restart_seconds_predicted": restart,
        "restart_seconds_measured": statistics.fmean(starts) if starts else 0.0,
        "round_overhead_ms_predicted": 1000 * overhead,
        "round_overhead_ms_measured": 1000 * statistics.fmean(turnaround) if turnaround else 0.0,
        "throughput_ratio_median": statistics.median(ratios) if ratios else math.nan,
        "throughput_ratio_min": min(ratios, default=math.nan),
        "throughput_ratio_max": max(ratios, default=math.nan),
        "epochs_off_plan": f"{off_plan}/{total_epochs}",
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


def _diff(m: dict[str, float], physical: dict[str, float]) -> tuple[float, float, float]:
    """Simulated minus physical: makespan and average JCT relative (%), unfair fraction (pt)."""
    return (
        100 * (m["makespan"] / physical["makespan"] - 1),
        100 * (m["avg_jct"] / physical["avg_jct"] - 1),
        100 * (m["unfair_fraction"] - physical["unfair_fraction"]),
    )


def render(report: dict[str, Any]) -> str:
    costs = report.get("costs") or {}
    lines = [
        f"Workloads: {report['jobs']} jobs each of the bundled families on {report['gpus']} CPU "
        f"slots, generated for about {report['minutes']:g} minutes, rounds of "
        f"{report['round_seconds']:g} s; generator seeds {', '.join(report['workloads'])} "
        "(fresh: never used to calibrate or tune anything). Planned with this machine's "
        f"profile, measured before the runs ({report['throughputs']}; restart "
        f"{costs.get('restart_seconds', 0):.2f} s, round turnaround "
        f"{1000 * costs.get('round_overhead_seconds', 0):.0f} ms).",
        "",
        "**Predictions** (`shockwave simulate` of the workload file alone, before the run) "
        "against the physical runs; differences are predicted minus physical:",
        "",
        "| seed | policy | physical makespan (s) | predicted | diff | physical avg JCT (s) | "
        "predicted | diff | physical unfair | predicted | diff | physical worst rho | "
        "predicted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = [0.0, 0.0, 0.0]
    for seed, entry in report["workloads"].items():
        for policy, data in entry["policies"].items():
            p, m = data["physical"], data["simulated"][PREDICTION]
            d = _diff(m, p)
            worst = [max(w, abs(x)) for w, x in zip(worst, d, strict=True)]
            lines.append(
                f"| {seed} | {policy} | {p['makespan']:,.0f} | {m['makespan']:,.0f} | "
                f"{d[0]:+.1f} % | {p['avg_jct']:,.0f} | {m['avg_jct']:,.0f} | {d[1]:+.1f} % | "
                f"{100 * p['unfair_fraction']:.1f} % | {100 * m['unfair_fraction']:.1f} % | "
                f"{d[2]:+.1f} pt | {p['worst_ftf']:.2f} | {m['worst_ftf']:.2f} |"
            )
    lines += [
        "",
        f"Largest prediction error: makespan {worst[0]:.1f} %, average JCT {worst[1]:.1f} %, "
        f"unfair fraction {worst[2]:.1f} points.",
        "",
        "**Replays** (explanations, not predictions: each uses what the physical run measured, "
        "the batch size of every epoch and the jobs' measured throughput):",
        "",
        "| seed | policy | row | makespan (s) | avg JCT (s) | unfair | worst rho | makespan diff "
        "| avg JCT diff | unfair diff |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed, entry in report["workloads"].items():
        for policy, data in entry["policies"].items():
            p = data["physical"]
            for name, m in data["simulated"].items():
                if name == PREDICTION:
                    continue
                d = _diff(m, p)
                lines.append(
                    f"| {seed} | {policy} | {name} | {m['makespan']:,.0f} | {m['avg_jct']:,.0f} | "
                    f"{100 * m['unfair_fraction']:.1f} % | {m['worst_ftf']:.2f} | {d[0]:+.1f} % "
                    f"| {d[1]:+.1f} % | {d[2]:+.1f} pt |"
                )
    lines += [
        "",
        "Measured in each run:",
        "",
        "| seed | policy | status | launches | preemptions | crash restarts | restart s "
        "(profile / run) | round turnaround ms (profile / run) | measured / profiled "
        "throughput, median [min, max] | epochs off the plan |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed, entry in report["workloads"].items():
        for policy, d in entry["policies"].items():
            lines.append(
                f"| {seed} | {policy} | {d['status']} | {d['launches']} | {d['preemptions']} | "
                f"{d['crash_restarts']} | {d['restart_seconds_predicted']:.2f} / "
                f"{d['restart_seconds_measured']:.2f} | {d['round_overhead_ms_predicted']:.0f} / "
                f"{d['round_overhead_ms_measured']:.0f} | {d['throughput_ratio_median']:.3f} "
                f"[{d['throughput_ratio_min']:.3f}, {d['throughput_ratio_max']:.3f}] | "
                f"{d['epochs_off_plan']} |"
            )
    digests = [
        f"seed {seed}: {entry['digests_identical_across_policies']}"
        for seed, entry in report["workloads"].items()
        if "digests_identical_across_policies" in entry
    ]
    if digests:
        lines += [
            "",
            "Jobs whose final digests are identical under every policy (preemption never "
            f"changes a job's result): {'; '.join(digests)}.",
        ]
    if "wall_minutes" in report:
        lines.append(f"Total wall time {report['wall_minutes']:.0f} minutes.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
