"""The ``shockwave`` command line.

Each sub-command group lives in its own module and registers itself on the parser built by
:func:`build_parser`; :func:`main` is the console-script entry point.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from shockwave import __version__
from shockwave.cli import cluster_commands, simulate_commands, trace_commands
from shockwave.errors import TraceError

#: Modules that add sub-commands: each has ``register(subparsers)``.
COMMAND_MODULES = (trace_commands, simulate_commands, cluster_commands)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="shockwave",
        description="Fair and efficient GPU-cluster scheduling for adapting ML jobs.",
    )
    parser.add_argument("--version", action="version", version=f"shockwave {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args)
    except (TraceError, ValueError, FileNotFoundError) as exc:
        print(f"shockwave: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("shockwave: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
