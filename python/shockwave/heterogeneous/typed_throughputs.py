"""Throughputs on every worker type: the whole of a Gavel-style throughput file.

A throughput file (Gavel's ``simulation_throughputs.json``, the original Shockwave tables) maps
each worker type (``v100``, ``p100``, ``k80``, and placement variants such as
``v100_unconsolidated``) to job types ``"('Model (batch size B)', gang)"`` (or
``"('A3C', 1)"`` for job types without a batch size), whose ``"null"`` entry is the isolated
throughput of the whole job on ``gang`` GPUs of that type, in iterations per second. The other
entries (co-location pairs) are kept for the packing policies (:meth:`colocated`).

:class:`shockwave.throughputs.ThroughputTable` keeps every worker type too, for the jobs with
epoch profiles (batch-size job types; the per-type epoch durations of a workload come from it);
:class:`TypedThroughputTable` is the view of Gavel's static jobs: every job type, ``A3C`` and
``CycleGAN`` included, with the co-location pairs. Both read a file's keys and rates with the
same functions (:func:`~shockwave.throughputs.parse_throughput_key`,
:func:`~shockwave.throughputs.check_throughput`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.errors import TraceError
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.throughputs import COSTS_KEY, check_throughput, parse_throughput_key

#: (job type text, gang size), e.g. ``("ResNet-18 (batch size 32)", 1)``.
JobTypeKey = tuple[str, int]


@dataclass(frozen=True)
class TypedThroughputTable:
    """Isolated throughputs per worker type: ``entries[worker_type][(job_type, gang)]``, in
    iterations/s of the whole job; co-location pairs in ``pairs[worker_type]``."""

    entries: Mapping[str, Mapping[JobTypeKey, float]]
    pairs: Mapping[str, Mapping[tuple[JobTypeKey, JobTypeKey], tuple[float, float]]] = field(
        default_factory=dict, compare=False
    )
    source: str = field(default="<memory>", compare=False)

    @property
    def worker_types(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def isolated(self, worker_type: str, job_type: str, gang: int) -> float:
        """Throughput of ``job_type`` on ``gang`` GPUs of ``worker_type`` (0 if the table has
        no such entry: the job cannot run there)."""
        return float(self.entries[worker_type].get((job_type, gang), 0.0))

    def colocated(
        self, worker_type: str, first: JobTypeKey, second: JobTypeKey
    ) -> tuple[float, float] | None:
        """Throughputs of two jobs sharing ``worker_type`` GPUs, or ``None`` if not measured."""
        return self.pairs.get(worker_type, {}).get((first, second))

    def check_cluster(self, cluster: ClusterSpec) -> None:
        """Raise ``ValueError`` naming a type of ``cluster`` the table does not have."""
        for name in cluster.types:
            if name not in self.entries:
                known = ", ".join(sorted(self.entries))
                raise ValueError(
                    f"GPU type {name!r} of the cluster is not in {self.source} "
                    f"(its worker types: {known})"
                )

    def matrix(
        self,
        job_types: Sequence[str],
        gangs: Sequence[int],
        cluster: ClusterSpec,
        job_ids: Sequence[int] | None = None,
    ) -> npt.NDArray[np.float64]:
        """``T[i, k]``: throughput of job ``i`` on type ``cluster.types[k]`` (iterations/s).

        Raises:
            ValueError: naming the type the table lacks, or the first job that has no positive
                throughput on any type of the cluster (it could never run).
        """
        self.check_cluster(cluster)
        n = len(job_types)
        out = np.zeros((n, cluster.num_types), dtype=np.float64)
        for k, name in enumerate(cluster.types):
            table = self.entries[name]
            out[:, k] = [table.get((t, g), 0.0) for t, g in zip(job_types, gangs, strict=True)]
        dead = np.flatnonzero(~np.any(out > 0.0, axis=1))
        if dead.shape[0]:
            i = int(dead[0])
            label = job_ids[i] if job_ids is not None else i
            raise ValueError(
                f"job {label} ({job_types[i]!r} on {gangs[i]} GPU(s)) has no throughput on any "
                f"GPU type of the cluster ({', '.join(cluster.types)}) in {self.source}"
            )
        return out

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> TypedThroughputTable:
        """Read a Gavel or Shockwave throughput JSON file (``.json``, or gzip-compressed
        ``.json.gz``), every worker type.

        Raises:
            TraceError: naming the file and the offending key.
        """
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise TraceError(f"cannot read throughput file ({exc.strerror})", path=path) from None
        return cls.from_bytes(data, path)

    @classmethod
    def from_bytes(cls, data: bytes, path: str | PathLike[str]) -> TypedThroughputTable:
        """:meth:`from_file` of a file's bytes (``path`` names it, and a ``.gz`` suffix says
        they are gzip-compressed).

        Raises:
            TraceError: as :meth:`from_file`.
        """
        path = Path(path)
        try:
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            raw = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError):
            raise TraceError("not a UTF-8 text file (or not gzip-compressed)", path=path) from None
        except json.JSONDecodeError as exc:
            raise TraceError(f"not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
        return cls.from_dict(raw, source=str(path))

    @classmethod
    def from_dict(cls, raw: Any, *, source: str = "<memory>") -> TypedThroughputTable:
        """Build from the parsed JSON of a throughput file (see the module notes)."""
        if not isinstance(raw, dict):
            raise TraceError("a throughput file is a JSON object", path=source)
        entries: dict[str, dict[JobTypeKey, float]] = {}
        pairs: dict[str, dict[tuple[JobTypeKey, JobTypeKey], tuple[float, float]]] = {}
        for worker_type, by_job in raw.items():
            if worker_type == COSTS_KEY:
                continue
            if not isinstance(by_job, dict):
                raise TraceError("must map job types to throughputs", path=source,
                                 field=worker_type)  # fmt: skip
            isolated: dict[JobTypeKey, float] = {}
            paired: dict[tuple[JobTypeKey, JobTypeKey], tuple[float, float]] = {}
            for key, value in by_job.items():
                job = _key(key, source, worker_type)
                if not isinstance(value, dict) or "null" not in value:
                    raise TraceError("entry has no 'null' (isolated) throughput", path=source,
                                     field=f"{worker_type}/{key}")  # fmt: skip
                for other, thr in value.items():
                    where = f"{worker_type}/{key}/{other}"
                    if other == "null":
                        isolated[job] = _rate(thr, source, where)
                        continue
                    if not isinstance(thr, list) or len(thr) != 2:
                        raise TraceError("a co-location entry is a pair of throughputs",
                                         path=source, field=where)  # fmt: skip
                    paired[(job, _key(other, source, where))] = (
                        _rate(thr[0], source, where),
                        _rate(thr[1], source, where),
                    )
            entries[str(worker_type)] = isolated
            pairs[str(worker_type)] = paired
        if not entries:
            raise TraceError("no worker types", path=source)
        return cls(entries, pairs, source=source)


def _key(text: str, source: str, where: str) -> JobTypeKey:
    parsed = parse_throughput_key(text)
    if parsed is None:
        raise TraceError(f"malformed job-type key {text!r}", path=source, field=where)
    return parsed


def _rate(value: Any, source: str, where: str) -> float:
    return check_throughput(value, source, where)
