"""Sweep specs: a TOML (or JSON) file that describes a grid of simulations (``docs/sweep.md``).

::

    name = "my sweep"                      # optional label
    policies = ["shockwave", "gavel"]      # required
    mechanics = ["exact"]                  # optional, default ["exact"]
    seeds = [0]                            # optional: simulation seeds, default [0]
    baseline = "gavel"                     # optional: the report's ratios are to this policy

    [simulation]                           # optional: settings, a value or a list (swept)
    round_seconds = 120

    [[traces]]                             # one or more: a file ...
    path = "traces/canonical_120jobs.trace"
    throughputs = "tacc"                   # for .trace files
    gpus = 32                              # or a list: each is a cell
    [[traces]]                             # ... or a generated trace
    generate = { jobs = 460, gpus = 128, seed = [1, 2, 3] }

    [params.shockwave]                     # optional grid per policy: the product is swept;
    planning_rounds = [10, 20, 40]         # [[params.shockwave]] tables: the union of grids

A spec whose traces name a **cluster** instead of ``gpus`` (``cluster =
"v100:12,p100:12,k80:12"``, or a list: each is a cell) is a *typed* sweep: every cell runs the
heterogeneous simulator (:func:`shockwave.heterogeneous.simulate_heterogeneous`) on that
cluster, as ``shockwave simulate --cluster`` does: a ``.trace`` with a throughput file holding
every type of it, a native ``.jsonl`` along its jobs' profiles on every type, or a trace
generated for the cluster (adapting jobs, as ``trace generate --cluster``) or, with a throughput
file, for all of them (static jobs). Its policies are the typed ones
(:data:`shockwave.heterogeneous.TYPED_POLICIES`, ``NAME-agnostic`` included), its
``mechanics`` are ``["gavel"]`` (the default there), ``["exact"]`` or both, its ``[params]``
tables are the typed policies' (``shockwave``'s typed parameters; the baselines have none), and
its ``[simulation]`` takes the heterogeneous simulator's settings
(:data:`~shockwave.sweep.cells.TYPED_SIMULATION_DEFAULTS`, and ``restart_penalty_seconds``
under the exact mechanics).
One spec does not mix ``gpus`` and ``cluster``: the two simulators take different policies and
settings, so a spec that names a cluster on one trace and ``gpus`` on another is refused, naming
the key (run two specs into two directories).

The file is read by :mod:`shockwave.config_file`, with the rules of every configuration file
(``--config`` too): ``.toml`` or ``.json``, the ``[simulation]`` table's keys are
:class:`~shockwave.scheduling.SimulationConfig`'s settings and a ``[params.POLICY]`` table's
the policy's parameters, each value checked against its field's type.

:func:`load_spec` first sizes the grid (the product of its axes' lengths, before anything is
enumerated) and refuses one of more than ``max_cells`` cells (default
:data:`~shockwave.sweep.cells.DEFAULT_MAX_CELLS`, 100,000), naming the axes; then it checks
everything before a cell runs: unknown keys (named), types and values
(each policy is built with each of its parameter settings, each simulation setting is checked),
files (each trace file is read and its jobs are checked against the cluster), generator
parameters. Every problem raises :class:`SpecError` naming the file, the line where it can be
found, and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from shockwave.config_file import (
    SIMULATION_KEYS,
    ConfigDocument,
    ConfigError,
    KeyPath,
    check_keys,
    check_policy_keys,
    check_policy_value,
    parse_document,
    policy_name,
    read_document,
    settings_table,
)
from shockwave.errors import JobFieldError, TraceError
from shockwave.heterogeneous import (
    TYPED_POLICIES,
    ClusterSpec,
    HeterogeneousConfig,
    TypedThroughputTable,
    make_typed_policy,
    read_typed_trace,
    resolve_typed_policy,
)
from shockwave.heterogeneous.checkpoint import TypedInputs
from shockwave.heterogeneous.registry import typed_policy_parameters
from shockwave.policies import make_policy, policy_parameters, resolve_policy_name
from shockwave.scheduling import MECHANICS, SimulationConfig
from shockwave.sim import Simulation
from shockwave.sweep.cells import (
    DEFAULT_MAX_CELLS,
    SIMULATION_DEFAULTS,
    TYPED_SIMULATION_DEFAULTS,
    Cell,
    canonical_json,
)
from shockwave.sweep.sources import FileRef, FileTrace, GeneratedTrace, Throughputs, TraceSource
from shockwave.throughputs import BUNDLED_THROUGHPUTS, ThroughputTable
from shockwave.traces import is_native, load_workload
from shockwave.traces.generate import check_throughput_coverage
from shockwave.traces.generator_parameters import (
    PARAMETER_DEFAULTS,
    GeneratorParameterError,
    GeneratorParameters,
)

TOP_KEYS = ("name", "policies", "mechanics", "seeds", "baseline", "simulation", "traces", "params")
TRACE_KEYS = ("name", "path", "throughputs", "gpus", "cluster", "generate")
GENERATE_KEYS = ("jobs", "gpus", *PARAMETER_DEFAULTS)

#: Where the simulation's fields that ``[simulation]`` does not take are set in a spec.
_SIMULATION_ELSEWHERE = {
    "gpus": "each trace's 'gpus'",
    "mechanics": "the spec's 'mechanics'",
    "seed": "the spec's 'seeds'",
}

Scalar = bool | int | float | str


class SpecError(ConfigError):
    """A sweep spec that cannot run; the message names the file, the line where it can be
    found, the key and the problem (a :class:`~shockwave.config_file.ConfigError`)."""


@dataclass(frozen=True)
class TraceEntry:
    """One workload of the sweep (a ``[[traces]]`` entry, one per generator seed).

    Attributes:
        label: the ``trace`` column.
        family: the label without the seed.
        trace_seed: the generator's seed, or ``None`` for a file.
        source: the workload.
        jobs: its number of jobs.
        gpus: the cluster sizes it runs on (for typed clusters: each one's GPUs of every type).
        clusters: the typed clusters it runs on (``v100:12,p100:12,k80:12``, one per ``gpus``
            entry), or ``()`` for identical GPUs.
    """

    label: str
    family: str
    trace_seed: int | None
    source: TraceSource
    jobs: int
    gpus: tuple[int, ...]
    clusters: tuple[str, ...] = ()

    def sizes(self) -> list[tuple[int, str | None]]:
        """``(GPUs, typed cluster or None)`` of each cluster the trace runs on."""
        if self.clusters:
            return list(zip(self.gpus, self.clusters, strict=True))
        return [(g, None) for g in self.gpus]


@dataclass(frozen=True)
class SweepSpec:
    """A checked sweep spec (see the module notes); :meth:`cells` lists its simulations.

    Attributes:
        path: the spec file.
        text: its content.
        name: its label.
        policies: the policies, in the spec's order.
        mechanics: the mechanics, in the spec's order.
        seeds: the simulation seeds, in the spec's order.
        baseline: the policy the report's ratios are to (``None``: the report chooses).
        traces: the workloads.
        parameters: per policy, every parameter setting swept (non-default values only).
        simulation: every combination of the ``[simulation]`` settings (the settings of
            :data:`~shockwave.sweep.cells.SIMULATION_DEFAULTS` filled, any other one given
            that differs from its default; in a typed spec, those of
            :data:`~shockwave.sweep.cells.TYPED_SIMULATION_DEFAULTS`).
        typed: whether the traces name typed clusters (module notes).
    """

    path: Path
    text: str
    name: str
    policies: tuple[str, ...]
    mechanics: tuple[str, ...]
    seeds: tuple[int, ...]
    baseline: str | None
    traces: tuple[TraceEntry, ...]
    parameters: Mapping[str, tuple[Mapping[str, Any], ...]]
    simulation: tuple[Mapping[str, Any], ...]
    typed: bool = False

    def cells(self) -> list[Cell]:
        """Every simulation of the grid in the spec's order (traces, GPUs or clusters,
        mechanics, policies, parameter settings, simulation settings, seeds), each once:
        settings that coincide, such as a default written out, give one cell."""
        cells: dict[str, Cell] = {}
        for trace in self.traces:
            for (gpus, cluster), mechanics, policy in itertools.product(
                trace.sizes(), self.mechanics, self.policies
            ):
                for parameters, simulation, seed in itertools.product(
                    self.parameters[policy], self.simulation, self.seeds
                ):
                    cell = Cell(
                        trace=trace.label,
                        trace_family=trace.family,
                        trace_seed=trace.trace_seed,
                        source=trace.source,
                        jobs=trace.jobs,
                        gpus=gpus,
                        policy=policy,
                        parameters=parameters,
                        mechanics=mechanics,
                        simulation=simulation,
                        seed=seed,
                        cluster=cluster,
                    )
                    cells.setdefault(cell.key, cell)
        return list(cells.values())


def load_spec(path: str | PathLike[str], *, max_cells: int = DEFAULT_MAX_CELLS) -> SweepSpec:
    """Read and check a sweep spec (module notes); refuse a grid of more than ``max_cells``.

    Raises:
        SpecError: naming the file, the key and the problem (the axes, for a grid too big).
    """
    document = read_document(path, what="a sweep spec", error_class=SpecError)
    return _checked(document, max_cells)


def parse_spec(
    text: str, path: str | PathLike[str], *, max_cells: int = DEFAULT_MAX_CELLS
) -> SweepSpec:
    """Check the spec ``text`` read from ``path`` (relative paths are relative to its
    directory; its suffix says TOML or JSON).

    Raises:
        SpecError: naming the file, the key and the problem.
    """
    return _checked(parse_document(text, path, error_class=SpecError), max_cells)


def _checked(doc: ConfigDocument, max_cells: int) -> SweepSpec:
    data = doc.data
    check_keys(doc, (), data, TOP_KEYS)
    _check_size(doc, data, max_cells)
    typed_at = _first_cluster(data)
    if typed_at is not None:
        return _typed(doc, typed_at)
    policies = tuple(_policies(doc, _required(doc, data, "policies")))
    mechanics = tuple(_strings(doc, ("mechanics",), data.get("mechanics", ["exact"])))
    for m in mechanics:
        if m not in MECHANICS:
            raise doc.error(("mechanics",), f"unknown mechanics {m!r} (choose from {MECHANICS})")
    _no_repeats(doc, ("mechanics",), mechanics)
    seeds = _seeds(doc, data)
    name = _name(doc, data)
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = _policy_in(doc, ("baseline",), baseline, policies)
    traces = _traces(doc, _required(doc, data, "traces"), mechanics, typed_at=None)
    parameters = _parameters(doc, data.get("params", {}), policies)
    simulation = _simulation(doc, data.get("simulation", {}))
    _check_configs(doc, traces, mechanics, seeds, simulation)
    return SweepSpec(
        path=doc.path,
        text=doc.text,
        name=name,
        policies=policies,
        mechanics=mechanics,
        seeds=seeds,
        baseline=baseline,
        traces=traces,
        parameters=parameters,
        simulation=simulation,
    )


def _seeds(doc: ConfigDocument, data: Mapping[str, Any]) -> tuple[int, ...]:
    seeds = tuple(_integers(doc, ("seeds",), data.get("seeds", [0]), low=0))
    _no_repeats(doc, ("seeds",), seeds)
    return seeds


def _name(doc: ConfigDocument, data: Mapping[str, Any]) -> str:
    name = data.get("name", doc.path.stem)
    if not isinstance(name, str):
        raise doc.error(("name",), f"must be a string, got {name!r}")
    return name


# ---------------------------------------------------------------------- typed clusters
def _first_cluster(data: Mapping[str, Any]) -> KeyPath | None:
    """Where the spec first names a typed cluster (``traces[i].cluster``), if it does."""
    traces = data.get("traces")
    for index, table in enumerate(traces if isinstance(traces, list) else ()):
        if isinstance(table, dict) and "cluster" in table:
            return ("traces", index, "cluster")
    return None


def _typed(doc: ConfigDocument, typed_at: KeyPath) -> SweepSpec:
    """A spec whose traces name typed clusters (module notes), checked."""
    data = doc.data
    named = _dotted(typed_at)
    policies = tuple(_typed_policies(doc, _required(doc, data, "policies")))
    mechanics = tuple(_strings(doc, ("mechanics",), data.get("mechanics", ["gavel"])))
    for index, kind in enumerate(mechanics):
        if kind not in TYPED_MECHANICS:
            raise doc.error(
                ("mechanics", index),
                f"a spec that names a cluster ({named}) runs the heterogeneous simulator under "
                f"'gavel' (its default) or 'exact' mechanics, got {kind!r}",
            )
    _no_repeats(doc, ("mechanics",), list(mechanics))
    if "exact" in mechanics:
        for index, policy in enumerate(policies):
            if make_typed_policy(policy).packs_jobs:
                raise doc.error(
                    ("policies", index),
                    f"{policy!r} packs jobs onto shared GPUs: Gavel's mechanics only (drop "
                    "'exact' from mechanics, or the policy)",
                )
    parameters = _parameters(doc, data.get("params", {}), policies, typed=True)
    seeds = _seeds(doc, data)
    name = _name(doc, data)
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = _typed_policy(doc, ("baseline",), baseline)
        if baseline not in policies:
            raise doc.error(("baseline",), f"policy {baseline!r} is not in policies")
    traces = _traces(doc, _required(doc, data, "traces"), mechanics, typed_at=typed_at)
    simulation = _typed_simulation(doc, data.get("simulation", {}))
    if mechanics != ("exact",) and any("restart_penalty_seconds" in s for s in simulation):
        raise doc.error(
            ("simulation", "restart_penalty_seconds"),
            'applies to the exact mechanics only: mechanics = ["exact"] (Gavel\'s simulator '
            "has no restart penalty)",
        )
    for settings, seed, kind in itertools.product(simulation, seeds, mechanics):
        try:
            HeterogeneousConfig(seed=seed, mechanics=kind, **settings)
        except (ValueError, TypeError) as exc:
            raise doc.error(("simulation",), str(exc)) from None
    return SweepSpec(
        path=doc.path,
        text=doc.text,
        name=name,
        policies=policies,
        mechanics=mechanics,
        seeds=seeds,
        baseline=baseline,
        traces=traces,
        parameters=parameters,
        simulation=simulation,
        typed=True,
    )


def _dotted(key: KeyPath) -> str:
    text = ""
    for part in key:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _typed_policy(doc: ConfigDocument, where: KeyPath, name: Any) -> str:
    if not isinstance(name, str):
        raise doc.error(where, f"must be a policy name, got {name!r}")
    try:
        return resolve_typed_policy(name)
    except ValueError as exc:
        close = difflib.get_close_matches(name, list(TYPED_POLICIES), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise doc.error(where, f"{exc}{hint}") from None


def _typed_policies(doc: ConfigDocument, value: Any) -> list[str]:
    names = [
        _typed_policy(doc, ("policies", i), n)
        for i, n in enumerate(_strings(doc, ("policies",), value))
    ]
    _no_repeats(doc, ("policies",), names)
    return names


#: The mechanics a typed spec may sweep.
TYPED_MECHANICS = ("gavel", "exact")
#: Settings a typed cell holds only where the spec sets them (so that the keys of the cells
#: written before they could be set stay), with their defaults.
_TYPED_OPTIONAL = {"restart_penalty_seconds": HeterogeneousConfig.restart_penalty_seconds}
#: Settings of the homogeneous simulator a typed spec refuses, and why (the key is named).
_NOT_TYPED = {
    k: "the heterogeneous simulator has no such setting"
    for k in SIMULATION_KEYS
    if k not in TYPED_SIMULATION_DEFAULTS and k not in _TYPED_OPTIONAL
}


def _typed_simulation(doc: ConfigDocument, value: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, dict):
        raise doc.error(("simulation",), "must be a table of simulation settings")
    for key in sorted(value):
        if key in _NOT_TYPED:
            raise doc.error(
                ("simulation", key),
                f"{key!r} is not a setting of a typed cluster: {_NOT_TYPED[key]} (allowed: "
                f"{', '.join([*TYPED_SIMULATION_DEFAULTS, *_TYPED_OPTIONAL])})",
            )
    settings_table(
        doc, ("simulation",), value, SimulationConfig,
        (*TYPED_SIMULATION_DEFAULTS, *_TYPED_OPTIONAL),
        what="simulation setting", elsewhere=_SIMULATION_ELSEWHERE, swept=True,
    )  # fmt: skip
    defaults = {**TYPED_SIMULATION_DEFAULTS, **_TYPED_OPTIONAL}
    axes = {k: _axis(doc, ("simulation", k), v) for k, v in value.items()}
    combos = []
    for values in itertools.product(*axes.values()):
        given = {
            k: float(v) if isinstance(defaults[k], float) else v
            for k, v in zip(axes, values, strict=True)
        }
        combos.append({**TYPED_SIMULATION_DEFAULTS, **given})
    return tuple(combos)


def _typed_table(
    doc: ConfigDocument, where: KeyPath, value: Any
) -> tuple[FileRef, TypedThroughputTable]:
    """The throughput file of a typed trace (required: a file, every type of it kept)."""
    if value is None:
        raise doc.error(where, "required on a cluster: a throughput file with each of its types")
    if isinstance(value, str) and value in BUNDLED_THROUGHPUTS:
        raise doc.error(
            where,
            f"the bundled table {value!r} has one GPU type; a cluster needs a throughput file "
            "with each of its types (such as Gavel's simulation_throughputs.json)",
        )
    file = _existing_file(doc, where, value)
    try:
        table = TypedThroughputTable.from_file(file)
    except ValueError as exc:  # TraceError too
        raise doc.error(where, str(exc)) from None
    return FileRef.of(file), table


def _clusters(
    doc: ConfigDocument, where: KeyPath, value: Any, table: TypedThroughputTable | None
) -> list[ClusterSpec]:
    """The clusters of ``where`` (a spec or a list), each type checked against ``table`` (a
    native workload's types are checked against its jobs' profiles by the caller)."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise doc.error(where, "an empty list sweeps nothing")
    clusters = []
    for index, text in enumerate(values):
        at = (*where, index) if isinstance(value, list) else where
        if not isinstance(text, str):
            raise doc.error(at, f"must be a cluster such as 'v100:12,p100:12,k80:12', got {text!r}")
        try:
            cluster = ClusterSpec.parse(text)
            if table is not None:
                table.check_cluster(cluster)
        except ValueError as exc:
            raise doc.error(at, f"{text!r}: {exc}") from None
        clusters.append(cluster)
    _no_repeats(doc, where, [str(c) for c in clusters])
    return clusters


def _typed_file_trace(doc: ConfigDocument, where: KeyPath, table: dict[str, Any]) -> TraceEntry:
    """A file on typed clusters, read as ``simulate --cluster`` reads it: a ``.trace`` with a
    throughput file holding every type, or a native ``.jsonl`` whose jobs' profiles on every
    type are its throughputs (no ``throughputs`` key); each cluster checked against them."""
    written = table["path"]
    file = _existing_file(doc, (*where, "path"), written)
    ref: FileRef | None = None
    typed: TypedThroughputTable | None = None
    if is_native(file):
        if "throughputs" in table:
            raise doc.error(
                (*where, "throughputs"),
                f"{file.name}: a native workload carries its epoch durations on every type; "
                "'throughputs' is for a .trace",
            )
    elif file.suffix == ".trace":
        ref, typed = _typed_table(doc, (*where, "throughputs"), table.get("throughputs"))
    else:
        raise doc.error(
            (*where, "path"),
            f"{file.name}: a trace on a cluster is a .trace file (Gavel's or Shockwave's, with "
            "'throughputs') or a native .jsonl whose jobs carry a profile on every type, read "
            "as 'shockwave simulate --cluster' reads them",
        )
    clusters = _clusters(doc, (*where, "cluster"), table["cluster"], typed)
    jobs = 0
    for index, cluster in enumerate(clusters):
        at = (
            (*where, "cluster", index)
            if isinstance(table["cluster"], list)
            else (*where, "cluster")
        )
        try:
            if typed is None:
                jobs = len(TypedInputs.read(cluster, file).jobs())
            else:
                jobs = len(read_typed_trace(file, typed, cluster))
        except TraceError as exc:
            raise doc.error((*where, "path"), str(exc)) from None
        except ValueError as exc:  # DataError and UsageError too: a type, or a job no type runs
            raise doc.error(at, f"{cluster}: {exc}") from None
    label = table.get("name") or str(written)
    source = FileTrace(FileRef.of(file), ref)
    gpus = tuple(c.total_gpus for c in clusters)
    return TraceEntry(label, label, None, source, jobs, gpus, tuple(str(c) for c in clusters))


# -------------------------------------------------------------------------------- the size
def grid_axes(data: Mapping[str, Any]) -> dict[str, int]:
    """The lengths of a parsed spec's axes, read without enumerating anything (malformed values
    count as one: they are refused, named, afterwards). Their product bounds the cells (it is
    the number of cells unless settings coincide)."""

    def length(value: Any) -> int:
        return len(value) if isinstance(value, list) else 1

    def product(table: Any) -> int:
        return math.prod(length(v) for v in table.values()) if isinstance(table, dict) else 1

    policies = data.get("policies")
    names = policies if isinstance(policies, list) else []
    grids: dict[str, int] = {}
    params = data.get("params")
    for key, tables in params.items() if isinstance(params, dict) else ():
        tables = tables if isinstance(tables, list) else [tables]
        grids[_canonical_name(key)] = sum(product(t) for t in tables)
    settings = sum(grids.get(_canonical_name(n), 1) if isinstance(n, str) else 1 for n in names)
    workloads = 0
    traces = data.get("traces")
    for table in traces if isinstance(traces, list) else ():
        if not isinstance(table, dict):
            workloads += 1
            continue
        generate = table.get("generate")
        generate = generate if isinstance(generate, dict) else {}
        gpus = table.get("cluster", table.get("gpus", generate.get("gpus")))
        workloads += length(generate.get("seed")) * length(gpus)
    sizes = "clusters" if _first_cluster(data) is not None else "GPUs"
    return {
        f"traces x {sizes}": max(workloads, 1),
        "mechanics": length(data.get("mechanics")),
        "policy settings": max(settings, 1),
        "simulation settings": product(data.get("simulation")),
        "seeds": length(data.get("seeds")),
    }


def _canonical_name(name: Any) -> Any:
    try:
        return resolve_policy_name(name) if isinstance(name, str) else name
    except ValueError:
        return name


def _check_size(doc: ConfigDocument, data: Mapping[str, Any], max_cells: int) -> None:
    """Refuse a grid of more than ``max_cells`` cells, before anything is enumerated."""
    axes = grid_axes(data)
    cells = math.prod(axes.values())
    if cells > max_cells:
        sizes = " x ".join(f"{name} {n:,}" for name, n in axes.items())
        raise doc.error(
            (),
            f"the grid has {cells:,} cells ({sizes}), more than the limit of {max_cells:,}; "
            "shorten those axes (or pass --max-cells N to run it anyway)",
        )


# ------------------------------------------------------------------------------ the tables
def _policies(doc: ConfigDocument, value: Any) -> Iterator[str]:
    names = [
        policy_name(doc, ("policies", i), n)
        for i, n in enumerate(_strings(doc, ("policies",), value))
    ]
    _no_repeats(doc, ("policies",), names)
    yield from names


def _traces(
    doc: ConfigDocument, value: Any, mechanics: Sequence[str], *, typed_at: KeyPath | None
) -> tuple[TraceEntry, ...]:
    """The ``[[traces]]`` entries; ``typed_at``: where the spec first names a cluster (then
    every entry must name one, and none ``gpus``)."""
    if not isinstance(value, list) or not value:
        raise doc.error(("traces",), "must be one or more [[traces]] tables")
    entries: list[TraceEntry] = []
    owners: dict[str, str] = {}
    for index, table in enumerate(value):
        where: KeyPath = ("traces", index)
        if not isinstance(table, dict):
            raise doc.error(where, "must be a table")
        check_keys(doc, where, table, TRACE_KEYS)
        if ("path" in table) == ("generate" in table):
            raise doc.error(where, "needs exactly one of 'path' (a file) or 'generate'")
        name = table.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise doc.error((*where, "name"), f"must be a non-empty string, got {name!r}")
        if typed_at is not None:
            _one_kind(doc, where, table, typed_at)
        if "path" in table:
            if typed_at is None:
                made = _file_trace(doc, where, table, mechanics)
            else:
                made = [_typed_file_trace(doc, where, table)]
        else:
            made = _generated(doc, where, table, typed=typed_at is not None)
        for entry in made:
            if entry.label in owners:
                raise doc.error(
                    where, f"its label {entry.label!r} is also {owners[entry.label]}'s "
                    "(give each trace a distinct name)",
                )  # fmt: skip
            owners[entry.label] = f"traces[{index}]"
            entries.append(entry)
    return tuple(entries)


def _one_kind(
    doc: ConfigDocument, where: KeyPath, table: dict[str, Any], typed_at: KeyPath
) -> None:
    """Refuse ``gpus`` (or a missing ``cluster``) in a spec that names a cluster."""
    named = _dotted(typed_at)
    if "gpus" in table:
        raise doc.error(
            (*where, "gpus"),
            f"this spec names a typed cluster ({named}): give each trace a 'cluster', not "
            "'gpus' (identical GPUs and typed clusters run different simulators, policies and "
            "settings: sweep them in two specs)",
        )
    if "cluster" not in table:
        raise doc.error(
            (*where, "cluster"),
            f"required: this spec names a typed cluster ({named}), so every trace runs on one "
            "(for identical GPUs, 'v100:32' is a cluster of one type)",
        )


def _file_trace(
    doc: ConfigDocument, where: KeyPath, table: dict[str, Any], mechanics: Sequence[str]
) -> list[TraceEntry]:
    written = table["path"]
    file = _existing_file(doc, (*where, "path"), written)
    throughputs = _throughputs(doc, (*where, "throughputs"), table.get("throughputs"))
    if file.suffix != ".jsonl" and throughputs is None:
        raise doc.error((*where, "throughputs"), "a .trace file needs a throughput table")
    if "gpus" not in table:
        raise doc.error((*where, "gpus"), "required for a trace file")
    gpus = tuple(_integers(doc, (*where, "gpus"), table["gpus"], low=1))
    _no_repeats(doc, (*where, "gpus"), gpus)
    table_arg = throughputs.path if isinstance(throughputs, FileRef) else throughputs
    try:
        workload = load_workload(file, table_arg)
    except (TraceError, JobFieldError) as exc:
        raise doc.error((*where, "path"), str(exc)) from None
    except OSError as exc:
        raise doc.error((*where, "path"), f"{file}: cannot read ({exc.strerror})") from None
    for g, mech in itertools.product(gpus, mechanics):  # what the engines check up front
        try:
            Simulation(workload, "fifo", SimulationConfig(gpus=g, mechanics=mech))  # type: ignore[arg-type]
        except ValueError as exc:
            raise doc.error(where, f"{g} GPUs, {mech} mechanics: {exc}") from None
    label = table.get("name") or str(written)
    source = FileTrace(FileRef.of(file), throughputs)
    return [TraceEntry(label, label, None, source, len(workload.jobs), gpus)]


def _generated(
    doc: ConfigDocument, where: KeyPath, table: dict[str, Any], *, typed: bool
) -> list[TraceEntry]:
    if "throughputs" in table:
        raise doc.error((*where, "throughputs"), "goes inside 'generate' for a generated trace")
    spec = table["generate"]
    here: KeyPath = (*where, "generate")
    if not isinstance(spec, dict):
        raise doc.error(here, "must be a table of generator parameters")
    check_keys(doc, here, spec, GENERATE_KEYS)
    clusters: list[ClusterSpec] = []
    if typed and "throughputs" not in spec:
        return _generated_for_clusters(doc, where, table, spec)
    if typed:
        _, typed_table = _typed_table(doc, (*here, "throughputs"), spec.get("throughputs"))
        clusters = _clusters(doc, (*where, "cluster"), table["cluster"], typed_table)
        totals = sorted({c.total_gpus for c in clusters})
        if "gpus" not in spec and len(totals) > 1:
            raise doc.error(
                (*here, "gpus"),
                f"required: the clusters have {', '.join(map(str, totals))} GPUs, and the "
                "generator sizes the trace for one number of GPUs",
            )
        spec = {**spec, "gpus": spec.get("gpus", totals[0])}
    for required in ("jobs", "gpus"):
        if required not in spec:
            raise doc.error((*here, required), "required")
    seeds = tuple(_integers(doc, (*here, "seed"), spec.get("seed", 0), low=0))
    _no_repeats(doc, (*here, "seed"), seeds)
    throughputs = _throughputs(doc, (*here, "throughputs"), spec.get("throughputs"))
    fields = {k: _generator_value(doc, (*here, k), k, v) for k, v in spec.items()}
    fields.pop("throughputs", None)
    fields.pop("seed", None)
    if typed:
        gpus = tuple(c.total_gpus for c in clusters)
    else:
        gpus = tuple(_integers(doc, (*where, "gpus"), table.get("gpus", spec["gpus"]), low=1))
        _no_repeats(doc, (*where, "gpus"), gpus)
    checked = []
    for seed in seeds:
        source = GeneratedTrace({**fields, "seed": seed}, throughputs)
        try:
            parameters = source.build()
            check_throughput_coverage(parameters, parameters.throughput_table())
        except GeneratorParameterError as exc:
            raise doc.error((*here, exc.parameter), exc.reason) from None
        if not typed:  # a typed cluster's jobs are checked per type in the cell
            _check_gangs(doc, where, parameters, gpus)
        checked.append((seed, source, parameters.jobs))
    family = table.get("name") or _generated_label(fields)  # the values are checked now
    names = tuple(str(c) for c in clusters)
    entries = [
        TraceEntry(f"{family} (seed {seed})", family, seed, source, jobs, gpus, names)
        for seed, source, jobs in checked
    ]
    return entries


def _generated_for_clusters(
    doc: ConfigDocument, where: KeyPath, table: dict[str, Any], spec: dict[str, Any]
) -> list[TraceEntry]:
    """A typed trace generated without a throughput file: adapting jobs drawn for each cluster
    as ``shockwave trace generate --cluster`` draws them (sized to it, with a profile on every
    type), one workload per cluster and generator seed."""
    here: KeyPath = (*where, "generate")
    if "gpus" in spec:
        raise doc.error(
            (*here, "gpus"),
            "a trace drawn for a cluster is sized to it (as 'trace generate --cluster'): leave "
            "'gpus' out, or give 'throughputs' to draw one static trace for every cluster",
        )
    if "jobs" not in spec:
        raise doc.error((*here, "jobs"), "required")
    clusters = _clusters(doc, (*where, "cluster"), table["cluster"], None)
    seeds = tuple(_integers(doc, (*here, "seed"), spec.get("seed", 0), low=0))
    _no_repeats(doc, (*here, "seed"), seeds)
    fields = {k: _generator_value(doc, (*here, k), k, v) for k, v in spec.items() if k != "seed"}
    totals = [c.total_gpus for c in clusters]
    entries = []
    for cluster, seed in itertools.product(clusters, seeds):
        given = {**fields, "gpus": cluster.total_gpus, "cluster": str(cluster), "seed": seed}
        source = GeneratedTrace(given, None)
        try:
            parameters = source.build()
            check_throughput_coverage(parameters, parameters.throughput_table())
        except GeneratorParameterError as exc:
            key = (*where, "cluster") if exc.parameter == "cluster" else (*here, exc.parameter)
            raise doc.error(key, exc.reason) from None
        # each cluster draws its own workload: named by its size (gen-100j-36g), or by the
        # cluster where two clusters have one size
        family = table.get("name") or _generated_label({**fields, "gpus": cluster.total_gpus})
        if len(clusters) > 1 and (table.get("name") or totals.count(cluster.total_gpus) > 1):
            family += f" on {cluster}"
        jobs, gpus, names = parameters.jobs, (cluster.total_gpus,), (str(cluster),)
        entries.append(
            TraceEntry(f"{family} (seed {seed})", family, seed, source, jobs, gpus, names)
        )
    return entries


def _generated_label(fields: Mapping[str, Any]) -> str:
    """``gen-460j-128g`` (``gen-460j`` without ``gpus``: drawn for its cluster), with a short
    digest of any other parameter given."""
    label = f"gen-{fields['jobs']}j" + (f"-{fields['gpus']}g" if "gpus" in fields else "")
    others = {k: v for k, v in fields.items() if k not in ("jobs", "gpus")}
    if others:
        label += "-" + hashlib.sha256(canonical_json(others).encode()).hexdigest()[:6]
    return label


def _generator_value(doc: ConfigDocument, where: KeyPath, name: str, value: Any) -> Any:
    """A generator field's value in the form :class:`GeneratedTrace` keeps (JSON)."""
    if name == "templates":
        groups = [value] if isinstance(value, str) else value
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise doc.error(where, "must be 'MODEL:BS,...' text or a list of such texts")
        return ";".join(groups)
    if name in ("seed", "throughputs"):
        return value
    default = PARAMETER_DEFAULTS.get(name)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(_is_number(v) for v in value):
            raise doc.error(where, f"must be a list of numbers, got {value!r}")
        return value
    if isinstance(value, (list, dict)):
        raise doc.error(where, f"must be a single value, got {value!r}")
    return value


def _check_gangs(
    doc: ConfigDocument, where: KeyPath, parameters: GeneratorParameters, gpus: Sequence[int]
) -> None:
    """Refuse a cluster smaller than a gang the generator can draw."""
    distributed = any(t.launch.distributed for t in parameters.templates)
    drawn = [
        w for w, q in zip(parameters.gang_sizes, parameters.gang_size_mix, strict=True) if q > 0
    ]
    largest = max(drawn) if distributed else 1
    small = [g for g in gpus if g < largest]
    if small:
        raise doc.error(
            (*where, "gpus"),
            f"{small[0]} GPUs is fewer than the largest gang the generator draws ({largest})",
        )


def _parameters(
    doc: ConfigDocument, value: Any, policies: Sequence[str], *, typed: bool = False
) -> dict[str, tuple[Mapping[str, Any], ...]]:
    """Each policy's parameter settings (``[params]``; ``typed``: of the typed policies)."""
    if not isinstance(value, dict):
        raise doc.error(("params",), "must be a table of [params.POLICY] tables")
    grids: dict[str, tuple[Mapping[str, Any], ...]] = {p: ({},) for p in policies}
    for key, tables in value.items():
        where: KeyPath = ("params", key)
        policy = _policy_in(doc, where, key, policies, typed=typed)
        if isinstance(tables, dict):
            tables = [tables]
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise doc.error(where, "must be a table, or an array of tables ([[params.X]])")
        settings: dict[str, Mapping[str, Any]] = {}
        for index, grid in enumerate(tables):
            here = where if len(tables) == 1 else (*where, index)
            for setting in _grid(doc, here, grid, policy, typed=typed):
                settings.setdefault(canonical_json(setting), setting)
        grids[policy] = tuple(settings.values())
    return grids


def _grid(
    doc: ConfigDocument, where: KeyPath, grid: dict[str, Any], policy: str, *, typed: bool
) -> Iterator[dict[str, Any]]:
    """Every combination of one parameter grid, checked and normalised (defaults dropped)."""
    known = typed_policy_parameters(policy) if typed else policy_parameters(policy)
    check_policy_keys(doc, where, policy, grid, typed=typed)
    axes = {k: _axis(doc, (*where, k), v) for k, v in grid.items()}
    for key, axis in axes.items():
        for index, v in enumerate(axis):
            at = (*where, key, index) if isinstance(grid[key], list) else (*where, key)
            check_policy_value(doc, at, policy, key, v, typed=typed)
    for values in itertools.product(*axes.values()):
        setting = dict(zip(axes, values, strict=True))
        try:
            if typed:
                make_typed_policy(policy, 0, setting)
            else:
                make_policy(policy, setting)
        except (ValueError, TypeError) as exc:
            raise doc.error(where, str(exc)) from None
        normal = {}
        for k, v in setting.items():
            if isinstance(known[k], float) and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if v != known[k] or type(v) is not type(known[k]):
                normal[k] = v
        yield normal


#: The defaults of the ``[simulation]`` settings beyond :data:`SIMULATION_DEFAULTS` (a cell
#: holds one of them only when it differs from its default: the keys of existing cells stay).
_OTHER_DEFAULTS = {
    f.name: f.default
    for f in SimulationConfig.__dataclass_fields__.values()
    if f.name in SIMULATION_KEYS and f.name not in SIMULATION_DEFAULTS
}


def _simulation(doc: ConfigDocument, value: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, dict):
        raise doc.error(("simulation",), "must be a table of simulation settings")
    check_keys(
        doc, ("simulation",), value, SIMULATION_KEYS,
        what="simulation setting", elsewhere=_SIMULATION_ELSEWHERE,
    )  # fmt: skip
    axes = {k: _axis(doc, ("simulation", k), v) for k, v in value.items()}
    settings_table(
        doc, ("simulation",), value, SimulationConfig, SIMULATION_KEYS,
        what="simulation setting", swept=True,
    )  # fmt: skip
    combos = []
    for values in itertools.product(*axes.values()):
        given = dict(zip(axes, values, strict=True))
        others = {k: v for k, v in given.items() if k in _OTHER_DEFAULTS}
        for k, v in others.items():
            if v == _OTHER_DEFAULTS[k] and type(v) is type(_OTHER_DEFAULTS[k]):
                del given[k]  # a default written out: the cell without it
        combos.append({**SIMULATION_DEFAULTS, **given})
    return tuple(combos)


def _check_configs(
    doc: ConfigDocument,
    traces: Sequence[TraceEntry],
    mechanics: Sequence[str],
    seeds: Sequence[int],
    simulation: Sequence[Mapping[str, Any]],
) -> None:
    """Build every simulation configuration once: a bad setting fails now, named."""
    for trace in traces:
        for gpus, mech, seed, settings in itertools.product(
            trace.gpus, mechanics, seeds, simulation
        ):
            try:
                SimulationConfig(gpus=gpus, mechanics=mech, seed=seed, **settings)
            except (ValueError, TypeError) as exc:
                changed = {
                    k: v
                    for k, v in settings.items()
                    if k not in SIMULATION_DEFAULTS or SIMULATION_DEFAULTS[k] != v
                }
                detail = (
                    f" ({mech} mechanics, settings {canonical_json(changed)})" if changed else ""
                )
                raise doc.error(("simulation",), f"{exc}{detail}") from None


# --------------------------------------------------------------------------------- values
def _required(doc: ConfigDocument, data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise doc.error((key,), "required")
    return data[key]


def _axis(doc: ConfigDocument, where: KeyPath, value: Any) -> list[Scalar]:
    """A swept value: a list (each value a cell) or a single value."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise doc.error(where, "an empty list sweeps nothing")
    for v in values:
        if not isinstance(v, (bool, int, float, str)):
            raise doc.error(where, f"must be a value or a list of values, got {v!r}")
    return values


def _strings(doc: ConfigDocument, where: KeyPath, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise doc.error(where, f"must be a non-empty list of strings, got {value!r}")
    return value


def _integers(doc: ConfigDocument, where: KeyPath, value: Any, *, low: int) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise doc.error(where, "must not be empty")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < low or v >= 2**63:
            raise doc.error(where, f"must be an integer >= {low} (or a list), got {v!r}")
    return values


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _no_repeats(doc: ConfigDocument, where: KeyPath, values: Sequence[Any]) -> None:
    repeated = [v for i, v in enumerate(values) if v in values[:i]]
    if repeated:
        raise doc.error(where, f"lists {repeated[0]!r} twice")


def _policy_in(
    doc: ConfigDocument, where: KeyPath, name: Any, policies: Sequence[str], *, typed: bool = False
) -> str:
    policy = policy_name(doc, where, name, typed=typed)
    if policy not in policies:
        raise doc.error(where, f"policy {policy!r} is not in policies")
    return policy


def _existing_file(doc: ConfigDocument, where: KeyPath, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise doc.error(where, f"must be a file path, got {value!r}")
    file = (doc.path.parent / value).resolve()
    if not file.is_file():
        what = "is not a file" if file.exists() else "no such file"
        raise doc.error(where, f"{what}: {file}")
    return file


def _throughputs(doc: ConfigDocument, where: KeyPath, value: Any) -> Throughputs:
    """A bundled table's name, or a file relative to the spec (``None`` if not given)."""
    if value is None:
        return None
    if isinstance(value, str) and value in BUNDLED_THROUGHPUTS:
        return value
    file = _existing_file(doc, where, value)
    try:
        ThroughputTable.from_file(file)
    except ValueError as exc:  # TraceError too
        raise doc.error(where, str(exc)) from None
    return FileRef.of(file)
