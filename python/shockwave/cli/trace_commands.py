"""``shockwave trace ...``: inspect, convert and generate workload files."""

from __future__ import annotations

import argparse
from typing import Any

from shockwave.cli.exit_codes import OutputError, UsageError
from shockwave.cli.simulate_commands import check_outputs
from shockwave.traces import load_workload, summarize, write_native
from shockwave.traces.generate import write_generated
from shockwave.traces.generator_parameters import (
    ARRIVAL_GPU_SECONDS,
    DURATION_GRIDS,
    PARAMETER_DEFAULTS,
    TACC_MAX_GPUS,
    GeneratorParameterError,
    GeneratorParameters,
    format_templates,
    parse_numbers,
    parse_templates,
)


def register(subparsers: Any) -> None:
    """Add the ``trace`` command group."""
    trace = subparsers.add_parser("trace", help="inspect, convert or generate workload traces")
    commands = trace.add_subparsers(dest="trace_command", required=True, metavar="ACTION")

    inspect = commands.add_parser(
        "inspect", help="summarise a .trace or native .jsonl workload",
        description="Print jobs, exclusive GPU-hours, arrival span, gang-size, mode and model "
        "mixes and epoch statistics of a workload.",
    )  # fmt: skip
    inspect.add_argument("file", help="a .trace file or a native .jsonl workload")
    inspect.add_argument(
        "--throughputs", metavar="FILE",
        help="throughput JSON file (or 'tacc'/'wisr' for a bundled table); required for .trace",
    )  # fmt: skip
    inspect.add_argument(
        "--gpus",
        type=int,
        default=None,
        help="also report contention (exclusive work per GPU-hour of arrivals)",
    )
    inspect.set_defaults(handler=_inspect)

    convert = commands.add_parser(
        "convert", help="convert a .trace plus throughputs into the native .jsonl format",
    )  # fmt: skip
    convert.add_argument("trace", help="the .trace file (10 or 12 fields per line)")
    convert.add_argument(
        "--throughputs",
        metavar="FILE",
        required=True,
        help="throughput JSON file, or 'tacc'/'wisr' for a bundled table",
    )
    convert.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT.jsonl",
        help="where to write the native workload",
    )
    convert.set_defaults(handler=_convert)

    _register_generate(commands)


def _inspect(args: argparse.Namespace) -> int:
    if args.gpus is not None and args.gpus < 1:
        raise UsageError(f"--gpus must be >= 1, got {args.gpus}")
    workload = load_workload(args.file, args.throughputs)
    summary = summarize(workload)
    print(f"workload: {workload.source}")
    print(summary.render())
    if args.gpus is not None:
        print(
            f"contention on {args.gpus} GPUs: {summary.contention(args.gpus):.2f} "
            "(exclusive GPU-hours per GPU-hour of the arrival span)"
        )
    return 0


def _convert(args: argparse.Namespace) -> int:
    if not str(args.output).endswith(".jsonl"):
        raise UsageError(f"--output must end in .jsonl, got {args.output!r}")
    check_outputs({"--output": args.output})
    workload = load_workload(args.trace, args.throughputs)
    try:
        write_native(workload, args.output)
    except OSError as exc:
        raise OutputError(
            f"--output {args.output}: the write failed ({exc.strerror}); the previous file is "
            "intact"
        ) from None
    print(f"wrote {len(workload)} jobs to {args.output}")
    return 0


#: Generator options that take a comma-separated list of numbers.
_NUMBER_LISTS = (
    "duration_bucket_edges", "duration_bucket_mix", "gang_sizes", "gang_size_mix", "mode_mix",
)  # fmt: skip


def _register_generate(commands: Any) -> None:
    defaults = PARAMETER_DEFAULTS

    def listed(name: str) -> str:
        return ",".join(f"{v:g}" for v in defaults[name])

    generate = commands.add_parser(
        "generate",
        help="generate a synthetic trace with the original's parameters as defaults",
        description="Draw a synthetic trace as the original Shockwave generator does (same "
        "random streams: its parameters reproduce its traces byte for byte). Every option "
        "defaults to the original's value. Output: native .jsonl (profiles and throughput "
        "table included, runs in the simulator as is) or the original's 12-field .trace.",
    )  # fmt: skip
    generate.add_argument("--jobs", type=int, required=True, metavar="N", help="number of jobs")
    generate.add_argument(
        "--gpus", type=int, required=True, metavar="G",
        help="GPUs of the target cluster: sets the default arrival rate and throughput table, "
        "and bounds the gang sizes",
    )  # fmt: skip
    generate.add_argument(
        "--seed", type=int, default=defaults["seed"], metavar="S",
        help="random seed, 0 <= S < 2**32 (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "-o", "--output", required=True, metavar="OUT",
        help="OUT.jsonl (native format) or OUT.trace (the original's format)",
    )  # fmt: skip
    generate.add_argument(
        "--mean-interarrival", type=float, default=None, metavar="SECONDS",
        help="mean time between arrivals (Poisson arrivals), seconds; 0: all arrive at 0 "
        f"(default {ARRIVAL_GPU_SECONDS:g} / G, the contention of the original traces)",
    )  # fmt: skip
    generate.add_argument(
        "--min-duration-hours", type=float, default=defaults["min_duration_hours"],
        metavar="HOURS", help="shortest nominal job duration, hours (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--max-duration-hours", type=float, default=defaults["max_duration_hours"],
        metavar="HOURS", help="longest nominal job duration, hours (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--duration-grid-points", type=int, default=defaults["duration_grid_points"],
        metavar="N", help="points of the duration grid (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--duration-grid", choices=DURATION_GRIDS, default=defaults["duration_grid"],
        help="spacing of the duration grid (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--duration-log-base", type=float, default=defaults["duration_log_base"],
        metavar="B", help="base of the logspace grid (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--duration-bucket-edges", default=listed("duration_bucket_edges"), metavar="F,F,...",
        help="ends of the duration buckets as fractions of the grid (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--duration-bucket-mix", default=listed("duration_bucket_mix"), metavar="P,P,...",
        help="probability of each duration bucket, small to extra large (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--gang-sizes", default=listed("gang_sizes"), metavar="W,W,...",
        help="possible gang sizes, GPUs (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--gang-size-mix", default=listed("gang_size_mix"), metavar="P,P,...",
        help="probability of each gang size for distributable models (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--mode-mix", default=listed("mode_mix"), metavar="STATIC,ACCORDION,GNS",
        help="probability of each adaptation mode (default %(default)s)",
    )  # fmt: skip
    generate.add_argument(
        "--accordion-min-seconds", type=float, default=defaults["accordion_min_seconds"],
        metavar="SECONDS",
        help="Accordion jobs shorter than this become static; 0: never (default %(default)g)",
    )  # fmt: skip
    generate.add_argument(
        "--templates", action="append", default=None, metavar="MODEL:BS[,BS...]",
        help="job templates, drawn uniformly; repeat the option for more models (default: the "
        f"original's 21, {format_templates(defaults['templates'])})",
    )  # fmt: skip
    generate.add_argument(
        "--throughputs", default=None, metavar="tacc|wisr|FILE",
        help=f"throughput table (default: tacc up to {TACC_MAX_GPUS} GPUs, wisr above)",
    )  # fmt: skip
    generate.add_argument(
        "--high-priority-fraction", type=float, default=defaults["high_priority_fraction"],
        metavar="F", help="share of jobs with the high priority weight (default %(default)g)",
    )  # fmt: skip
    generate.add_argument(
        "--high-priority-weight", type=float, default=defaults["high_priority_weight"],
        metavar="W", help="priority weight of those jobs (default %(default)g)",
    )  # fmt: skip
    generate.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    values = {
        name: getattr(args, name)
        for name in GeneratorParameters.__dataclass_fields__
        if name not in ("templates", *_NUMBER_LISTS)
    }
    for name in _NUMBER_LISTS:
        numbers = parse_numbers(name, getattr(args, name))
        if name == "gang_sizes":
            if not all(float(w).is_integer() for w in numbers):
                raise GeneratorParameterError(name, f"must be integers, got {getattr(args, name)}")
            values[name] = tuple(int(w) for w in numbers)
        else:
            values[name] = numbers
    if args.templates is not None:
        values["templates"] = parse_templates(args.templates)
    parameters = GeneratorParameters(**values)
    check_outputs({"--output": args.output})
    try:
        jobs = write_generated(parameters, args.output)
    except OSError as exc:
        raise OutputError(
            f"--output {args.output}: the write failed ({exc.strerror}); the previous file is "
            "intact"
        ) from None
    print(
        f"wrote {jobs} jobs to {args.output} (seed {parameters.seed}, mean inter-arrival "
        f"{parameters.effective_mean_interarrival:g} s, throughputs {parameters.throughputs_label})"
    )
    return 0
