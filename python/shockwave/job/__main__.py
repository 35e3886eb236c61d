"""``python -m shockwave.job``: run the bundled job described by the environment.

The runtime starts every bundled job (``"run": {"family": ...}``) this way: the process reads its
:class:`~shockwave.job.spec.JobLaunch` from :data:`~shockwave.job.spec.ENV_JOB`, connects to the
scheduler and trains (:func:`shockwave.job.trainer.train`). It exits 0 after ``finished`` or
``checkpointed``; on an error it says ``failed`` (best effort) and exits 1 with a one-line
message on standard error (a traceback too, for errors that are not about the job's input).
With :data:`~shockwave.job.spec.ENV_JOB` set but no channel, the job runs alone (resuming from its
checkpoint if there is one) and prints its final digest.
"""

from __future__ import annotations

import os
import sys
import traceback

from shockwave.job.context import connect
from shockwave.job.spec import ENV_GPU_TYPE, ENV_GPUS, ENV_JOB
from shockwave.job.trainer import train

#: Errors that are about the job's input or environment: one line, no traceback.
EXPECTED_ERRORS = (ValueError, OSError, ImportError)


def main() -> int:
    """Run the job; the process's exit status."""
    if ENV_JOB not in os.environ:
        print(
            f"python -m shockwave.job: {ENV_JOB} is not set (the runtime starts bundled jobs; "
            "use shockwave.job.run_standalone to run one alone)",
            file=sys.stderr,
        )
        return 2
    try:
        ctx = connect()
    except EXPECTED_ERRORS as exc:
        print(f"shockwave.job: {exc}", file=sys.stderr)
        return 1
    where = f"shockwave.job: job {ctx.launch.job_id} (incarnation {ctx.launch.incarnation})"
    if not ctx.is_standalone:
        print(f"{where}: {slots_seen()}", file=sys.stderr, flush=True)
    try:
        with ctx:
            final = train(ctx)
    except EXPECTED_ERRORS as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        traceback.print_exc()
        print(f"{where}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if ctx.is_standalone and final is not None:
        print(final)
    return 0


def slots_seen() -> str:
    """What this process was given, as its log's first line says it: its slot ids, GPU type,
    ``CUDA_VISIBLE_DEVICES`` and the CPU cores it may run on."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return (
        f"slots {os.environ.get(ENV_GPUS, '')} type {os.environ.get(ENV_GPU_TYPE, '-')} "
        f"cuda {os.environ.get('CUDA_VISIBLE_DEVICES', '-')} "
        f"cores {','.join(str(c) for c in cores) or '-'}"
    )


if __name__ == "__main__":
    sys.exit(main())
