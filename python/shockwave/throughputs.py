"""Isolated training throughputs of the original's job types (the throughput JSON files).

A throughput file maps worker types to job types: under ``"v100"`` (the only worker type the
original simulates), each key is a stringified tuple ``"('ResNet-18 (batch size 32)', 1)"``, i.e.
(job type, gang size), and its ``"null"`` entry is the **isolated throughput of the whole job on
its gang, in iterations (mini-batch steps) per second**. Other entries are co-location throughputs
used only by packing policies; they are ignored here.
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

#: Throughput files bundled with the package (isolated entries only), by short name: the
#: original's TACC and WISR tables, and ``cluster``: the runtime's bundled families measured by
#: ``shockwave cluster profile`` on the project's 2-core development machine (one CPU thread per
#: slot), the default of ``shockwave cluster generate``.
BUNDLED_THROUGHPUTS: tuple[str, ...] = ("tacc", "wisr", "cluster")
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
    """Isolated throughputs ``thr(model, batch_size, gang_size)`` in iterations/s for the whole job.

    Build one with :meth:`from_file` (an original throughput JSON file), :meth:`bundled`, or
    :meth:`from_dict` (the layout written by :meth:`to_dict`).
    """

    entries: Mapping[tuple[str, int, int], float]
    source: str = field(default="<memory>", compare=False)
    #: what a real run costs on the machine the table was measured on (a table of
    #: ``shockwave cluster profile``), or ``None``
    costs: RuntimeCosts | None = field(default=None, compare=False)

    def isolated(self, model: str, batch_size: int, gang_size: int) -> float:
        """Isolated throughput (iterations/s) of ``model`` at ``batch_size`` on ``gang_size`` GPUs.

        Raises:
            KeyError: if the table has no such entry (the message names the job type).
        """
        try:
            return self.entries[(model, batch_size, gang_size)]
        except KeyError:
            raise KeyError(
                f"{self.source}: no throughput for "
                f"({format_job_type(model, batch_size)!r}, {gang_size})"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def batch_sizes(self, model: str, gang_size: int) -> list[int]:
        """Batch sizes with a positive throughput for ``model`` on ``gang_size`` GPUs, ascending."""
        return sorted(
            bs
            for (m, bs, w), thr in self.entries.items()
            if m == model and w == gang_size and thr > 0
        )

    def restricted_to(self, models: Iterable[str]) -> ThroughputTable:
        """The sub-table of the given models (what a workload file needs to carry)."""
        keep = set(models)
        return ThroughputTable(
            {k: v for k, v in self.entries.items() if k[0] in keep},
            source=self.source,
            costs=self.costs,
        )

    def to_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{model: {batch_size: {gang_size: throughput}}}`` with string keys (JSON-ready)."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (model, bs, gang), thr in sorted(self.entries.items()):
            out.setdefault(model, {}).setdefault(str(bs), {})[str(gang)] = thr
        return out

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<memory>") -> ThroughputTable:
        """Inverse of :meth:`to_dict`; raises :class:`TraceError` on malformed data."""
        entries: dict[tuple[str, int, int], float] = {}
        if not isinstance(data, dict):
            raise TraceError("throughputs must be an object", path=source, field="throughputs")
        try:
            for model, by_bs in data.items():
                for bs, by_gang in by_bs.items():
                    for gang, thr in by_gang.items():
                        entries[(str(model), int(bs), int(gang))] = _check_throughput(
                            thr, source, f"{model}/{bs}/{gang}"
                        )
        except (AttributeError, ValueError, TypeError) as exc:
            if isinstance(exc, TraceError):
                raise
            raise TraceError(
                f"malformed throughput table ({exc})", path=source, field="throughputs"
            ) from None
        return cls(entries, source=source)

    @classmethod
    def from_file(
        cls, path: str | PathLike[str], worker_type: str | None = None
    ) -> ThroughputTable:
        """Read an original throughput JSON file (``tacc_throughputs.json`` and the like).

        Only the ``"null"`` (isolated) entries of ``worker_type`` are kept; by default
        ``"v100"`` (the original's), or the file's only worker type (``"cpu"`` in a table of
        ``shockwave cluster profile``). Keys for job types
        that are not of the form ``'Model (batch size B)'`` (``A3C``, ``CycleGAN``) are skipped.

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
        entries: dict[tuple[str, int, int], float] = {}
        for key, value in raw[worker_type].items():
            match = _KEY.match(key)
            if match is None:
                if re.match(r"^\('[^']+', \d+\)$", key):  # e.g. ('A3C', 1): not a batch-size job
                    continue
                raise TraceError(f"malformed key {key!r}", path=source, field=worker_type)
            try:
                model, bs = parse_job_type(match["job_type"])
            except ValueError:
                continue
            if not isinstance(value, dict) or "null" not in value:
                raise TraceError(
                    "entry has no 'null' (isolated) throughput", path=source, field=key
                )
            entries[(model, bs, int(match["gang"]))] = _check_throughput(value["null"], source, key)
        if not entries:
            raise TraceError(
                f"no throughputs under {worker_type!r}", path=source, field=worker_type
            )
        return cls(entries, source=source, costs=costs)


def _check_throughput(value: Any, source: str, key: str) -> float:
    if not is_number(value, numpy=False):
        raise TraceError(f"throughput must be a number, got {value!r}", path=source, field=key)
    thr = float(value)
    if not math.isfinite(thr) or thr < 0:
        raise TraceError(
            f"throughput must be finite and >= 0, got {value!r}", path=source, field=key
        )
    return thr
