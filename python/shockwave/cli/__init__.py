"""The ``shockwave`` command line (entry point ``shockwave.cli:main``).

This module is kept tiny on purpose: :func:`main` is the console script's entry point, and the
command line proper (:mod:`shockwave.cli.app`: the parser, the commands, numpy, scipy and the
policies, about a second of imports) is imported by it. An interruption at any moment, even
while those modules load, ends with ``shockwave: interrupted`` and exit status 130, never a
``KeyboardInterrupt`` traceback:

* in the console script (a main module that imports this one), the ``shockwave`` package's
  first instruction installs a handler of Ctrl-C that exits 130 at once (nothing is under way
  while the command line loads), and :func:`main` gives Ctrl-C back to Python (a
  ``KeyboardInterrupt``, which every command handles: a simulation saves its checkpoint first)
  once :mod:`shockwave.cli.app` has loaded;
* elsewhere (:func:`main` called from Python), the import is inside :func:`main`'s handling of
  ``KeyboardInterrupt``.

Every other failure is reported in one line with a distinct exit status
(:mod:`shockwave.cli.exit_codes`). Only the interpreter's own start-up, before the first
instruction of the package, is out of reach.
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

        _restore_ctrl_c()
        return run(argv)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError, KeyboardInterrupt):
            print("shockwave: interrupted", file=sys.stderr)
        return _INTERRUPTED


def _restore_ctrl_c() -> None:
    """Give Ctrl-C back to Python (a ``KeyboardInterrupt``) if the package's start-up handler
    holds it (see the module notes)."""
    import signal

    import shockwave

    if signal.getsignal(signal.SIGINT) is shockwave._exit_interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def __getattr__(name: str) -> Any:
    """``build_parser`` and ``COMMAND_MODULES`` of :mod:`shockwave.cli.app`, loaded when asked."""
    if name in ("build_parser", "COMMAND_MODULES", "run"):
        from shockwave.cli import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
