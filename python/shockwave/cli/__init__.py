"""The ``shockwave`` command line (entry point ``shockwave.cli:main``).

This module is kept tiny on purpose: :func:`main` is the console script's entry point, and the
command line proper (:mod:`shockwave.cli.app`: the parser, the commands, numpy, scipy and the
policies, about a second of imports) is imported *inside* its handling of Ctrl-C, so that an
interruption at any moment, even while those modules load, ends with ``shockwave: interrupted``
and exit status 130, never a ``KeyboardInterrupt`` traceback. Every other failure is reported in
one line with a distinct exit status (:mod:`shockwave.cli.exit_codes`).

(The ``shockwave`` package's own ``__init__`` runs before this module, as for any submodule; it
imports little, and an interruption within it is outside the command line's reach.)
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Any

#: The exit status of an interruption (``exit_codes.INTERRUPTED``, written here so that nothing
#: needs importing when Ctrl-C comes early).
_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see :mod:`shockwave.cli.exit_codes`)."""
    try:
        from shockwave.cli.app import run

        return run(argv)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError, KeyboardInterrupt):
            print("shockwave: interrupted", file=sys.stderr)
        return _INTERRUPTED


def __getattr__(name: str) -> Any:
    """``build_parser`` and ``COMMAND_MODULES`` of :mod:`shockwave.cli.app`, loaded when asked."""
    if name in ("build_parser", "COMMAND_MODULES", "run"):
        from shockwave.cli import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
