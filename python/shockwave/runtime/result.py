"""The result of a real run: a simulation result's metrics plus what only reality has.

:class:`RunResult` *is* a :class:`~shockwave.metrics.SimulationResult` (same metrics, defined the
same way, ``mechanics = "physical"``), so everything that reads simulation results reads real
runs too, and adds per job: crash restarts, preemptions, launches, the final digest, the
measured throughput per batch size and the batch size of every epoch (what the job actually
did), and per round the scheduler's own overheads. A failed job counts as dropped (its
completion time is its failure time, as the original's dropped jobs).

Finish-time fairness uses each job's runtime alone on its gang *for the batch sizes it actually
ran at* (the profiled duration of each of its regimes, from the throughput table of
``shockwave cluster profile``), as a simulation of the realized workload does; a job that did
not finish keeps its planned runtime.

A result says at its top what it covers (``status`` and ``aggregates``, the first keys of its
JSON): ``"completed"`` when every job finished; ``"failed"`` when some job failed (it keeps
failing: its last error is in ``errors``) and ``"incomplete"`` when the run was interrupted
(Ctrl-C). In both of the latter the makespan, the JCTs, finish-time fairness and the unfair
fraction are over the jobs that **finished** only (the makespan: when the last of them finished;
finish-time fairness still uses every job of the workload in its contention factor); failed and
unfinished jobs are never counted as if they had completed, and have ``None`` times in the JSON.

The throughput table a run's fairness rests on is recorded (``throughputs``: its source, and the
machine it was measured on), with ``profile_ratio``: the median, over the jobs' batch sizes, of
the throughput measured in the run over the table's (1.0: the table is this machine's speed),
and ``machine_load``: how much of the machine other programs took during the run
(:mod:`shockwave.runtime.machine_load`; jobs that share the machine with them train slower than
their profile, which no prediction from the profile can foresee).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shockwave.metrics import SimulationResult, summarize, unfair_fraction
from shockwave.workload import Workload

if TYPE_CHECKING:
    import pandas as pd

    from shockwave.runtime.lifecycle import LiveJob
    from shockwave.runtime.machine_load import MachineLoad
    from shockwave.runtime.scheduler import RuntimeScheduler


@dataclass(frozen=True, kw_only=True)
class RunResult(SimulationResult):
    """The metrics of a real run (see the module notes).

    A real run happens in wall-clock time, so unlike a simulation's its metrics are
    measurements; :attr:`timing` holds the scheduler's own wall time as for a simulation.

    Extra JSON keys, per job in trace order: ``restarts`` (crash restarts), ``preemptions``
    (stops at a round boundary), ``launches`` (processes started), ``final_digest`` (hex digest
    of the final parameters, ``None`` if unfinished), ``errors`` (the latest error or ``None``),
    ``epoch_batch_sizes`` (the batch size of every epoch, ``[[batch size, epochs], ...]``),
    ``measured_throughput`` (``{batch size: iterations/s}`` measured while training),
    ``start_seconds`` (per launch: ``[round, seconds from the round's dispatch to the job's
    hello (0 for a crash restart), seconds from launch to hello, 1 if it resumed from a
    checkpoint, 1 if it restarted a crashed process]``). Per round:
    ``round_boundary_wait`` (seconds from a boundary until every running job reported at it),
    ``round_decision_seconds`` (policy, journal and dispatch, seconds). Whole run: ``executor``,
    ``slot_kind``, ``incomplete``, ``failed_jobs`` (ids), ``replay_divergence`` (rounds whose
    replayed policy answer differed on resume), ``run_dir``, ``machine_load`` (``other_cores``:
    the CPU time other programs took during the run, in cores, ``steal_fraction`` and the rest of
    :class:`~shockwave.runtime.machine_load.MachineLoad`; ``None`` where it cannot be measured).
    On a heterogeneous cluster only: ``cluster`` (its spec, ``"v100:1,p100:1"``) and, per job,
    ``gpu_types`` (``[[round, GPU type], ...]``: the type its gang ran on in every round it was
    dispatched in); both absent from the JSON of a homogeneous run.
    """

    status: str
    aggregates: str
    executor: str
    slot_kind: str
    incomplete: bool
    failed_jobs: list[int]
    restarts: list[int]
    preemptions: list[int]
    launches: list[int]
    final_digest: list[str | None]
    errors: list[str | None]
    epoch_batch_sizes: list[list[list[int]]]
    measured_throughput: list[dict[str, float]]
    start_seconds: list[list[list[float]]]
    round_boundary_wait: list[float]
    round_decision_seconds: list[float]
    replay_divergence: list[int]
    run_dir: str
    output: str | None
    throughputs: dict[str, str]
    profile_ratio: float | None
    machine_load: dict[str, float] | None
    cluster: str | None = None
    gpu_types: list[list[list[Any]]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every metric as JSON-ready values (NaN, for unfinished jobs, becomes ``None``), the
        ``status`` and ``aggregates`` keys first."""
        data: dict[str, Any] = _no_nan(super().to_dict())
        if self.cluster is None:
            del data["cluster"], data["gpu_types"]
        head = {key: data.pop(key) for key in ("status", "aggregates")}
        return {**head, **data}

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job: the simulation result's columns plus restarts, preemptions,
        launches, final digest, error and measured throughput."""
        frame = super().jobs_frame()
        frame["restarts"] = self.restarts
        frame["preemptions"] = self.preemptions
        frame["launches"] = self.launches
        frame["final_digest"] = self.final_digest
        frame["error"] = self.errors
        return frame


def run_result(
    scheduler: RuntimeScheduler,
    wall_seconds: float,
    executor: str,
    load: MachineLoad | None = None,
) -> RunResult:
    """The result of ``scheduler``'s run (finished or interrupted); ``load``: what other programs
    took of the machine meanwhile."""
    record = scheduler.record(wall_seconds)
    ledger = scheduler.ledger
    trace_order = np.empty(ledger.n, dtype=np.int64)
    trace_order[ledger.position] = np.arange(ledger.n, dtype=np.int64)
    jobs = [scheduler.processes.live[int(i)] for i in trace_order.tolist()]
    workload = scheduler.workload
    realized = _realized_exclusive(workload, jobs, record)
    record = dataclasses.replace(record, exclusive_seconds=realized)
    outcomes = [job.outcome for job in jobs]
    completed = np.array([o is not None and o.kind == "finished" for o in outcomes], dtype=bool)
    failed = [
        int(job.job_id)
        for job, outcome in zip(workload.jobs, outcomes, strict=True)
        if outcome is not None and outcome.kind == "failed"
    ]
    if not completed.all():  # no time of a failed or unfinished job counts as a completion
        completion = record.completion_time.copy()
        completion[~completed] = np.nan
        done = completion[completed]
        makespan = float(done.max()) if done.shape[0] else math.nan
        record = dataclasses.replace(record, completion_time=completion, makespan=makespan)
    base = summarize(record)
    if not completed.all():
        base = _partial(base, completed)
    incomplete = scheduler.incomplete or (not completed.all() and not failed)
    status = "failed" if failed else "incomplete" if incomplete else "completed"
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(SimulationResult)}
    world = scheduler.world
    config = scheduler.config
    return RunResult(
        **fields,
        status=status,
        aggregates=(
            f"all {ledger.n} jobs"
            if status == "completed"
            else f"the {int(completed.sum())} of {ledger.n} jobs that finished"
        ),
        executor=executor,
        slot_kind=scheduler.slot_kind,
        incomplete=incomplete,
        failed_jobs=failed,
        restarts=[job.history.crashes for job in jobs],
        preemptions=[job.history.preemptions for job in jobs],
        launches=[job.history.launches for job in jobs],
        final_digest=[o.digest if o is not None else None for o in outcomes],
        errors=[job.error for job in jobs],
        epoch_batch_sizes=[[[b, c] for b, c in job.progress.epoch_log] for job in jobs],
        measured_throughput=[
            {
                str(size): steps / seconds
                for size, (steps, seconds) in sorted(job.history.throughput.items())
            }
            for job in jobs
        ],
        start_seconds=[[list(s) for s in job.history.starts] for job in jobs],
        round_boundary_wait=list(world.round_boundary_wait),
        round_decision_seconds=list(world.round_decision_seconds),
        replay_divergence=list(scheduler.replay_divergence),
        run_dir=str(config.run_dir),
        output=None if config.output is None else str(config.output),
        throughputs=_table_provenance(workload),
        profile_ratio=_profile_ratio(workload, jobs),
        machine_load=None if load is None else load.to_dict(),
        cluster=None if config.cluster is None else str(config.cluster),
        gpu_types=None
        if config.cluster is None
        else [[[k, name] for k, name in job.history.types] for job in jobs],
    )


def _table_provenance(workload: Workload) -> dict[str, str]:
    """Which throughput table the run's plans and fairness rest on."""
    table = workload.throughputs
    costs = workload.costs
    return {
        "source": table.source if table is not None else "the workload's own durations",
        "machine": costs.machine if costs is not None else "",
    }


def _profile_ratio(workload: Workload, jobs: list[LiveJob]) -> float | None:
    """The median over (job, batch size) of the throughput measured in the run over the
    planned one (the workload's epoch durations), or ``None`` without measurements."""
    ratios = []
    for spec, job in zip(workload.jobs, jobs, strict=True):
        planned: dict[int, float] = {}
        for size, seconds in zip(
            spec.batch_sizes.tolist(), spec.epoch_seconds.tolist(), strict=True
        ):
            planned.setdefault(int(size), float(seconds))
        per_epoch = float(spec.samples_per_epoch or 0)
        for size, (steps, seconds) in job.history.throughput.items():
            if size in planned and seconds > 0 and steps > 0 and per_epoch > 0:
                planned_rate = (per_epoch / size) / planned[size]  # as profiles.epoch_durations
                ratios.append((steps / seconds) / planned_rate)
    return round(float(np.median(ratios)), 4) if ratios else None


def _realized_exclusive(
    workload: Workload, jobs: list[LiveJob], record: Any
) -> np.ndarray[Any, Any]:
    """Each job's runtime alone on its gang for the batch sizes it actually ran at (the
    profiled duration of each of its regimes, summed over its epochs); the planned one for a job
    that did not finish. The finish-time-fairness denominator of a real run. (``jobs`` in trace
    order.)"""
    out = np.array(record.exclusive_seconds, dtype=np.float64)
    for position, (spec, job) in enumerate(zip(workload.jobs, jobs, strict=True)):
        epoch_log = job.progress.epoch_log
        if sum(count for _, count in epoch_log) != spec.num_epochs:
            continue
        planned: dict[int, float] = {}
        for size, seconds in zip(
            spec.batch_sizes.tolist(), spec.epoch_seconds.tolist(), strict=True
        ):
            planned.setdefault(int(size), float(seconds))
        total = 0.0
        for size, count in epoch_log:
            for _ in range(count):  # summed in epoch order, as the simulator sums a profile
                total += planned[size]
        out[position] = total
    return out


def _partial(
    base: SimulationResult, finished: np.ndarray[Any, np.dtype[np.bool_]]
) -> SimulationResult:
    """Aggregates over the finished jobs only (an interrupted run)."""
    jct = np.asarray(base.jct, dtype=np.float64)[finished]
    ftf = [r for r, ok in zip(base.ftf, finished.tolist(), strict=True) if ok]
    if jct.shape[0] == 0:
        nan = math.nan
        return dataclasses.replace(
            base, avg_jct=nan, median_jct=nan, p99_jct=nan, worst_ftf=nan, unfair_fraction=nan
        )
    return dataclasses.replace(
        base,
        avg_jct=float(np.mean(jct)),
        median_jct=float(np.median(jct)),
        p99_jct=float(np.percentile(jct, 99)),
        worst_ftf=max(ftf),
        unfair_fraction=unfair_fraction(ftf),
    )


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return value


def read_run_result(path: str | PathLike[str]) -> dict[str, Any]:
    """A run's ``result.json`` as a JSON object.

    Raises:
        ValueError: naming the file, if it cannot be read or is not a run's result.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the run's result ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON result ({exc})") from None
    if not isinstance(data, dict) or data.get("mechanics") != "physical":
        raise ValueError(f"{path}: not the result of a real run")
    return data
