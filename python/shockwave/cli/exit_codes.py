"""Exit statuses of the ``shockwave`` command line.

The command line maps an error to its status by its kind only: a
:class:`~shockwave.errors.ShockwaveError` carries its own (``exit_status``: its kind's, see
:mod:`shockwave.errors`); the built-in exceptions that remain are mapped by their class
(``ValueError`` and ``OverflowError`` 2, ``OSError`` and ``MemoryError`` 3, a broken pipe 4,
anything else 1).

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

from shockwave.errors import DataError, InternalError, OutputError, RunFailedError, UsageError

OK = 0
#: The statuses of the error kinds (:mod:`shockwave.errors` decides them).
INTERNAL = InternalError.exit_status
USAGE = UsageError.exit_status
INPUT = DataError.exit_status
OUTPUT = OutputError.exit_status
RUN_FAILED = RunFailedError.exit_status
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
