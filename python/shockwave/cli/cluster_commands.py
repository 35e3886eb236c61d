"""``shockwave cluster``: measure, generate and run real workloads.

* ``cluster profile -o T.json``: measure the bundled families' throughput on this machine;
* ``cluster generate --jobs N --gpus G [--minutes M] [--seed S] -o W.jsonl``: a runnable workload;
* ``cluster run --workload W.jsonl --gpus G --policy P ...``: run it for real (``--cluster
  v100:1,p100:1`` instead of ``--gpus``: typed slots, a typed policy);
  ``cluster run --resume DIR``: continue a run whose scheduler was killed or interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from shockwave.atomic import check_writable
from shockwave.catalog import ADAPTATION_MODES
from shockwave.cli import exit_codes
from shockwave.cli.paths import check_distinct_paths
from shockwave.cli.simulate_commands import render_summary
from shockwave.config_file import RUNTIME_KEYS, ConfigFile, read_config
from shockwave.errors import DataError, OutputError, UsageError
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.registry import resolve_typed_policy
from shockwave.heterogeneous.workload_check import check_workload_on_cluster
from shockwave.policies import POLICIES, resolve_policy_name
from shockwave.runtime import JournalError, RunDirectoryBusyError
from shockwave.runtime.config import DEFAULT_RUN_ROUND_SECONDS, EXECUTORS, RuntimeConfig
from shockwave.runtime.machine_load import OTHER_LOAD_WARNING_CORES
from shockwave.throughputs import ThroughputTable
from shockwave.traces import load_throughputs, load_workload, write_native

if TYPE_CHECKING:
    from shockwave.runtime import RunResult, RunStatus


#: A run whose jobs trained this far from the table's speed (relative) prints a note.
PROFILE_DRIFT_WARNING = 0.15


def register(subparsers: Any) -> None:
    """Add the ``cluster`` command group."""
    cluster = subparsers.add_parser(
        "cluster",
        help="run real training jobs under a policy (profile, generate, run)",
        description="Real runs: every job is a real training process that the scheduler leases "
        "GPU slots to, round by round (see docs/runtime.md).",
    )
    commands = cluster.add_subparsers(dest="cluster_command", required=True, metavar="COMMAND")

    profile = commands.add_parser(
        "profile",
        help="measure the bundled families' throughput on this machine",
        description="Measure the throughput (iterations/s) of every bundled family at each of "
        "its batch sizes on 1, 2, ... slots, on a full machine, and what a real run costs here "
        "(a restart, a round's turnaround); cache it as this machine's profile (used by "
        "'cluster generate', 'cluster run' and '--throughputs machine') and write it in the "
        "original artifact's JSON layout with -o.",
    )
    profile.add_argument(
        "-o", "--output", metavar="T.json", help="also write the table here (it is cached anyway)"
    )
    profile.add_argument("--families", metavar="A,B", help="families to measure (default: all)")
    profile.add_argument(
        "--gangs", metavar="1,2", help="gang sizes (default: powers of two up to the cores, <= 8)"
    )
    profile.add_argument(
        "--seconds", type=float, default=2.0, help="measuring time per entry (default 2 s)"
    )
    profile.add_argument(
        "--alone",
        action="store_true",
        help="measure each entry alone (default: on a full machine, as jobs of a run train)",
    )
    profile.set_defaults(handler=_profile)

    generate = commands.add_parser(
        "generate",
        help="write a small runnable workload of the bundled families",
        description="Draw a runnable workload (native .jsonl): each job names its family, "
        "adaptation mode, epochs, gang size, arrival and seed, sized so that a run takes about "
        "--minutes.",
    )
    generate.add_argument("--jobs", type=int, required=True, help="number of jobs")
    generate.add_argument("--gpus", type=int, required=True, help="GPU slots of the cluster")
    generate.add_argument(
        "--minutes", type=float, default=10.0, help="about how long a run takes (default 10)"
    )
    generate.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    generate.add_argument(
        "--throughputs",
        default="machine",
        metavar="T.json",
        help="throughput table from 'cluster profile' (default 'machine': this machine's own "
        "profile, measured once and cached; 'cluster' is the bundled table of another machine)",
    )
    generate.add_argument("--families", metavar="A,B", help="families to draw (default: all)")
    generate.add_argument(
        "--modes",
        metavar="A,B",
        help=f"adaptation modes to draw (default: {_list(ADAPTATION_MODES)})",
    )
    generate.add_argument(
        "--load", type=float, default=0.8, help="share of the cluster the work fills (0.8)"
    )
    generate.add_argument("-o", "--output", required=True, metavar="W.jsonl")
    generate.set_defaults(handler=_generate)

    run = commands.add_parser(
        "run",
        help="run a workload of real jobs under a policy",
        description="Run every job of a runnable workload for real, on --gpus slots (real "
        "GPUs, or one CPU core per slot on a machine without GPUs), scheduled in rounds by a "
        "policy. Writes the result (a simulation result's metrics plus restarts, preemptions, "
        "final digests, measured throughputs) and a journal to resume from.",
    )
    run.add_argument("--workload", metavar="W.jsonl", help="the runnable workload")
    slots = run.add_mutually_exclusive_group()
    slots.add_argument("--gpus", type=int, help="GPU slots (a homogeneous cluster)")
    slots.add_argument(
        "--cluster",
        metavar="SPEC",
        help="typed slots of a heterogeneous cluster, 'v100:1,p100:1' (a typed policy: "
        "gavel, themis, fifo, mst, ossp, ...; each gang runs on slots of the type it chose)",
    )
    run.add_argument("--policy", help=f"scheduling policy: {', '.join(POLICIES)}")
    run.add_argument(
        "--executor",
        choices=EXECUTORS,
        help="'local' (default: child processes) or 'ray' (needs shockwave[ray])",
    )
    run.add_argument("--ray-address", metavar="A", help="join this Ray cluster (ray executor)")
    run.add_argument(
        "--round-seconds",
        type=float,
        help=f"round length in seconds (default {DEFAULT_RUN_ROUND_SECONDS:g})",
    )
    run.add_argument(
        "--throughputs",
        metavar="T.json",
        help="the throughput table the plans and finish-time fairness rest on (default "
        "'machine': this machine's own profile, measured once and cached); the workload's "
        "planned epoch durations are recomputed from it",
    )
    run.add_argument(
        "--config",
        metavar="FILE",
        help="TOML or JSON: a table per policy with its parameters, and an optional [runtime] "
        "table (" + ", ".join(RUNTIME_KEYS) + "; a setting there may not also be given as an "
        "option); docs/simulator.md, 'Configuration files'",
    )
    run.add_argument("--max-restarts", type=int, help="crashes before a job is failed (3)")
    run.add_argument(
        "--run-dir",
        metavar="DIR",
        help="checkpoints, logs, journal (default: shockwave-runs/<workload>-<policy>-<time>)",
    )
    run.add_argument("--output", metavar="R.json", help="also write the result here")
    run.add_argument(
        "--resume", metavar="DIR", help="continue the run in DIR (all settings come from it)"
    )
    run.set_defaults(handler=_run)

    realized = commands.add_parser(
        "realized",
        help="write what a run's jobs actually did as a workload to simulate",
        description="Rebuild a finished run's workload with the batch size every epoch really "
        "ran at, and epoch durations from the throughput table or from the throughput measured "
        "during the run, so that 'shockwave simulate' replays the same jobs.",
    )
    realized.add_argument("run_dir", metavar="RUN_DIR", help="a finished run's directory")
    realized.add_argument("-o", "--output", required=True, metavar="OUT.jsonl")
    realized.add_argument(
        "--durations",
        choices=("table", "measured"),
        default="table",
        help="epoch durations from the table (default) or from the run's measurements",
    )
    realized.add_argument("--throughputs", metavar="T.json", help="the table (default: the run's)")
    realized.set_defaults(handler=_realized)


# ------------------------------------------------------------------------------- profile
def _profile(args: argparse.Namespace) -> int:
    from shockwave.runtime.machine import (
        measure_costs,
        profile_cache_path,
        refresh_machine_profile,
    )
    from shockwave.runtime.throughput_measurement import (
        measure_family_throughputs,
        write_throughput_file,
    )

    output = _writable(args.output) if args.output else None
    families = _split(args.families)
    gangs = [_integer(g, "--gangs") for g in _split(args.gangs)] if args.gangs else None
    if not args.seconds > 0:
        raise ValueError(f"--seconds must be > 0, got {args.seconds}")
    started = time.monotonic()

    def show(family: str, batch_size: int, gang: int, rate: float) -> None:
        print(f"{family:16s} batch {batch_size:4d}  gang {gang}  {rate:10.1f} it/s", flush=True)

    if families or gangs or args.alone:  # a partial or alone-measured table is not the profile
        table = measure_family_throughputs(
            families or None, gangs, seconds=args.seconds, contended=not args.alone, progress=show
        )
        table = dataclasses.replace(table, costs=measure_costs(table))
    else:
        table = refresh_machine_profile(seconds=args.seconds, progress=show)
        print(f"cached as this machine's profile: {profile_cache_path()}")
    costs = table.costs
    if costs is not None:
        print(
            f"runtime costs: restart {costs.restart_seconds:.2f} s, round turnaround "
            f"{costs.round_overhead_seconds:.3f} s"
        )
    if output is not None:
        write_throughput_file(table, output)
        print(f"wrote {output} ({len(table.entries)} entries)")
    print(f"measured in {time.monotonic() - started:.0f} s")
    return 0


def _table(name: str) -> ThroughputTable:
    """A throughput table by name or path; ``machine`` is measured first if it never was."""
    if name == "machine":
        from shockwave.runtime.machine import machine_profile

        return machine_profile(note=lambda line: print(line, file=sys.stderr, flush=True))
    return load_throughputs(name)


# ------------------------------------------------------------------------------ generate
def _generate(args: argparse.Namespace) -> int:
    from shockwave.runtime.generate import generate_real_workload

    output = _writable(args.output)
    if output.suffix != ".jsonl":
        raise ValueError(f"-o {args.output}: a runnable workload is a native .jsonl file")
    table = _table(args.throughputs)
    modes = _split(args.modes) or list(ADAPTATION_MODES)
    workload = generate_real_workload(
        args.jobs,
        args.gpus,
        table,
        minutes=args.minutes,
        seed=args.seed,
        load=args.load,
        families=_split(args.families) or None,
        modes=modes,  # type: ignore[arg-type]  # validated by the generator
    )
    write_native(workload, output)
    work = sum(job.exclusive_gpu_seconds for job in workload.jobs)
    print(
        f"wrote {output}: {len(workload)} jobs, {work / 60:.1f} GPU-minutes of exclusive work "
        f"on {args.gpus} GPUs (about {work / 60 / args.gpus:.1f} minutes of a full cluster), "
        f"planned with {table.source}"
    )
    return 0


# ------------------------------------------------------------------------------ realized
def _realized(args: argparse.Namespace) -> int:
    from shockwave.runtime import RESULT_NAME, WORKLOAD_NAME
    from shockwave.runtime.realized import realized_workload
    from shockwave.runtime.result import read_run_result

    output = _writable(args.output)
    run_dir = Path(args.run_dir)
    workload = load_workload(run_dir / WORKLOAD_NAME)
    result = read_run_result(run_dir / RESULT_NAME)
    if result["incomplete"]:
        raise ValueError(f"{run_dir}: the run is incomplete (resume it first)")
    table = load_throughputs(args.throughputs) if args.throughputs else None
    replay = realized_workload(workload, result, durations=args.durations, table=table)
    write_native(replay, output)
    changed = sum(
        int((a.batch_sizes != b.batch_sizes).sum())
        for a, b in zip(workload.jobs, replay.jobs, strict=True)
    )
    total = sum(job.num_epochs for job in workload.jobs)
    print(f"wrote {output}: {len(replay)} jobs, {changed} of {total} epochs off the plan")
    return 0


# ----------------------------------------------------------------------------------- run
def _run(args: argparse.Namespace) -> int:
    from shockwave.runtime import resume_run

    output = _writable(args.output, "--output").absolute() if args.output else None
    check_distinct_paths({"--output": args.output}, {"--workload": args.workload})
    display = LiveDisplay(sys.stderr)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.resume:
            extra = [
                flag
                for flag, value in (
                    ("--workload", args.workload),
                    ("--gpus", args.gpus),
                    ("--policy", args.policy),
                    ("--throughputs", args.throughputs),
                    ("--config", args.config),
                    ("--run-dir", args.run_dir),
                )
                if value is not None
            ]
            if extra:
                raise ValueError(
                    f"--resume takes its settings from the run directory; drop {', '.join(extra)}"
                )
            if output is not None:
                raise ValueError("--resume writes the run's own --output; drop --output")
            result = resume_run(args.resume, progress=display.update)
        else:
            result = _start_run(args, display, output)
    except JournalError as exc:
        # a busy run directory is an output error (4) and a missing, corrupt or tampered
        # journal of a --resume an input error (3), by their kinds; a fresh run in a directory
        # that holds a journal already is a usage error (2: resume it instead)
        if args.resume or isinstance(exc, RunDirectoryBusyError):
            raise
        raise UsageError(str(exc)) from None
    finally:
        display.close()
        signal.signal(signal.SIGTERM, previous)
    print(render_run(result))
    ratio = result.profile_ratio
    if ratio is not None and abs(ratio - 1.0) > PROFILE_DRIFT_WARNING:
        print(
            f"note: the jobs trained at {ratio:.2f} times the speed of the throughput table "
            "(this machine's speed drifts): run 'shockwave cluster profile' again before a "
            "run you want to predict",
            file=sys.stderr,
        )
    load = result.machine_load
    if load is not None and load["other_cores"] > OTHER_LOAD_WARNING_CORES:
        print(
            f"note: other programs used {load['other_cores']:.2f} of this machine's "
            f"{load['cores']:.0f} cores during the run: the jobs shared the machine, so their "
            "speeds (and the run's times) are not those of its profile",
            file=sys.stderr,
        )
    if result.output is not None:
        print(f"wrote {result.output}")
    print(f"run directory: {result.run_dir} (result.json, journal.sqlite, logs/, checkpoints/)")
    if result.incomplete:
        print(
            f"interrupted: continue with 'shockwave cluster run --resume {result.run_dir}'",
            file=sys.stderr,
        )
        return exit_codes.INTERRUPTED
    return exit_codes.RUN_FAILED if result.failed_jobs else exit_codes.OK


def _start_run(args: argparse.Namespace, display: LiveDisplay, output: Path | None) -> RunResult:
    from shockwave.runtime import run_workload
    from shockwave.runtime.executor import check_runnable

    missing = [
        flag
        for flag, value in (
            ("--workload", args.workload),
            ("--gpus or --cluster", args.gpus if args.cluster is None else args.cluster),
            ("--policy", args.policy),
        )
        if value is None
    ]
    if missing:
        raise ValueError(f"cluster run needs {', '.join(missing)} (or --resume DIR)")
    cluster = None if args.cluster is None else ClusterSpec.parse(args.cluster)
    name = (
        resolve_policy_name(args.policy) if cluster is None else resolve_typed_policy(args.policy)
    )
    options = {
        "round_seconds": args.round_seconds,
        "executor": args.executor,
        "ray_address": args.ray_address,
        "max_restarts": args.max_restarts,
    }
    given = {key: value for key, value in options.items() if value is not None}
    config_file = read_config(args.config, typed=cluster is not None) if args.config else None
    parameters: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    if cluster is not None:
        given["cluster"] = cluster
    if config_file is not None:
        parameters = dict(config_file.policies.get(name, {}))
        settings = _runtime_settings(config_file)
        for key in set(given) & set(settings):
            flag = f"--{key.replace('_', '-')}"
            raise UsageError(f"{args.config}: {key} is set there and by {flag}; keep one")
        # a bad parameter fails now, before anything is written
        if cluster is None:
            config_file.policy(name)
        else:
            config_file.typed_policy(name, 0)
    if {**settings, **given}.get("ray_address") and {**settings, **given}.get("executor") != "ray":
        raise ValueError("--ray-address needs --executor ray")
    workload_path = Path(args.workload).absolute()
    stem = workload_path.stem
    run_dir = Path(args.run_dir or f"shockwave-runs/{stem}-{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--run-dir {run_dir}: exists and is not a directory")
    paths: dict[str, Any] = {"run_dir": run_dir, "workdir": workload_path.parent, "output": output}
    config = RuntimeConfig(gpus=args.gpus or 0, **given, **paths)  # the options alone (status 2)
    if config_file is not None and settings:  # a refusal is the config's (status 3)
        shared = {k: v for k, v in settings.items() if k not in config_file.runtime}
        config = config_file.runtime_config(gpus=args.gpus or 0, **given, **paths, **shared)
    if output is not None and output == config.run_dir / "result.json":
        raise OutputError(f"--output {output}: the run directory's own result file")
    workload = load_workload(workload_path)  # a bad job fails here, before any profiling
    if cluster is not None:  # unknown types (status 2), jobs no type can run (status 3)
        check_workload_on_cluster(workload, cluster)
    for job in workload.jobs:
        try:
            check_runnable(job, config.gpus, config.workdir)
        except ValueError as exc:
            raise DataError(f"{args.workload}: {exc}") from None
    table = _table(args.throughputs or "machine")
    workload = load_workload(workload_path, table)
    print(f"throughputs: {table.source}", file=sys.stderr, flush=True)
    return run_workload(
        workload, name, config, policy_parameters=parameters, progress=display.update
    )


def _runtime_settings(config_file: ConfigFile) -> dict[str, Any]:
    """The ``[runtime]`` settings of a ``--config`` file, with the one ``[simulation]`` setting
    that applies to real runs too (``recompute_interval_seconds``)."""
    settings = dict(config_file.runtime)
    for key, value in config_file.simulation.items():
        if key != "recompute_interval_seconds":
            raise config_file.document.error(
                ("simulation", key),
                f"{key!r} does not apply to real runs (their settings go in [runtime]: "
                f"{', '.join(RUNTIME_KEYS)})",
            )
        if key in settings:
            raise config_file.document.error(
                ("simulation", key), "is set in [runtime] too; keep one"
            )
        settings[key] = value
    return settings


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# -------------------------------------------------------------------------------- output
class LiveDisplay:
    """A status line while a run goes on: redrawn on a terminal, one line per round otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._last = 0.0
        self._round = -1
        self._shown = False

    def update(self, status: RunStatus) -> None:
        now = time.monotonic()
        new_round = status.round_index != self._round
        if self.tty and not new_round and now - self._last < 0.25:
            return
        if not self.tty and not new_round:
            return
        self._round = status.round_index
        self._last = now
        ended = status.count("done", "failed")
        crashes = sum(job.crashes for job in status.jobs)
        line = (
            f"round {status.round_index:4d}  t={status.elapsed_seconds:7.0f} s  "
            f"slots {status.slots_busy}/{status.gpus}  "
            f"running {status.count('running', 'boundary')}  "
            f"done {ended}/{len(status.jobs)}  failed {status.count('failed')}  "
            f"crashes {crashes}"
        )
        trouble = [
            job for job in status.jobs if job.error and (job.crashes or job.phase == "failed")
        ]
        if trouble:  # the latest error of a job that crashes or failed, never hidden
            job = trouble[-1]
            what = "FAILED" if job.phase == "failed" else f"crash {job.crashes}"
            line += f"  [job {job.job_id} {what}: {_shorten(job.error or '', 70)}]"
        if self.tty:
            self.stream.write("\r" + line.ljust(100))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def render_run(result: RunResult) -> str:
    """The summary of a real run: what it covers first, then the simulation summary and what
    only reality has."""
    lines = []
    if result.status != "completed":
        lines.append(f"RUN {result.status.upper()}: aggregates below are over {result.aggregates}")
        for job_id, error in zip(result.job_ids, result.errors, strict=True):
            if job_id in result.failed_jobs:
                lines.append(f"  job {job_id} failed: {error}")
    lines.append(render_summary(result))
    launches = sum(result.launches)
    delays = [s[1] for starts in result.start_seconds for s in starts if s[1] > 0]
    waits = result.round_boundary_wait
    rows = [
        ("executor", f"{result.executor} ({result.slot_kind} slots)"),
        ("throughputs", result.throughputs["source"]),
        (
            "measured / table",
            "-" if result.profile_ratio is None else f"{result.profile_ratio:.2f} (median)",
        ),
        (
            "other load",
            "-"
            if result.machine_load is None
            else f"{result.machine_load['other_cores']:.2f} of "
            f"{result.machine_load['cores']:.0f} cores (other programs during the run)",
        ),
        (
            "processes",
            f"{launches} launches, {sum(result.preemptions)} preemptions, "
            f"{sum(result.restarts)} crash restarts",
        ),
        (
            "failed jobs",
            f"{len(result.failed_jobs)} (ids {', '.join(map(str, result.failed_jobs))})"
            if result.failed_jobs
            else "none",
        ),
        (
            "start delay",
            f"mean {sum(delays) / len(delays):.2f} s over {len(delays)} starts" if delays else "-",
        ),
        (
            "boundary wait",
            f"mean {1000 * sum(waits) / len(waits):.0f} ms, max {1000 * max(waits):.0f} ms"
            if waits
            else "-",
        ),
    ]
    if result.incomplete:
        rows.append(("status", "INCOMPLETE (interrupted): aggregates over finished jobs"))
    width = max(len(k) for k, _ in rows) if rows else 0
    lines += [f"{k.ljust(max(width, 19))}  {v}" for k, v in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- helpers
def _shorten(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _list(values: Any) -> str:
    return ",".join(str(v) for v in values)


def _integer(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{flag}: {text!r} is not an integer") from None


def _writable(path_text: str, flag: str = "-o") -> Path:
    """Check an output path before any work starts (exit 4: a directory, no such directory,
    no permission)."""
    path = Path(path_text)
    try:
        check_writable(path)
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot be written ({exc.strerror})") from None
    return path
