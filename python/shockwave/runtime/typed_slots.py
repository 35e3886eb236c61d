"""Typed slots of a real run on a heterogeneous cluster: the jobs' speed on each GPU type.

On a cluster of several GPU types (``RuntimeConfig(cluster="v100:1,p100:1")``) a real run is
asked by a typed policy (:mod:`shockwave.heterogeneous.registry`) through the typed allocator
(:class:`~shockwave.heterogeneous.allocation.TypedRounds`, ``every-round``, as the ``exact``
mechanics), which needs each job's iterations per second on each type, ``T[i, k]``, and its
iterations left. Both come from the planning profiles only (a job's future is never read):

* ``T[i, k]`` is the job's planned iterations over its planned seconds on type ``k``
  (:meth:`Job.profile_on <shockwave.workload.Job.profile_on>`; a job without per-type profiles
  runs at its one profile on every type it may run on; 0 on a type it cannot run on);
* the iterations left are the plan's total less the steps the job reported.

Slots are numbered type after type in the spec's order
(:func:`~shockwave.runtime.config.type_slots`); the executors give each gang slots of the type
its policy chose (:mod:`shockwave.runtime.processes`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.rounds.ledger import JobLedger
from shockwave.sim.plan_view import PlanView

FloatArray = npt.NDArray[np.float64]


def planned_typed_jobs(ledger: JobLedger, plan: PlanView, cluster: ClusterSpec) -> TypedJobs:
    """The typed view of a real run's jobs (in the ledger's order; see the module notes).

    Raises:
        ValueError: naming a job that no type of ``cluster`` can run (the workload check,
            :func:`~shockwave.heterogeneous.workload_check.check_workload_on_cluster`, refuses
            it first with its field).
    """
    total = plan.profiles.total_iterations.astype(np.float64)
    throughput = np.zeros((ledger.n, cluster.num_types), dtype=np.float64)
    for i, job in enumerate(ledger.jobs):
        can = job.worker_types
        for k, name in enumerate(cluster.types):
            if can is not None and name not in can:
                continue
            seconds = job.profile_on(name).total_seconds
            throughput[i, k] = total[i] / seconds if seconds > 0 else 0.0
    return TypedJobs(
        job_ids=ledger.job_ids.copy(),
        job_types=tuple(job.model for job in ledger.jobs),
        arrival=ledger.arrival.copy(),
        gang=ledger.gang.copy(),
        weight=ledger.weight.copy(),
        total_steps=np.ceil(total).astype(np.int64),
        throughput=throughput,
        cluster=cluster,
    )
