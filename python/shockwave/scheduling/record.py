"""The raw record of a run (a simulation or a real run): what happened to every job and round.

:mod:`shockwave.metrics` turns a record into the reported metrics; the record itself holds only
facts (times, counts), in trace order for per-job arrays, and the few settings the metrics read
(the cluster's size, the round length, the seed, and which world ran: ``exact``, ``gavel`` or
``physical``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class SimulationRecord:
    """Everything a run observed.

    Settings:
        gpus: GPUs in the cluster.
        round_seconds: round length tau, seconds.
        seed: the seed of the run's random draws (0 for a real run).
        mechanics: the world that ran: ``"exact"`` or ``"gavel"`` (simulations) or
            ``"physical"`` (a real run).

    Per job (arrays in trace order, one entry per job of ``workload``):
        arrival_time: trace arrival, seconds.
        admission_time: round boundary at which the job was admitted, seconds.
        completion_time: when the job finished, seconds (for a job the original drops after
            repeated zero-progress rounds, the start of its last round).
        admission_round: index of the boundary that admitted the job.
        completion_round: index of the boundary at which its completion was processed.
        rounds_run, rounds_queued: rounds the job ran / waited while active.
        last_round_run: index of the last round in which the job held GPUs (-1: never).
        service_seconds: execution time received, net of restart penalties, seconds.
        exclusive_seconds: the profile's runtime alone on the gang (sum of the epoch durations,
            summed in epoch order), seconds: the finish-time-fairness denominator.
        dropped: whether the job was dropped after repeated zero-progress rounds (``gavel``
            mechanics only: the original's "micro-task failures").

    Per round (index = round):
        round_start: when the round was scheduled, seconds.
        round_active_jobs: active jobs when it was scheduled (the original's
            ``num_jobs_in_curr_round``).
        round_gpus_used: GPUs held by the round's jobs.
        round_busy_gpu_seconds: GPU-seconds of useful execution in the round (restart
            penalties excluded).
        round_policy_seconds: wall time spent in the policy at the round's boundary, seconds.

    Whole run:
        makespan: the simulated clock at the end, seconds since the trace's time origin.
        gpu_busy_seconds: per-GPU useful execution time, seconds (``gavel`` mechanics, which
            place jobs on GPUs as the original does); ``None`` under ``exact`` mechanics.
        wall_seconds: wall time of the whole simulation, seconds.
        policy_name: the policy's name.
    """

    workload: Workload
    gpus: int
    round_seconds: float
    seed: int
    mechanics: str
    policy_name: str
    arrival_time: FloatArray
    admission_time: FloatArray
    completion_time: FloatArray
    admission_round: IntArray
    completion_round: IntArray
    rounds_run: IntArray
    rounds_queued: IntArray
    last_round_run: IntArray
    service_seconds: FloatArray
    exclusive_seconds: FloatArray
    dropped: BoolArray
    round_start: FloatArray
    round_active_jobs: IntArray
    round_gpus_used: IntArray
    round_busy_gpu_seconds: FloatArray
    round_policy_seconds: FloatArray
    makespan: float
    gpu_busy_seconds: FloatArray | None
    wall_seconds: float

    @property
    def num_rounds(self) -> int:
        """Rounds simulated."""
        return int(self.round_start.shape[0])

    @property
    def jct(self) -> FloatArray:
        """Job completion times (completion - arrival), seconds, trace order."""
        return self.completion_time - self.arrival_time
