"""What every production-trace reader yields: one :class:`SourceJob` per job of the trace."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from shockwave.traces.production.fields import Where

#: How a trace writes its times: date-times (Philly, Helios) or seconds (PAI, Tiresias).
Clock = Literal["datetime", "seconds"]


@dataclass(frozen=True)
class SourceSchema:
    """The fields of one trace format that the conversion reads, by the names the trace uses.

    Attributes:
        name: the source, ``"philly"``, ``"helios"``, ``"pai"`` or ``"tiresias"``.
        clock: how submission times are written (``--start``/``--end`` take the same form).
        submit_field, gpus_field, duration_field: where the submission time, the GPUs and the
            run time come from (named in error messages).
        status_field, vc_field: the final status and virtual cluster, ``None`` when the trace
            has none (``--status``/``--vc`` are then refused).
        gpus_need_a_run: whether the trace records GPUs only for attempts that ran (Philly):
            a job without GPUs is then CPU-only only if it ran, else it never ran.
    """

    name: str
    clock: Clock
    submit_field: str
    gpus_field: str
    duration_field: str
    status_field: str | None
    vc_field: str | None
    gpus_need_a_run: bool = False


class SourceJob(NamedTuple):
    """One job of a production trace, as the conversion rules read it (a named tuple: readers
    make one per row).

    Attributes:
        source_id: the trace's job id, as text.
        submit: submission time on the trace's clock, seconds (date-times: seconds since
            1970-01-01 of the written wall-clock time).
        gpus: the gang size by the source's rule; 0 for a job that held no GPU.
        duration: seconds the job held its GPUs by the source's rule; 0 for a job that never ran.
        user, vc, status: as the trace writes them; ``None`` when absent.
        requested_gpus: GPUs requested when the trace allows fractions (PAI), else ``None``.
        where: the job's place in the input (for error messages).
        gpu_types: the GPU types the job may run on when the trace says (PAI's ``gpu_type``),
            else ``None``.
    """

    source_id: str
    submit: float
    gpus: int
    duration: float
    user: str | None
    vc: str | None
    status: str | None
    requested_gpus: float | None
    where: Where
    gpu_types: tuple[str, ...] | None = None


class SourceReader(Protocol):
    """An opened production trace whose jobs can be read (twice: the conversion makes two
    passes, each streaming the input)."""

    schema: SourceSchema
    #: The files read, for messages and the output's provenance.
    inputs: tuple[str, ...]

    def jobs(self) -> Iterator[SourceJob]:
        """Every job of the trace, in file order; raises ``TraceError`` for malformed input."""
        ...
