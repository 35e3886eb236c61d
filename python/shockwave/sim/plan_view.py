"""What a scheduler knows of jobs whose profiles are plans: the plan, read where the jobs are.

A job that adapts for real decides its batch sizes as it trains; its workload profile is a plan.
A scheduler then knows two things: where each job *is* (its epoch progress, steps run and current
batch size: what it reported) and its *plan* (the batch sizes it may reach and their epoch
durations). :class:`PlanView` builds the state's progress columns from both, the way a real
run's cluster does (:mod:`shockwave.runtime.live_cluster`), and :class:`PlannedView` is the
cluster world that simulates the same information model: jobs progress along their *actual*
profiles (``exact`` mechanics), while the policy and its state see the plans.

Columns from a reported position ``p`` epochs (epoch ``e = floor(p)`` in progress, fraction
``f``), steps ``s`` and current batch size ``b``: ``epoch_progress = p``, ``steps_run = s``,
``batch_size = b``; ``remaining_seconds`` and ``remaining_steps`` are the plan's from ``p`` (the
plan's seconds and iterations done at ``p`` subtracted from its totals); ``total_steps = s +
remaining_steps``; ``throughput`` is the plan's isolated throughput at ``b`` (iterations per
second of an epoch planned at ``b``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shockwave.rounds.allocation import AllocationRounds
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.world import ProgressColumns
from shockwave.scheduling.config import SimulationConfig
from shockwave.sim.exact import ExactProfiles
from shockwave.sim.profile_progress import ProfileProgress, iterations_per_epoch
from shockwave.workload import Job, Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class PlanView:
    """The planning profiles of a list of jobs (indexed like it), read at reported positions."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.profiles = ProfileProgress(jobs)
        self.epochs = np.array([job.num_epochs for job in jobs], dtype=np.int64)
        #: per job: isolated throughput (iterations/s) at each batch size of its plan
        self.regimes = [regime_throughputs(job) for job in jobs]

    def columns(
        self,
        jobs: IntArray,
        epoch_progress: FloatArray,
        steps_run: FloatArray,
        batch_size: IntArray,
    ) -> ProgressColumns:
        """The progress columns of ``jobs`` (indices into the list) at the given positions.

        Raises:
            KeyError: if a batch size is not one of the job's planned ones.
        """
        epochs = self.epochs[jobs]
        progress = np.minimum(epoch_progress, epochs.astype(np.float64))
        index = np.minimum(np.floor(progress).astype(np.int64), epochs - 1)
        fraction = np.clip(progress - index, 0.0, 1.0)
        p = self.profiles
        seconds = p.seconds_at(jobs, index, fraction)
        planned_steps = p.iterations_done(jobs, index, seconds)
        remaining_steps = p.total_iterations[jobs] - planned_steps
        throughput = np.array(
            [
                self.regimes[j][int(b)]
                for j, b in zip(jobs.tolist(), batch_size.tolist(), strict=True)
            ],
            dtype=np.float64,
        )
        return {
            "epochs_done": index,
            "epoch_progress": progress,
            "steps_run": steps_run,
            "total_steps": steps_run + remaining_steps,
            "remaining_steps": remaining_steps,
            "batch_size": batch_size,
            "throughput": throughput,
            "remaining_seconds": p.total_seconds[jobs] - seconds,
        }


def regime_throughputs(job: Job) -> dict[int, float]:
    """Isolated throughput (iterations/s) at each batch size of a job's profile."""
    iterations = iterations_per_epoch(job).astype(np.float64)
    out: dict[int, float] = {}
    for size, steps, seconds in zip(
        job.batch_sizes.tolist(), iterations.tolist(), job.epoch_seconds.tolist(), strict=True
    ):
        out.setdefault(int(size), steps / seconds)
    return out


class PlannedView(ExactProfiles):
    """``exact`` mechanics where jobs follow their actual profiles and the policy sees plans.

    Args:
        ledger: the run's books, over the *actual* jobs, with the plans as its ``view``
            (the same jobs: same ids, order, arrivals, gangs, epochs and samples per epoch,
            checked by :func:`check_same_jobs`).
        config, allocation: as :class:`~shockwave.sim.exact.ExactProfiles`.

    Raises:
        KeyError: (when the state is built) for an actual batch size its plan does not list;
            :func:`check_same_jobs` refuses such workloads first.
    """

    def __init__(
        self, ledger: JobLedger, config: SimulationConfig, allocation: AllocationRounds | None
    ) -> None:
        super().__init__(ledger, config, allocation)
        self.plan = PlanView([ledger.view.jobs[int(p)] for p in ledger.position])
        self.samples_per_epoch = np.array(
            [float(job.samples_per_epoch or 1) for job in ledger.jobs], dtype=np.float64
        )

    def progress_columns(self, active: IntArray) -> ProgressColumns:
        truth = super().progress_columns(active)
        # as jobs report them: whole samples and whole steps
        samples = self.samples_per_epoch[active]
        progress = np.floor(np.asarray(truth["epoch_progress"]) * samples + 1e-9) / samples
        return self.plan.columns(
            active, progress, np.floor(truth["steps_run"] + 1e-9), truth["batch_size"]
        )


def check_same_jobs(plans: Workload, actual: Workload) -> None:
    """Check that ``actual`` holds the jobs of ``plans`` (same ids, order, arrivals, gangs,
    epochs, samples per epoch, and only planned batch sizes).

    Raises:
        ValueError: naming the first job and field on which they disagree.
    """
    if len(plans) != len(actual):
        raise ValueError(f"actual: {len(actual)} jobs, the plans have {len(plans)}")
    for plan, real in zip(plans.jobs, actual.jobs, strict=True):
        for name in ("job_id", "arrival_time", "gang_size", "num_epochs", "samples_per_epoch"):
            if getattr(plan, name) != getattr(real, name):
                raise ValueError(
                    f"actual: job {real.job_id} differs from its plan in {name} "
                    f"({getattr(real, name)!r} against {getattr(plan, name)!r})"
                )
        unplanned = sorted(set(real.batch_sizes.tolist()) - set(plan.batch_sizes.tolist()))
        if unplanned:
            raise ValueError(
                f"actual: job {real.job_id} runs at batch size {unplanned[0]}, which its plan "
                f"does not list ({sorted(set(plan.batch_sizes.tolist()))})"
            )
