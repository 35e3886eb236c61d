"""The synthetic trace generator (``shockwave trace generate``).

It draws jobs exactly as the original's ``generate_trace.py`` does (Shockwave artifact,
github.com/uw-mad-dash/shockwave), so that the original's parameters reproduce its traces byte
for byte. Six random streams, all Mersenne Twister, are seeded from the one seed:

=====================================  ===========  =========================================
stream                                 seed         draws
=====================================  ===========  =========================================
``random.Random``                      seed         the job template (and the priority, if any)
``random.Random``                      seed + 1     the inter-arrival times
``random.Random``                      seed + 2     the duration bucket
``random.Random``                      seed + 3     the gang size
``random.Random``                      seed + 4     the adaptation mode
``numpy.random.RandomState``           seed         the duration within its bucket
=====================================  ===========  =========================================

Per job, in this order:

1. a template, uniformly from ``templates``;
2. a gang size from ``gang_size_mix``, only if the model can be distributed (otherwise 1 GPU and
   no draw): the first size whose cumulative probability is >= u; on a heterogeneous cluster a
   size larger than every type is capped (:meth:`GeneratorParameters.gang_caps`);
3. a duration bucket (the first whose cumulative probability is > u), then a uniformly drawn point
   of the duration grid in that bucket; the nominal duration is that point in seconds, rounded;
4. a mode (the first whose cumulative probability is > u); an Accordion job shorter than
   ``accordion_min_seconds`` becomes static;
5. ``total_steps = int(duration * thr(template, gang))``: iterations at the initial batch size;
6. a priority weight, only if ``high_priority_fraction`` > 0 (u <= fraction gives the high weight);
7. the arrival time: 0 for the first job, then the previous arrival plus ``-ln(1 - u) * mean``;
   it is truncated to whole seconds, as the original writes it.

Profiles (per-epoch batch sizes and durations) are built from these records by
:func:`shockwave.traces.gavel_format.record_to_job`, exactly as for a ``.trace`` read from disk,
so a generated ``.trace`` and a generated ``.jsonl`` describe the same workload.

For a heterogeneous cluster (``GeneratorParameters.cluster``) the draws are the same; the
steps come from the table's primary type, every job gets its epoch durations on every type of
the table (the same batch-size schedule, each type's throughputs), every type of the cluster must
serve every job type the generator can draw, a gang larger than the cluster's largest type is
capped to the largest gang size the table has that fits on it, and the mean inter-arrival time
follows the cluster's capacity (:meth:`GeneratorParameters.capacity_gpus`). The native output
is then format version 3.
"""

from __future__ import annotations

import math
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np

from shockwave.catalog import (
    ACCORDION_NEVER_ADAPTS,
    ADAPTATION_MODES,
    gns_staircase,
    model_family,
)
from shockwave.limits import memory_problem
from shockwave.throughputs import ThroughputTable, format_job_type
from shockwave.traces.gavel_format import TraceRecord, record_to_job
from shockwave.traces.generator_parameters import (
    GeneratorParameterError,
    GeneratorParameters,
    check_cluster_types,
)
from shockwave.traces.native import FORMAT_VERSION, TYPED_FORMAT_VERSION, write_native_jobs
from shockwave.traces.trace_writer import write_trace
from shockwave.workload import Workload

#: Output suffixes ``write_generated`` understands.
OUTPUT_SUFFIXES = (".jsonl", ".trace")


@dataclass(frozen=True)
class _Streams:
    """The generator's random streams (see the module docs)."""

    template: random.Random
    arrival: random.Random
    bucket: random.Random
    gang: random.Random
    mode: random.Random
    duration_pick: np.random.RandomState

    @classmethod
    def seeded(cls, seed: int) -> _Streams:
        return cls(
            template=random.Random(seed),
            arrival=random.Random(seed + 1),
            bucket=random.Random(seed + 2),
            gang=random.Random(seed + 3),
            mode=random.Random(seed + 4),
            duration_pick=np.random.RandomState(seed),
        )


@dataclass(frozen=True)
class _Categorical:
    """Draws an index from a probability mix with one uniform number, as the original does.

    Entry ``k`` is taken for the first ``k`` whose cumulative probability (summed left to right,
    as the original sums it) is above ``u`` (``inclusive``: at or above); past the last edge, the
    last entry. Entries of probability 0 are never taken: when float rounding leaves a sliver
    past the edges, it goes to the last entry of positive probability.
    """

    edges: tuple[float, ...]
    positive: tuple[bool, ...]
    fallback: int
    inclusive: bool

    @classmethod
    def of(cls, mix: tuple[float, ...], *, inclusive: bool) -> _Categorical:
        edges = tuple(sum(mix[: k + 1]) for k in range(len(mix) - 1))
        positive = tuple(q > 0 for q in mix)
        fallback = max(k for k, q in enumerate(mix) if q > 0)
        return cls(edges, positive, fallback, inclusive)

    def draw(self, u: float) -> int:
        for k, edge in enumerate(self.edges):
            if self.positive[k] and (u <= edge if self.inclusive else u < edge):
                return k
        return self.fallback


def generate_records(parameters: GeneratorParameters) -> list[TraceRecord]:
    """Draw the trace: one :class:`~shockwave.traces.gavel_format.TraceRecord` per job.

    Record ``i`` is job ``i`` (``line`` is ``i + 1``). Nothing is written; no profile is built.

    Raises:
        GeneratorParameterError: if the throughput table cannot be read, or lacks a positive
            throughput that some job could need (naming ``throughputs``), or a duration is too
            short to make one step.
    """
    table = parameters.throughput_table()
    check_throughput_coverage(parameters, table)
    _check_in_memory(parameters)
    return list(_draw(parameters, table))


def _check_in_memory(parameters: GeneratorParameters) -> None:
    """Refuse a trace whose jobs would not fit in memory (a workload held whole)."""
    problem = memory_problem(parameters.jobs * _BYTES_PER_JOB_IN_MEMORY, "holding the jobs")
    if problem is not None:
        raise GeneratorParameterError(
            "jobs", f"{problem}; write_generated streams them to disk instead"
        )


def generate_workload(parameters: GeneratorParameters) -> Workload:
    """Draw a trace and profile its jobs: the :class:`~shockwave.workload.Workload` it describes.

    Job ``i`` is the ``i``-th drawn job. The workload carries the throughput table (restricted to
    the models drawn) so that the ``gavel`` simulator mechanics can run it; its ``source`` says
    the command line that regenerates it.

    Raises:
        GeneratorParameterError: as :func:`generate_records`.
    """
    table = parameters.throughput_table()
    check_throughput_coverage(parameters, table)
    _check_in_memory(parameters)
    return _profile(parameters, list(_draw(parameters, table)), table)


def write_generated(parameters: GeneratorParameters, output: str | PathLike[str]) -> int:
    """Generate a trace and write it to ``output``; return the number of jobs written.

    ``output`` ending in ``.jsonl`` gets the native format (profiles included, with the
    throughput table in the header); ending in ``.trace`` it gets the original's 12-field
    format (no profiles are built: reading it back needs the same throughput table).

    Raises:
        GeneratorParameterError: as :func:`generate_records`, or naming ``output`` for another
            suffix.
    """
    suffix = Path(output).suffix
    if suffix not in OUTPUT_SUFFIXES:
        raise GeneratorParameterError(
            "output", f"must end in .jsonl (native) or .trace (original format), got {output!s}"
        )
    table = parameters.throughput_table()
    check_throughput_coverage(parameters, table)
    _check_disk_space(parameters, Path(output), suffix)
    if suffix == ".trace":
        write_trace(_draw(parameters, table), output)
        return parameters.jobs
    # The header carries the throughput table of the models drawn: a first pass over the draws
    # (no profiles, nothing kept) finds them, the second streams the jobs.
    possible = {t.model for t in parameters.templates}
    models: set[str] = set()
    for record in _draw(parameters, table):
        models.add(record.model)
        if models == possible:
            break
    source = parameters.command_line()
    jobs = (
        record_to_job(r, i, table, path=source, typed=parameters.cluster is not None)
        for i, r in enumerate(_draw(parameters, table))
    )
    write_native_jobs(
        jobs,
        output,
        count=parameters.jobs,
        source=source,
        throughputs=table.restricted_to(models),
        version=FORMAT_VERSION if parameters.cluster is None else TYPED_FORMAT_VERSION,
    )
    return parameters.jobs


#: Least bytes one job takes in each output format (a conservative floor: real lines are longer).
_BYTES_PER_JOB_ON_DISK = {".trace": 100, ".jsonl": 200}
#: Bytes one generated job takes in memory (its record and profile), a generous estimate.
_BYTES_PER_JOB_IN_MEMORY = 4096


def _check_disk_space(parameters: GeneratorParameters, output: Path, suffix: str) -> None:
    """Refuse up front a trace that cannot fit on the output's file system."""
    directory = output.parent if str(output.parent) else Path(".")
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return  # the write itself will report the directory
    needed = parameters.jobs * _BYTES_PER_JOB_ON_DISK[suffix]
    if needed > free:
        raise GeneratorParameterError(
            "jobs",
            f"{parameters.jobs} jobs need at least {needed / 1e9:.3g} GB in {suffix} format, "
            f"more than the {free / 1e9:.3g} GB free where {output} goes",
        )


def check_throughput_coverage(parameters: GeneratorParameters, table: ThroughputTable) -> None:
    """Check that ``table`` has every throughput a generated job could need.

    That is, for every template and every gang size it can draw: the initial batch size (its
    steps), and the batch sizes its Accordion and GNS profiles can reach, if those modes can be
    drawn; and that the shortest duration that can be drawn makes at least one step.

    For a heterogeneous cluster, the same on every GPU type of the cluster (which must be
    worker types of the table).

    Raises:
        GeneratorParameterError: naming ``throughputs`` and the missing job type and gang size
            (and the GPU type), ``cluster`` for a type the table lacks, or
            ``min_duration_hours`` for a job too short to make one step.
    """
    p = parameters
    check_cluster_types(p, table)
    types: list[str | None] = [None]
    if p.cluster is not None and not isinstance(p.cluster, str):
        types += [name for name in p.cluster.types if name != table.worker_type]
    caps = p.gang_caps(table)
    accordion, gns = p.mode_mix[1] > 0, p.mode_mix[2] > 0
    grid = p.duration_grid_hours()
    shortest = min(
        round(3600 * float(grid[start]))
        for (start, stop), q in zip(p.duration_buckets(), p.duration_bucket_mix, strict=True)
        if q > 0 and stop > start
    )
    for template in p.templates:
        family = model_family(template.model)
        job_type = format_job_type(template.model, template.batch_size)
        for gang in dict.fromkeys(caps[template].values()):
            needed = {template.batch_size}
            if accordion and template.model not in ACCORDION_NEVER_ADAPTS:
                needed.add(family.max_batch_size)
            staircase = gns_staircase(template.model, template.batch_size, gang)
            if gns and staircase is not None:
                needed.update(min(bs, family.max_batch_size) for _, bs in staircase.stages)
            # the primary type has every batch size the profiles reach; another type needs the
            # initial one (it reaches larger ones by accumulation, as the profile rules say)
            cases: list[tuple[int, str | None]] = [(bs, None) for bs in sorted(needed)]
            cases += [(template.batch_size, worker_type) for worker_type in types[1:]]
            for batch_size, worker_type in cases:
                key = (template.model, batch_size, gang)
                thr = table.entries_of(worker_type).get(key, 0.0)
                if thr <= 0:
                    on = "" if worker_type is None else f" on GPU type {worker_type!r}"
                    raise GeneratorParameterError(
                        "throughputs",
                        f"{table.source} has no positive throughput for "
                        f"('{template.model} (batch size {batch_size})', {gang}){on}, which "
                        f"template {job_type} on {gang} GPU(s) needs; drop the template "
                        "(--templates) or the gang size (--gang-size-mix), or use another table",
                    )
            if shortest * table.entries[(template.model, template.batch_size, gang)] < 1:
                raise GeneratorParameterError(
                    "min_duration_hours",
                    f"a {shortest} s job of {job_type} on {gang} GPU(s) runs no step",
                )


def _draw(p: GeneratorParameters, table: ThroughputTable) -> Iterator[TraceRecord]:
    """The draws, one job at a time (see the module docs); ``p`` and ``table`` are already
    checked."""
    streams = _Streams.seeded(p.seed)
    grid = p.duration_grid_hours()
    buckets = [grid[start:stop] for start, stop in p.duration_buckets()]
    bucket_of = _Categorical.of(p.duration_bucket_mix, inclusive=False)
    gang_of = _Categorical.of(p.gang_size_mix, inclusive=True)
    mode_of = _Categorical.of(p.mode_mix, inclusive=False)
    mean_gap = p.effective_mean_interarrival
    templates = list(p.templates)
    caps = p.gang_caps(table)
    text = {t: (t.launch, format_job_type(t.model, t.batch_size), t.command) for t in templates}

    arrival = 0.0
    for job in range(p.jobs):
        template = streams.template.choice(templates)
        launch, job_type, command = text[template]
        gang = p.gang_sizes[gang_of.draw(streams.gang.random())] if launch.distributed else 1
        gang = caps[template][gang]
        bucket = buckets[bucket_of.draw(streams.bucket.random())]
        # the original's np.random.choice(bucket): legacy numpy draws randint(0, len) for it
        seconds = round(3600 * float(bucket[streams.duration_pick.randint(0, len(bucket))]))
        mode = ADAPTATION_MODES[mode_of.draw(streams.mode.random())]
        if mode == "accordion" and seconds < p.accordion_min_seconds:
            mode = "static"
        total_steps = int(seconds * table.entries[(template.model, template.batch_size, gang)])

        weight = 1.0
        if p.high_priority_fraction > 0 and streams.template.random() <= p.high_priority_fraction:
            weight = float(p.high_priority_weight)

        if job > 0 and mean_gap > 0:
            arrival += -math.log(1.0 - streams.arrival.random()) * mean_gap

        yield (
            TraceRecord(
                line=job + 1,
                job_type=job_type,
                model=template.model,
                initial_batch_size=template.batch_size,
                command=command,
                working_directory=launch.working_directory,
                num_steps_arg=launch.num_steps_arg,
                needs_data_dir=launch.needs_data_dir,
                total_steps=total_steps,
                scale_factor=gang,
                mode=mode,
                priority_weight=weight,
                slo=None,
                duration=float(seconds),
                arrival_time=float(int(arrival)),
            )
        )


def _profile(
    p: GeneratorParameters, records: list[TraceRecord], table: ThroughputTable
) -> Workload:
    source = p.command_line()
    jobs = tuple(
        record_to_job(r, i, table, path=source, typed=p.cluster is not None)
        for i, r in enumerate(records)
    )
    return Workload(jobs, table.restricted_to({r.model for r in records}), source=source)
