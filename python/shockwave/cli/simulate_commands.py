"""``shockwave simulate`` and ``shockwave compare``: replay a trace under one or more policies."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from shockwave.atomic import check_writable
from shockwave.cli import exit_codes, heterogeneous_commands
from shockwave.cli.paths import check_distinct_paths, write_output
from shockwave.config_file import SIMULATION_KEYS, read_config
from shockwave.errors import DataError, OutputError, UsageError
from shockwave.metrics import SimulationResult
from shockwave.policies import POLICIES, resolve_policy_name
from shockwave.scheduling.config import DEFAULT_ROUND_SECONDS, MECHANICS, SimulationConfig
from shockwave.sim import CheckpointSettings, Simulation
from shockwave.sim.plan_view import check_same_jobs
from shockwave.throughputs import BUNDLED_THROUGHPUTS
from shockwave.traces import load_workload
from shockwave.workload import Workload


def register(subparsers: Any) -> None:
    """Add the ``simulate`` and ``compare`` commands."""
    simulate_parser = subparsers.add_parser(
        "simulate",
        help="replay a trace on a cluster under one policy",
        description="Simulate a workload on G identical GPUs scheduled in rounds and report "
        "makespan, job completion times, finish-time fairness and utilisation. A long run can "
        "save itself (--checkpoint) and be resumed (--resume) with a bit-identical result.",
        epilog=exit_codes.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_arguments(simulate_parser)
    simulate_parser.add_argument(
        "--policy",
        help=f"scheduling policy: {', '.join(POLICIES)}",
    )
    simulate_parser.add_argument(
        "--output",
        metavar="RESULTS.json",
        help="write every metric (and per-job lists) as JSON: the same bytes for the same inputs",
    )
    simulate_parser.add_argument(
        "--timing",
        metavar="TIMING.json",
        help="write the run's wall-clock timing (total and per round in the policy) as JSON",
    )
    simulate_parser.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="save the whole simulation to FILE every --checkpoint-every seconds and on Ctrl-C "
        "(replaced atomically), with --gpus or --cluster; continue it later with --resume FILE",
    )
    simulate_parser.add_argument(
        "--checkpoint-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="wall-clock seconds between two checkpoints (default 60)",
    )
    simulate_parser.add_argument(
        "--resume",
        metavar="FILE",
        help="continue the simulation saved in FILE (it holds the workload, policy and "
        "settings: give none of --trace, --policy, --gpus, --cluster, ...); checkpoints go "
        "on to FILE "
        "unless --checkpoint names another",
    )
    simulate_parser.set_defaults(handler=_simulate)

    compare = subparsers.add_parser(
        "compare",
        help="replay a trace under several policies and compare them",
        description="Run the same workload under several policies; print a table with each "
        "metric and its ratio to the first policy's.",
        epilog=exit_codes.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common_arguments(compare)
    compare.add_argument(
        "--policies",
        required=True,
        metavar="A,B,C",
        help=f"comma-separated policies (the first is the baseline of the ratios): "
        f"{', '.join(POLICIES)}",
    )
    compare.add_argument(
        "--plots",
        metavar="DIR",
        help="write PNG plots (JCT CDF, finish-time-fairness CDF, utilisation over time)",
    )
    compare.add_argument(
        "--output",
        metavar="RESULTS.json",
        help="write every policy's metrics as a JSON list: the same bytes for the same inputs",
    )
    compare.add_argument(
        "--timing",
        metavar="TIMING.json",
        help="write every run's wall-clock timing as a JSON list",
    )
    compare.set_defaults(handler=_compare)


#: Options of a run that a checkpoint already holds (refused with --resume).
_RUN_OPTIONS = ("trace", "throughputs", "gpus", "cluster", "mechanics", "round_seconds", "seed",
                "config", "policy", "actual", "restart_penalty_seconds",
                "round_overhead_seconds")  # fmt: skip


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", metavar="FILE", help=".trace or native .jsonl (required)")
    parser.add_argument(
        "--throughputs",
        metavar="FILE",
        help="throughput JSON (or 'tacc'/'wisr'); required for a .trace",
    )
    parser.add_argument(
        "--gpus", type=int, help="GPUs in the cluster, all alike (this or --cluster is required)"
    )
    parser.add_argument(
        "--cluster",
        metavar="SPEC",
        help="a heterogeneous cluster, e.g. v100:12,p100:12,k80:12 (types of --throughputs, or "
        "of a native .jsonl's per-type profiles): heterogeneity-aware policies under Gavel's "
        "mechanics (the default with --cluster for a .trace) or --mechanics exact (the default "
        "for a .jsonl, whose adapting jobs follow their profile on each type; docs/simulator.md)",
    )
    parser.add_argument(
        "--actual",
        metavar="FILE",
        help="the same jobs as they really ran (for example 'shockwave cluster realized'): "
        "they progress along these profiles while the policy sees --trace's as plans, as in a "
        "real run (exact mechanics)",
    )
    parser.add_argument(
        "--mechanics",
        choices=MECHANICS,
        default=None,
        help="'exact' (default): exact profiles, policy every round; 'gavel': the original "
        "simulator's mechanics, quirks included",
    )
    parser.add_argument(
        "--round-seconds",
        type=float,
        default=None,
        help=f"round length in seconds (default {DEFAULT_ROUND_SECONDS:g})",
    )
    parser.add_argument(
        "--restart-penalty-seconds",
        type=float,
        metavar="S",
        help="time a (re)started job loses at the start of its round (default: the "
        "workload's measured cost if it carries one, as from 'cluster generate', else 20 s, "
        "the original's)",
    )
    parser.add_argument(
        "--round-overhead-seconds",
        type=float,
        metavar="S",
        help="time every running job loses at each round boundary (exact mechanics; default: "
        "the workload's measured cost if it carries one, else 0)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of every random draw (0)")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML or JSON: a table per policy with its parameters, and an optional "
        "[simulation] table (" + ", ".join(SIMULATION_KEYS) + "; a setting there may not "
        "also be given as an option); docs/simulator.md, 'Configuration files'",
    )


# --------------------------------------------------------------------------------- commands
def _simulate(args: argparse.Namespace) -> int:
    if args.checkpoint_every < 0 or not math.isfinite(args.checkpoint_every):
        raise UsageError(f"--checkpoint-every must be >= 0 seconds, got {args.checkpoint_every}")
    checkpoint_path = args.checkpoint or args.resume
    outputs = {"--output": args.output, "--timing": args.timing, "--checkpoint": checkpoint_path}
    # --resume FILE checkpoints on to FILE (by design); every other overlap destroys an input
    check_distinct_paths(
        outputs,
        {**input_files(args), "--resume": args.resume},
        replaces=[("--checkpoint", "--resume")],
    )
    checkpoint = None
    if checkpoint_path:
        checkpoint = CheckpointSettings(checkpoint_path, every_seconds=args.checkpoint_every)
    typed = bool(args.cluster)
    if args.resume:
        given = [f"--{name.replace('_', '-')}" for name in _RUN_OPTIONS if getattr(args, name)]
        if given:
            raise UsageError(
                f"--resume takes the workload, policy and settings from the checkpoint; "
                f"drop {', '.join(given)}"
            )
        check_outputs(outputs)
        typed = heterogeneous_commands.is_typed_checkpoint(args.resume)
    if typed:
        if args.resume:
            typed_simulation = heterogeneous_commands.load_simulation(args.resume)
        else:
            typed_simulation = heterogeneous_commands.new_simulation(args, outputs)
            check_outputs(outputs)
        with _naming_the_checkpoint(checkpoint_path):
            typed_result = typed_simulation.run(checkpoint=checkpoint)
        heterogeneous_commands.report(args, typed_result)
        return 0
    if args.resume:
        try:
            simulation = Simulation.load(args.resume)
        except OSError as exc:
            raise DataError(f"--resume {args.resume}: cannot read ({exc.strerror})") from None
        except ValueError as exc:
            raise DataError(f"--resume {exc}") from None
    else:
        if not args.policy:
            raise UsageError("simulate needs --policy (or --resume FILE)")
        name = resolve_policy_name(args.policy)
        workload, config, parameters = _prepare(args, [name], outputs)
        simulation = Simulation(
            workload,
            name,
            config,
            policy_parameters=parameters.get(name),
            actual=_actual(args, workload),
        )
    with _naming_the_checkpoint(checkpoint_path):
        result = _run(simulation, simulation.policy.name, simulation.config.mechanics, checkpoint)
    print(render_summary(result))
    if args.output:
        _write(args.output, "--output", result.to_json(indent=1) + "\n")
    if args.timing:
        timing = {"policy": result.policy, **result.timing.to_dict()}
        _write(args.timing, "--timing", json.dumps(timing, indent=1) + "\n")
    return 0


@contextmanager
def _naming_the_checkpoint(checkpoint_path: str | None) -> Iterator[None]:
    """On Ctrl-C (after the run saved itself), say where the checkpoint is, then go on."""
    try:
        yield
    except KeyboardInterrupt:
        if checkpoint_path:
            print(
                f"shockwave: the latest checkpoint is {checkpoint_path} (continue with "
                f"--resume {checkpoint_path})",
                file=sys.stderr,
            )
        raise


def _compare(args: argparse.Namespace) -> int:
    if args.cluster:
        return heterogeneous_commands.compare(args)
    names = [resolve_policy_name(n.strip()) for n in args.policies.split(",") if n.strip()]
    if not names:
        raise UsageError("--policies needs at least one policy")
    if len(set(names)) != len(names):
        raise UsageError(f"--policies lists a policy twice: {args.policies}")
    outputs = {"--output": args.output, "--timing": args.timing}
    plots: dict[str, str | None] = {}
    if args.plots:
        plots = {f"--plots ({name})": str(Path(args.plots) / name) for name in PLOT_FILES}
    check_distinct_paths({**outputs, **plots}, input_files(args))
    if args.plots:
        _check_plot_directory(Path(args.plots))
    workload, config, parameters = _prepare(args, names, outputs)
    actual = _actual(args, workload)
    results = []
    for name in names:
        simulation = Simulation(
            workload, name, config, policy_parameters=parameters.get(name), actual=actual
        )
        results.append(_run(simulation, name, config.mechanics, None))
    print(render_comparison(results))
    if args.plots:
        from shockwave.sim.plots import write_plots  # matplotlib: imported lazily

        try:
            written = write_plots(results, Path(args.plots))
        except OSError as exc:
            raise OutputError(f"--plots {args.plots}: cannot write ({exc.strerror})") from None
        for path in written:
            print(f"wrote {path}")
    if args.output:
        text = json.dumps([r.to_dict() for r in results], indent=1) + "\n"
        _write(args.output, "--output", text)
    if args.timing:
        timing = [{"policy": r.policy, **r.timing.to_dict()} for r in results]
        _write(args.timing, "--timing", json.dumps(timing, indent=1) + "\n")
    return 0


#: The files ``compare --plots DIR`` writes into DIR.
PLOT_FILES = ("jct_cdf.png", "ftf_cdf.png", "utilization.png")


def input_files(args: argparse.Namespace) -> dict[str, str | None]:
    """The input files a ``simulate`` or ``compare`` command line names (a bundled throughput
    table's name, ``tacc``, is not a file)."""
    throughputs = args.throughputs if args.throughputs not in BUNDLED_THROUGHPUTS else None
    return {
        "--trace": args.trace,
        "--throughputs": throughputs,
        "--actual": args.actual,
        "--config": args.config,
    }


def check_outputs(outputs: Mapping[str, str | None]) -> None:
    """Check every output path given, before the run starts.

    Raises:
        OutputError: naming the option and the path (a directory, a missing directory, no
            permission, a read-only file system).
    """
    for option, path in outputs.items():
        if path:
            try:
                check_writable(path)
            except OSError as exc:
                raise OutputError(f"{option} {path}: cannot write there ({exc.strerror})") from None


def _check_plot_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--plots {directory}: exists and is not a directory")
    probe = directory / "jct_cdf.png" if directory.exists() else directory
    check_outputs({"--plots": str(probe)})


def _write(path: str, option: str, text: str) -> None:
    write_output(path, option, text)
    print(f"wrote {path}")


def _prepare(
    args: argparse.Namespace, names: Sequence[str], outputs: Mapping[str, str | None]
) -> tuple[Workload, SimulationConfig, dict[str, dict[str, Any]]]:
    """Validate every option, the config and the outputs, then read the workload."""
    if not args.trace:
        raise UsageError("--trace is required")
    if args.gpus is None:
        raise UsageError("--gpus (or --cluster) is required")
    options: dict[str, Any] = {
        "gpus": args.gpus,
        "mechanics": args.mechanics or "exact",
        "round_seconds": DEFAULT_ROUND_SECONDS
        if args.round_seconds is None
        else args.round_seconds,
        "seed": 0 if args.seed is None else args.seed,
        # the command line's options are checked alone first; a penalty of 0 always fits
        "restart_penalty_seconds": args.restart_penalty_seconds or 0.0,
        "round_overhead_seconds": args.round_overhead_seconds or 0.0,
    }
    try:
        config = SimulationConfig(**options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config_file = read_config(args.config) if args.config else None
    settings = dict(config_file.simulation) if config_file is not None else {}
    parameters = {k: dict(v) for k, v in config_file.policies.items()} if config_file else {}
    for key in ("round_seconds", "restart_penalty_seconds", "round_overhead_seconds"):
        flag = f"--{key.replace('_', '-')}"
        if getattr(args, key) is not None and key in settings:
            raise UsageError(f"{args.config}: {key} is set there and by {flag}; keep one")
        if (getattr(args, key) is None and key != "round_seconds") or key in settings:
            del options[key]  # the config's, the workload's, or the default
    check_outputs(outputs)
    workload = load_workload(args.trace, args.throughputs)
    measured = _workload_costs(workload, {**options, **settings})
    if config_file is not None:  # a refusal is the config's (status 3), as it always was
        config = config_file.simulation_config(**options, **measured)
    else:
        try:
            config = SimulationConfig(**options, **measured)
        except (ValueError, TypeError) as exc:
            if measured:
                raise UsageError(
                    f"{exc} (the workload's measured costs; set them explicitly)"
                ) from None
            raise UsageError(str(exc)) from None
    if measured:
        costs = workload.costs
        shown = ", ".join(f"{key} {value:g}" for key, value in measured.items())
        machine = f" (machine {costs.machine})" if costs is not None and costs.machine else ""
        print(f"note: {shown} from the workload's measured costs{machine}", file=sys.stderr)
    if config_file is not None:
        for name in names:  # build each policy once now: a bad value fails before the run
            config_file.policy(name)
        for note in config_file.notes(names):
            print(note, file=sys.stderr)
    return workload, config, parameters


def _workload_costs(workload: Workload, given: Mapping[str, Any]) -> dict[str, Any]:
    """The restart penalty and round overhead the workload carries (measured on the machine that
    planned it, ``shockwave cluster profile``) for the settings that neither the command line
    nor ``--config`` set (the round overhead under the exact mechanics only)."""
    costs = workload.costs
    if costs is None:
        return {}
    out: dict[str, Any] = {}
    if "restart_penalty_seconds" not in given:
        out["restart_penalty_seconds"] = costs.restart_seconds
    if "round_overhead_seconds" not in given and given.get("mechanics") == "exact":
        out["round_overhead_seconds"] = costs.round_overhead_seconds
    return out


def _actual(args: argparse.Namespace, plans: Workload) -> Workload | None:
    """The workload of ``--actual``, checked against the plans (``--trace``)."""
    if not args.actual:
        return None
    actual = load_workload(args.actual, args.throughputs)
    if (args.mechanics or "exact") != "exact":
        raise UsageError("--actual needs the exact mechanics")
    try:
        check_same_jobs(plans, actual)
    except ValueError as exc:
        raise DataError(f"--actual {args.actual}: {exc}") from None
    return actual


def _run(
    simulation: Simulation,
    name: str,
    mechanics: str,
    checkpoint: CheckpointSettings | None,
) -> SimulationResult:
    bar = ProgressBar(f"{name} ({mechanics})", sys.stderr)
    try:
        result = simulation.run(progress=bar.update if bar.enabled else None, checkpoint=checkpoint)
    finally:
        bar.close()
    assert result is not None
    return result


# ---------------------------------------------------------------------------------- output
class ProgressBar:
    """A one-line progress display on a terminal (rounds, jobs finished); silent otherwise."""

    def __init__(self, label: str, stream: TextIO, *, min_interval: float = 0.1) -> None:
        self.label = label
        self.stream = stream
        self.enabled = stream.isatty()
        self.min_interval = min_interval
        self._last = 0.0
        self._shown = False

    def update(self, rounds: int, finished: int, total: int) -> None:
        """Redraw (at most every ``min_interval`` seconds, and on the last job)."""
        now = time.monotonic()
        if now - self._last < self.min_interval and finished < total:
            return
        self._last = now
        width = 30
        filled = width * finished // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {finished}/{total} jobs, round {rounds}")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """End the progress line."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


def render_summary(result: SimulationResult) -> str:
    """The one-screen summary of one run."""
    hours = result.makespan / 3600.0
    typed = getattr(result, "cluster", None)  # a real run on typed slots
    gpus = f"{result.gpus} GPUs" + (f" ({typed})" if typed else "")
    rows = [
        ("policy", f"{result.policy} ({result.mechanics} mechanics)"),
        ("cluster", f"{gpus}, rounds of {result.round_seconds:g} s, seed {result.seed}"),
        ("jobs / rounds", f"{result.jobs} / {result.rounds}"),
        ("makespan", f"{result.makespan:,.1f} s ({hours:.2f} h)"),
        ("JCT mean", f"{result.avg_jct:,.1f} s"),
        ("JCT median / p99", f"{result.median_jct:,.1f} s / {result.p99_jct:,.1f} s"),
        ("worst FTF rho", f"{result.worst_ftf:.5f}"),
        ("unfair (rho > 1.05)", f"{100.0 * result.unfair_fraction:.2f} % of jobs"),
        ("utilisation", f"{100.0 * result.utilization:.2f} %"),
        ("dropped jobs", ", ".join(map(str, result.dropped_jobs)) or "none"),
        (
            "wall time",
            f"{result.wall_seconds:.2f} s (policy {result.policy_seconds_total:.2f} s, "
            f"worst round {1000 * result.policy_seconds_max_round:.1f} ms)",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


#: Columns of the comparison table: (title, value, format, lower is better).
_COLUMNS: tuple[tuple[str, Callable[[SimulationResult], float], str], ...] = (
    ("makespan s", lambda r: r.makespan, "{:,.0f}"),
    ("avg JCT s", lambda r: r.avg_jct, "{:,.0f}"),
    ("p99 JCT s", lambda r: r.p99_jct, "{:,.0f}"),
    ("worst rho", lambda r: r.worst_ftf, "{:.3f}"),
    ("unfair %", lambda r: 100.0 * r.unfair_fraction, "{:.1f}"),
    ("util %", lambda r: 100.0 * r.utilization, "{:.1f}"),
    ("wall s", lambda r: r.wall_seconds, "{:.2f}"),
)


def render_comparison(results: Sequence[SimulationResult]) -> str:
    """A table of the runs' metrics, each with its ratio to the first run's."""
    base = results[0]
    header = ["policy"] + [title for title, _, _ in _COLUMNS]
    lines = []
    for result in results:
        cells = [result.policy]
        for _, value, fmt in _COLUMNS:
            v, b = value(result), value(base)
            ratio = f" ({v / b:.2f}x)" if b not in (0.0,) and result is not base else ""
            cells.append(fmt.format(v) + ratio)
        lines.append(cells)
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in lines)
    out.append(
        f"{base.jobs} jobs, {base.gpus} GPUs, {base.mechanics} mechanics; ratios to {base.policy}"
    )
    return "\n".join(out)
