"""Reference runs: a bundled job trained alone, uninterrupted, for its final digest.

A job that the runtime preempts, resumes and restarts must end with the same parameters as when
it runs alone from start to end. :func:`reference_digest` gives the latter: the job's process
runs without a scheduler (no lease, never stopped), with the environment the runtime gives it on
CPU slots (its threads), and prints its digest.
"""

from __future__ import annotations

import subprocess
import sys

from shockwave.job.spec import ENV_AUTHKEY, ENV_CHANNEL
from shockwave.runtime.executor import job_environment, job_launch
from shockwave.workload import Job


def reference_digest(job: Job, *, timeout: float | None = None) -> str:
    """The final digest of bundled ``job`` trained alone, uninterrupted (hex).

    Raises:
        ValueError: for a job without a bundled family.
        RuntimeError: if the job's process fails (its error output is in the message).
    """
    if job.run is None or job.run.family is None:
        raise ValueError(f"job {job.job_id}: a reference run needs a bundled family")
    launch = job_launch(job, 0, tuple(range(job.gang_size)), "cpu", "")
    env = job_environment(launch, "", b"")
    del env[ENV_CHANNEL], env[ENV_AUTHKEY]  # no scheduler: the job runs alone
    done = subprocess.run(
        [sys.executable, "-m", "shockwave.job"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = done.stdout.split()
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"job {job.job_id}: the reference run failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-2000:]}"
        )
    return lines[-1]
