"""The jobs of a heterogeneous simulation as arrays, with their throughput on every GPU type.

Gavel's jobs are static: a job type (``'ResNet-18 (batch size 32)'``, or ``'A3C'`` for job types
without a batch size), a gang size, a number of iterations and an arrival time. Its speed on
each GPU type comes from the throughput table. :class:`TypedJobs` holds them in trace order (job
``i`` is line ``i + 1`` of a ``.trace``), built from a Gavel ``.trace`` (every job type the table
knows, batch-size ones or not: :func:`read_typed_trace`) or from a workload whose jobs carry
their iteration counts (:func:`typed_jobs_from_workload`). A native workload's jobs, adapting or
not, run along their epoch profile on each type instead (:func:`typed_jobs_from_profiles`,
:mod:`~shockwave.heterogeneous.typed_profiles`): their speed on a type is that of the epoch they
are in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shockwave.errors import TraceError
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.typed_profiles import TypedProfiles
from shockwave.heterogeneous.typed_throughputs import TypedThroughputTable
from shockwave.heterogeneous.workload_check import check_workload_on_cluster
from shockwave.limits import INT64_MAX
from shockwave.traces.gavel_format import GAVEL_FIELDS, SHOCKWAVE_FIELDS
from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TypedJobs:
    """Static jobs on a typed cluster, in trace order.

    Attributes:
        job_ids: identifiers (the line index for a ``.trace``).
        job_types: Gavel's job-type text of each job.
        arrival: submission times, seconds, non-decreasing.
        gang: GPUs each job needs (it runs on that many GPUs of one type).
        weight: priority weights (> 0).
        total_steps: iterations each job runs.
        throughput: ``T[i, k]``, iterations/s of job ``i`` on ``gang[i]`` GPUs of type ``k``
            of ``cluster`` (0: cannot run there).
        cluster: the cluster the throughputs are for.
        table: the throughput table they came from (its co-location pairs serve the packing
            policies: :meth:`colocated`); ``None`` when the jobs were built by hand.
        profiles: for jobs that follow their epoch profiles (:func:`typed_jobs_from_profiles`),
            their profiles on every type; ``throughput`` is then their speed at their first
            epoch and ``total_steps`` the iterations of their whole profile. ``None``: static
            jobs running at ``throughput``.
    """

    job_ids: IntArray
    job_types: tuple[str, ...]
    arrival: FloatArray
    gang: IntArray
    weight: FloatArray
    total_steps: IntArray
    throughput: FloatArray
    cluster: ClusterSpec
    table: TypedThroughputTable | None = field(default=None, compare=False, repr=False)
    profiles: TypedProfiles | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        n = self.job_ids.shape[0]
        if n == 0:
            raise ValueError("the workload holds no jobs")
        for name in ("arrival", "gang", "weight", "total_steps"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must hold one value per job ({n})")
        if self.throughput.shape != (n, self.cluster.num_types):
            raise ValueError(
                f"throughput must be {n} x {self.cluster.num_types}, got {self.throughput.shape}"
            )
        if np.any(np.diff(self.arrival) < 0):
            i = int(np.flatnonzero(np.diff(self.arrival) < 0)[0]) + 1
            raise ValueError(f"job {int(self.job_ids[i])}: arrivals must be non-decreasing")
        counts = np.asarray(self.cluster.counts, dtype=np.int64)
        for i in range(n):
            fits = (self.throughput[i] > 0.0) & (counts >= self.gang[i])
            if not fits.any():
                raise ValueError(
                    f"job {int(self.job_ids[i])} ({self.job_types[i]!r}) needs "
                    f"{int(self.gang[i])} GPUs of one type with a throughput; no type of the "
                    f"cluster {self.cluster} has that"
                )

    def __len__(self) -> int:
        return int(self.job_ids.shape[0])

    def colocated(self, first: int, second: int) -> FloatArray:
        """``(K, 2)``: iterations/s of jobs ``first`` and ``second`` (internal indices) sharing
        the GPUs of each type of the cluster, from the table's co-location pairs (0 where the
        table has no such pair, or the jobs' gang sizes differ: they cannot share GPUs)."""
        out = np.zeros((self.cluster.num_types, 2))
        if self.table is None or self.gang[first] != self.gang[second]:
            return out
        a = (self.job_types[first], int(self.gang[first]))
        b = (self.job_types[second], int(self.gang[second]))
        for k, name in enumerate(self.cluster.types):
            pair = self.table.colocated(name, a, b)
            if pair is not None:
                out[k] = pair
        return out


def read_typed_trace(
    path: str | PathLike[str], table: TypedThroughputTable, cluster: ClusterSpec
) -> TypedJobs:
    """Read a Gavel (10-field) or Shockwave (12-field) ``.trace`` for a typed cluster.

    Every job type of the table is accepted (``A3C``, ``CycleGAN`` included); a Shockwave line's
    adaptation mode is ignored (Gavel's jobs are static).

    Raises:
        TraceError: naming the file, line and field of a malformed line;
        ValueError: naming the type or the job the table cannot serve.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read trace ({exc.strerror})", path=path) from None
    return parse_typed_trace(data, path, table, cluster)


def parse_typed_trace(
    data: bytes, path: str | PathLike[str], table: TypedThroughputTable, cluster: ClusterSpec
) -> TypedJobs:
    """:func:`read_typed_trace` of a file's bytes (``path`` names it in errors)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError("not a text file (not UTF-8)", path=path) from None
    types: list[str] = []
    arrival: list[float] = []
    gang: list[int] = []
    weight: list[float] = []
    steps: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        parts = raw.split("\t")
        if len(parts) == len(SHOCKWAVE_FIELDS):
            values = dict(zip(SHOCKWAVE_FIELDS, parts, strict=True))
        elif len(parts) == len(GAVEL_FIELDS):
            values = dict(zip(GAVEL_FIELDS, parts, strict=True))
        else:
            raise TraceError(
                f"expected {len(GAVEL_FIELDS)} (Gavel) or {len(SHOCKWAVE_FIELDS)} (Shockwave) "
                f"tab-separated fields, got {len(parts)}", path=path, line=number,
            )  # fmt: skip
        job_type = values["job_type"].strip()
        if not job_type:
            raise TraceError("empty job type", path=path, line=number, field="job_type")
        types.append(job_type)
        steps.append(_int(values, "total_steps", path, number))
        gang.append(_int(values, "scale_factor", path, number))
        weight.append(_float(values, "priority_weight", path, number, strict=True))
        arrival.append(_float(values, "arrival_time", path, number, strict=False))
        if len(arrival) > 1 and arrival[-1] < arrival[-2]:
            raise TraceError("arrival times must be non-decreasing down the file", path=path,
                             line=number, field="arrival_time")  # fmt: skip
    if not types:
        raise TraceError("the trace holds no jobs", path=path)
    ids = list(range(len(types)))
    thr = table.matrix(types, gang, cluster, job_ids=ids)
    return TypedJobs(
        job_ids=np.asarray(ids, dtype=np.int64),
        job_types=tuple(types),
        arrival=np.asarray(arrival, dtype=np.float64),
        gang=np.asarray(gang, dtype=np.int64),
        weight=np.asarray(weight, dtype=np.float64),
        total_steps=np.asarray(steps, dtype=np.int64),
        throughput=thr,
        cluster=cluster,
        table=table,
    )


def typed_jobs_from_workload(
    workload: Workload, table: TypedThroughputTable, cluster: ClusterSpec
) -> TypedJobs:
    """The static view of a workload whose jobs carry ``total_steps`` (``.trace``-born ones):
    each job's type is ``Model (batch size B0)`` at its initial batch size.

    The workload is first checked against the cluster
    (:func:`~shockwave.heterogeneous.workload_check.check_workload_on_cluster`: unknown types,
    jobs no type can run, constraints no type satisfies).

    Raises:
        ValueError: naming a job without ``total_steps``, or one the table cannot serve;
            the errors of ``check_workload_on_cluster``.
    """
    check_workload_on_cluster(workload, cluster)
    jobs = sorted(workload.jobs, key=lambda j: j.arrival_time)
    for job in jobs:
        if job.total_steps is None:
            raise ValueError(
                f"job {job.job_id}: a heterogeneous simulation needs its iteration count "
                "(total_steps; native files converted from a .trace carry it)"
            )
    ids = [j.job_id for j in jobs]
    types = [j.job_type for j in jobs]
    gangs = [j.gang_size for j in jobs]
    return TypedJobs(
        job_ids=np.asarray(ids, dtype=np.int64),
        job_types=tuple(types),
        arrival=np.asarray([j.arrival_time for j in jobs], dtype=np.float64),
        gang=np.asarray(gangs, dtype=np.int64),
        weight=np.asarray([j.weight for j in jobs], dtype=np.float64),
        total_steps=np.asarray([j.total_steps for j in jobs], dtype=np.int64),
        throughput=table.matrix(types, gangs, cluster, job_ids=ids),
        cluster=cluster,
        table=table,
    )


def typed_jobs_from_profiles(workload: Workload, cluster: ClusterSpec | str) -> TypedJobs:
    """The jobs of a native workload on ``cluster``, following their epoch profile on every type
    (:mod:`~shockwave.heterogeneous.typed_profiles`): adapting jobs change speed epoch by epoch.
    Jobs in arrival order (ties in file order). Both typed mechanics run them.

    The workload is first checked against the cluster
    (:func:`~shockwave.heterogeneous.workload_check.check_workload_on_cluster`).

    Raises:
        UnknownGpuTypeError, UnschedulableJobError: from ``check_workload_on_cluster``, naming
            the type or the job and field.
    """
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
    check_workload_on_cluster(workload, spec)
    jobs = sorted(workload.jobs, key=lambda j: j.arrival_time)
    profiles = TypedProfiles(jobs, spec.types)
    n = len(jobs)
    first = profiles.throughput(np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    return TypedJobs(
        job_ids=np.asarray([j.job_id for j in jobs], dtype=np.int64),
        job_types=tuple(j.job_type for j in jobs),
        arrival=np.asarray([j.arrival_time for j in jobs], dtype=np.float64),
        gang=np.asarray([j.gang_size for j in jobs], dtype=np.int64),
        weight=np.asarray([j.weight for j in jobs], dtype=np.float64),
        total_steps=np.rint(profiles.total_iterations).astype(np.int64),
        throughput=first,
        cluster=spec,
        profiles=profiles,
    )


def _int(values: dict[str, str], name: str, path: str | PathLike[str], line: int) -> int:
    text = values[name].strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"cannot read {text!r} as int", path=path, line=line,
                         field=name) from None  # fmt: skip
    if not 1 <= value <= INT64_MAX:
        raise TraceError(f"must be an integer >= 1, got {text!r}", path=path, line=line,
                         field=name)  # fmt: skip
    return value


def _float(
    values: dict[str, str], name: str, path: str | PathLike[str], line: int, *, strict: bool
) -> float:
    text = values[name].strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"cannot read {text!r} as float", path=path, line=line,
                         field=name) from None  # fmt: skip
    if not math.isfinite(value) or value < 0.0 or (strict and value == 0.0):
        bound = "> 0" if strict else ">= 0"
        raise TraceError(f"must be finite and {bound}, got {text!r}", path=path, line=line,
                         field=name)  # fmt: skip
    return value
