"""Isolated training throughputs of the original's job types (the throughput JSON files), on
every worker type of the file.

A throughput file maps worker types to job types: under ``"v100"`` (the only worker type the
original simulates; Gavel's ``simulation_throughputs.json`` also has ``"p100"``, ``"k80"`` and
the placement variants ``"<type>_unconsolidated"``), each key is a stringified tuple
``"('ResNet-18 (batch size 32)', 1)"``, i.e. (job type, gang size), and its ``"null"`` entry is
the **isolated throughput of the whole job on its gang, in iterations (mini-batch steps) per
second**. Other entries are co-location throughputs used only by packing policies; they are
ignored here (:class:`~shockwave.heterogeneous.typed_throughputs.TypedThroughputTable` keeps
them, and the job types without a batch size, for Gavel's static jobs; it reads the keys with
:func:`parse_throughput_key` and checks the rates with :func:`check_throughput` as this module
does).

:class:`ThroughputTable` is the one place that answers "the throughput of this job at this batch
size on ``gang`` GPUs of type ``k``" (:meth:`ThroughputTable.isolated`) and "the duration of one
of its epochs there" (:meth:`ThroughputTable.epoch_seconds`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from shockwave.arguments import is_number
from shockwave.errors import TraceError

_JOB_TYPE = re.compile(r"^(?P<model>[^ ]+) \(batch size (?P<bs>\d+)\)$")
_KEY = re.compile(r"^\('(?P<job_type>[^']+)', (?P<gang>\d+)\)$")

#: ``(model, batch size, gang size)``: the key of an isolated throughput.
ThroughputKey = tuple[str, int, int]
#: The worker type a table reads by default (the original's only one).
DEFAULT_WORKER_TYPE = "v100"
#: Suffix of a worker type that is a placement variant of another (Gavel's
#: ``v100_unconsolidated``: a gang spread over several servers), not a GPU type of its own.
PLACEMENT_SUFFIX = "_unconsolidated"

#: Throughput files bundled with the package (isolated entries only), by short name: the
#: original's TACC and WISR tables, and ``cluster``: the runtime's bundled families measured by
#: ``shockwave cluster profile`` on the project's 2-core development machine (one CPU thread per
#: slot), the default of ``shockwave cluster generate``; ``gavel``: Gavel's simulation
#: throughputs on ``v100``, ``p100`` and ``k80`` (and their placement variants), the default of
#: ``shockwave trace generate --cluster``.
BUNDLED_THROUGHPUTS: tuple[str, ...] = ("tacc", "wisr", "cluster", "gavel")
#: The top-level key of a throughput file that holds what ``shockwave cluster profile`` measured
#: besides throughputs (:class:`RuntimeCosts`); it is not a worker type.
COSTS_KEY = "shockwave"


@dataclass(frozen=True)
class RuntimeCosts:
    """What a real run on a machine costs besides training, as ``shockwave cluster profile``
    measures it there (the simulator's ``restart_penalty_seconds`` and
    ``round_overhead_seconds`` for a prediction of a real run).

    Attributes:
        restart_seconds: training time a job that (re)starts loses in its round: from the
            round's dispatch to its first step (waiting for the job it replaces to checkpoint
            and exit, process start-up, restore), seconds.
        round_overhead_seconds: training time every running job loses at each round boundary
            (reporting, the decision, the new lease), seconds.
        machine: the machine it was measured on (:func:`shockwave.runtime.machine.machine_id`),
            or ``""``.
    """

    restart_seconds: float
    round_overhead_seconds: float
    machine: str = ""

    def __post_init__(self) -> None:
        for name in ("restart_seconds", "round_overhead_seconds"):
            value = getattr(self, name)
            if not is_number(value, numpy=False) or not (math.isfinite(value) and value >= 0):
                raise ValueError(f"costs.{name} must be a finite number >= 0, got {value!r}")
            if value > 3600:
                raise ValueError(f"costs.{name} must be at most 3600 s, got {value!r}")
        if not isinstance(self.machine, str):
            raise ValueError(f"costs.machine must be a string, got {self.machine!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the ``costs`` header key of a native workload)."""
        return {
            "restart_seconds": self.restart_seconds,
            "round_overhead_seconds": self.round_overhead_seconds,
            "machine": self.machine,
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<memory>") -> RuntimeCosts:
        """Inverse of :meth:`to_dict`; raises :class:`TraceError` naming the field."""
        if not isinstance(data, dict):
            raise TraceError("costs must be an object", path=source, field="costs")
        unknown = sorted(set(data) - {"restart_seconds", "round_overhead_seconds", "machine"})
        if unknown:
            raise TraceError(f"unknown key {unknown[0]!r}", path=source, field="costs")
        try:
            return cls(
                restart_seconds=data["restart_seconds"],
                round_overhead_seconds=data["round_overhead_seconds"],
                machine=data.get("machine", ""),
            )
        except KeyError as exc:
            raise TraceError(f"{exc.args[0]!r} is missing", path=source, field="costs") from None
        except ValueError as exc:
            raise TraceError(str(exc), path=source, field="costs") from None


def parse_job_type(job_type: str) -> tuple[str, int]:
    """Split ``"ResNet-18 (batch size 32)"`` into ``("ResNet-18", 32)``.

    Raises:
        ValueError: if the text is not of that form.
    """
    match = _JOB_TYPE.match(job_type)
    if match is None:
        raise ValueError(f"job type {job_type!r} is not of the form 'Model (batch size B)'")
    return match["model"], int(match["bs"])


def format_job_type(model: str, batch_size: int) -> str:
    """Inverse of :func:`parse_job_type`."""
    return f"{model} (batch size {batch_size})"


@dataclass(frozen=True)
class ThroughputTable:
    """Isolated throughputs ``thr(model, batch_size, gang_size)`` in iterations/s for the whole job,
    on one or more worker types.

    ``entries`` holds the throughputs on ``worker_type`` (the table's *primary* type: the one a
    homogeneous simulation and a job's ``epoch_seconds`` use, ``v100`` for the original's
    tables); ``other_types`` holds those of the file's other worker types, by name (Gavel's
    ``p100``, ``k80``, and the placement variants ``*_unconsolidated``). A table of one type has
    none.

    Build one with :meth:`from_file` (an original throughput JSON file), :meth:`bundled`, or
    :meth:`from_dict` (the layout written by :meth:`to_dict`).
    """

    entries: Mapping[ThroughputKey, float]
    source: str = field(default="<memory>", compare=False)
    #: what a real run costs on the machine the table was measured on (a table of
    #: ``shockwave cluster profile``), or ``None``
    costs: RuntimeCosts | None = field(default=None, compare=False)
    #: the worker type of ``entries`` (not compared: a version-2 native file, which holds one
    #: type, does not record its name)
    worker_type: str = field(default=DEFAULT_WORKER_TYPE, compare=False)
    #: the throughputs of the other worker types, by name (not compared either: tables are
    #: equal when their primary types' throughputs are, as before tables held other types)
    other_types: Mapping[str, Mapping[ThroughputKey, float]] = field(
        default_factory=dict, compare=False
    )

    @property
    def worker_types(self) -> tuple[str, ...]:
        """The GPU types of the table: the primary type first, then the others in file order,
        without the placement variants (``*_unconsolidated``, :data:`PLACEMENT_SUFFIX`)."""
        others = (t for t in self.other_types if not t.endswith(PLACEMENT_SUFFIX))
        return (self.worker_type, *others)

    @property
    def is_typed(self) -> bool:
        """Whether the table has more than one worker type (placement variants included)."""
        return bool(self.other_types)

    def entries_of(self, worker_type: str | None = None) -> Mapping[ThroughputKey, float]:
        """The isolated throughputs of ``worker_type`` (default: the primary type).

        Raises:
            KeyError: naming the type and the table's types if it has no such type.
        """
        if worker_type is None or worker_type == self.worker_type:
            return self.entries
        try:
            return self.other_types[worker_type]
        except KeyError:
            known = ", ".join((self.worker_type, *self.other_types))
            raise KeyError(
                f"{self.source}: no worker type {worker_type!r} (its types: {known})"
            ) from None

    def isolated(
        self, model: str, batch_size: int, gang_size: int, worker_type: str | None = None
    ) -> float:
        """Isolated throughput (iterations/s) of ``model`` at ``batch_size`` on ``gang_size`` GPUs
        of ``worker_type`` (default: the primary type).

        Raises:
            KeyError: if the table has no such entry or type (the message names the job type
                and the worker type).
        """
        entries = self.entries_of(worker_type)
        try:
            return entries[(model, batch_size, gang_size)]
        except KeyError:
            on = "" if worker_type is None else f" on {worker_type!r}"
            raise KeyError(
                f"{self.source}: no throughput for "
                f"({format_job_type(model, batch_size)!r}, {gang_size}){on}"
            ) from None

    def epoch_seconds(
        self,
        model: str,
        batch_size: int,
        gang_size: int,
        samples_per_epoch: int,
        worker_type: str | None = None,
    ) -> float:
        """Seconds one epoch of ``samples_per_epoch`` samples lasts at ``batch_size`` on
        ``gang_size`` GPUs of ``worker_type`` (default: the primary type), alone:
        ``(samples_per_epoch / batch_size) / thr`` (the original's rule, a plain float division;
        the last, partial step counts as a whole one's share).

        Raises:
            KeyError: as :meth:`isolated`.
            ValueError: if the throughput is 0 (the epoch would never end).
        """
        thr = self.isolated(model, batch_size, gang_size, worker_type)
        if thr <= 0:
            on = "" if worker_type is None else f" on {worker_type!r}"
            raise ValueError(
                f"throughput of ({model} (batch size {batch_size}), {gang_size}){on} is 0: the "
                "epoch never ends"
            )
        return (samples_per_epoch / batch_size) / thr

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def batch_sizes(self, model: str, gang_size: int, worker_type: str | None = None) -> list[int]:
        """Batch sizes with a positive throughput for ``model`` on ``gang_size`` GPUs (of
        ``worker_type``, default the primary type), ascending."""
        return sorted(
            bs
            for (m, bs, w), thr in self.entries_of(worker_type).items()
            if m == model and w == gang_size and thr > 0
        )

    def restricted_to(self, models: Iterable[str]) -> ThroughputTable:
        """The sub-table of the given models, on every type (what a workload file carries)."""
        keep = set(models)

        def restrict(entries: Mapping[ThroughputKey, float]) -> dict[ThroughputKey, float]:
            return {k: v for k, v in entries.items() if k[0] in keep}

        return ThroughputTable(
            restrict(self.entries),
            source=self.source,
            costs=self.costs,
            worker_type=self.worker_type,
            other_types={name: restrict(e) for name, e in self.other_types.items()},
        )

    def primary_only(self) -> ThroughputTable:
        """The table of the primary type alone (``self`` if it has no other)."""
        if not self.other_types:
            return self
        return ThroughputTable(
            self.entries, source=self.source, costs=self.costs, worker_type=self.worker_type
        )

    def to_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        """The primary type's throughputs, ``{model: {batch_size: {gang_size: throughput}}}``
        with string keys (JSON-ready; :meth:`other_types_to_dict` has the others)."""
        return _entries_to_dict(self.entries)

    def other_types_to_dict(self) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
        """``{worker_type: <that type's table as to_dict writes it>}`` for the other types."""
        return {name: _entries_to_dict(e) for name, e in self.other_types.items()}

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        source: str = "<memory>",
        worker_type: str = DEFAULT_WORKER_TYPE,
        other_types: Any = None,
    ) -> ThroughputTable:
        """Inverse of :meth:`to_dict` (and of :meth:`other_types_to_dict` for ``other_types``);
        raises :class:`TraceError` on malformed data."""
        others: dict[str, dict[ThroughputKey, float]] = {}
        if other_types is not None:
            if not isinstance(other_types, dict):
                raise TraceError(
                    "must map worker types to throughput tables",
                    path=source,
                    field="other_worker_types",
                )
            for name, table in other_types.items():
                if name == worker_type:
                    raise TraceError(
                        f"worker type {name!r} is the primary type", path=source,
                        field="other_worker_types",
                    )  # fmt: skip
                others[str(name)] = _entries_from_dict(table, source, f"other_worker_types.{name}")
        return cls(
            _entries_from_dict(data, source, "throughputs"),
            source=source,
            worker_type=worker_type,
            other_types=others,
        )

    @classmethod
    def from_file(
        cls, path: str | PathLike[str], worker_type: str | None = None
    ) -> ThroughputTable:
        """Read an original throughput JSON file (``tacc_throughputs.json``, Gavel's
        ``simulation_throughputs.json`` and the like), every worker type.

        Only the ``"null"`` (isolated) entries are kept. The primary type is ``worker_type``;
        by default ``"v100"`` (the original's), or the file's only worker type (``"cpu"`` in a
        table of ``shockwave cluster profile``). Keys for job types that are not of the form
        ``'Model (batch size B)'`` (``A3C``, ``CycleGAN``) are skipped.

        Raises:
            TraceError: naming the file and the offending key for malformed content.
        """
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise TraceError(f"cannot read throughput file ({exc.strerror})", path=path) from None
        except UnicodeDecodeError:
            raise TraceError("not a text file (not UTF-8)", path=path) from None
        except json.JSONDecodeError as exc:
            raise TraceError(f"not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
        except RecursionError:
            raise TraceError("JSON nested too deeply", path=path) from None
        return cls._from_original(raw, worker_type, str(path))

    @classmethod
    def bundled(cls, name: str = "tacc") -> ThroughputTable:
        """One of the tables shipped with the package (:data:`BUNDLED_THROUGHPUTS`)."""
        if name not in BUNDLED_THROUGHPUTS:
            raise ValueError(
                f"unknown bundled throughputs {name!r}; choose from {BUNDLED_THROUGHPUTS}"
            )
        text = resources.files("shockwave.data").joinpath(f"{name}_throughputs.json").read_text()
        return cls._from_original(json.loads(text), None, f"<bundled {name}>")

    @classmethod
    def _from_original(cls, raw: Any, worker_type: str | None, source: str) -> ThroughputTable:
        costs = None
        if isinstance(raw, dict) and COSTS_KEY in raw:
            costs = RuntimeCosts.from_dict(raw[COSTS_KEY], source=source)
            raw = {key: value for key, value in raw.items() if key != COSTS_KEY}
        if worker_type is None:
            kinds = list(raw) if isinstance(raw, dict) else []
            worker_type = "v100" if "v100" in kinds or len(kinds) != 1 else kinds[0]
        if not isinstance(raw, dict) or not isinstance(raw.get(worker_type), dict):
            raise TraceError(
                f"no {worker_type!r} worker type at the top level", path=source, field=worker_type
            )
        entries = _isolated_of(raw[worker_type], source, worker_type)
        if not entries:
            raise TraceError(
                f"no throughputs under {worker_type!r}", path=source, field=worker_type
            )
        others: dict[str, dict[ThroughputKey, float]] = {}
        for name, by_job in raw.items():
            if name == worker_type:
                continue
            if not isinstance(by_job, dict):
                raise TraceError("must map job types to throughputs", path=source, field=name)
            others[str(name)] = _isolated_of(by_job, source, str(name))
        return cls(entries, source=source, costs=costs, worker_type=worker_type, other_types=others)


def parse_throughput_key(text: str) -> tuple[str, int] | None:
    """``"('ResNet-18 (batch size 32)', 1)"`` as ``("ResNet-18 (batch size 32)", 1)``: the job
    type text and the gang size of a throughput file's key; ``None`` if malformed."""
    match = _KEY.match(text)
    if match is None:
        return None
    return match["job_type"], int(match["gang"])


def _isolated_of(
    by_job: dict[str, Any], source: str, worker_type: str
) -> dict[ThroughputKey, float]:
    """The isolated throughputs of one worker type's section, batch-size job types only."""
    entries: dict[ThroughputKey, float] = {}
    for key, value in by_job.items():
        parsed = parse_throughput_key(key)
        if parsed is None:
            raise TraceError(f"malformed key {key!r}", path=source, field=worker_type)
        try:
            model, bs = parse_job_type(parsed[0])
        except ValueError:
            continue  # e.g. ('A3C', 1): not a batch-size job
        if not isinstance(value, dict) or "null" not in value:
            raise TraceError("entry has no 'null' (isolated) throughput", path=source, field=key)
        entries[(model, bs, parsed[1])] = check_throughput(value["null"], source, key)
    return entries


def _entries_to_dict(
    entries: Mapping[ThroughputKey, float],
) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (model, bs, gang), thr in sorted(entries.items()):
        out.setdefault(model, {}).setdefault(str(bs), {})[str(gang)] = thr
    return out


def _entries_from_dict(data: Any, source: str, where: str) -> dict[ThroughputKey, float]:
    entries: dict[ThroughputKey, float] = {}
    if not isinstance(data, dict):
        raise TraceError(f"{where} must be an object", path=source, field=where)
    try:
        for model, by_bs in data.items():
            for bs, by_gang in by_bs.items():
                for gang, thr in by_gang.items():
                    entries[(str(model), int(bs), int(gang))] = check_throughput(
                        thr, source, f"{model}/{bs}/{gang}"
                    )
    except (AttributeError, ValueError, TypeError) as exc:
        if isinstance(exc, TraceError):
            raise
        raise TraceError(f"malformed throughput table ({exc})", path=source, field=where) from None
    return entries


def check_throughput(value: Any, source: str, key: str) -> float:
    """``value`` as a throughput (a finite number >= 0); :class:`TraceError` naming ``key``
    otherwise."""
    if not is_number(value, numpy=False):
        raise TraceError(f"throughput must be a number, got {value!r}", path=source, field=key)
    thr = float(value)
    if not math.isfinite(thr) or thr < 0:
        raise TraceError(
            f"throughput must be finite and >= 0, got {value!r}", path=source, field=key
        )
    return thr
