"""``shockwave bench ...``: the scale suite and the market-solver table (:mod:`shockwave.bench`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from shockwave import __version__
from shockwave.cli.paths import check_distinct_paths, write_output
from shockwave.cli.simulate_commands import check_outputs
from shockwave.errors import DataError, UsageError
from shockwave.scheduling import MECHANICS

#: ``--quick`` sizes: a run of a minute or two on two cores.
QUICK_SCALE_SIZES = [(200, 32), (800, 128)]
QUICK_SCALE_POLICIES = ["shockwave", "fifo"]
QUICK_MARKET_SIZES = [(100, 20), (500, 20)]


def register(subparsers: Any) -> None:
    """Add the ``bench`` command group."""
    bench = subparsers.add_parser(
        "bench", help="run the benchmarks (scale suite, market-solver table)"
    )
    commands = bench.add_subparsers(dest="bench_command", required=True, metavar="SUITE")

    scale = commands.add_parser(
        "scale",
        help="generated traces of thousands of jobs under Shockwave and baselines",
        description="Each (size, policy) runs in a fresh process: simulate and generate wall "
        "time, peak memory, rounds, per-round policy time and the metrics, with the fitted "
        "exponent of cost against jobs x rounds. The full suite takes about an hour.",
    )
    scale.add_argument(
        "--sizes",
        default=None,
        help="comma-separated JOBS:GPUS pairs, or JOBS:GPUS:DAYS for arrivals spread over DAYS "
        "days (default: 1000:256,5000:1024,20000:6500; issue 16's sizes: 100000:25000 and "
        "1000000:6500:60)",
    )
    scale.add_argument(
        "--policies", default=None, help="comma-separated policies (default: shockwave,gavel,"
        "themis,fifo)",
    )  # fmt: skip
    scale.add_argument("--mechanics", default="exact", choices=MECHANICS)
    scale.add_argument(
        "--quick", action="store_true", help="small sizes and two policies (a minute or two)"
    )
    scale.add_argument("-o", "--output", metavar="FILE", help="write the results as JSON")
    scale.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    scale.set_defaults(handler=_scale)

    typed = commands.add_parser(
        "heterogeneous",
        help="a typed cluster against one type: the same static jobs, the same run",
        description="Generate one trace of static jobs (--jobs, sized for the cluster's GPUs, "
        "steps from the table's first type), then per policy simulate it with Gavel's "
        "mechanics on --cluster and on as many GPUs of one type; print both wall times, their "
        "ratio and the metrics. The default (20,000 jobs on 6,500 GPUs) takes several minutes; "
        "see benches/README.md.",
    )
    typed.add_argument("--cluster", default=None, metavar="SPEC",
                       help="the typed cluster (default v100:2200,p100:2150,k80:2150)")  # fmt: skip
    typed.add_argument("--throughputs", required=True, metavar="FILE",
                       help="a throughput file with every type of the cluster (Gavel's "
                       "simulation_throughputs.json)")  # fmt: skip
    typed.add_argument("--jobs", type=int, default=None, help="jobs (default 20000)")
    typed.add_argument("--policies", default=None,
                       help="comma-separated typed policies (default fifo,gavel)")  # fmt: skip
    typed.add_argument("--one-type", default=None, metavar="TYPE",
                       help="the one-type run's type (default: the cluster's first)")  # fmt: skip
    typed.add_argument("--repeats", type=int, default=1, metavar="R",
                       help="pairs of runs per policy (typed, then one type); the table gives "
                       "medians and the median ratio (default 1)")  # fmt: skip
    typed.add_argument("-o", "--output", metavar="FILE", help="write the results as JSON")
    typed.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    typed.set_defaults(handler=_heterogeneous)

    table = commands.add_parser(
        "market",
        help="the market solver cold and warm against Clarabel, and policy warm starts",
        description="Iterations and median wall time of both methods to 1e-4 and 1e-6, cold "
        "and warm, Clarabel through cvxpy when installed, and warm starts on the markets the "
        "Shockwave policy solves.",
    )
    table.add_argument(
        "--sizes", default=None, help="comma-separated JOBS:ROUNDS pairs (default: the table's)"
    )
    table.add_argument("--quick", action="store_true", help="two small sizes, one repeat")
    table.add_argument("--repeats", type=int, default=None, help="timed solves per cell")
    table.add_argument(
        "--clarabel-max-jobs",
        type=int,
        default=1000,
        help="skip Clarabel above this many jobs (default 1000: it takes minutes at 10,000)",
    )
    table.add_argument(
        "--types",
        type=int,
        default=None,
        metavar="K",
        help="instead: the market on K GPU types against the same jobs on one type (cold to "
        "1e-6, solved in alternation, their ratio) and against Clarabel (default sizes "
        "500:20,1000:20)",
    )
    which = table.add_mutually_exclusive_group()
    which.add_argument("--no-policy", action="store_true", help="skip the policy warm starts")
    which.add_argument(
        "--policy-only", action="store_true", help="only the policy warm-start table"
    )
    table.add_argument("-o", "--output", metavar="FILE", help="write the results as JSON")
    table.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    table.set_defaults(handler=_market)


def _pairs(text: str, option: str) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(int(v) for v in pair.split(":")) for pair in text.split(",")]
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected comma-separated A:B integer pairs") from None
    if any(len(p) != 2 or min(p) < 1 for p in pairs):
        raise UsageError(
            f"{option} {text!r}: expected comma-separated A:B pairs of positive integers"
        )
    return [(p[0], p[1]) for p in pairs]


def _sizes(text: str, option: str) -> list[Any]:
    """``JOBS:GPUS`` pairs and ``JOBS:GPUS:DAYS`` triples (DAYS a positive number)."""
    sizes: list[Any] = []
    for part in text.split(","):
        fields = part.split(":")
        if len(fields) not in (2, 3):
            raise UsageError(
                f"{option} {text!r}: expected JOBS:GPUS or JOBS:GPUS:DAYS, got {part!r}"
            )
        try:
            jobs, gpus = int(fields[0]), int(fields[1])
            days = float(fields[2]) if len(fields) == 3 else None
        except ValueError:
            raise UsageError(f"{option} {text!r}: {part!r} is not JOBS:GPUS[:DAYS]") from None
        if jobs < 1 or gpus < 1 or (days is not None and not 0 < days < float("inf")):
            raise UsageError(
                f"{option} {text!r}: jobs and GPUs must be positive integers, days a positive "
                f"number, got {part!r}"
            )
        sizes.append((jobs, gpus) if days is None else (jobs, gpus, days))
    return sizes


def _write(args: argparse.Namespace, document: dict[str, Any], markdown: str) -> None:
    for option, path, text in (
        ("--output", args.output, json.dumps(document, indent=2) + "\n"),
        ("--markdown", args.markdown, markdown),
    ):
        if path:
            write_output(path, option, text)


def _scale(args: argparse.Namespace) -> int:
    from shockwave.bench import scale

    check_distinct_paths({"--output": args.output, "--markdown": args.markdown})
    check_outputs({"--output": args.output, "--markdown": args.markdown})
    if args.quick and (args.sizes or args.policies):
        raise UsageError("--quick: sets --sizes and --policies itself; give one or the other")
    sizes = QUICK_SCALE_SIZES if args.quick else scale.DEFAULT_SIZES
    policies = QUICK_SCALE_POLICIES if args.quick else scale.DEFAULT_POLICIES
    if args.sizes:
        sizes = _sizes(args.sizes, "--sizes")
    if args.policies:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    from shockwave.policies import resolve_policy_name

    policies = [resolve_policy_name(p) for p in policies]
    try:
        scale.check_sizes(sizes)  # a size the generator refuses fails now, not in a child
    except ValueError as exc:
        raise UsageError(f"--sizes: {exc}") from None
    print(scale.HEADER)
    print("|" + "---|" * 12, flush=True)
    try:
        rows = scale.run(
            sizes, policies, args.mechanics, echo=lambda r: print(scale.format_row(r), flush=True)
        )
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    exponents = scale.fitted_exponents(rows)
    for policy, exponent in exponents.items():
        print(f"fitted exponent {policy}: {exponent:.2f}")
    document = {
        "suite": "scale",
        "shockwave": __version__,
        "python": sys.version.split()[0],
        "mechanics": args.mechanics,
        "seed": scale.SEED,
        "rows": rows,
        "fitted_exponents": exponents,
    }
    _write(args, document, scale.report(rows, args.mechanics))
    return 0


def _heterogeneous(args: argparse.Namespace) -> int:
    from shockwave.bench import heterogeneous as bench
    from shockwave.heterogeneous import ClusterSpec, resolve_typed_policy

    check_distinct_paths({"--output": args.output, "--markdown": args.markdown},
                         {"--throughputs": args.throughputs})  # fmt: skip
    check_outputs({"--output": args.output, "--markdown": args.markdown})
    text = args.cluster or bench.DEFAULT_CLUSTER
    try:
        cluster = ClusterSpec.parse(text)
    except ValueError as exc:
        raise UsageError(f"--cluster {text}: {exc}") from None
    jobs = bench.DEFAULT_JOBS if args.jobs is None else args.jobs
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    names = (args.policies or ",".join(bench.DEFAULT_POLICIES)).split(",")
    try:
        policies = [resolve_typed_policy(n.strip()) for n in names if n.strip()]
    except ValueError as exc:
        raise UsageError(f"--policies: {exc}") from None
    if args.one_type is not None and args.one_type not in cluster.types:
        raise UsageError(f"--one-type {args.one_type}: not a type of --cluster {cluster}")
    print(bench.HEADER)
    print("|" + "---|" * 11, flush=True)
    try:
        rows = bench.run(jobs, cluster, args.throughputs, policies, one_type=args.one_type,
                         repeats=args.repeats,
                         echo=lambda r: print(bench.format_row(r), flush=True))  # fmt: skip
    except ValueError as exc:  # a table without the cluster's types, a job with no type
        raise DataError(str(exc)) from None
    document = {"suite": "heterogeneous", "shockwave": __version__,
                "python": sys.version.split()[0], "seed": bench.SEED, "rows": rows}  # fmt: skip
    _write(args, document, bench.report(rows))
    return 0


def _market(args: argparse.Namespace) -> int:
    from shockwave.bench import market_table

    check_distinct_paths({"--output": args.output, "--markdown": args.markdown})
    check_outputs({"--output": args.output, "--markdown": args.markdown})
    sizes = market_table.SIZES
    repeats = args.repeats
    if args.quick:
        sizes, repeats = QUICK_MARKET_SIZES, repeats or 1
    if args.sizes:
        sizes = _pairs(args.sizes, "--sizes")
    if repeats is not None and repeats < 1:
        raise UsageError(f"--repeats {repeats}: expected at least 1")
    machine = market_table.machine()
    document: dict[str, Any] = {"suite": "market", "shockwave": __version__, "machine": machine}
    if args.types is not None:
        from shockwave.market import MAX_TYPES

        if not 2 <= args.types <= MAX_TYPES:
            raise UsageError(f"--types {args.types}: expected 2 to {MAX_TYPES} GPU types")
        if args.policy_only:
            raise UsageError("--types: the table with GPU types has no policy part")
        typed_sizes = _pairs(args.sizes, "--sizes") if args.sizes else market_table.TYPED_SIZES
        if args.quick:
            typed_sizes = [(100, 20)]
        records = market_table.typed_records(
            typed_sizes,
            args.types,
            clarabel_max_jobs=args.clarabel_max_jobs,
            repeats=repeats,
        )
        document["types"] = records
        text = market_table.typed_table(records, machine)
        print(text, flush=True)
        _write(args, document, text)
        return 0
    parts = []
    if not args.policy_only:
        records = market_table.solver_records(
            sizes, clarabel_max_jobs=args.clarabel_max_jobs, repeats=repeats
        )
        document["solver"] = records
        parts.append(market_table.solver_table(records, machine))
        print(parts[-1], flush=True)
    if not args.no_policy:
        records = market_table.policy_records()
        document["policy_warm_starts"] = records
        parts.append(market_table.policy_table(records, machine))
        print(parts[-1], flush=True)
    _write(args, document, "\n".join(parts))
    return 0
