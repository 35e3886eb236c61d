"""Exit statuses of the ``shockwave`` command line, and the errors that carry them.

======  ===================================================================================
status  meaning
======  ===================================================================================
0       success
1       internal error: a bug in shockwave (reported in one line; ``SHOCKWAVE_DEBUG=1`` shows
        the traceback)
2       usage: a bad option or option value (argparse's own errors use 2 as well)
3       input: an input file (workload, throughputs, config, checkpoint) cannot be read or is
        malformed; the message names the file, the line and the field where there is one
4       output: an output path is unusable (a directory, no such directory, no permission),
        checked before the run starts, or a write failed (disk full); previous files are intact
5       the run failed: the simulation did not finish within its round limit, or a policy
        returned an allocation the simulator cannot execute; for ``cluster run``, some job
        failed (the result, written all the same, says which and why); for ``sweep`` and
        ``reproduce``, some cell failed (recorded with its error; every other cell ran)
130     interrupted (Ctrl-C); with ``--checkpoint``, the simulation was saved first; a real
        run (``cluster run``) checkpoints its jobs and writes a result marked incomplete
======  ===================================================================================
"""

from __future__ import annotations

OK = 0
INTERNAL = 1
USAGE = 2
INPUT = 3
OUTPUT = 4
RUN_FAILED = 5
INTERRUPTED = 130

#: The table above, for ``shockwave --help``.
EPILOG = """exit status:
  0    success
  1    internal error (a bug: please report it; SHOCKWAVE_DEBUG=1 shows the traceback)
  2    usage: a bad option or option value
  3    input: an input file cannot be read or is malformed (file, line and field named)
  4    output: an output path is unusable (checked before the run) or a write failed
  5    the run failed (round limit reached, a policy's output cannot be executed, in a
       real run some job failed: the result says which, or some cell of a sweep failed)
  130  interrupted (Ctrl-C); with --checkpoint the simulation is saved first"""


class CliError(Exception):
    """An error the command line reports in one line with its exit status."""

    status = INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)


class UsageError(CliError):
    """A bad option or option value."""

    status = USAGE


class InputError(CliError):
    """An input file that cannot be read or is malformed."""

    status = INPUT


class OutputError(CliError):
    """An output path that cannot be written."""

    status = OUTPUT
