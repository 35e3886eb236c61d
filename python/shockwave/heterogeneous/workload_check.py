"""Whether a workload can run on a heterogeneous cluster, checked before a run starts.

:func:`check_workload_on_cluster` is what the simulator and the runtime call before the first
round: every GPU type of the cluster must be one the workload knows, and every job must be able
to run somewhere (a profile, or no per-type profiles at all, on a type its ``gpu_types`` allow,
with at least its gang of GPUs). Each refusal names the type, the job and the field.
"""

from __future__ import annotations

from shockwave.errors import DataError, UsageError
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.workload import Job, Workload


class UnknownGpuTypeError(UsageError, ValueError):
    """A GPU type of the cluster that the workload does not know (exit status 2)."""


class UnschedulableJobError(DataError, ValueError):
    """A job that no GPU type of the cluster can run (exit status 3).

    Attributes:
        job_id: the job.
        field: the job's field that decides it (``epoch_seconds_by_type``, ``gpu_types`` or
            ``gang_size``, as in the native format).
    """

    def __init__(self, source: str, job_id: int, field: str, what: str) -> None:
        self.job_id = job_id
        super().__init__(what, where=f"{source}: job {job_id}: field {field!r}", path=source,
                         field=field)  # fmt: skip


def known_types(workload: Workload) -> tuple[str, ...]:
    """The GPU types ``workload`` knows: its throughput table's (when it has several), then
    those its jobs have profiles on or name in ``gpu_types``, in order of first mention; empty
    for a workload that says nothing of types (any type then runs it, at its profiles)."""
    seen: dict[str, None] = {}
    table = workload.throughputs
    if table is not None and table.is_typed:
        seen.update(dict.fromkeys(table.worker_types))
    for job in workload.jobs:
        if job.epoch_seconds_by_type is not None:
            seen.update(dict.fromkeys(job.epoch_seconds_by_type))
        if job.gpu_types is not None:
            seen.update(dict.fromkeys(job.gpu_types))
    return tuple(seen)


def check_workload_on_cluster(workload: Workload, cluster: ClusterSpec | str) -> None:
    """Refuse, before a run starts, a workload that ``cluster`` cannot run.

    Raises:
        ClusterSpecError: (a :class:`~shockwave.errors.UsageError`) for a malformed spec text.
        UnknownGpuTypeError: naming a type of the cluster that the workload knows nothing of
            (no job has a profile on it or allows it, and its throughput table lacks it), with
            the first job and the types it knows.
        UnschedulableJobError: (a :class:`~shockwave.errors.DataError`) naming the first job
            that has no profile on any type of the cluster (``epoch_seconds_by_type``), whose
            constraint no type of the cluster satisfies (``gpu_types``), or whose gang is larger
            than every type it can run on (``gang_size``).
    """
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
    known = known_types(workload)
    if known:
        for name in spec.types:
            if name not in known:
                first = workload.jobs[0]
                has = first.worker_types
                raise UnknownGpuTypeError(
                    f"GPU type {name!r} of the cluster {spec} is unknown to the workload "
                    f"{workload.source}: no job has a profile on it or allows it (job "
                    f"{first.job_id} runs on {', '.join(has) if has else 'any type'}); the "
                    f"types it knows: {', '.join(known)}",
                    field="cluster",
                )
    for job in workload.jobs:
        _check_job(job, spec, workload.source)


def _check_job(job: Job, spec: ClusterSpec, source: str) -> None:
    by_type = job.epoch_seconds_by_type
    if by_type is not None and not any(name in by_type for name in spec.types):
        raise UnschedulableJobError(
            source, job.job_id, "epoch_seconds_by_type",
            f"no throughput on any GPU type of the cluster {spec}: the job has profiles only on "
            f"{', '.join(by_type)}",
        )  # fmt: skip
    allowed = job.gpu_types
    if allowed is not None and not any(name in allowed for name in spec.types):
        raise UnschedulableJobError(
            source, job.job_id, "gpu_types",
            f"the job may run only on {', '.join(allowed)}; no such type in the cluster {spec}",
        )  # fmt: skip
    can = job.worker_types
    usable = [name for name in spec.types if can is None or name in can]
    if not usable:
        raise UnschedulableJobError(
            source, job.job_id, "gpu_types",
            f"the types the job allows ({', '.join(allowed or ())}) and those it has profiles "
            f"on ({', '.join(by_type or ())}) share none of the cluster {spec}",
        )  # fmt: skip
    if max(spec.count(name) for name in usable) < job.gang_size:
        raise UnschedulableJobError(
            source, job.job_id, "gang_size",
            f"a gang of {job.gang_size} GPUs runs on one type, and no type it can run on in "
            f"the cluster {spec} has that many ({', '.join(usable)})",
        )  # fmt: skip
