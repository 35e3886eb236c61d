"""``shockwave sweep``, ``shockwave sweep report`` and ``shockwave reproduce``.

* ``shockwave sweep SPEC.toml --out DIR [--workers N | --ray [--ray-address A]]``: every cell of
  the spec's grid, one simulation each, on a local process pool (default: one worker per core)
  or as Ray tasks; results appended to ``DIR/results.parquet`` and ``DIR/jobs.parquet``; cells
  already recorded there are skipped (an interrupted sweep resumes);
* ``shockwave sweep report DIR [--baseline POLICY]``: Markdown tables and PNG figures in
  ``DIR/report/``;
* ``shockwave reproduce NAME --out DIR [...]``: one of the paper's experiments (a spec shipped in
  the package), then its report.

Spec problems fail before any cell runs (status 3, the key named); an unusable ``--out`` fails
with status 4; some failed cells give status 5 (the sweep still ran every other cell);
Ctrl-C gives 130 with every finished cell recorded.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from shockwave.cli import exit_codes
from shockwave.cli.paths import check_distinct_paths
from shockwave.errors import DataError, OutputError, UsageError
from shockwave.sweep.cells import DEFAULT_MAX_CELLS
from shockwave.sweep.experiments import EXPERIMENTS, spec_file
from shockwave.sweep.pool import ProcessPool, default_workers
from shockwave.sweep.runner import Backend, SweepSummary, render_summary, run_sweep
from shockwave.sweep.sources import FileRef, FileTrace
from shockwave.sweep.spec import SpecError, SweepSpec, load_spec

_SWEEP_USAGE = """shockwave sweep SPEC.toml --out DIR [--workers N | --ray [--ray-address A]]
                       [--retry-failed] [--flush-every SECONDS] [--max-cells N]
       shockwave sweep report DIR [--baseline POLICY] [--no-figures]"""


def register(subparsers: Any) -> None:
    """Add the ``sweep`` and ``reproduce`` commands."""
    sweep = subparsers.add_parser(
        "sweep",
        help="run a grid of simulations on a process pool or Ray; 'sweep report DIR' tables it",
        usage=_SWEEP_USAGE,
        description="Run every cell (one simulation) of the grid a TOML spec describes "
        "(docs/sweep.md): results go to DIR/results.parquet (one row per cell) and "
        "DIR/jobs.parquet (one row per job); cells already recorded are skipped, so an "
        "interrupted sweep resumes when run again. 'shockwave sweep report DIR' writes Markdown "
        "tables (ratios to a baseline) and PNG figures into DIR/report/.",
        epilog=exit_codes.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("target", metavar="SPEC.toml | report", help="the spec, or 'report'")
    sweep.add_argument("directory", nargs="?", metavar="DIR", help="(report) the sweep's --out")
    _run_arguments(sweep, out_required=False)
    _report_arguments(sweep)
    sweep.set_defaults(handler=_sweep)

    reproduce = subparsers.add_parser(
        "reproduce",
        help="run one of the paper's experiments and write its report",
        description="Run one of the paper's experiments (a sweep spec shipped in the package) "
        "and write its report into DIR/report/. Interrupted, the same command finishes the "
        "missing cells only. Experiments:\n"
        + "\n".join(f"  {name:<12} {text}" for name, text in EXPERIMENTS.items()),
        epilog=exit_codes.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reproduce.add_argument("name", choices=list(EXPERIMENTS), metavar="NAME",
                           help=f"one of: {', '.join(EXPERIMENTS)}")  # fmt: skip
    _run_arguments(reproduce, out_required=True)
    _report_arguments(reproduce)
    reproduce.set_defaults(handler=_reproduce)


def _run_arguments(parser: argparse.ArgumentParser, *, out_required: bool) -> None:
    parser.add_argument("--out", metavar="DIR", required=out_required,
                        help="output directory (created if missing)")  # fmt: skip
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes of the local pool (default: one per core); with --ray and no "
        "--ray-address, the CPUs of the local Ray instance",
    )
    parser.add_argument("--ray", action="store_true",
                        help="run the cells as Ray tasks (needs shockwave[ray])")  # fmt: skip
    parser.add_argument(
        "--ray-address",
        metavar="A",
        help="with --ray: join the Ray cluster at A (default: start a local instance)",
    )
    parser.add_argument("--retry-failed", action="store_true",
                        help="also run again the cells recorded as failed")  # fmt: skip
    parser.add_argument(
        "--max-cells",
        type=int,
        default=None,
        metavar="N",
        help=f"refuse a grid of more than N cells before enumerating it (default "
        f"{DEFAULT_MAX_CELLS:,}: a bigger grid is almost always a typo in the spec)",
    )
    parser.add_argument(
        "--flush-every",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="write the finished cells to DIR at least this often (default 10; Ctrl-C writes "
        "them at once, a kill loses at most this much work)",
    )


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="POLICY",
                        help="the policy the report's ratios are to")  # fmt: skip
    parser.add_argument("--no-figures", action="store_true",
                        help="write the Markdown report only")  # fmt: skip


# --------------------------------------------------------------------------------- commands
def _sweep(args: argparse.Namespace) -> int:
    if args.target == "report":
        if args.directory is None:
            raise UsageError("sweep report needs the sweep's directory: shockwave sweep report DIR")
        given = [o for o, v in _run_options(args).items() if v]
        if given:
            raise UsageError(f"sweep report takes no {', '.join(given)}")
        return _report(Path(args.directory), args.baseline, figures=not args.no_figures)
    if args.directory is not None:
        raise UsageError(f"unexpected argument {args.directory!r} (the output goes to --out DIR)")
    if args.baseline or args.no_figures:
        raise UsageError("--baseline and --no-figures belong to 'shockwave sweep report DIR'")
    if not args.out:
        raise UsageError("sweep needs --out DIR")
    backend = _backend(args)
    spec = _load(Path(args.target), args.max_cells, "SPEC.toml")
    _check_out(Path(args.out), spec)
    out = _prepare_out(Path(args.out))
    summary = _run(spec, out, backend, args)
    if summary.interrupted:
        return exit_codes.INTERRUPTED
    print(f"report: shockwave sweep report {out}")
    return exit_codes.RUN_FAILED if summary.failed else exit_codes.OK


def _reproduce(args: argparse.Namespace) -> int:
    backend = _backend(args)
    with spec_file(args.name) as path:
        spec = _load(path, args.max_cells, "NAME")
    _check_out(Path(args.out), spec)
    out = _prepare_out(Path(args.out))
    summary = _run(spec, out, backend, args)
    if summary.interrupted:
        return exit_codes.INTERRUPTED
    status = _report(out, args.baseline, figures=not args.no_figures)
    if status != exit_codes.OK:
        return status
    return exit_codes.RUN_FAILED if summary.failed else exit_codes.OK


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "--out": args.out,
        "--workers": args.workers is not None,
        "--ray": args.ray,
        "--ray-address": args.ray_address,
        "--retry-failed": args.retry_failed,
        "--flush-every": args.flush_every != 10.0,
        "--max-cells": args.max_cells is not None,
    }


def _backend(args: argparse.Namespace) -> Backend:
    """The pool or the Ray cluster the options ask for (checked before anything runs)."""
    if not args.flush_every >= 0 or args.flush_every == float("inf"):
        raise UsageError(f"--flush-every must be >= 0 seconds, got {args.flush_every}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.ray_address and not args.ray:
        raise UsageError("--ray-address needs --ray")
    if not args.ray:
        return ProcessPool(args.workers or default_workers())
    if args.ray_address and args.workers is not None:
        raise UsageError("--workers sizes a local Ray instance; the cluster at --ray-address "
                         "has its own CPUs")  # fmt: skip
    try:
        from shockwave.sweep.ray_backend import RayCluster
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    return RayCluster(args.ray_address, args.workers)


def _load(path: Path, max_cells: int | None, what: str) -> SweepSpec:
    if max_cells is not None and max_cells < 1:
        raise UsageError(f"--max-cells must be >= 1, got {max_cells}")
    try:
        return load_spec(path, max_cells=DEFAULT_MAX_CELLS if max_cells is None else max_cells)
    except SpecError as exc:
        raise DataError(str(exc)) from None


#: The files a sweep writes directly into ``--out`` (``report/`` holds the report's).
_OUT_FILES = ("results.parquet", "jobs.parquet")


def _check_out(out: Path, spec: SweepSpec) -> None:
    """Refuse an ``--out`` that is (or whose result files are) the spec or one of its files."""
    inputs: dict[str, str | None] = {"the spec": str(spec.path)}
    for trace in spec.traces:
        source = trace.source
        if isinstance(source, FileTrace):
            inputs[f"the spec's trace {trace.label!r}"] = source.file.path
            if isinstance(source.throughputs, FileRef):
                inputs[f"the throughputs of {trace.label!r}"] = source.throughputs.path
        elif isinstance(source.throughputs, FileRef):
            inputs[f"the throughputs of {trace.label!r}"] = source.throughputs.path
    outputs: dict[str, str | None] = {"--out": str(out)}
    outputs.update({f"--out ({name})": str(out / name) for name in _OUT_FILES})
    check_distinct_paths(outputs, inputs)


def _prepare_out(out: Path) -> Path:
    """Create ``--out`` (and its parents) or fail with status 4 before any cell runs."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"--out {out}: cannot write there ({exc.strerror})") from None
    return out


def _run(spec: SweepSpec, out: Path, backend: Backend, args: argparse.Namespace) -> SweepSummary:
    try:
        summary = run_sweep(
            spec, out, backend, retry_failed=args.retry_failed, flush_seconds=args.flush_every
        )
    except RuntimeError as exc:
        if type(exc).__name__ != "RayUnavailableError":  # its module imports Ray: not here
            raise
        raise UsageError(f"--ray: {exc}") from None
    except BlockingIOError:
        raise OutputError(f"--out {out}: another sweep is writing into it") from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise OutputError(
            f"--out {out}: {where}{exc.strerror or exc}; the cells recorded are kept"
        ) from None
    stream = sys.stderr if summary.interrupted else sys.stdout
    print(render_summary(summary, out), file=stream)
    return summary


def _report(directory: Path, baseline: str | None, *, figures: bool) -> int:
    from shockwave.sweep.report import write_report  # pandas: imported when needed

    if figures and importlib.util.find_spec("matplotlib") is None:
        print("note: figures need matplotlib (pip install 'shockwave[plots]')", file=sys.stderr)

    try:
        written = write_report(directory, baseline=baseline, figures=figures)
    except FileNotFoundError:
        raise DataError(f"{directory}: no sweep results (run shockwave sweep first)") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise OutputError(
            f"{directory / 'report'}: cannot write ({exc.strerror}); previous files are intact"
        ) from None
    print(f"wrote {written[0]}" + (f" and {len(written) - 1} figures" if len(written) > 1 else ""))
    return exit_codes.OK
