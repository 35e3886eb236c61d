"""The executor protocol: how the scheduler starts job processes and talks to them.

The scheduler (:mod:`shockwave.runtime.scheduler`) is the same for every executor. An executor
starts one process per job *incarnation* (a launch of the job on its GPU slots), carries the
lease protocol's messages (:mod:`shockwave.job.protocol`) both ways, and reports when a process
ends. Two executors implement it: :class:`~shockwave.runtime.local_executor.LocalExecutor` (child
processes of the scheduler) and :class:`~shockwave.runtime.ray_executor.RayExecutor` (Ray tasks
that request the job's GPUs and run the same process on whatever node Ray picks).
"""

from __future__ import annotations

import os
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shockwave.job.protocol import JobMessage, SchedulerMessage
from shockwave.job.spec import (
    ENV_AUTHKEY,
    ENV_CHANNEL,
    ENV_GPU_TYPE,
    ENV_GPUS,
    ENV_JOB,
    THREAD_VARIABLES,
    JobLaunch,
    SlotKind,
)
from shockwave.workload import Job


@dataclass(frozen=True)
class JobExited:
    """A job process ended.

    Attributes:
        job_id, incarnation: which process.
        returncode: its exit status (negative: killed by that signal), or ``None`` if unknown
            (a Ray task whose worker died).
        error: what the executor knows about the failure, if anything.
    """

    job_id: int
    incarnation: int
    returncode: int | None
    error: str | None = None


#: What :meth:`Executor.poll` returns: a message from a job, or the end of a job process.
ExecutorEvent = JobMessage | JobExited


class Executor(ABC):
    """Starts job processes and carries their messages."""

    #: the executor's name on the command line
    name: str = "executor"

    @abstractmethod
    def start(self, launch: JobLaunch, workdir: Path, log_path: Path) -> None:
        """Start incarnation ``launch.incarnation`` of job ``launch.job_id`` on ``launch.gpus``.

        Its standard output and error are appended to ``log_path``; a user command runs in
        ``workdir``.
        """

    @abstractmethod
    def send(self, job_id: int, incarnation: int, message: SchedulerMessage) -> bool:
        """Send ``message`` to the job's process; ``False`` if that process is gone."""

    @abstractmethod
    def poll(self, timeout: float) -> list[ExecutorEvent]:
        """Messages and exits since the last call, waiting up to ``timeout`` seconds for one.

        A process's messages always come before its :class:`JobExited`.
        """

    @abstractmethod
    def kill(self, job_id: int) -> None:
        """Kill the job's current process (SIGKILL); its :class:`JobExited` follows."""

    @abstractmethod
    def close(self) -> None:
        """Kill every process still running and release the executor's resources."""


def job_launch(
    job: Job,
    incarnation: int,
    slots: tuple[int, ...],
    slot_kind: SlotKind,
    checkpoint_path: str,
    gpu_type: str | None = None,
) -> JobLaunch:
    """What incarnation ``incarnation`` of a runnable ``job`` on ``slots`` (of ``gpu_type``, on
    a heterogeneous cluster) is told.

    Its batch sizes are the distinct batch sizes of its planning profile (its regimes); it gets
    one CPU thread per slot.

    Raises:
        ValueError: for a job without a ``run`` spec or samples per epoch.
    """
    if job.run is None or job.samples_per_epoch is None:
        raise ValueError(
            f"job {job.job_id} cannot run for real: it has no 'run' spec "
            "(a workload from 'shockwave cluster generate', or jobs with a 'run' key)"
        )
    return JobLaunch(
        job_id=int(job.job_id),
        incarnation=incarnation,
        model=job.model,
        mode=job.mode,
        epochs=job.num_epochs,
        batch_sizes=tuple(sorted({int(b) for b in job.batch_sizes.tolist()})),
        initial_batch_size=job.initial_batch_size,
        samples_per_epoch=int(job.samples_per_epoch),
        gang_size=job.gang_size,
        gpus=slots,
        slot_kind=slot_kind,
        threads=len(slots),
        checkpoint_path=checkpoint_path,
        run=job.run,
        gpu_type=gpu_type,
    )


def check_runnable(job: Job, gpus: int, workdir: Path) -> None:
    """Refuse, before a run starts, a job that cannot run: no ``run`` spec, a gang larger than
    the cluster, a bundled job whose family, batch sizes, options or mode are not valid
    (:func:`~shockwave.job.trainer.check_bundled_launch`), a user command whose program does
    not exist (looked up as the job process will: relative to ``workdir`` if it names a
    directory, else on ``PATH``).

    Raises:
        ValueError: ``job <id>: <field>: <what is wrong>``.
    """
    from shockwave.job.trainer import check_bundled_launch  # the job side's own checks

    if job.gang_size > gpus:
        raise ValueError(
            f"job {job.job_id}: gang_size: {job.gang_size} GPUs, the cluster has {gpus}"
        )
    launch = job_launch(job, 0, tuple(range(job.gang_size)), "cpu", "")
    try:
        if launch.run.command is None:
            check_bundled_launch(launch)
            return
        program = launch.run.command[0]
        if os.sep in program:
            path = Path(program) if os.path.isabs(program) else workdir / program
            found = path.is_file() and os.access(path, os.X_OK)
        else:
            found = shutil.which(program) is not None
        if not found:
            raise ValueError(
                f"run.command: program {program!r} not found "
                f"({'relative to ' + str(workdir) if os.sep in program else 'on PATH'})"
            )
    except ValueError as exc:
        raise ValueError(f"job {job.job_id}: {exc}") from None


def job_argv(launch: JobLaunch) -> list[str]:
    """The command line of a job process: the bundled trainer, or the user's command."""
    if launch.run.command is not None:
        return list(launch.run.command)
    return [sys.executable, "-m", "shockwave.job"]


def job_environment(
    launch: JobLaunch, channel: str, authkey: bytes, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a job process (see :mod:`shockwave.job.spec`).

    ``CUDA_VISIBLE_DEVICES`` is set to the job's slots on GPU slots (on a heterogeneous cluster
    they are devices of the launch's type); on CPU slots the thread variables cap BLAS and
    OpenMP at the job's threads (one per slot). The launch's GPU type is in
    ``SHOCKWAVE_GPU_TYPE`` (removed when it has none).
    """
    env = dict(os.environ if base is None else base)
    env[ENV_JOB] = launch.to_json()
    env[ENV_CHANNEL] = channel
    env[ENV_AUTHKEY] = authkey.hex()
    env[ENV_GPUS] = ",".join(str(g) for g in launch.gpus)
    if launch.slot_kind == "gpu":
        env["CUDA_VISIBLE_DEVICES"] = env[ENV_GPUS]
    env.pop(ENV_GPU_TYPE, None)
    if launch.gpu_type is not None:
        env[ENV_GPU_TYPE] = launch.gpu_type
    for variable in THREAD_VARIABLES:
        env[variable] = str(launch.threads)
    return env
