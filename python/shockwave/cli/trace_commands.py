"""``shockwave trace ...``: inspect and convert workload files."""

from __future__ import annotations

import argparse
from typing import Any

from shockwave.traces import convert_trace, load_workload, summarize


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


def _inspect(args: argparse.Namespace) -> int:
    workload = load_workload(args.file, args.throughputs)
    summary = summarize(workload)
    print(f"workload: {workload.source}")
    print(summary.render())
    if args.gpus is not None:
        if args.gpus < 1:
            raise ValueError(f"--gpus must be >= 1, got {args.gpus}")
        print(
            f"contention on {args.gpus} GPUs: {summary.contention(args.gpus):.2f} "
            "(exclusive GPU-hours per GPU-hour of the arrival span)"
        )
    return 0


def _convert(args: argparse.Namespace) -> int:
    if not str(args.output).endswith(".jsonl"):
        raise ValueError(f"--output must end in .jsonl, got {args.output!r}")
    workload = convert_trace(args.trace, args.throughputs, args.output)
    print(f"wrote {len(workload)} jobs to {args.output}")
    return 0
