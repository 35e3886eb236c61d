"""Parameters of the synthetic trace generator, with the original's values as defaults.

Every field of :class:`GeneratorParameters` is also an option of ``shockwave trace generate``,
spelt the same with dashes (``mean_interarrival`` is ``--mean-interarrival``); an invalid value
raises :class:`GeneratorParameterError`, a ``ValueError`` that names both spellings.

Defaults are the values behind the original's shipped traces (Shockwave artifact,
github.com/uw-mad-dash/shockwave, ``scheduler/scripts/utils/generate_trace.py`` run with
``-a 0.2 -b 5 -n 100 -m -d --mode-mix 0,0.5,0.5 --scale-factor-mix 0.6,0.3,0.09,0.01``). Two
defaults depend on the cluster size, so that a trace for ``G`` GPUs looks like the original's
traces at their sizes:

* the mean inter-arrival time is ``ARRIVAL_GPU_SECONDS / G`` (:func:`default_mean_interarrival`);
* the throughput table is TACC up to 32 GPUs and WISR above (:func:`default_throughputs`).

For a heterogeneous cluster (``cluster``, ``--cluster v100:36,p100:36,k80:36``) the jobs get
their epoch durations on every GPU type of the table (the bundled ``gavel`` table by default),
and the mean inter-arrival time is ``ARRIVAL_GPU_SECONDS / C``, ``C`` the cluster's capacity in
GPUs of the table's primary type (:meth:`GeneratorParameters.capacity_gpus`): the arrival rate
per unit of capacity of the homogeneous traces.
"""

from __future__ import annotations

import itertools
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from shockwave.arguments import is_integer, is_number
from shockwave.catalog import MODEL_FAMILIES, ORIGINAL_JOB_TEMPLATES, JobTemplate
from shockwave.errors import TraceError, UsageError
from shockwave.limits import MAX_SECONDS
from shockwave.throughputs import ThroughputTable
from shockwave.traces.gavel_format import load_throughputs

if TYPE_CHECKING:
    from shockwave.heterogeneous.cluster import ClusterSpec

#: Mean inter-arrival time x GPUs (GPU-seconds) of the original's traces: 40 s on 32 GPUs
#: (120 jobs), 10 s on 128 (460 jobs), 5 s on 256 (900 jobs) all give 1280; only the 220-job
#: 64-GPU trace differs (25 s, 1600). Keeping it fixed keeps the arrival rate per GPU, hence the
#: contention (jobs per GPU over the arrival span), of those traces.
ARRIVAL_GPU_SECONDS = 1280.0

#: Largest cluster (GPUs) for which the default throughput table is TACC: the original simulated
#: 32 GPUs with TACC throughputs and 64, 128 and 256 GPUs with WISR throughputs.
TACC_MAX_GPUS = 32

#: How the duration grid is spaced between the minimum and maximum duration.
DurationGrid = Literal["linear", "geometric", "logspace"]
DURATION_GRIDS: tuple[DurationGrid, ...] = ("linear", "geometric", "logspace")

#: Largest seed: numpy's legacy generator takes seeds below 2**32.
MAX_SEED = 2**32 - 1

#: Seconds in a day (``days``).
SECONDS_PER_DAY = 86400.0

#: How far a probability mix may sum from 1 (the original's tolerance); the last entry takes the
#: remainder.
MIX_TOLERANCE = 1e-3


#: Most jobs one generated trace may hold (about 200 GB of native workload at this size);
#: ``write_generated`` also refuses a trace that would not fit on the output's file system.
MAX_JOBS = 10**9
#: Most points of the duration grid (it is held in memory).
MAX_GRID_POINTS = 10**6


class GeneratorParameterError(UsageError, ValueError):
    """A generator parameter is invalid.

    Attributes:
        parameter: the field of :class:`GeneratorParameters` (the CLI option is the same name with
            dashes); also ``field``.
        reason: what is wrong with it; also ``what``.
    """

    def __init__(self, parameter: str, reason: str) -> None:
        self.parameter = parameter
        self.reason = reason
        super().__init__(reason, where=f"{option_name(parameter)} ({parameter})", field=parameter)


def option_name(parameter: str) -> str:
    """The command-line option of a parameter: ``mean_interarrival`` -> ``--mean-interarrival``."""
    return "--" + parameter.replace("_", "-")


def default_mean_interarrival(gpus: int) -> float:
    """Mean inter-arrival time (seconds) that keeps the original traces' contention on ``gpus``.

    ``ARRIVAL_GPU_SECONDS / gpus``: 40 s on 32 GPUs (the canonical trace), 5 s on 256.
    """
    return ARRIVAL_GPU_SECONDS / gpus


def default_throughputs(gpus: int) -> str:
    """The bundled throughput table for a cluster of ``gpus`` GPUs: ``"tacc"`` or ``"wisr"``."""
    return "tacc" if gpus <= TACC_MAX_GPUS else "wisr"


#: The bundled throughput table a heterogeneous cluster's trace is drawn with by default: Gavel's
#: simulation throughputs (``v100``, ``p100``, ``k80``).
DEFAULT_TYPED_THROUGHPUTS = "gavel"


@dataclass(frozen=True)
class GeneratorParameters:
    """Everything that determines a generated trace; the same parameters give the same bytes.

    Attributes:
        jobs: number of jobs.
        gpus: GPUs of the cluster the trace is meant for. It sets the defaults of
            ``mean_interarrival`` and ``throughputs``, and no gang may be larger.
        seed: seeds the six random streams (0 <= seed < 2**32).
        mean_interarrival: mean of the exponential inter-arrival times (Poisson arrivals),
            seconds; 0 makes every job arrive at 0. ``None``: :func:`default_mean_interarrival`.
        min_duration_hours, max_duration_hours: ends of the grid of nominal job durations, hours
            (each job's duration alone on its gang, before adaptation).
        duration_grid_points: points of the duration grid.
        duration_grid: ``"linear"`` (the original's shipped traces), ``"geometric"`` (constant
            ratio between neighbours) or ``"logspace"`` (the original's ``--duration_logspace``:
            ``min + (max - min) * b**k / b**n`` for ``k = 0`` and ``n - 1`` exponents ``k``
            evenly spaced over ``[1, n]``, rounded to 0.01 h).
        duration_log_base: the base ``b`` of the ``"logspace"`` grid, > 1.
        duration_bucket_edges: where the duration buckets end, as fractions of the grid points
            (increasing, in (0, 1)); bucket ``k`` holds grid indices
            ``[round(n * edge[k-1]), round(n * edge[k]))``.
        duration_bucket_mix: probability of each bucket (one more than the edges): small,
            medium, large and extra-large jobs by default. A job takes a uniformly drawn grid
            point of its bucket.
        gang_sizes: possible gang sizes, GPUs.
        gang_size_mix: probability of each gang size, for models that can be distributed
            (Recommendation jobs always take 1 GPU). ``1,0,0,0`` is the original without ``-m``.
        mode_mix: probabilities of the adaptation modes static, accordion and gns.
            ``1,0,0`` is the original without ``-d``.
        accordion_min_seconds: an Accordion job shorter than this (nominal duration, seconds) is
            relabelled static, as the original does; 0 disables the relabelling.
        templates: the job table, drawn uniformly (list a template twice to double its
            weight): :class:`~shockwave.catalog.JobTemplate` entries or ``(model, batch_size)``
            pairs. The order matters for reproducing a trace.
        throughputs: the throughput table that turns durations into steps and builds the
            profiles: a :class:`~shockwave.throughputs.ThroughputTable`, ``"tacc"``, ``"wisr"``,
            or a throughput JSON file. ``None``: :func:`default_throughputs`.
        high_priority_fraction: share of jobs given ``high_priority_weight`` (the original's
            ``--generate-multi-priority-jobs`` is 0.2 with weight 5); 0 draws no priorities.
        high_priority_weight: priority weight of those jobs, > 0.
        days: a long, steady arrival process: the Poisson arrivals spread over about this many
            days (mean inter-arrival ``days * 86400 / jobs``). ``None``: not used.
        load: the offered load, the share of the cluster's GPU-time the jobs ask for: mean
            inter-arrival ``E[w d] / (load * gpus)``, with ``E[w d]`` the expected nominal
            exclusive GPU-seconds of one job (:meth:`expected_job_gpu_seconds`: durations as
            drawn, before adaptation, which shortens most adaptive jobs). With ``days`` too, the
            number of jobs follows (:meth:`jobs_for`) and ``jobs`` must equal it. ``None``: not
            used. Neither may be combined with ``mean_interarrival``.
        cluster: a heterogeneous cluster (a :class:`~shockwave.heterogeneous.cluster.ClusterSpec`
            or its text, ``"v100:36,p100:36,k80:36"``), or ``None`` (``gpus`` identical GPUs of
            the table's primary type). With a cluster, ``gpus`` must be its total
            (:meth:`for_cluster` fills it in), the default table is
            :data:`DEFAULT_TYPED_THROUGHPUTS`, every type of the cluster must be in the table
            and serve every job the generator can draw, a gang larger than the cluster's largest
            type is capped to a size that fits (:meth:`gang_caps`; ``gpus`` bounds no gang
            then), each job gets its epoch durations on
            every type of the table (``Job.epoch_seconds_by_type``), and the arrival rate
            follows the cluster's capacity (:meth:`capacity_gpus`). Nominal durations (and
            ``total_steps``) are on the table's primary type.
    """

    jobs: int
    gpus: int
    seed: int = 0
    mean_interarrival: float | None = None
    min_duration_hours: float = 0.2
    max_duration_hours: float = 5.0
    duration_grid_points: int = 100
    duration_grid: DurationGrid = "linear"
    duration_log_base: float = 1.5
    duration_bucket_edges: tuple[float, ...] = (0.2, 0.5, 0.9)
    duration_bucket_mix: tuple[float, ...] = (0.72, 0.2, 0.05, 0.03)
    gang_sizes: tuple[int, ...] = (1, 2, 4, 8)
    gang_size_mix: tuple[float, ...] = (0.6, 0.3, 0.09, 0.01)
    mode_mix: tuple[float, float, float] = (0.0, 0.5, 0.5)
    accordion_min_seconds: float = 1000.0
    templates: tuple[JobTemplate, ...] = ORIGINAL_JOB_TEMPLATES
    throughputs: ThroughputTable | str | PathLike[str] | None = None
    high_priority_fraction: float = 0.0
    high_priority_weight: float = 5.0
    days: float | None = None
    load: float | None = None
    cluster: ClusterSpec | str | None = None

    @classmethod
    def for_cluster(
        cls, jobs: int, cluster: ClusterSpec | str, **parameters: Any
    ) -> GeneratorParameters:
        """Parameters for a heterogeneous ``cluster`` (``gpus`` is its total)."""
        spec = parse_cluster(cluster)
        return cls(jobs=jobs, gpus=spec.total_gpus, cluster=spec, **parameters)

    def __post_init__(self) -> None:
        for name in (
            "duration_bucket_edges", "duration_bucket_mix", "gang_sizes", "gang_size_mix",
            "mode_mix", "templates",
        ):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
                raise GeneratorParameterError(name, f"must be a sequence, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "templates", tuple(map(_as_template, self.templates)))
        if self.cluster is not None:
            spec = parse_cluster(self.cluster)
            object.__setattr__(self, "cluster", spec)
            if is_integer(self.gpus) and self.gpus != spec.total_gpus:
                raise GeneratorParameterError(
                    "gpus",
                    f"must be the cluster's {spec.total_gpus} GPUs ({spec}), got {self.gpus}: "
                    "give --cluster alone",
                )
        _check_parameters(self)
        # numpy integers are valid input, but random.Random takes only Python ints as seeds
        for name in ("jobs", "gpus", "seed", "duration_grid_points"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "gang_sizes", tuple(int(w) for w in self.gang_sizes))

    @property
    def effective_mean_interarrival(self) -> float:
        """The mean inter-arrival time in use, seconds: from ``days``, else from ``load``, else
        ``mean_interarrival``, else the default."""
        if self.days is not None:
            return float(self.days) * SECONDS_PER_DAY / self.jobs
        if self.load is not None:
            return self.expected_job_gpu_seconds() / (float(self.load) * self._capacity())
        if self.mean_interarrival is None:
            if self.cluster is not None:
                return ARRIVAL_GPU_SECONDS / self.capacity_gpus()
            return default_mean_interarrival(self.gpus)
        return float(self.mean_interarrival)

    def _capacity(self) -> float | int:
        """``gpus``, or for a heterogeneous cluster :meth:`capacity_gpus`."""
        return self.gpus if self.cluster is None else self.capacity_gpus()

    def capacity_gpus(self) -> float:
        """The cluster's capacity in GPUs of the table's primary type: ``sum_k n_k s_k``, ``n_k``
        the GPUs of type ``k`` and ``s_k`` its speed relative to the primary type, the geometric
        mean over the job types the generator can draw (each template at its initial batch
        size, on each gang size it can draw) of ``thr_k / thr_primary``. ``gpus`` without a
        cluster.

        Raises:
            GeneratorParameterError: as :meth:`throughput_table`, or naming ``cluster`` for a
                type the table does not have or that has no throughput for a drawn job type.
        """
        if self.cluster is None:
            return float(self.gpus)
        cached: float | None = self.__dict__.get("_capacity_gpus")
        if cached is not None:
            return cached
        spec = parse_cluster(self.cluster)
        table = self.throughput_table()
        check_cluster_types(self, table)
        caps = self.gang_caps(table)
        keys = sorted(
            {(t.model, t.batch_size, gang) for t in self.templates for gang in caps[t].values()}
        )
        capacity = 0.0
        for name, count in zip(spec.types, spec.counts, strict=True):
            entries = table.entries_of(name)
            logs = [math.log(entries[key] / table.entries[key]) for key in keys]
            capacity += count * math.exp(math.fsum(logs) / len(logs))
        object.__setattr__(self, "_capacity_gpus", capacity)
        return capacity

    def drawn_gang_sizes(self) -> list[int]:
        """The gang sizes of positive probability."""
        return [w for w, q in zip(self.gang_sizes, self.gang_size_mix, strict=True) if q > 0]

    def gang_caps(self, table: ThroughputTable | None = None) -> dict[JobTemplate, dict[int, int]]:
        """The gang (GPUs) each template's jobs get for each gang size of positive probability:
        ``{template: {drawn size: gang}}``; a template that cannot be distributed maps ``1`` to
        ``1`` (its jobs draw no size).

        Without a cluster a drawn size is the gang. On a cluster, a gang larger than the GPUs of
        its largest type could never run (a gang runs on one type), so such a size is capped: to
        the largest gang size of at most that many GPUs for which ``table`` has a positive
        throughput of the template (its model at its initial batch size) on the table's primary
        type and on every type of the cluster. Sizes that fit are kept, so a cluster on which
        nothing is capped gets the trace it always got.

        Args:
            table: the table in use; ``None``: :meth:`throughput_table`, read only if a size is
                capped.

        Raises:
            GeneratorParameterError: naming ``cluster`` if a template has no such gang size, or
                as :meth:`throughput_table`.
        """
        caps: dict[JobTemplate, dict[int, int]] = {}
        largest = None if self.cluster is None else max(parse_cluster(self.cluster).counts)
        for template in self.templates:
            if not template.launch.distributed:
                caps[template] = {1: 1}
                continue
            drawn = self.drawn_gang_sizes()
            if largest is None or max(drawn) <= largest:
                caps[template] = {w: w for w in drawn}
                continue
            table = self.throughput_table() if table is None else table
            fitting = [g for g in _table_gangs(self, table, template) if g <= largest]
            if not fitting:
                raise GeneratorParameterError(
                    "cluster",
                    f"no GPU type of {self.cluster} holds a gang of "
                    f"{format_templates([template])} that {table.source} has a throughput for "
                    f"(largest type: {largest} GPUs); drop the template (--templates)",
                )
            caps[template] = {w: min(w, max(fitting)) if w > largest else w for w in drawn}
        return caps

    def expected_job_gpu_seconds(self) -> float:
        """Expected nominal exclusive GPU-seconds of one drawn job: its expected gang size times
        its expected nominal duration (drawn independently), seconds. Nominal: the duration as
        drawn, before adaptation changes the batch size (the profiles of adaptive jobs are
        usually shorter)."""
        grid = self.duration_grid_hours()
        duration = 0.0
        for (start, stop), q in zip(self.duration_buckets(), self.duration_bucket_mix, strict=True):
            if q > 0 and stop > start:
                duration += q * float(np.mean(np.round(3600.0 * grid[start:stop])))
        caps = self.gang_caps()
        gangs = [
            sum(
                caps[t].get(w, w) * q
                for w, q in zip(self.gang_sizes, self.gang_size_mix, strict=True)
            )
            if t.launch.distributed
            else 1.0
            for t in self.templates
        ]
        gang = float(np.mean(gangs))
        return gang * duration

    @property
    def offered_load(self) -> float:
        """The nominal offered load: expected GPU-seconds asked per second over the cluster's
        GPUs (``inf`` when every job arrives at 0)."""
        gap = self.effective_mean_interarrival
        if gap <= 0:
            return math.inf
        return self.expected_job_gpu_seconds() / (gap * self._capacity())

    def jobs_for(self, days: float, load: float) -> int:
        """The number of jobs that offers ``load`` over ``days`` days (rounded, at least 0)."""
        work = float(load) * self._capacity() * float(days) * SECONDS_PER_DAY
        return max(0, round(work / self.expected_job_gpu_seconds()))

    @property
    def throughputs_label(self) -> str:
        """A short description of the throughput table in use (a name or a path)."""
        spec = self.throughputs if self.throughputs is not None else self._default_throughputs()
        return spec.source if isinstance(spec, ThroughputTable) else str(spec)

    def _default_throughputs(self) -> str:
        if self.cluster is not None:
            return DEFAULT_TYPED_THROUGHPUTS
        return default_throughputs(self.gpus)

    def throughput_table(self) -> ThroughputTable:
        """The throughput table in use (reads a file or a bundled table): without ``cluster``,
        only its primary type (the jobs of a homogeneous trace have one profile); with it, every
        type.

        Raises:
            GeneratorParameterError: naming ``throughputs`` if the table cannot be read.
        """
        spec = self.throughputs if self.throughputs is not None else self._default_throughputs()
        try:
            table = load_throughputs(spec)
        except TraceError as exc:
            raise GeneratorParameterError("throughputs", str(exc)) from None
        return table if self.cluster is not None else table.primary_only()

    def duration_grid_hours(self) -> npt.NDArray[np.float64]:
        """The grid of nominal durations, hours, ascending (``duration_grid_points`` values)."""
        low, high, n = self.min_duration_hours, self.max_duration_hours, self.duration_grid_points
        grid: npt.NDArray[np.float64]
        if self.duration_grid == "linear":
            grid = np.linspace(low, high, n)
        elif self.duration_grid == "geometric":
            grid = np.geomspace(low, high, n)
        else:
            exponents = self.duration_log_base ** np.linspace(1, n, n - 1)
            scaled = np.insert(exponents, 0, 0.0) / exponents.max()
            grid = np.round(scaled * (high - low) + low, 2)
        return grid

    def duration_buckets(self) -> list[tuple[int, int]]:
        """Grid index ranges ``[start, stop)`` of the duration buckets, in bucket order."""
        n = self.duration_grid_points
        bounds = [0, *(round(n * edge) for edge in self.duration_bucket_edges), n]
        return list(itertools.pairwise(bounds))

    def command_line(self) -> str:
        """The ``shockwave trace generate`` options that regenerate this trace (for headers).

        Options left at their defaults are omitted; a throughput table given as an object is
        named by its source.
        """
        size = f"--gpus {self.gpus}" if self.cluster is None else f"--cluster {self.cluster}"
        parts = [f"shockwave trace generate --jobs {self.jobs} {size} --seed {self.seed}"]
        for name, default in PARAMETER_DEFAULTS.items():
            value = getattr(self, name)
            if name == "seed" or value == default:
                continue
            if name == "templates":
                text = format_templates(value)
            elif name == "throughputs":
                text = self.throughputs_label
            elif isinstance(value, tuple):
                text = ",".join(map(_number_text, value))
            else:
                text = _number_text(value) if isinstance(value, (int, float)) else str(value)
            parts.append(f"{option_name(name)} {shlex.quote(text)}")
        return " ".join(parts)


#: Default of every optional parameter, by field name (``jobs`` and ``gpus`` have none).
PARAMETER_DEFAULTS: dict[str, Any] = {
    name: spec.default
    for name, spec in GeneratorParameters.__dataclass_fields__.items()
    if name not in ("jobs", "gpus", "cluster")
}


def parse_cluster(cluster: object) -> ClusterSpec:
    """``cluster`` (a spec or its text) as a
    :class:`~shockwave.heterogeneous.cluster.ClusterSpec`; :class:`GeneratorParameterError`
    naming ``cluster`` if malformed."""
    from shockwave.heterogeneous.cluster import ClusterSpec  # only heterogeneous traces need it

    if isinstance(cluster, ClusterSpec):
        return cluster
    if not isinstance(cluster, str):
        raise GeneratorParameterError(
            "cluster", f"must be a ClusterSpec or its text (TYPE:COUNT,...), got {cluster!r}"
        )
    try:
        return ClusterSpec.parse(cluster)
    except ValueError as exc:
        raise GeneratorParameterError("cluster", str(exc)) from None


def check_cluster_types(parameters: GeneratorParameters, table: ThroughputTable) -> None:
    """Check that every GPU type of ``parameters.cluster`` is a worker type of ``table``.

    Raises:
        GeneratorParameterError: naming ``cluster`` and the type.
    """
    if parameters.cluster is None:
        return
    spec = parse_cluster(parameters.cluster)
    for name in spec.types:
        if name not in table.worker_types:
            raise GeneratorParameterError(
                "cluster",
                f"GPU type {name!r} is not a worker type of {table.source} (its types: "
                f"{', '.join(table.worker_types)}); give --throughputs with that type",
            )


def _table_gangs(
    parameters: GeneratorParameters, table: ThroughputTable, template: JobTemplate
) -> list[int]:
    """Gang sizes (ascending) with a positive throughput of ``template`` at its initial batch
    size in ``table`` on its primary type and on every type of ``parameters.cluster``."""
    spec = parse_cluster(parameters.cluster)
    tables = [table.entries, *(table.entries_of(name) for name in spec.types)]
    sizes = {g for (model, batch_size, g) in table.entries if model == template.model}
    return sorted(
        g
        for g in sizes
        if all(entries.get((template.model, template.batch_size, g), 0.0) > 0 for entries in tables)
    )


def _number_text(value: float) -> str:
    """Short text of a number that reads back as the same value (``0.6``, ``1000``)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def format_templates(templates: Sequence[JobTemplate]) -> str:
    """``MODEL:BS,BS;MODEL:BS`` text of a template list (the ``--templates`` syntax, joined)."""
    groups: list[tuple[str, list[int]]] = []
    for template in templates:
        if groups and groups[-1][0] == template.model:
            groups[-1][1].append(template.batch_size)
        else:
            groups.append((template.model, [template.batch_size]))
    return ";".join(f"{model}:{','.join(map(str, sizes))}" for model, sizes in groups)


def parse_templates(groups: Sequence[str]) -> tuple[JobTemplate, ...]:
    """Parse ``--templates`` values: ``MODEL:BS[,BS...]`` groups, ``;``-separated or one per
    value, taken in the order given (the text :func:`format_templates` writes parses back).

    Raises:
        GeneratorParameterError: naming ``templates`` for malformed text.
    """
    templates: list[JobTemplate] = []
    for group in (part for value in groups for part in value.split(";")):
        model, colon, sizes = group.partition(":")
        if not colon or not model.strip() or not sizes.strip():
            raise GeneratorParameterError(
                "templates", f"expected MODEL:BS[,BS...] (e.g. 'LM:5,10'), got {group!r}"
            )
        for text in sizes.split(","):
            try:
                batch_size = int(text)
            except ValueError:
                raise GeneratorParameterError(
                    "templates", f"batch size {text.strip()!r} in {group!r} is not an integer"
                ) from None
            templates.append(JobTemplate(model.strip(), batch_size))
    return tuple(templates)


def parse_numbers(parameter: str, text: str) -> tuple[float, ...]:
    """Parse a comma-separated list of numbers (``0.6,0.3,0.09,0.01``) for ``parameter``."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise GeneratorParameterError(
            parameter, f"expected comma-separated numbers, got {text!r}"
        ) from None


def _as_template(entry: object) -> JobTemplate:
    """A template, or a ``(model, batch_size)`` pair made into one."""
    if isinstance(entry, JobTemplate):
        return entry
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
        return JobTemplate(entry[0], entry[1])
    raise GeneratorParameterError(
        "templates", f"entries must be JobTemplate or (model, batch_size), got {entry!r}"
    )


def _check_parameters(p: GeneratorParameters) -> None:
    """Raise :class:`GeneratorParameterError` for the first invalid field."""
    _check_int("jobs", p.jobs, low=1, high=MAX_JOBS)
    _check_int("gpus", p.gpus, low=1)
    _check_int("seed", p.seed, low=0, high=MAX_SEED)
    if p.mean_interarrival is not None:
        _check_real("mean_interarrival", p.mean_interarrival, low=0.0)
    _check_real("min_duration_hours", p.min_duration_hours, low=0.0, strict=True)
    _check_real("max_duration_hours", p.max_duration_hours, low=p.min_duration_hours)
    _check_int("duration_grid_points", p.duration_grid_points, low=1, high=MAX_GRID_POINTS)
    if p.duration_grid not in DURATION_GRIDS:
        raise GeneratorParameterError(
            "duration_grid", f"must be one of {DURATION_GRIDS}, got {p.duration_grid!r}"
        )
    _check_real("duration_log_base", p.duration_log_base, low=1.0, strict=True)
    if p.duration_grid == "logspace" and p.duration_grid_points < 2:
        raise GeneratorParameterError(
            "duration_grid_points", "a logspace grid needs at least 2 points"
        )
    if round(3600 * p.min_duration_hours) < 1:
        raise GeneratorParameterError(
            "min_duration_hours", f"must be at least 1 second, got {p.min_duration_hours!r} h"
        )

    edges = p.duration_bucket_edges
    for edge in edges:
        _check_real("duration_bucket_edges", edge, low=0.0, strict=True)
    if any(edge >= 1 for edge in edges) or any(b <= a for a, b in itertools.pairwise(edges)):
        raise GeneratorParameterError(
            "duration_bucket_edges", f"must increase strictly within (0, 1), got {list(edges)}"
        )
    _check_mix("duration_bucket_mix", p.duration_bucket_mix, len(edges) + 1, "buckets")
    for index, (start, stop) in enumerate(p.duration_buckets()):
        if p.duration_bucket_mix[index] > 0 and stop <= start:
            raise GeneratorParameterError(
                "duration_grid_points",
                f"duration bucket {index} (grid indices [{start}, {stop})) is empty but has "
                f"probability {p.duration_bucket_mix[index]:g}: use more grid points",
            )

    if not p.templates:
        raise GeneratorParameterError("templates", "must list at least one template")
    for template in p.templates:
        if template.model not in MODEL_FAMILIES:
            known = ", ".join(sorted(MODEL_FAMILIES))
            raise GeneratorParameterError(
                "templates", f"unknown model {template.model!r} (known: {known})"
            )
        _check_int("templates", template.batch_size, low=1)

    if not p.gang_sizes:
        raise GeneratorParameterError("gang_sizes", "must list at least one gang size")
    for size in p.gang_sizes:
        _check_int("gang_sizes", size, low=1)
    if len(set(p.gang_sizes)) != len(p.gang_sizes):
        raise GeneratorParameterError("gang_sizes", f"repeats a size: {list(p.gang_sizes)}")
    _check_mix("gang_size_mix", p.gang_size_mix, len(p.gang_sizes), "gang sizes")
    drawn = [w for w, q in zip(p.gang_sizes, p.gang_size_mix, strict=True) if q > 0]
    too_big = [w for w in drawn if w > p.gpus]
    # on a cluster a gang larger than every type is capped (gang_caps), not refused
    if p.cluster is None and too_big and any(t.launch.distributed for t in p.templates):
        raise GeneratorParameterError(
            "gpus",
            f"gang size {max(too_big)} has a positive probability but the cluster has only "
            f"{p.gpus} GPUs (change --gang-size-mix)",
        )

    _check_mix("mode_mix", p.mode_mix, 3, "modes (static, accordion, gns)")
    _check_real("accordion_min_seconds", p.accordion_min_seconds, low=0.0)

    _check_real("high_priority_fraction", p.high_priority_fraction, low=0.0)
    if p.high_priority_fraction > 1:
        raise GeneratorParameterError(
            "high_priority_fraction", f"must be <= 1, got {p.high_priority_fraction!r}"
        )
    _check_real("high_priority_weight", p.high_priority_weight, low=0.0, strict=True)
    _check_steady_arrivals(p)


def _check_steady_arrivals(p: GeneratorParameters) -> None:
    """The checks of ``days`` and ``load`` (see :class:`GeneratorParameters`)."""
    if p.days is not None:
        _check_real("days", p.days, low=0.0, strict=True)
        if p.days * SECONDS_PER_DAY > MAX_SECONDS:
            raise GeneratorParameterError(
                "days", f"arrivals must end within {MAX_SECONDS:g} s, got {p.days!r} days"
            )
    if p.load is not None:
        _check_real("load", p.load, low=0.0, strict=True)
    if p.mean_interarrival is not None and (p.days is not None or p.load is not None):
        given = "--days" if p.days is not None else "--load"
        raise GeneratorParameterError(
            "mean_interarrival",
            f"sets the arrival rate, as {given} does: give one or the other",
        )
    if p.days is not None and p.load is not None:
        jobs = p.jobs_for(p.days, p.load)
        if jobs != p.jobs:
            raise GeneratorParameterError(
                "jobs",
                f"--days {p.days:g} at --load {p.load:g} on {p.gpus} GPUs means {jobs} jobs "
                f"(expected {p.expected_job_gpu_seconds():.6g} GPU-seconds each), not "
                f"{p.jobs}: give {jobs}, or leave --jobs out",
            )


def _check_int(name: str, value: object, *, low: int, high: int | None = None) -> None:
    if not is_integer(value):
        raise GeneratorParameterError(name, f"must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise GeneratorParameterError(name, f"must be {bound}, got {value}")


def _check_real(name: str, value: object, *, low: float, strict: bool = False) -> None:
    if not is_number(value):
        raise GeneratorParameterError(name, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise GeneratorParameterError(name, f"must be finite, got {value!r}")
    if value < low or (strict and value == low):
        relation = ">" if strict else ">="
        raise GeneratorParameterError(name, f"must be {relation} {low:g}, got {value!r}")


def _check_mix(name: str, mix: tuple[float, ...], length: int, what: str) -> None:
    if len(mix) != length:
        raise GeneratorParameterError(
            name, f"needs {length} probabilities (one per {what}), got {len(mix)}"
        )
    for value in mix:
        _check_real(name, value, low=0.0)
    if abs(sum(mix) - 1.0) > MIX_TOLERANCE:
        raise GeneratorParameterError(name, f"must sum to 1, got {sum(mix):g} ({list(mix)})")
