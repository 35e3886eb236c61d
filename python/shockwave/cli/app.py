"""The ``shockwave`` command line, behind its entry point (:func:`shockwave.cli.main`).

Each sub-command group lives in its own module and registers itself on the parser built by
:func:`build_parser`; :func:`run` parses and runs a command line. Every failure is reported in
one line on standard error with a distinct exit status (:mod:`shockwave.cli.exit_codes`), never
with a traceback. This module imports everything (numpy, scipy, the policies): the entry point
imports it inside its handling of Ctrl-C, so that an interruption while it loads exits 130 too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence

from shockwave import __version__
from shockwave.cli import (
    bench_commands,
    cluster_commands,
    exit_codes,
    simulate_commands,
    sweep_commands,
    trace_commands,
)
from shockwave.errors import ShockwaveError

#: Modules that add sub-commands: each has ``register(subparsers)``.
COMMAND_MODULES = (
    trace_commands,
    simulate_commands,
    sweep_commands,
    cluster_commands,
    bench_commands,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="shockwave",
        description="Fair and efficient GPU-cluster scheduling for adapting ML jobs.",
        epilog=exit_codes.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"shockwave {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see :mod:`shockwave.cli.exit_codes`)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        return report_interrupted()
    try:
        status: int = args.handler(args)
    except KeyboardInterrupt:
        return report_interrupted()
    except ShockwaveError as exc:  # its kind decides the status
        status = exc.exit_status
        if status == exit_codes.RUN_FAILED:
            return _report(f"the run failed: {exc}", status)
        if status == exit_codes.INTERNAL:
            return _report_internal(exc)
        return _report(str(exc), status)
    except MemoryError:
        return _report("not enough memory for this input", exit_codes.INPUT)
    except BrokenPipeError:  # the reader of our output went away (| head): nothing to say
        _silence_stdout()
        return exit_codes.OUTPUT
    except (ValueError, OverflowError) as exc:
        return _report(str(exc), exit_codes.USAGE)
    except OSError as exc:
        return _report(_describe_os_error(exc), exit_codes.INPUT)
    except Exception as exc:
        return _report_internal(exc)
    return status


def report_interrupted() -> int:
    """Say ``shockwave: interrupted`` on standard error; return 130."""
    return _report("interrupted", exit_codes.INTERRUPTED, prefix="")


def _report(message: str, status: int, *, prefix: str = "error: ") -> int:
    with contextlib.suppress(OSError, ValueError):
        print(f"shockwave: {prefix}{message}", file=sys.stderr)
    return status


def _report_internal(exc: BaseException) -> int:
    """Report a bug in one line (``SHOCKWAVE_DEBUG=1``: with its traceback); return 1."""
    if os.environ.get("SHOCKWAVE_DEBUG"):
        traceback.print_exc()
    return _report(
        f"internal error ({type(exc).__name__}: {exc}); please report it "
        "(SHOCKWAVE_DEBUG=1 shows the traceback)",
        exit_codes.INTERNAL,
    )


def _describe_os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
