"""``shockwave simulate`` and ``shockwave compare``: replay a trace under one or more policies."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from shockwave.metrics import SimulationResult
from shockwave.policies import POLICIES, policy_parameters, resolve_policy_name
from shockwave.sim import MECHANICS, SimulationConfig, simulate
from shockwave.sim.config import DEFAULT_ROUND_SECONDS
from shockwave.traces import load_workload
from shockwave.workload import Workload

#: Keys of the optional ``[simulation]`` table of a ``--config`` file.
SIMULATION_KEYS = (
    "restart_penalty_seconds",
    "throughput_noise",
    "recompute_interval_seconds",
    "max_rounds",
)


def register(subparsers: Any) -> None:
    """Add the ``simulate`` and ``compare`` commands."""
    simulate_parser = subparsers.add_parser(
        "simulate",
        help="replay a trace on a cluster under one policy",
        description="Simulate a workload on G identical GPUs scheduled in rounds and report "
        "makespan, job completion times, finish-time fairness and utilisation.",
    )
    _common_arguments(simulate_parser)
    simulate_parser.add_argument(
        "--policy",
        required=True,
        help=f"scheduling policy: {', '.join(POLICIES)}",
    )
    simulate_parser.add_argument(
        "--output", metavar="RESULTS.json", help="write every metric (and per-job lists) as JSON"
    )
    simulate_parser.set_defaults(handler=_simulate)

    compare = subparsers.add_parser(
        "compare",
        help="replay a trace under several policies and compare them",
        description="Run the same workload under several policies; print a table with each "
        "metric and its ratio to the first policy's.",
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
        "--output", metavar="RESULTS.json", help="write every policy's metrics as a JSON list"
    )
    compare.set_defaults(handler=_compare)


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, metavar="FILE", help=".trace or native .jsonl")
    parser.add_argument(
        "--throughputs",
        metavar="FILE",
        help="throughput JSON (or 'tacc'/'wisr'); required for a .trace",
    )
    parser.add_argument("--gpus", type=int, required=True, help="GPUs in the cluster")
    parser.add_argument(
        "--mechanics",
        choices=MECHANICS,
        default="exact",
        help="'exact' (default): exact profiles, policy every round; 'gavel': the original "
        "simulator's mechanics, quirks included",
    )
    parser.add_argument(
        "--round-seconds",
        type=float,
        default=DEFAULT_ROUND_SECONDS,
        help="round length in seconds (default 120)",
    )
    parser.add_argument(
        "--restart-penalty-seconds",
        type=float,
        metavar="S",
        help="time a (re)started job loses at the start of its round (default 20 s, the "
        "original's; real runs of the bundled jobs measure about 0.3-0.5 s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML or JSON: a table per policy with its parameters, and an optional "
        "[simulation] table (" + ", ".join(SIMULATION_KEYS) + ")",
    )


# --------------------------------------------------------------------------------- commands
def _simulate(args: argparse.Namespace) -> int:
    name = resolve_policy_name(args.policy)
    workload, config, parameters = _prepare(args, [name])
    result = _run(workload, name, config, parameters.get(name, {}))
    print(render_summary(result))
    if args.output:
        Path(args.output).write_text(result.to_json(indent=1) + "\n")
        print(f"wrote {args.output}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    names = [resolve_policy_name(n.strip()) for n in args.policies.split(",") if n.strip()]
    if not names:
        raise ValueError("--policies needs at least one policy")
    if len(set(names)) != len(names):
        raise ValueError(f"--policies lists a policy twice: {args.policies}")
    workload, config, parameters = _prepare(args, names)
    results = [_run(workload, n, config, parameters.get(n, {})) for n in names]
    print(render_comparison(results))
    if args.plots:
        from shockwave.sim.plots import write_plots  # matplotlib: imported lazily

        for path in write_plots(results, Path(args.plots)):
            print(f"wrote {path}")
    if args.output:
        Path(args.output).write_text(json.dumps([r.to_dict() for r in results], indent=1) + "\n")
        print(f"wrote {args.output}")
    return 0


def _prepare(
    args: argparse.Namespace, names: Sequence[str]
) -> tuple[Workload, SimulationConfig, dict[str, dict[str, Any]]]:
    settings: dict[str, Any] = {}
    parameters: dict[str, dict[str, Any]] = {}
    if args.config:
        settings, parameters = read_config(Path(args.config))
    workload = load_workload(args.trace, args.throughputs)
    if args.restart_penalty_seconds is not None:
        if "restart_penalty_seconds" in settings:
            raise ValueError(
                f"{args.config}: restart_penalty_seconds is set there and by "
                "--restart-penalty-seconds; keep one"
            )
        settings["restart_penalty_seconds"] = args.restart_penalty_seconds
    config = SimulationConfig(
        gpus=args.gpus,
        mechanics=args.mechanics,
        round_seconds=args.round_seconds,
        seed=args.seed,
        **settings,
    )
    unused = sorted(set(parameters) - set(names))
    if unused:
        print(
            f"note: --config has parameters for {', '.join(unused)}, not run here", file=sys.stderr
        )
    return workload, config, parameters


def _run(
    workload: Workload, name: str, config: SimulationConfig, parameters: dict[str, Any]
) -> SimulationResult:
    bar = ProgressBar(f"{name} ({config.mechanics})", sys.stderr)
    try:
        return simulate(
            workload,
            name,
            config,
            policy_parameters=parameters,
            progress=bar.update if bar.enabled else None,
        )
    finally:
        bar.close()


# ----------------------------------------------------------------------------------- config
def read_config(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Read a ``--config`` file: ``(simulation settings, {policy: parameters})``.

    Raises:
        ValueError: naming the file and the key, for an unreadable file, an unknown policy, an
            unknown parameter or simulation setting.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read config ({exc.strerror})") from None
    data = _parse_config(path, text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the config must be a table (object) of tables")
    settings: dict[str, Any] = {}
    parameters: dict[str, dict[str, Any]] = {}
    for key, table in data.items():
        if not isinstance(table, dict):
            raise ValueError(f"{path}: [{key}] must be a table of parameters")
        if key == "simulation":
            unknown = sorted(set(table) - set(SIMULATION_KEYS))
            if unknown:
                raise ValueError(
                    f"{path}: unknown [simulation] key {unknown[0]!r} "
                    f"(allowed: {', '.join(SIMULATION_KEYS)})"
                )
            settings = dict(table)
            continue
        try:
            name = resolve_policy_name(key)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        known = policy_parameters(name)
        unknown = sorted(set(table) - set(known))
        if unknown:
            allowed = ", ".join(sorted(known)) or "none"
            raise ValueError(
                f"{path}: policy {name!r} has no parameter {unknown[0]!r} (its parameters: "
                f"{allowed})"
            )
        parameters[name] = dict(table)
    return settings, parameters


def _parse_config(path: Path, text: str) -> Any:
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if path.suffix != ".toml":
        raise ValueError(f"{path}: a config file must end in .toml or .json")
    try:
        toml = importlib.import_module("tomllib")  # standard library from Python 3.11
    except ModuleNotFoundError:
        raise ValueError(f"{path}: reading TOML needs Python 3.11 or newer; use JSON") from None
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None


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
    rows = [
        ("policy", f"{result.policy} ({result.mechanics} mechanics)"),
        (
            "cluster",
            f"{result.gpus} GPUs, rounds of {result.round_seconds:g} s, seed {result.seed}",
        ),
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
