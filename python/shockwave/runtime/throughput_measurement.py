"""Throughput tables of the bundled families, measured on this machine.

``shockwave cluster profile`` runs each family's real training step at each of its batch sizes
on 1, 2, ... slots (threads on a machine without GPUs) and writes the isolated throughputs in the
original artifact's JSON layout, so that every tool that reads ``tacc_throughputs.json`` reads it:
``{worker type: {"('<family> (batch size B)', gang)": {"null": iterations/s}}}``, the worker
type being ``"cpu"`` or ``"gpu"``, plus, when the runtime's costs were measured too, the key
``"shockwave"`` (:data:`~shockwave.throughputs.COSTS_KEY`, holding
:class:`~shockwave.throughputs.RuntimeCosts`).

Each entry is measured **on a full machine** by default: as many copies of the job as the
machine's cores hold run at once, each on its own cores, and the entry is their mean rate. A job
of a real run shares the machine with its neighbours most of the time (a policy keeps the
cluster busy), and measured alone it runs 7 to 21 % faster on the project's 2-core machines (the
memory system and the clock boost are shared), so a table measured alone would make every
prediction too fast. ``contended=False`` measures each entry alone.

Every entry is measured in several passes (:data:`DEFAULT_PASSES`), one pass over all the
entries after the other, and its rate is their mean: the speed of the project's virtual machines
wanders by 10 to 20 % from one minute to the next (and by a third over tens of minutes), so
spreading each entry's measurement over the whole measurement gives every entry the same mean
conditions instead of each its own moment's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from os import PathLike

from shockwave.arguments import is_integer
from shockwave.atomic import atomic_write_text
from shockwave.job.families import FAMILIES
from shockwave.job.throughput_probe import measure_throughput
from shockwave.runtime.config import usable_cores
from shockwave.throughputs import COSTS_KEY, ThroughputTable, format_job_type

#: How many passes over the entries a measurement makes (see the module notes).
DEFAULT_PASSES = 3
#: Called after every measurement with (family, batch size, gang size, iterations/s).
MeasurementCallback = Callable[[str, int, int, float], None]


def default_gang_sizes() -> list[int]:
    """Gang sizes worth measuring here: powers of two up to the cores (at most 8)."""
    cores = usable_cores()
    return [g for g in (1, 2, 4, 8) if g <= cores]


def measure_family_throughputs(
    families: Sequence[str] | None = None,
    gang_sizes: Sequence[int] | None = None,
    *,
    seconds: float = 2.0,
    contended: bool = True,
    passes: int = DEFAULT_PASSES,
    progress: MeasurementCallback | None = None,
) -> ThroughputTable:
    """Measure every (family, batch size, gang size) and return the table.

    Args:
        families: which bundled families (default: all).
        gang_sizes: which gang sizes (default: :func:`default_gang_sizes`); each must fit in the
            cores.
        seconds: measuring time per entry, seconds, in all (each pass measures
            ``seconds / passes`` after its own warm-up).
        contended: measure each entry on a full machine (see the module notes), or alone.
        passes: how many times every entry is measured, in turn, the passes one after the
            other over all the entries; an entry's rate is the mean of its passes (see the module
            notes).
        progress: called after each entry's last pass, with its mean rate.

    Raises:
        ValueError: naming the argument.
    """
    names = list(families) if families is not None else sorted(FAMILIES)
    for name in names:
        if name not in FAMILIES:
            raise ValueError(
                f"families: unknown family {name!r} (bundled: {', '.join(sorted(FAMILIES))})"
            )
    gangs = list(gang_sizes) if gang_sizes is not None else default_gang_sizes()
    cores = usable_cores()
    for gang in gangs:
        if not is_integer(gang, numpy=False) or not 1 <= gang <= cores:
            raise ValueError(f"gang sizes must be integers in [1, {cores}] here, got {gang!r}")
    if not is_integer(passes, numpy=False) or not 1 <= passes <= 100:
        raise ValueError(f"passes must be an integer in [1, 100], got {passes!r}")
    keys = [(n, b, g) for n in names for b in FAMILIES[n].batch_sizes for g in gangs]
    rates: dict[tuple[str, int, int], list[float]] = {key: [] for key in keys}
    for _ in range(passes):
        for name, batch_size, gang in keys:
            copies = max(1, cores // gang) if contended else 1
            rates[(name, batch_size, gang)].append(
                measure_throughput(name, batch_size, gang, seconds=seconds / passes, copies=copies)
            )
    entries = {key: sum(values) / len(values) for key, values in rates.items()}
    if progress is not None:
        for (name, batch_size, gang), rate in entries.items():
            progress(name, batch_size, gang, rate)
    how = "on a full machine" if contended else "alone"
    return ThroughputTable(entries, source=f"shockwave cluster profile ({how})")


def write_throughput_file(
    table: ThroughputTable, path: str | PathLike[str], worker_type: str = "cpu"
) -> None:
    """Write ``table`` in the original's layout (atomically)."""
    body = {
        f"('{format_job_type(model, batch_size)}', {gang})": {"null": rate}
        for (model, batch_size, gang), rate in sorted(table.entries.items())
    }
    data: dict[str, object] = {worker_type: body}
    if table.costs is not None:
        data[COSTS_KEY] = table.costs.to_dict()
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")
