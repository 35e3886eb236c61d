"""``simulate`` and ``compare`` on a heterogeneous cluster (``--cluster v100:12,p100:12,k80:12``).

Runs a typed cluster (:mod:`shockwave.heterogeneous`) under Gavel's simulator mechanics (the
default for a ``.trace``) or ``--mechanics exact``: the jobs of a ``.trace`` with their
throughput on every type of ``--throughputs``, or the jobs of a native ``.jsonl`` workload along
their epoch profile on every type (adapting jobs included; the exact mechanics by default,
Gavel's with ``--mechanics gavel``), under Gavel's round mechanism and policies (``gavel``,
``themis``, ``mst``, ``ossp``, ``fifo`` and their ``-agnostic`` forms; Gavel's names are
accepted too). ``simulate`` runs a :class:`~shockwave.heterogeneous.checkpoint.TypedSimulation`,
which ``--checkpoint`` saves and ``--resume`` continues (``simulate_commands`` drives both paths).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shockwave.cli.paths import check_distinct_paths, write_output
from shockwave.config_file import read_config
from shockwave.errors import DataError, OutputError, UsageError
from shockwave.heterogeneous import (
    ClusterSpec,
    HeterogeneousConfig,
    HeterogeneousResult,
    TypedJobs,
    make_typed_policy,
    resolve_typed_policy,
    simulate_heterogeneous,
)
from shockwave.heterogeneous.checkpoint import TYPED_CHECKPOINT_KIND, TypedInputs, TypedSimulation
from shockwave.heterogeneous.simulate import TypedMechanics
from shockwave.persistence import state_file_kind
from shockwave.traces import is_native

#: The files ``compare --cluster --plots DIR`` writes.
PLOT_FILES = ("utilization_by_type.png", "gpu_hours_by_type.png")
#: Options of the homogeneous simulator that a typed run does not take.
_UNSUPPORTED = ("actual", "round_overhead_seconds")


def is_typed_checkpoint(path: str) -> bool:
    """Whether ``path`` is the checkpoint of a typed simulation (``--resume`` of one); other
    files are left to the homogeneous path, which reads (and refuses) them."""
    try:
        return state_file_kind(path) == TYPED_CHECKPOINT_KIND
    except OSError as exc:
        raise DataError(f"--resume {path}: cannot read ({exc.strerror})") from None


def new_simulation(args: argparse.Namespace, outputs: dict[str, str | None]) -> TypedSimulation:
    """The typed simulation ``simulate --cluster SPEC ...`` describes (``outputs``: the files it
    will write, none of which may be an input)."""
    if not args.policy:
        raise UsageError("simulate needs --policy (or --resume FILE)")
    names = _names([args.policy])
    inputs, jobs, config, parameters = _prepare(args, outputs, names)
    _check_mechanics(names[0], config)
    return TypedSimulation(inputs, names[0], config, jobs=jobs, parameters=parameters.get(names[0]))


def load_simulation(path: str) -> TypedSimulation:
    """The typed simulation checkpointed in ``path`` (``simulate --resume``)."""
    try:
        return TypedSimulation.load(path)
    except OSError as exc:
        raise DataError(f"--resume {path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise DataError(f"--resume {exc}") from None


def report(args: argparse.Namespace, result: HeterogeneousResult) -> None:
    """Print a typed run's summary and write its ``--output`` and ``--timing`` files."""
    print(render(result))
    if args.output:
        _write(args.output, "--output", result.to_json())
    if args.timing:
        timing = {"policy": result.policy, "wall_seconds": result.wall_seconds,
                  "policy_seconds_total": result.policy_seconds}  # fmt: skip
        _write(args.timing, "--timing", json.dumps(timing, indent=1) + "\n")


def compare(args: argparse.Namespace) -> int:
    """``shockwave compare --cluster SPEC ...``."""
    names = _names([n for n in args.policies.split(",") if n.strip()])
    if len(set(names)) != len(names):
        raise UsageError(f"--policies lists a policy twice: {args.policies}")
    outputs = {"--output": args.output, "--timing": args.timing}
    if args.plots:
        outputs.update({f"--plots ({name})": str(Path(args.plots) / name) for name in PLOT_FILES})
        if Path(args.plots).exists() and not Path(args.plots).is_dir():
            raise OutputError(f"--plots {args.plots}: exists and is not a directory")
    _, jobs, config, parameters = _prepare(args, outputs, names)
    results = [_run(jobs, name, config, parameters.get(name)) for name in names]
    for result in results:
        print(render(result))
    if args.output:
        text = json.dumps([r.to_dict() for r in results], indent=1) + "\n"
        _write(args.output, "--output", text)
    if args.timing:
        timing = [{"policy": r.policy, "wall_seconds": r.wall_seconds,
                   "policy_seconds_total": r.policy_seconds} for r in results]  # fmt: skip
        _write(args.timing, "--timing", json.dumps(timing, indent=1) + "\n")
    if args.plots:
        from shockwave.heterogeneous.plots import write_heterogeneous_plots  # matplotlib

        try:
            written = write_heterogeneous_plots(results, Path(args.plots))
        except OSError as exc:
            raise OutputError(f"--plots {args.plots}: cannot write ({exc.strerror})") from None
        for path in written:
            print(f"wrote {path}")
    return 0


def render(result: HeterogeneousResult) -> str:
    return result.summary()


def _names(raw: Sequence[str]) -> list[str]:
    try:
        return [resolve_typed_policy(name) for name in raw]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _prepare(
    args: argparse.Namespace, outputs: dict[str, str | None], names: Sequence[str]
) -> tuple[TypedInputs, TypedJobs, HeterogeneousConfig, dict[str, dict[str, Any]]]:
    """The inputs, jobs and settings of a typed run of policies ``names``, and each policy's
    parameters from ``--config`` (every one checked now: a bad value fails before the run)."""
    given = [f"--{k.replace('_', '-')}" for k in _UNSUPPORTED if getattr(args, k, None)]
    if given:
        raise UsageError(f"{', '.join(given)} not available with --cluster yet")
    if args.gpus is not None:
        raise UsageError("give either --gpus (identical GPUs) or --cluster, not both")
    if not args.trace:
        raise UsageError("--trace is required")
    native = is_native(args.trace)
    exact = args.mechanics == "exact" or (native and args.mechanics is None)
    mechanics: TypedMechanics = "exact" if exact else "gavel"
    penalty = getattr(args, "restart_penalty_seconds", None)
    if penalty is not None and mechanics != "exact":
        raise UsageError(
            "--restart-penalty-seconds applies to --mechanics exact with --cluster (Gavel's "
            "simulator has no restart penalty)"
        )
    if native and args.throughputs:
        raise UsageError(
            f"--trace {args.trace}: a native workload carries its epoch durations on every type; "
            "--throughputs is for a .trace"
        )
    if not native and not args.throughputs:
        raise UsageError("--cluster needs --throughputs: a file with every type of the cluster")
    try:
        cluster = ClusterSpec.parse(args.cluster)
    except ValueError as exc:
        raise UsageError(f"--cluster {args.cluster}: {exc}") from None
    options: dict[str, Any] = {
        "round_seconds": 360.0 if args.round_seconds is None else args.round_seconds,
        "seed": 0 if args.seed is None else args.seed,
        "mechanics": mechanics,
        **({} if penalty is None else {"restart_penalty_seconds": penalty}),
    }
    try:
        config = HeterogeneousConfig(**options)  # the command line's options alone (status 2)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    parameters: dict[str, dict[str, Any]] = {}
    if args.config:
        config_file = read_config(args.config, typed=True)
        settings = config_file.simulation
        for key in ("round_seconds", "restart_penalty_seconds"):
            flag = f"--{key.replace('_', '-')}"
            if getattr(args, key, None) is not None and key in settings:
                raise UsageError(f"{args.config}: {key} is set there and by {flag}; keep one")
            if key in settings:
                options.pop(key, None)
        if "restart_penalty_seconds" in settings and mechanics != "exact":
            raise config_file.error(
                "simulation",
                "restart_penalty_seconds applies to --mechanics exact with --cluster (Gavel's "
                "simulator has no restart penalty)",
            )
        config = config_file.heterogeneous_config(**options)  # a refusal is the file's (3)
        for name in names:  # each policy built once now: a bad value fails before the run
            config_file.typed_policy(name, config.seed)
        parameters = {name: dict(values) for name, values in config_file.policies.items()}
        for note in config_file.notes(names):
            print(note, file=sys.stderr)
    check_distinct_paths(
        outputs,
        {"--trace": args.trace, "--throughputs": args.throughputs, "--config": args.config},
    )
    try:
        inputs = TypedInputs.read(cluster, args.trace, None if native else args.throughputs)
        jobs = inputs.jobs()
    except (UsageError, DataError):
        # a file that cannot be read or is malformed (TraceError, naming file, line and field);
        # the cluster check of a native workload (naming the type, or the job and its field)
        raise
    except ValueError as exc:
        raise DataError(f"{args.trace}: {exc}") from None
    return inputs, jobs, config, parameters


def _run(
    jobs: TypedJobs, name: str, config: HeterogeneousConfig, parameters: dict[str, Any] | None
) -> HeterogeneousResult:
    _check_mechanics(name, config)
    return simulate_heterogeneous(jobs, make_typed_policy(name, config.seed, parameters), config)


def _check_mechanics(name: str, config: HeterogeneousConfig) -> None:
    """Refuse a packing policy under the exact mechanics, naming ``--policy``."""
    if config.mechanics == "exact" and make_typed_policy(name, config.seed).packs_jobs:
        raise UsageError(f"--policy {name} packs jobs onto shared GPUs: gavel mechanics only")


def _write(path: str, option: str, text: str) -> None:
    write_output(path, option, text)
    print(f"wrote {path}")
