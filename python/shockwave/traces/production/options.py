"""What ``shockwave trace convert --from ...`` may be told: the assignment's settings and the
filters, checked up front."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from os import PathLike
from typing import Any

from shockwave.errors import UsageError
from shockwave.limits import INT64_MAX
from shockwave.throughputs import ThroughputTable
from shockwave.traces.production.assignment import ASSIGNMENT_MODES, AssignmentMode
from shockwave.traces.production.records import SourceSchema

#: Units ``--time-unit`` accepts for traces that write times as numbers (PAI, Tiresias), with
#: how many of them make a second.
TIME_UNITS: dict[str, int] = {"s": 1, "ms": 1000}
#: Longest run time, and longest spread of submissions, that a trace in seconds is believed to
#: have without ``--time-unit``: a year (366 days). Beyond it the times look like milliseconds
#: (a 53-day job written in ms reads as 146 years) and the conversion is refused with a hint;
#: ``--time-unit s`` converts such a trace as seconds all the same, ``--time-unit ms`` as ms.
PLAUSIBLE_SECONDS = 366 * 86_400.0

#: Largest seed (it is written in decimal into the hashed text; any integer would do).
MAX_SEED = 2**63 - 1

#: Why a job of the input is not in the output, in the order they are tested (a job counts under
#: the first that applies), with the words ``trace convert`` prints.
DROP_REASONS: dict[str, str] = {
    "cpu_only": "CPU-only (no GPU)",
    "never_ran": "never ran (no positive run time)",
    "window": "submitted outside --start/--end",
    "status": "status not in --status",
    "vc": "virtual cluster not in --vc",
    "gpus": "outside --min-gpus/--max-gpus",
    "sample": "not drawn by --sample",
    "max_jobs": "beyond --max-jobs",
}


class ConversionOptionError(UsageError, ValueError):
    """An invalid conversion option.

    Attributes:
        option: the command-line option (``--max-gpus``); the Python field is the same name
            without dashes, dashes as underscores; also ``where`` and ``field``.
        reason: what is wrong; also ``what``.
    """

    def __init__(self, option: str, reason: str) -> None:
        self.option = option
        self.reason = reason
        super().__init__(reason, where=option, field=option)


@dataclass(frozen=True)
class ConversionOptions:
    """Settings and filters of a conversion (defaults: every job kept, the bundled TACC table).

    Attributes:
        throughputs: the table whose model families jobs are given: a table, ``"tacc"``,
            ``"wisr"`` or a throughput JSON file.
        seed: seeds the assignment of job types and modes and ``sample``; an integer >= 0.
        mode: ``"mixed"`` (Accordion or GNS, the original generator's mix) or ``"static"``.
        start, end: the submission window, ``start <= submission < end``, on the trace's clock:
            a time ``YYYY-MM-DD[ HH:MM[:SS]]`` for Philly and Helios, seconds for PAI and
            Tiresias; ``None``: unbounded.
        statuses: keep only jobs whose final status is one of these (case-insensitive); empty:
            any.
        vcs: keep only jobs of these virtual clusters (exact names); empty: any.
        min_gpus, max_gpus: keep only gangs in this range; ``None``: unbounded.
        max_jobs: keep at most this many jobs: the earliest submitted (ties in file order).
        sample: keep each job with this probability (a seeded draw from its id), in ``(0, 1]``.
        time_unit: the unit of a numeric-clock trace's times (PAI, Tiresias): ``"s"`` or
            ``"ms"``; ``None``: seconds, and a run time or a spread of submissions beyond
            :data:`PLAUSIBLE_SECONDS` is refused as probably milliseconds. ``start``/``end``
            are in this unit, as the trace writes them.
    """

    throughputs: ThroughputTable | str | PathLike[str] = "tacc"
    seed: int = 0
    mode: AssignmentMode = "mixed"
    start: str | float | None = None
    end: str | float | None = None
    statuses: tuple[str, ...] = ()
    vcs: tuple[str, ...] = ()
    min_gpus: int | None = None
    max_gpus: int | None = None
    max_jobs: int | None = None
    sample: float | None = None
    time_unit: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "statuses", tuple(self.statuses))
        object.__setattr__(self, "vcs", tuple(self.vcs))
        _check_integer("--seed", self.seed, 0, MAX_SEED)
        if self.mode not in ASSIGNMENT_MODES:
            raise ConversionOptionError(
                "--mode", f"must be one of {ASSIGNMENT_MODES}, got {self.mode!r}"
            )
        for option, value in (("--min-gpus", self.min_gpus), ("--max-gpus", self.max_gpus)):
            if value is not None:
                _check_integer(option, value, 1, INT64_MAX)
        if (
            self.min_gpus is not None
            and self.max_gpus is not None
            and self.min_gpus > self.max_gpus
        ):
            raise ConversionOptionError(
                "--min-gpus", f"{self.min_gpus} is above --max-gpus {self.max_gpus}"
            )
        if self.max_jobs is not None:
            _check_integer("--max-jobs", self.max_jobs, 1, INT64_MAX)
        if self.sample is not None and (
            isinstance(self.sample, bool)
            or not isinstance(self.sample, (int, float))
            or not 0 < self.sample <= 1
        ):
            raise ConversionOptionError(
                "--sample", f"must be a fraction in (0, 1], got {self.sample!r}"
            )
        if self.time_unit is not None and self.time_unit not in TIME_UNITS:
            raise ConversionOptionError(
                "--time-unit", f"must be one of {', '.join(TIME_UNITS)}, got {self.time_unit!r}"
            )
        for option, values in (("--status", self.statuses), ("--vc", self.vcs)):
            if not all(isinstance(v, str) and v.strip() for v in values):
                raise ConversionOptionError(option, f"must be non-empty names, got {values!r}")

    def window(self, schema: SourceSchema) -> tuple[float, float]:
        """``(start, end)`` on the trace's clock (seconds), ``-inf``/``inf`` when open.

        Raises:
            ConversionOptionError: for a bound not in the source's form, or an empty window.
        """
        low = _bound("--start", self.start, schema, -math.inf)
        high = _bound("--end", self.end, schema, math.inf)
        if not low < high:
            raise ConversionOptionError("--end", f"must be after --start ({self.start!r})")
        return low, high

    def check_for(self, schema: SourceSchema) -> None:
        """Refuse options the source cannot apply (``--vc`` for a trace without virtual
        clusters, ...)."""
        if self.statuses and schema.status_field is None:
            raise ConversionOptionError("--status", f"the {schema.name} trace records no status")
        if self.vcs and schema.vc_field is None:
            raise ConversionOptionError(
                "--vc", f"the {schema.name} trace records no virtual cluster"
            )
        if self.time_unit is not None and schema.clock != "seconds":
            raise ConversionOptionError(
                "--time-unit",
                f"the {schema.name} trace writes date-times (its times have no unit to choose)",
            )
        self.window(schema)

    @property
    def units_per_second(self) -> int:
        """Units of the trace's numeric times in a second (1 unless ``time_unit="ms"``)."""
        return TIME_UNITS[self.time_unit or "s"]

    def filters(self) -> dict[str, Any]:
        """The filters in use, JSON-ready (for the output's provenance)."""
        out: dict[str, Any] = {}
        for name in ("start", "end", "min_gpus", "max_gpus", "max_jobs", "sample"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.statuses:
            out["status"] = list(self.statuses)
        if self.vcs:
            out["vc"] = list(self.vcs)
        return out


def _check_integer(option: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConversionOptionError(option, f"must be an integer in [{low}, {high}], got {value!r}")


#: Forms ``--start``/``--end`` accept for date-time traces.
_TIME_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d",
)


def _bound(option: str, value: str | float | None, schema: SourceSchema, open_end: float) -> float:
    if value is None:
        return open_end
    if schema.clock == "seconds":
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            raise ConversionOptionError(
                option, f"the {schema.name} trace's clock is seconds: give a number, got {value!r}"
            ) from None
        if not math.isfinite(seconds):
            raise ConversionOptionError(option, f"must be finite, got {value!r}")
        return seconds
    if isinstance(value, str):
        for form in _TIME_FORMATS:
            try:
                moment = datetime.strptime(value.strip(), form)
            except ValueError:
                continue
            epoch = datetime(1970, 1, 1)
            return (moment - epoch).total_seconds()
    raise ConversionOptionError(
        option,
        f"the {schema.name} trace's clock is date-times: give 'YYYY-MM-DD[ HH:MM[:SS]]', "
        f"got {value!r}",
    )
