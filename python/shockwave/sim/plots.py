"""PNG plots comparing simulation runs (matplotlib, imported only when plots are asked).

Used by ``shockwave compare --plots DIR``; without matplotlib ``write_plots`` raises ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shockwave.atomic import atomic_writer
from shockwave.metrics import SimulationResult, utilization_timeline


def save_png(figure: Any, path: Path) -> None:
    """Write ``figure`` as PNG into a temporary file that then replaces ``path`` atomically."""
    with atomic_writer(path, "wb") as out:
        figure.savefig(out, dpi=120, format="png")


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the ``Agg`` backend; ValueError naming the extra without it."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise ValueError("--plots needs matplotlib (pip install 'shockwave[plots]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(results: Sequence[SimulationResult], directory: Path) -> list[Path]:
    """Write ``jct_cdf.png``, ``ftf_cdf.png`` and ``utilization.png`` into ``directory``, each
    replaced atomically (an interrupted run leaves the previous plots intact)."""
    plt = pyplot()

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    label = f"{results[0].jobs} jobs, {results[0].gpus} GPUs, {results[0].mechanics} mechanics"

    for key, xlabel, name in (
        ("jct", "job completion time (hours)", "jct_cdf.png"),
        ("ftf", "finish-time fairness rho", "ftf_cdf.png"),
    ):
        figure, axes = plt.subplots(figsize=(6.4, 4.2))
        for result in results:
            values = np.sort(np.asarray(getattr(result, key), dtype=np.float64))
            if key == "jct":
                values = values / 3600.0
            axes.step(values, np.arange(1, values.size + 1) / values.size, where="post",
                      label=result.policy)  # fmt: skip
        if key == "ftf":
            axes.axvline(1.05, color="grey", linestyle=":", linewidth=1)
        axes.set_xlabel(xlabel)
        axes.set_ylabel("fraction of jobs")
        axes.set_title(label, fontsize=9)
        axes.grid(alpha=0.3)
        axes.legend()
        path = directory / name
        figure.tight_layout()
        save_png(figure, path)
        plt.close(figure)
        written.append(path)

    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for result in results:
        starts, used = utilization_timeline(result.record)
        axes.plot(starts / 3600.0, 100.0 * used, label=result.policy, linewidth=1)
    axes.set_xlabel("time (hours)")
    axes.set_ylabel("GPU time used in the round (%)")
    axes.set_ylim(0, 105)
    axes.set_title(label, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend()
    path = directory / "utilization.png"
    figure.tight_layout()
    save_png(figure, path)
    plt.close(figure)
    written.append(path)
    return written
