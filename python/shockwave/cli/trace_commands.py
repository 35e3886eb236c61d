"""``shockwave trace ...``: inspect, convert and generate workload files."""

from __future__ import annotations

import argparse
from typing import Any

from shockwave.cli.paths import check_distinct_paths
from shockwave.cli.simulate_commands import check_outputs
from shockwave.errors import OutputError, UsageError
from shockwave.throughputs import BUNDLED_THROUGHPUTS
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
    parse_cluster,
    parse_numbers,
    parse_templates,
)
from shockwave.traces.production import (
    ASSIGNMENT_MODES,
    SOURCES,
    ConversionOptionError,
    ConversionOptions,
    convert_production,
    render_conversion,
)
from shockwave.workload import Workload


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
        "convert",
        help="convert a .trace (plus throughputs), or a production cluster trace (--from), "
        "into the native .jsonl format",
        description="Convert a Gavel/Shockwave .trace and its throughput table, or a public "
        "production cluster trace (--from philly|helios|pai|tiresias: the directory as unpacked "
        "from the release, or the table file itself), into a native workload. Production jobs "
        "are kept when they held at least one GPU for a positive time; each gets a model "
        "family, an adaptation mode and epochs by a seeded rule so that its exclusive runtime "
        "is the trace's run time (docs/production_traces.md).",
    )  # fmt: skip
    convert.add_argument(
        "trace", metavar="PATH",
        help="the .trace file (10 or 12 fields per line), or with --from the production trace",
    )  # fmt: skip
    convert.add_argument(
        "--from", dest="source", choices=SOURCES, default=None,
        help="read a production cluster trace of this kind instead of a .trace",
    )  # fmt: skip
    convert.add_argument(
        "--throughputs",
        metavar="FILE",
        default=None,
        help="throughput JSON file, or 'tacc'/'wisr' for a bundled table (required for a "
        ".trace; with --from, the model families to assign, default tacc)",
    )
    convert.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT.jsonl",
        help="where to write the native workload",
    )
    production = convert.add_argument_group("production traces (with --from)")
    production.add_argument(
        "--seed", type=int, default=None, metavar="S",
        help="seeds the assignment of model families and modes, and --sample (default 0)",
    )  # fmt: skip
    production.add_argument(
        "--mode", choices=ASSIGNMENT_MODES, default=None,
        help="'mixed' (default): Accordion or GNS as the original generator mixes them; "
        "'static': every job static",
    )  # fmt: skip
    production.add_argument(
        "--start", metavar="TIME",
        help="keep jobs submitted at or after TIME: 'YYYY-MM-DD[ HH:MM[:SS]]' (philly, "
        "helios) or seconds as in the trace (pai, tiresias)",
    )  # fmt: skip
    production.add_argument("--end", metavar="TIME", help="keep jobs submitted before TIME")
    production.add_argument(
        "--status", metavar="A,B", help="keep jobs whose final status is one of these"
    )
    production.add_argument("--vc", metavar="A,B", help="keep jobs of these virtual clusters")
    production.add_argument("--min-gpus", type=int, metavar="N", help="keep gangs of >= N GPUs")
    production.add_argument("--max-gpus", type=int, metavar="N", help="keep gangs of <= N GPUs")
    production.add_argument(
        "--max-jobs", type=int, metavar="N",
        help="keep the N earliest submitted jobs (after the other filters)",
    )  # fmt: skip
    production.add_argument(
        "--sample", type=float, metavar="FRACTION",
        help="keep each job with this probability (seeded by --seed and the job's id)",
    )  # fmt: skip
    production.add_argument(
        "--time-unit", choices=("s", "ms"), default=None,
        help="the unit of the trace's numeric times (pai, tiresias; --start/--end too): "
        "seconds (default) or milliseconds. Without it, a run time or a spread of submissions "
        "of more than a year is refused as probably milliseconds",
    )  # fmt: skip
    convert.set_defaults(handler=_convert)

    _register_generate(commands)


def _inspect(args: argparse.Namespace) -> int:
    if args.gpus is not None and args.gpus < 1:
        raise UsageError(f"--gpus must be >= 1, got {args.gpus}")
    workload = load_workload(args.file, args.throughputs)
    summary = summarize(workload)
    print(f"workload: {workload.source}")
    if workload.conversion is not None:
        print(render_conversion(workload.conversion))
    print(summary.render())
    if args.gpus is not None:
        print(
            f"contention on {args.gpus} GPUs: {summary.contention(args.gpus):.2f} "
            "(exclusive GPU-hours per GPU-hour of the arrival span)"
        )
    return 0


#: ``trace convert`` options that only production traces take.
_PRODUCTION_OPTIONS = (
    "seed", "mode", "start", "end", "status", "vc", "min_gpus", "max_gpus", "max_jobs", "sample",
    "time_unit",
)  # fmt: skip


def _throughputs_file(value: str | None) -> str | None:
    """``--throughputs`` when it names a file (not a bundled table such as ``tacc``)."""
    return None if value is None or value in BUNDLED_THROUGHPUTS else value


def _convert(args: argparse.Namespace) -> int:
    if not str(args.output).endswith(".jsonl"):
        raise UsageError(f"--output must end in .jsonl, got {args.output!r}")
    check_distinct_paths(
        {"--output": args.output},
        {"PATH": args.trace, "--throughputs": _throughputs_file(args.throughputs)},
    )
    if args.source is not None:
        return _convert_production(args)
    given = [name for name in _PRODUCTION_OPTIONS if getattr(args, name) is not None]
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{options}: only for production traces (--from)")
    if args.throughputs is None:
        raise UsageError("converting a .trace needs --throughputs FILE (or 'tacc'/'wisr')")
    check_outputs({"--output": args.output})
    workload = load_workload(args.trace, args.throughputs)
    _write_native(workload, args.output)
    print(f"wrote {len(workload)} jobs to {args.output}")
    return 0


def _write_native(workload: Workload, output: str) -> None:
    try:
        write_native(workload, output)
    except OSError as exc:
        raise OutputError(
            f"--output {output}: the write failed ({exc.strerror}); the previous file is intact"
        ) from None


def _names(text: str | None) -> tuple[str, ...]:
    return () if text is None else tuple(name.strip() for name in text.split(","))


def _convert_production(args: argparse.Namespace) -> int:
    try:
        options = ConversionOptions(
            throughputs=args.throughputs if args.throughputs is not None else "tacc",
            seed=args.seed if args.seed is not None else 0,
            mode=args.mode if args.mode is not None else "mixed",
            start=args.start,
            end=args.end,
            statuses=_names(args.status),
            vcs=_names(args.vc),
            min_gpus=args.min_gpus,
            max_gpus=args.max_gpus,
            max_jobs=args.max_jobs,
            sample=args.sample,
            time_unit=args.time_unit,
        )
        check_outputs({"--output": args.output})
        try:
            report = convert_production(args.source, args.trace, args.output, options)
        except OSError as exc:
            raise OutputError(
                f"--output {args.output}: the write failed ({exc.strerror}); the previous file "
                "is intact"
            ) from None
    except ConversionOptionError as exc:
        raise UsageError(str(exc)) from None
    print(report.render())
    print(f"wrote {report.kept:,} jobs to {args.output}")
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
    generate.add_argument(
        "--jobs", type=int, default=None, metavar="N",
        help="number of jobs (required unless --days and --load are both given: then it "
        "follows from them)",
    )  # fmt: skip
    size = generate.add_mutually_exclusive_group(required=True)
    size.add_argument(
        "--gpus", type=int, default=None, metavar="G",
        help="GPUs of the target cluster: sets the default arrival rate and throughput table, "
        "and bounds the gang sizes",
    )  # fmt: skip
    size.add_argument(
        "--cluster", default=None, metavar="SPEC",
        help="a heterogeneous target cluster, TYPE:COUNT[/SERVER],... (v100:36,p100:36,k80:36): "
        "every job gets its epoch durations on every type of the table (default table: gavel), "
        "the arrival rate follows the cluster's capacity, and a gang larger than every type "
        "is capped to the largest gang size of the table that fits on the largest type; "
        "writes native format version 3",
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
        "--days", type=float, default=None, metavar="D",
        help="a long, steady arrival process: Poisson arrivals spread over about D days "
        "(mean inter-arrival D * 86400 / N s)",
    )  # fmt: skip
    generate.add_argument(
        "--load", type=float, default=None, metavar="L",
        help="offered load: the jobs ask for a share L of the cluster's GPU-time (nominal "
        "durations, before adaptation); with --days, the number of jobs follows",
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
        help="possible gang sizes, GPUs (default %(default)s; with --cluster, a size larger "
        "than every type is capped)",
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
        "--throughputs", default=None, metavar="tacc|wisr|gavel|FILE",
        help=f"throughput table (default: tacc up to {TACC_MAX_GPUS} GPUs, wisr above; gavel "
        "with --cluster)",
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
    if args.cluster is not None:
        # the cluster's total, checked (and named) by the parameters
        values["gpus"] = _cluster_gpus(args.cluster)
    if values["jobs"] is None:
        if args.days is None or args.load is None:
            raise GeneratorParameterError(
                "jobs", "required, unless --days and --load are both given (then it follows)"
            )
        # each on its own first, so that an invalid one is named
        GeneratorParameters(**{**values, "jobs": 1, "load": None})
        probe = GeneratorParameters(**{**values, "jobs": 1, "days": None})
        jobs = probe.jobs_for(args.days, args.load)
        values["jobs"] = jobs
        if jobs < 1:
            raise GeneratorParameterError(
                "load", f"{args.load:g} over {args.days:g} days makes no job; raise it"
            )
    parameters = GeneratorParameters(**values)
    check_distinct_paths(
        {"--output": args.output}, {"--throughputs": _throughputs_file(args.throughputs)}
    )
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
        f"{parameters.effective_mean_interarrival:g} s, nominal offered load "
        f"{parameters.offered_load:.3g}, throughputs {parameters.throughputs_label})"
    )
    return 0


def _cluster_gpus(text: str) -> int:
    """The GPUs of ``--cluster``'s spec (its errors name ``--cluster``)."""
    return parse_cluster(text).total_gpus
