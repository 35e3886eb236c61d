"""shockwave: fair and efficient GPU-cluster scheduling for dynamically adapting ML jobs.

A reimplementation of Shockwave (Zheng et al., NSDI '23): the dynamic Fisher market solved by
proportional response in Rust, a stochastic model of batch-size adaptation, a trace-driven
simulator and the baseline policies.

Main entry points:

* :func:`shockwave.traces.load_workload` reads a ``.trace`` (with a throughput table) or a
  native ``.jsonl`` workload into a :class:`~shockwave.workload.Workload` of jobs.
* the ``shockwave`` command line (``shockwave --help``).
"""

# No ``from __future__ import annotations`` here: it imports the ``__future__`` module, and
# nothing may run before the handler of Ctrl-C below is in place.
import sys as _sys


def _exit_interrupted(signum: int, frame: object) -> None:
    """Ctrl-C while the command line loads: say so and exit 130 (nothing is under way yet)."""
    import os  # loaded with the interpreter

    try:
        os.write(2, b"shockwave: interrupted\n")
    finally:
        os._exit(130)


def _quiet_interrupts_while_the_command_line_loads() -> None:
    """In the ``shockwave`` command (a main module that imports :mod:`shockwave.cli`, as the
    console script does), Ctrl-C from this, the package's first instruction, until the command
    line has loaded (numpy, scipy, the policies: the first second) exits 130 with one line,
    never a ``KeyboardInterrupt`` traceback; :func:`shockwave.cli.main` gives Ctrl-C back to
    Python before it runs a command. Any other program is left alone."""
    frame = _sys._getframe(1)  # nothing is imported before the handler is in place
    while frame.f_globals.get("__name__") != "__main__":
        if frame.f_back is None:
            return
        frame = frame.f_back
    if "shockwave.cli" not in frame.f_code.co_names:
        return
    signals = __import__("_signal")  # the interpreter's own (``signal`` would import enum)
    try:  # noqa: SIM105 - contextlib is not loaded yet
        signals.signal(signals.SIGINT, _exit_interrupted)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass


_quiet_interrupts_while_the_command_line_loads()

from importlib.metadata import PackageNotFoundError, version  # noqa: E402

from shockwave.errors import InputError, JobFieldError, TraceError  # noqa: E402
from shockwave.throughputs import ThroughputTable  # noqa: E402
from shockwave.workload import Job, Workload  # noqa: E402

try:
    __version__ = version("shockwave")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "InputError",
    "Job",
    "JobFieldError",
    "ThroughputTable",
    "TraceError",
    "Workload",
    "__version__",
]
