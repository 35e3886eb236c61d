"""Where a sweep's workloads come from: a trace file, or the trace generator.

A source is identified by what determines the workload, not by where it is: a file by the
SHA-256 of its bytes (and of its throughput table's), a generated trace by every generator
parameter. That identity goes into each cell's key (:mod:`shockwave.sweep.cells`), so moving a
file does not rerun its cells and editing it does.

Workers load sources with :func:`load_source`. On the machine that read the spec a file is read
from its path (its hash checked first); on a Ray cluster, whose nodes may not see that path, the
driver ships the bytes (``shipped``) and the worker writes them to a temporary directory once
and reads them from there, with the same reader as ``shockwave simulate``. The last workload
loaded stays cached in the worker process, so consecutive cells of one trace load it once.
A typed cell (a cluster of several GPU types) loads its jobs with :func:`load_typed_source`, as
``shockwave simulate --cluster`` does: a ``.trace`` by
:func:`~shockwave.heterogeneous.read_typed_trace` and a generated trace by
:func:`~shockwave.heterogeneous.typed_jobs_from_workload`, with every type of the throughput
file, and a native ``.jsonl`` or a trace generated for the cluster (without a throughput
file) along its jobs' profiles on every type
(:class:`~shockwave.heterogeneous.checkpoint.TypedInputs`,
:func:`~shockwave.heterogeneous.typed_jobs_from_profiles`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shockwave.atomic import atomic_write_bytes
from shockwave.heterogeneous import (
    ClusterSpec,
    TypedJobs,
    TypedThroughputTable,
    read_typed_trace,
    typed_jobs_from_profiles,
    typed_jobs_from_workload,
)
from shockwave.heterogeneous.checkpoint import TypedInputs
from shockwave.traces import GeneratorParameters, generate_workload, is_native, load_workload
from shockwave.traces.generator_parameters import (
    PARAMETER_DEFAULTS,
    format_templates,
    parse_templates,
)
from shockwave.workload import Workload


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileRef:
    """A file a source reads: its absolute path and the SHA-256 of its bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, path: Path) -> FileRef:
        """The reference of an existing file (hashes it)."""
        return cls(str(path.resolve()), file_sha256(path))


#: A throughput table: a bundled table's name (``tacc``, ``wisr``, ``cluster``) or a file.
Throughputs = str | FileRef | None


def _throughputs_identity(throughputs: Throughputs) -> Any:
    if isinstance(throughputs, FileRef):
        return {"sha256": throughputs.sha256}
    return throughputs


@dataclass(frozen=True)
class FileTrace:
    """A workload file: a ``.trace`` (with a throughput table) or a native ``.jsonl``."""

    file: FileRef
    throughputs: Throughputs

    def identity(self) -> dict[str, Any]:
        """What determines the workload (hashed into the cell keys)."""
        return {
            "file": {"sha256": self.file.sha256, "suffix": Path(self.file.path).suffix},
            "throughputs": _throughputs_identity(self.throughputs),
        }

    def files(self) -> tuple[FileRef, ...]:
        """Every file this source reads."""
        extra = (self.throughputs,) if isinstance(self.throughputs, FileRef) else ()
        return (self.file, *extra)

    def describe(self) -> str:
        """A one-line description (the ``trace_source`` column)."""
        return self.file.path


@dataclass(frozen=True)
class GeneratedTrace:
    """A trace drawn by the generator (``shockwave trace generate``).

    Attributes:
        parameters: the :class:`~shockwave.traces.GeneratorParameters` fields given (JSON
            values: lists for tuples, template text for ``templates``), without
            ``throughputs``.
        throughputs: the table, if one was given (else the generator's default for the GPUs).
    """

    parameters: Mapping[str, Any]
    throughputs: Throughputs

    def build(self, throughputs_path: str | None = None) -> GeneratorParameters:
        """The generator parameters (``throughputs_path`` replaces a table file's path).

        Raises:
            GeneratorParameterError: naming the invalid parameter.
        """
        kwargs = dict(self.parameters)
        if isinstance(self.throughputs, FileRef):
            kwargs["throughputs"] = throughputs_path or self.throughputs.path
        elif self.throughputs is not None:
            kwargs["throughputs"] = self.throughputs
        if "templates" in kwargs:
            kwargs["templates"] = parse_templates([kwargs["templates"]])
        return GeneratorParameters(**kwargs)

    def identity(self) -> dict[str, Any]:
        """Every generator parameter, defaults filled in (hashed into the cell keys)."""
        built = self.build()
        values: dict[str, Any] = {"jobs": built.jobs, "gpus": built.gpus}
        if built.cluster is not None:  # a typed trace drawn for its cluster (only then a key)
            values["cluster"] = str(built.cluster)
        for name in PARAMETER_DEFAULTS:
            value = getattr(built, name)
            if name == "throughputs":
                value = _throughputs_identity(self.throughputs)
            elif name == "templates":
                value = format_templates(value)
            elif name == "mean_interarrival":
                value = built.effective_mean_interarrival
            elif isinstance(value, tuple):
                value = list(value)
            values[name] = value
        return {"generate": values}

    def files(self) -> tuple[FileRef, ...]:
        """Every file this source reads."""
        return (self.throughputs,) if isinstance(self.throughputs, FileRef) else ()

    def describe(self) -> str:
        """The command line that writes this trace (the ``trace_source`` column)."""
        return self.build().command_line()


TraceSource = FileTrace | GeneratedTrace


def read_shipment(source: TraceSource) -> dict[str, bytes]:
    """The bytes of every file ``source`` reads, by SHA-256 (what Ray ships to its nodes)."""
    return {ref.sha256: Path(ref.path).read_bytes() for ref in source.files()}


# ------------------------------------------------------------------------------ worker side
#: The workload loaded last in this process, by its source's identity (one kept: a 20,000-job
#: workload holds about 0.4 GB).
_CACHE: dict[str, Workload] = {}


def load_source(source: TraceSource, shipped: Mapping[str, bytes] | None = None) -> Workload:
    """The workload of ``source`` (see the module notes), cached for the next cell.

    Raises:
        ValueError: when a file changed since the spec was read (its hash differs), or as
            :func:`~shockwave.traces.load_workload` and the generator.
        OSError: when a file cannot be read.
    """
    ident = repr(source.identity())
    cached = _CACHE.get(ident)
    if cached is not None:
        return cached
    paths = {ref.sha256: _local_path(ref, shipped) for ref in source.files()}
    if isinstance(source, FileTrace):
        throughputs: str | None
        if isinstance(source.throughputs, FileRef):
            throughputs = paths[source.throughputs.sha256]
        else:
            throughputs = source.throughputs
        workload = load_workload(paths[source.file.sha256], throughputs)
    else:
        table = source.throughputs
        table_path = paths[table.sha256] if isinstance(table, FileRef) else None
        workload = generate_workload(source.build(table_path))
    _CACHE.clear()
    _CACHE[ident] = workload
    return workload


#: The typed jobs loaded last in this process, by source identity and cluster.
_TYPED_CACHE: dict[str, TypedJobs] = {}


def load_typed_source(
    source: TraceSource, cluster: str, shipped: Mapping[str, bytes] | None = None
) -> TypedJobs:
    """The jobs of ``source`` on the typed ``cluster`` (see the module notes), cached for the
    next cell. The source's throughputs are a file holding every type of the cluster.

    Raises:
        ValueError: when a file changed since the spec was read, or naming the type or the job
            the throughput file cannot serve; :class:`~shockwave.errors.TraceError` for a
            malformed trace.
        OSError: when a file cannot be read.
    """
    ident = repr((source.identity(), cluster))
    cached = _TYPED_CACHE.get(ident)
    if cached is not None:
        return cached
    paths = {ref.sha256: _local_path(ref, shipped) for ref in source.files()}
    spec = ClusterSpec.parse(cluster)
    if isinstance(source, FileTrace) and is_native(source.file.path):
        jobs = TypedInputs.read(spec, paths[source.file.sha256]).jobs()
    elif isinstance(source, GeneratedTrace) and source.throughputs is None:
        jobs = typed_jobs_from_profiles(generate_workload(source.build()), spec)
    else:
        if not isinstance(source.throughputs, FileRef):
            raise ValueError("a typed cluster needs a throughput file with each of its types")
        table_path = paths[source.throughputs.sha256]
        table = TypedThroughputTable.from_file(table_path)
        if isinstance(source, FileTrace):
            jobs = read_typed_trace(paths[source.file.sha256], table, spec)
        else:
            workload = generate_workload(source.build(table_path))
            jobs = typed_jobs_from_workload(workload, table, spec)
    _TYPED_CACHE.clear()
    _TYPED_CACHE[ident] = jobs
    return jobs


def _local_path(ref: FileRef, shipped: Mapping[str, bytes] | None) -> str:
    """A local path holding the bytes of ``ref``: its own, or a copy of the shipped bytes."""
    if shipped is None:
        if file_sha256(ref.path) != ref.sha256:
            raise ValueError(f"{ref.path}: the file changed since the sweep read its spec")
        return ref.path
    directory = Path(tempfile.gettempdir()) / "shockwave-sweep" / ref.sha256
    local = directory / Path(ref.path).name  # the suffix tells the reader the format
    if not local.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            atomic_write_bytes(local, shipped[ref.sha256])
    return str(local)
