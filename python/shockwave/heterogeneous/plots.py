"""PNG plots comparing heterogeneous runs: utilisation and GPU-hours per GPU type.

Used by ``shockwave compare --cluster ... --plots DIR``, in the style of
:mod:`shockwave.sim.plots` (one figure per file, replaced atomically; matplotlib imported only
here, a ValueError naming the extra without it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.sim.plots import pyplot, save_png


def write_heterogeneous_plots(
    results: Sequence[HeterogeneousResult], directory: Path
) -> list[Path]:
    """Write ``utilization_by_type.png`` (busy share of each type's GPUs over the makespan, per
    policy) and ``gpu_hours_by_type.png`` (GPU-hours the jobs ran on each type, per policy,
    stacked) into ``directory``. The runs must share a cluster."""
    if not results:
        raise ValueError("no results to plot")
    types = results[0].types
    if any(r.types != types for r in results):
        raise ValueError("the runs to plot are on different clusters")
    plt = pyplot()
    directory.mkdir(parents=True, exist_ok=True)
    label = f"{results[0].job_ids.shape[0]} jobs on {results[0].cluster}, gavel mechanics"
    policies = [r.policy for r in results]
    where = np.arange(len(results))
    written = []

    figure, axes = plt.subplots(figsize=(max(6.4, 0.9 * len(results) + 2.0), 4.2))
    width = 0.8 / len(types)
    for k, name in enumerate(types):
        values = [100.0 * r.utilization_by_type[name] for r in results]
        axes.bar(where + (k - (len(types) - 1) / 2) * width, values, width, label=name)
    axes.set_ylabel("GPU time used over the makespan (%)")
    axes.set_ylim(0, 105)
    _finish(axes, where, policies, label)
    written.append(_write(plt, figure, directory / "utilization_by_type.png"))

    figure, axes = plt.subplots(figsize=(max(6.4, 0.9 * len(results) + 2.0), 4.2))
    bottom = np.zeros(len(results))
    for name in types:
        hours = np.array([r.gpu_hours_by_type[name] for r in results])
        axes.bar(where, hours, 0.6, bottom=bottom, label=name)
        bottom += hours
    axes.set_ylabel("GPU-hours run")
    _finish(axes, where, policies, label)
    written.append(_write(plt, figure, directory / "gpu_hours_by_type.png"))
    return written


def _finish(axes: Any, where: npt.NDArray[np.int64], policies: list[str], label: str) -> None:
    axes.set_xticks(where, policies, rotation=30, ha="right", fontsize=8)
    axes.set_title(label, fontsize=9)
    axes.grid(alpha=0.3, axis="y")
    axes.legend(title="GPU type", fontsize=8)


def _write(plt: Any, figure: Any, path: Path) -> Path:
    figure.tight_layout()
    save_png(figure, path)
    plt.close(figure)
    return path
