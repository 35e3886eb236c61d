"""Sweep specs: a TOML file that describes a grid of simulations (``docs/sweep.md``).

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

:func:`load_spec` first sizes the grid (the product of its axes' lengths, before anything is
enumerated) and refuses one of more than ``max_cells`` cells (default
:data:`~shockwave.sweep.cells.DEFAULT_MAX_CELLS`, 100,000), naming the axes; then it checks
everything before a cell runs: unknown keys (named), types and values
(each policy is built with each of its parameter settings, each simulation setting is checked),
files (each trace file is read and its jobs are checked against the cluster), generator
parameters. Every problem raises :class:`SpecError` naming the file and the key.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shockwave.errors import JobFieldError, TraceError
from shockwave.policies import make_policy, policy_parameters, resolve_policy_name
from shockwave.scheduling import MECHANICS, SimulationConfig
from shockwave.sim import Simulation
from shockwave.sweep.cells import DEFAULT_MAX_CELLS, SIMULATION_DEFAULTS, Cell, canonical_json
from shockwave.sweep.sources import FileRef, FileTrace, GeneratedTrace, Throughputs, TraceSource
from shockwave.throughputs import BUNDLED_THROUGHPUTS, ThroughputTable
from shockwave.traces import load_workload
from shockwave.traces.generate import check_throughput_coverage
from shockwave.traces.generator_parameters import (
    PARAMETER_DEFAULTS,
    GeneratorParameterError,
    GeneratorParameters,
)

TOP_KEYS = ("name", "policies", "mechanics", "seeds", "baseline", "simulation", "traces", "params")
TRACE_KEYS = ("name", "path", "throughputs", "gpus", "generate")
GENERATE_KEYS = ("jobs", "gpus", *PARAMETER_DEFAULTS)

Scalar = bool | int | float | str


class SpecError(ValueError):
    """A sweep spec that cannot run; the message names the file, the key and the problem."""

    def __init__(self, path: Path | str, where: str, problem: str) -> None:
        self.path, self.where, self.problem = str(path), where, problem
        super().__init__(f"{path}: {where}: {problem}" if where else f"{path}: {problem}")


@dataclass(frozen=True)
class TraceEntry:
    """One workload of the sweep (a ``[[traces]]`` entry, one per generator seed).

    Attributes:
        label: the ``trace`` column.
        family: the label without the seed.
        trace_seed: the generator's seed, or ``None`` for a file.
        source: the workload.
        jobs: its number of jobs.
        gpus: the cluster sizes it runs on.
    """

    label: str
    family: str
    trace_seed: int | None
    source: TraceSource
    jobs: int
    gpus: tuple[int, ...]


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
        simulation: every combination of the ``[simulation]`` settings (all settings filled).
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

    def cells(self) -> list[Cell]:
        """Every simulation of the grid in the spec's order (traces, GPUs, mechanics, policies,
        parameter settings, simulation settings, seeds), each once: settings that coincide,
        such as a default written out, give one cell."""
        cells: dict[str, Cell] = {}
        for trace in self.traces:
            for gpus, mechanics, policy in itertools.product(
                trace.gpus, self.mechanics, self.policies
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
                    )
                    cells.setdefault(cell.key, cell)
        return list(cells.values())


def load_spec(path: str | Path, *, max_cells: int = DEFAULT_MAX_CELLS) -> SweepSpec:
    """Read and check a sweep spec (module notes); refuse a grid of more than ``max_cells``.

    Raises:
        SpecError: naming the file, the key and the problem (the axes, for a grid too big).
    """
    path = Path(path)
    if path.suffix != ".toml":
        raise SpecError(path, "", "a sweep spec must be a .toml file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(path, "", f"cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise SpecError(path, "", "not a UTF-8 text file") from None
    return parse_spec(text, path, max_cells=max_cells)


def parse_spec(text: str, path: Path, *, max_cells: int = DEFAULT_MAX_CELLS) -> SweepSpec:
    """Check the spec ``text`` read from ``path`` (relative paths are relative to its directory).

    Raises:
        SpecError: naming the file, the key and the problem.
    """
    data = _parse_toml(text, path)
    _check_keys(path, "", data, TOP_KEYS)
    _check_size(path, data, max_cells)
    policies = tuple(_policies(path, _required(path, data, "policies")))
    mechanics = tuple(_strings(path, "mechanics", data.get("mechanics", ["exact"])))
    for m in mechanics:
        if m not in MECHANICS:
            raise SpecError(path, "mechanics", f"unknown mechanics {m!r} (choose from {MECHANICS})")
    _no_repeats(path, "mechanics", mechanics)
    seeds = tuple(_integers(path, "seeds", data.get("seeds", [0]), low=0))
    _no_repeats(path, "seeds", seeds)
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise SpecError(path, "name", f"must be a string, got {name!r}")
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = _policy_in(path, "baseline", baseline, policies)
    traces = _traces(path, _required(path, data, "traces"), mechanics)
    parameters = _parameters(path, data.get("params", {}), policies)
    simulation = _simulation(path, data.get("simulation", {}))
    _check_configs(path, traces, mechanics, seeds, simulation)
    return SweepSpec(
        path=path,
        text=text,
        name=name,
        policies=policies,
        mechanics=mechanics,
        seeds=seeds,
        baseline=baseline,
        traces=traces,
        parameters=parameters,
        simulation=simulation,
    )


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
    settings = sum(grids.get(_canonical_name(n), 1) for n in names) if names else 1
    workloads = 0
    traces = data.get("traces")
    for table in traces if isinstance(traces, list) else ():
        if not isinstance(table, dict):
            workloads += 1
            continue
        generate = table.get("generate")
        generate = generate if isinstance(generate, dict) else {}
        gpus = table.get("gpus", generate.get("gpus"))
        workloads += length(generate.get("seed")) * length(gpus)
    return {
        "traces x GPUs": max(workloads, 1),
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


def _check_size(path: Path, data: Mapping[str, Any], max_cells: int) -> None:
    """Refuse a grid of more than ``max_cells`` cells, before anything is enumerated."""
    axes = grid_axes(data)
    cells = math.prod(axes.values())
    if cells > max_cells:
        sizes = " x ".join(f"{name} {n:,}" for name, n in axes.items())
        raise SpecError(
            path, "",
            f"the grid has {cells:,} cells ({sizes}), more than the limit of {max_cells:,}; "
            "shorten those axes (or pass --max-cells N to run it anyway)",
        )  # fmt: skip


# ------------------------------------------------------------------------------ the tables
def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        toml = importlib.import_module("tomllib")  # the standard library from Python 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        toml = importlib.import_module("tomli")
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise SpecError(path, "", f"not valid TOML ({exc})") from None
    except RecursionError:
        raise SpecError(path, "", "TOML nested too deeply") from None
    return data


def _policies(path: Path, value: Any) -> Iterator[str]:
    names = [
        _resolve(path, f"policies[{i}]", n) for i, n in enumerate(_strings(path, "policies", value))
    ]
    _no_repeats(path, "policies", names)
    yield from names


def _traces(path: Path, value: Any, mechanics: Sequence[str]) -> tuple[TraceEntry, ...]:
    if not isinstance(value, list) or not value:
        raise SpecError(path, "traces", "must be one or more [[traces]] tables")
    entries: list[TraceEntry] = []
    owners: dict[str, str] = {}
    for index, table in enumerate(value):
        where = f"traces[{index}]"
        if not isinstance(table, dict):
            raise SpecError(path, where, "must be a table")
        _check_keys(path, where, table, TRACE_KEYS)
        if ("path" in table) == ("generate" in table):
            raise SpecError(path, where, "needs exactly one of 'path' (a file) or 'generate'")
        name = table.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise SpecError(path, f"{where}.name", f"must be a non-empty string, got {name!r}")
        if "path" in table:
            made = _file_trace(path, where, table, mechanics)
        else:
            made = _generated(path, where, table)
        for entry in made:
            if entry.label in owners:
                raise SpecError(
                    path, where, f"its label {entry.label!r} is also {owners[entry.label]}'s "
                    "(give each trace a distinct name)",
                )  # fmt: skip
            owners[entry.label] = where
            entries.append(entry)
    return tuple(entries)


def _file_trace(
    path: Path, where: str, table: dict[str, Any], mechanics: Sequence[str]
) -> list[TraceEntry]:
    written = table["path"]
    file = _existing_file(path, f"{where}.path", written)
    throughputs = _throughputs(path, f"{where}.throughputs", table.get("throughputs"))
    if file.suffix != ".jsonl" and throughputs is None:
        raise SpecError(path, f"{where}.throughputs", "a .trace file needs a throughput table")
    if "gpus" not in table:
        raise SpecError(path, f"{where}.gpus", "required for a trace file")
    gpus = tuple(_integers(path, f"{where}.gpus", table["gpus"], low=1))
    _no_repeats(path, f"{where}.gpus", gpus)
    table_arg = throughputs.path if isinstance(throughputs, FileRef) else throughputs
    try:
        workload = load_workload(file, table_arg)
    except (TraceError, JobFieldError) as exc:
        raise SpecError(path, f"{where}.path", str(exc)) from None
    except OSError as exc:
        raise SpecError(path, f"{where}.path", f"{file}: cannot read ({exc.strerror})") from None
    for g, mech in itertools.product(gpus, mechanics):  # what the engines check up front
        try:
            Simulation(workload, "fifo", SimulationConfig(gpus=g, mechanics=mech))  # type: ignore[arg-type]
        except ValueError as exc:
            raise SpecError(path, where, f"{g} GPUs, {mech} mechanics: {exc}") from None
    label = table.get("name") or str(written)
    source = FileTrace(FileRef.of(file), throughputs)
    return [TraceEntry(label, label, None, source, len(workload.jobs), gpus)]


def _generated(path: Path, where: str, table: dict[str, Any]) -> list[TraceEntry]:
    if "throughputs" in table:
        raise SpecError(
            path, f"{where}.throughputs", "goes inside 'generate' for a generated trace"
        )
    spec = table["generate"]
    here = f"{where}.generate"
    if not isinstance(spec, dict):
        raise SpecError(path, here, "must be a table of generator parameters")
    _check_keys(path, here, spec, GENERATE_KEYS)
    for required in ("jobs", "gpus"):
        if required not in spec:
            raise SpecError(path, f"{here}.{required}", "required")
    seeds = tuple(_integers(path, f"{here}.seed", spec.get("seed", 0), low=0))
    _no_repeats(path, f"{here}.seed", seeds)
    throughputs = _throughputs(path, f"{here}.throughputs", spec.get("throughputs"))
    fields = {k: _generator_value(path, f"{here}.{k}", k, v) for k, v in spec.items()}
    fields.pop("throughputs", None)
    fields.pop("seed", None)
    gpus = tuple(_integers(path, f"{where}.gpus", table.get("gpus", spec["gpus"]), low=1))
    _no_repeats(path, f"{where}.gpus", gpus)
    checked = []
    for seed in seeds:
        source = GeneratedTrace({**fields, "seed": seed}, throughputs)
        try:
            parameters = source.build()
            check_throughput_coverage(parameters, parameters.throughput_table())
        except GeneratorParameterError as exc:
            raise SpecError(path, f"{here}.{exc.parameter}", exc.reason) from None
        _check_gangs(path, where, parameters, gpus)
        checked.append((seed, source, parameters.jobs))
    family = table.get("name") or _generated_label(fields)  # the values are checked now
    entries = [
        TraceEntry(f"{family} (seed {seed})", family, seed, source, jobs, gpus)
        for seed, source, jobs in checked
    ]
    return entries


def _generated_label(fields: Mapping[str, Any]) -> str:
    """``gen-460j-128g``, with a short digest of any other parameter given."""
    label = f"gen-{fields['jobs']}j-{fields['gpus']}g"
    others = {k: v for k, v in fields.items() if k not in ("jobs", "gpus")}
    if others:
        label += "-" + hashlib.sha256(canonical_json(others).encode()).hexdigest()[:6]
    return label


def _generator_value(path: Path, where: str, name: str, value: Any) -> Any:
    """A generator field's value in the form :class:`GeneratedTrace` keeps (JSON)."""
    if name == "templates":
        groups = [value] if isinstance(value, str) else value
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise SpecError(path, where, "must be 'MODEL:BS,...' text or a list of such texts")
        return ";".join(groups)
    if name in ("seed", "throughputs"):
        return value
    default = PARAMETER_DEFAULTS.get(name)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(_is_number(v) for v in value):
            raise SpecError(path, where, f"must be a list of numbers, got {value!r}")
        return value
    if isinstance(value, (list, dict)):
        raise SpecError(path, where, f"must be a single value, got {value!r}")
    return value


def _check_gangs(
    path: Path, where: str, parameters: GeneratorParameters, gpus: Sequence[int]
) -> None:
    """Refuse a cluster smaller than a gang the generator can draw."""
    distributed = any(t.launch.distributed for t in parameters.templates)
    drawn = [
        w for w, q in zip(parameters.gang_sizes, parameters.gang_size_mix, strict=True) if q > 0
    ]
    largest = max(drawn) if distributed else 1
    small = [g for g in gpus if g < largest]
    if small:
        raise SpecError(
            path, f"{where}.gpus",
            f"{small[0]} GPUs is fewer than the largest gang the generator draws ({largest})",
        )  # fmt: skip


def _parameters(
    path: Path, value: Any, policies: Sequence[str]
) -> dict[str, tuple[Mapping[str, Any], ...]]:
    if not isinstance(value, dict):
        raise SpecError(path, "params", "must be a table of [params.POLICY] tables")
    grids: dict[str, tuple[Mapping[str, Any], ...]] = {p: ({},) for p in policies}
    for key, tables in value.items():
        where = f"params.{key}"
        policy = _policy_in(path, where, key, policies)
        if isinstance(tables, dict):
            tables = [tables]
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise SpecError(path, where, "must be a table, or an array of tables ([[params.X]])")
        settings: dict[str, Mapping[str, Any]] = {}
        for index, grid in enumerate(tables):
            here = where if len(tables) == 1 else f"{where}[{index}]"
            for setting in _grid(path, here, grid, policy):
                settings.setdefault(canonical_json(setting), setting)
        grids[policy] = tuple(settings.values())
    return grids


def _grid(path: Path, where: str, grid: dict[str, Any], policy: str) -> Iterator[dict[str, Any]]:
    """Every combination of one parameter grid, checked and normalised (defaults dropped)."""
    known = policy_parameters(policy)
    unknown = sorted(set(grid) - set(known))
    if unknown:
        raise SpecError(
            path, f"{where}.{unknown[0]}",
            f"policy {policy!r} has no parameter {unknown[0]!r} (its parameters: "
            f"{', '.join(known) or 'none'})",
        )  # fmt: skip
    axes = {k: _axis(path, f"{where}.{k}", v) for k, v in grid.items()}
    for key, axis in axes.items():
        for v in axis:
            if isinstance(v, float) and not math.isfinite(v):
                raise SpecError(path, f"{where}.{key}", f"must be a finite number, got {v!r}")
    for values in itertools.product(*axes.values()):
        setting = dict(zip(axes, values, strict=True))
        try:
            make_policy(policy, setting)
        except (ValueError, TypeError) as exc:
            raise SpecError(path, where, str(exc)) from None
        normal = {}
        for k, v in setting.items():
            if isinstance(known[k], float) and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if v != known[k] or type(v) is not type(known[k]):
                normal[k] = v
        yield normal


def _simulation(path: Path, value: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, dict):
        raise SpecError(path, "simulation", "must be a table of simulation settings")
    _check_keys(path, "simulation", value, tuple(SIMULATION_DEFAULTS), what="simulation setting")
    axes = {k: _axis(path, f"simulation.{k}", v) for k, v in value.items()}
    combos = []
    for values in itertools.product(*axes.values()):
        combos.append({**SIMULATION_DEFAULTS, **dict(zip(axes, values, strict=True))})
    return tuple(combos)


def _check_configs(
    path: Path,
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
                changed = {k: v for k, v in settings.items() if SIMULATION_DEFAULTS[k] != v}
                detail = (
                    f" ({mech} mechanics, settings {canonical_json(changed)})" if changed else ""
                )
                raise SpecError(path, "simulation", f"{exc}{detail}") from None


# --------------------------------------------------------------------------------- values
def _required(path: Path, data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise SpecError(path, key, "required")
    return data[key]


def _check_keys(
    path: Path, where: str, table: Mapping[str, Any], known: Sequence[str], *, what: str = "key"
) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        place = f"{where}.{unknown[0]}" if where else unknown[0]
        allowed = ", ".join(known) or "none"
        raise SpecError(path, place, f"unknown {what} {unknown[0]!r} (allowed: {allowed})")


def _axis(path: Path, where: str, value: Any) -> list[Scalar]:
    """A swept value: a list (each value a cell) or a single value."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(path, where, "an empty list sweeps nothing")
    for v in values:
        if not isinstance(v, (bool, int, float, str)):
            raise SpecError(path, where, f"must be a value or a list of values, got {v!r}")
    return values


def _strings(path: Path, where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise SpecError(path, where, f"must be a non-empty list of strings, got {value!r}")
    return value


def _integers(path: Path, where: str, value: Any, *, low: int) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(path, where, "must not be empty")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < low or v >= 2**63:
            raise SpecError(path, where, f"must be an integer >= {low} (or a list), got {v!r}")
    return values


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _no_repeats(path: Path, where: str, values: Sequence[Any]) -> None:
    repeated = [v for i, v in enumerate(values) if v in values[:i]]
    if repeated:
        raise SpecError(path, where, f"lists {repeated[0]!r} twice")


def _resolve(path: Path, where: str, name: Any) -> str:
    if not isinstance(name, str):
        raise SpecError(path, where, f"must be a policy name, got {name!r}")
    try:
        return resolve_policy_name(name)
    except ValueError as exc:
        raise SpecError(path, where, str(exc)) from None


def _policy_in(path: Path, where: str, name: Any, policies: Sequence[str]) -> str:
    policy = _resolve(path, where, name)
    if policy not in policies:
        raise SpecError(path, where, f"policy {policy!r} is not in policies")
    return policy


def _existing_file(path: Path, where: str, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise SpecError(path, where, f"must be a file path, got {value!r}")
    file = (path.parent / value).resolve()
    if not file.is_file():
        what = "is not a file" if file.exists() else "no such file"
        raise SpecError(path, where, f"{what}: {file}")
    return file


def _throughputs(path: Path, where: str, value: Any) -> Throughputs:
    """A bundled table's name, or a file relative to the spec (``None`` if not given)."""
    if value is None:
        return None
    if isinstance(value, str) and value in BUNDLED_THROUGHPUTS:
        return value
    file = _existing_file(path, where, value)
    try:
        ThroughputTable.from_file(file)
    except ValueError as exc:  # TraceError too
        raise SpecError(path, where, str(exc)) from None
    return FileRef.of(file)
