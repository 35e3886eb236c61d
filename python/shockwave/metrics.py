"""Metrics of a simulation, defined exactly as the original computes them.

(Original: the Shockwave artifact's ``scheduler.py`` and ``reproduce/aggregate_result.py``;
reference notes, section 3.10.)

* **makespan**: the simulated clock when the last job is done, seconds since the trace's origin;
* **JCT** of a job: completion time minus trace arrival, seconds (a job the original drops after
  repeated zero-progress rounds counts with its drop time); mean, median and 99th percentile;
* **finish-time fairness** ``rho_i = round(JCT_i / (T_i * max(1, N / G)), 5)``, ``T_i`` the job's
  exclusive run time from its profile (epoch durations summed in order), ``N`` the jobs in the
  trace, ``G`` the GPUs (a static contention factor);
* **Themis-style** ``rho``: the same with ``N`` replaced by the mean number of active jobs over the
  rounds from the job's admission (inclusive) to the round at which its completion was processed
  (exclusive), floored at 1 (an empty range counts as 1);
* **worst rho** and the **unfair fraction**, the share of jobs with ``rho > 1.05`` (on the rounded
  values);
* **utilisation**: each GPU's useful execution time (restart penalties excluded) over the
  makespan, rounded to 5 decimals, averaged over GPUs (``exact`` mechanics, which do not place
  jobs on GPU ids: the cluster's busy GPU-seconds over ``G * makespan``);
* **policy wall time** per round, seconds: a measurement of the machine, kept apart from the
  metrics (:class:`RunTiming`), so that result files are reproducible byte for byte.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shockwave.scheduling.record import SimulationRecord

if TYPE_CHECKING:
    import pandas as pd  # imported when a frame is asked for (it takes a while to import)

FloatArray = npt.NDArray[np.float64]

#: A job is "unfairly" treated when its finish-time fairness exceeds this (the paper's bar).
UNFAIR_THRESHOLD = 1.05
#: Finish-time fairness is rounded to this many decimals before aggregation, as the original.
RHO_DECIMALS = 5


def contention_factor(num_jobs: int, gpus: int) -> float:
    """The static contention factor ``max(1, N / G)``."""
    return max(1.0, num_jobs / gpus)


def finish_time_fairness(
    jct: FloatArray, exclusive_seconds: FloatArray, num_jobs: int, gpus: int
) -> list[float]:
    """``rho_i = round(JCT_i / (T_i * max(1, N / G)), 5)`` per job (static contention)."""
    factor = contention_factor(num_jobs, gpus)
    return [
        round(float(j) / (float(t) * factor), RHO_DECIMALS)
        for j, t in zip(jct.tolist(), exclusive_seconds.tolist(), strict=True)
    ]


def themis_finish_time_fairness(
    jct: FloatArray,
    exclusive_seconds: FloatArray,
    admission_round: npt.NDArray[np.int64],
    completion_round: npt.NDArray[np.int64],
    active_jobs_per_round: npt.NDArray[np.int64],
    gpus: int,
) -> list[float]:
    """Finish-time fairness with the contention factor averaged over the job's own rounds."""
    rhos = []
    for j, t, start, end in zip(
        jct.tolist(),
        exclusive_seconds.tolist(),
        admission_round.tolist(),
        completion_round.tolist(),
        strict=True,
    ):
        window = active_jobs_per_round[start:end]
        factor = float(np.mean(window)) / gpus if window.shape[0] else math.nan
        factor = max(1.0, factor) if not math.isnan(factor) else 1.0
        rhos.append(round(j / (t * factor), RHO_DECIMALS))
    return rhos


def unfair_fraction(rhos: list[float], threshold: float = UNFAIR_THRESHOLD) -> float:
    """Share of jobs (0..1) whose finish-time fairness exceeds ``threshold``."""
    return sum(1 for r in rhos if r > threshold) / len(rhos) if rhos else 0.0


def cluster_utilization(record: SimulationRecord) -> float:
    """Mean over GPUs of (useful execution time / makespan), each rounded to 5 decimals."""
    if record.makespan <= 0.0:
        return 0.0
    if record.gpu_busy_seconds is not None:
        per_gpu = [round(b / record.makespan, 5) for b in record.gpu_busy_seconds.tolist()]
        return float(np.mean(per_gpu))
    busy = float(np.sum(record.round_busy_gpu_seconds))
    return busy / (record.gpus * record.makespan)


def utilization_timeline(record: SimulationRecord) -> tuple[FloatArray, FloatArray]:
    """``(round start times, share of GPU-time used in each round)``, for plots."""
    starts = record.round_start
    ends = np.r_[starts[1:], record.makespan] if starts.shape[0] else starts
    length = np.maximum(ends - starts, 1e-12)
    return starts, record.round_busy_gpu_seconds / (record.gpus * length)


@dataclass(frozen=True)
class RunTiming:
    """How long a run took on this machine: measurements, not results.

    Kept apart from the metrics (:attr:`SimulationResult.timing`) because they differ from run
    to run on the same inputs; ``to_dict`` gives its JSON keys: ``wall_seconds`` (s, the whole
    simulation), ``policy_seconds_total`` (s), ``policy_seconds_max_round`` (s) and
    ``policy_seconds`` (s, per round, wall time spent in the policy at the round's boundary).
    """

    wall_seconds: float
    policy_seconds_total: float
    policy_seconds_max_round: float
    policy_seconds: list[float]

    def to_dict(self) -> dict[str, Any]:
        """The timing as plain JSON-ready values."""
        return asdict(self)


@dataclass(frozen=True)
class SimulationResult:
    """The metrics of one simulation (and its raw record and timing).

    **Results and timing are separate.** The metrics depend only on the inputs (workload, policy
    and its parameters, configuration and seed), bit for bit; the wall-clock timing of the run
    does not. So :meth:`to_dict` / :meth:`to_json` hold the metrics only, and two runs with the
    same inputs give byte-identical JSON (``shockwave simulate --output``); the timing lives in
    :attr:`timing` (:class:`RunTiming`, its own ``to_dict``; ``--timing FILE`` on the command
    line), and stays readable here as :attr:`wall_seconds`, :attr:`policy_seconds_total`,
    :attr:`policy_seconds_max_round` and :attr:`policy_seconds`.

    JSON keys (``to_dict``, a plain ``dict``): ``policy``, ``gpus``, ``mechanics``,
    ``round_seconds``, ``seed``, ``jobs``, ``rounds``, ``makespan`` (s), ``avg_jct``,
    ``median_jct``, ``p99_jct`` (s), ``worst_ftf``, ``unfair_fraction`` (0..1), ``utilization``
    (0..1), ``job_ids``, ``jct`` (s, trace order), ``ftf``, ``ftf_themis``, ``completion_time``
    (s), ``dropped_jobs`` (ids).
    """

    policy: str
    gpus: int
    mechanics: str
    round_seconds: float
    seed: int
    jobs: int
    rounds: int
    makespan: float
    avg_jct: float
    median_jct: float
    p99_jct: float
    worst_ftf: float
    unfair_fraction: float
    utilization: float
    job_ids: list[int]
    jct: list[float]
    ftf: list[float]
    ftf_themis: list[float]
    completion_time: list[float]
    dropped_jobs: list[int]
    record: SimulationRecord = field(repr=False, compare=False)
    timing: RunTiming = field(repr=False, compare=False, default=RunTiming(0.0, 0.0, 0.0, []))

    @property
    def wall_seconds(self) -> float:
        """Wall time of the whole simulation, seconds (:attr:`timing`)."""
        return self.timing.wall_seconds

    @property
    def policy_seconds_total(self) -> float:
        """Wall time spent in the policy, seconds (:attr:`timing`)."""
        return self.timing.policy_seconds_total

    @property
    def policy_seconds_max_round(self) -> float:
        """Longest wall time the policy took at one round, seconds (:attr:`timing`)."""
        return self.timing.policy_seconds_max_round

    @property
    def policy_seconds(self) -> list[float]:
        """Wall time spent in the policy at each round, seconds (:attr:`timing`)."""
        return self.timing.policy_seconds

    def to_dict(self) -> dict[str, Any]:
        """Every metric as plain JSON-ready values: the same for the same inputs, bit for bit
        (the record and the timing are left out; see the class notes)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name not in ("record", "timing"):
                value = getattr(self, f.name)
                out[f.name] = list(value) if isinstance(value, list) else value
        return out

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``kwargs`` go to :func:`json.dumps`)."""
        return json.dumps(self.to_dict(), **kwargs)

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job (trace order): times (s), rounds, fairness, whether dropped."""
        import pandas as pd  # imported lazily: slow to import

        r = self.record
        frame: pd.DataFrame = pd.DataFrame(
            {
                "job_id": self.job_ids,
                "arrival_time": r.arrival_time,
                "admission_time": r.admission_time,
                "completion_time": r.completion_time,
                "jct": self.jct,
                "exclusive_seconds": r.exclusive_seconds,
                "ftf": self.ftf,
                "ftf_themis": self.ftf_themis,
                "service_seconds": r.service_seconds,
                "rounds_run": r.rounds_run,
                "rounds_queued": r.rounds_queued,
                "last_round_run": r.last_round_run,
                "dropped": r.dropped,
            }
        )
        return frame


def summarize(record: SimulationRecord) -> SimulationResult:
    """Compute every metric of a run."""
    jct = record.jct
    num_jobs = int(jct.shape[0])
    gpus = record.gpus
    ftf = finish_time_fairness(jct, record.exclusive_seconds, num_jobs, gpus)
    themis = themis_finish_time_fairness(
        jct,
        record.exclusive_seconds,
        record.admission_round,
        record.completion_round,
        record.round_active_jobs,
        gpus,
    )
    ids = [int(j.job_id) for j in record.workload.jobs]
    policy_seconds = record.round_policy_seconds
    return SimulationResult(
        policy=record.policy_name,
        gpus=gpus,
        mechanics=record.mechanics,
        round_seconds=float(record.round_seconds),
        seed=record.seed,
        jobs=num_jobs,
        rounds=record.num_rounds,
        makespan=float(record.makespan),
        avg_jct=float(np.mean(jct)),
        median_jct=float(np.median(jct)),
        p99_jct=float(np.percentile(jct, 99)),
        worst_ftf=max(ftf),
        unfair_fraction=unfair_fraction(ftf),
        utilization=cluster_utilization(record),
        job_ids=ids,
        jct=jct.tolist(),
        ftf=ftf,
        ftf_themis=themis,
        completion_time=record.completion_time.tolist(),
        dropped_jobs=[i for i, d in zip(ids, record.dropped.tolist(), strict=True) if d],
        record=record,
        timing=RunTiming(
            wall_seconds=float(record.wall_seconds),
            policy_seconds_total=float(np.sum(policy_seconds)),
            policy_seconds_max_round=(
                float(np.max(policy_seconds)) if policy_seconds.shape[0] else 0.0
            ),
            policy_seconds=policy_seconds.tolist(),
        ),
    )
