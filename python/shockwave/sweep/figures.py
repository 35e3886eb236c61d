"""The PNG figures of a sweep report (matplotlib; imported only when a report is written).

Per table (:mod:`shockwave.sweep.report`): ``SLUG-bars.png``, one bar chart per metric
(makespan, average JCT, worst rho, unfair fraction) with a bar per policy setting;
``SLUG-jct-cdf.png`` and ``SLUG-rho-cdf.png``, the CDFs of the jobs' completion times and
finish-time fairness. Per table over seeds: ``SLUG-ratios.png``, the mean ratio to the baseline
per metric with the per-seed range as error bars. Each file is replaced atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

from shockwave.atomic import atomic_writer

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the backend

#: The metrics drawn as bars: (column, title, scale).
BARS = (
    ("makespan", "makespan (h)", 1 / 3600),
    ("avg_jct", "average JCT (h)", 1 / 3600),
    ("worst_ftf", "worst rho", 1.0),
    ("unfair_fraction", "unfair jobs (%)", 100.0),
)


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    with atomic_writer(path, "wb") as out:
        figure.savefig(out, dpi=110, format="png")
    plt.close(figure)
    return path


def group_figures(
    rows: pd.DataFrame, title: str, stem: Path, label: Callable[[pd.Series], str]
) -> list[Path]:
    """The bar chart and the two CDFs of one table; ``stem`` plus ``-bars.png`` etc."""
    labels = [label(r) for _, r in rows.iterrows()]
    width = max(6.4, 0.45 * len(labels) + 3.0)
    figure, axes = plt.subplots(1, len(BARS), figsize=(width * 1.6, 3.8))
    positions = np.arange(len(labels))
    for axis, (column, name, scale) in zip(axes, BARS, strict=True):
        axis.bar(positions, rows[column].to_numpy(dtype=float) * scale, color="tab:blue")
        axis.set_xticks(positions, labels, rotation=60, ha="right", fontsize=7)
        axis.set_title(name, fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(title, fontsize=9)
    written = [_save(figure, stem.with_name(stem.name + "-bars.png"))]
    for column, xlabel, scale, suffix in (
        ("jct", "job completion time (h)", 1 / 3600, "-jct-cdf.png"),
        ("ftf", "finish-time fairness rho", 1.0, "-rho-cdf.png"),
    ):
        figure, axis = plt.subplots(figsize=(6.4, 4.2))
        for text, (_, row) in zip(labels, rows.iterrows(), strict=True):
            values = np.sort(np.asarray(row[column], dtype=np.float64)) * scale
            fraction = np.arange(1, values.size + 1) / max(values.size, 1)
            axis.step(values, fraction, where="post", label=text, linewidth=1)
        if column == "ftf":
            axis.axvline(1.05, color="grey", linestyle=":", linewidth=1)
        axis.set_xlabel(xlabel)
        axis.set_ylabel("fraction of jobs")
        axis.set_title(title, fontsize=8)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6 if len(labels) > 8 else 8)
        written.append(_save(figure, stem.with_name(stem.name + suffix)))
    return written


def family_figure(table: pd.DataFrame, title: str, path: Path) -> Path:
    """Mean ratio to the baseline per metric and setting, the per-seed range as error bars."""
    settings = list(dict.fromkeys(table.setting))
    figure, axes = plt.subplots(
        1, len(BARS), figsize=(max(6.4, 0.45 * len(settings) + 3.0) * 1.6, 3.8)
    )
    positions = np.arange(len(settings))
    for axis, (column, name, _) in zip(axes, BARS, strict=True):
        grouped = table.groupby("setting", sort=False)[f"{column}_ratio"]
        mean = grouped.mean().reindex(settings).to_numpy(dtype=float)
        low = mean - grouped.min().reindex(settings).to_numpy(dtype=float)
        high = grouped.max().reindex(settings).to_numpy(dtype=float) - mean
        axis.bar(positions, mean, yerr=np.vstack([low, high]), color="tab:blue", capsize=3)
        axis.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        axis.set_xticks(positions, settings, rotation=60, ha="right", fontsize=7)
        axis.set_title(f"{name.split(' (')[0]}: ratio", fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(title, fontsize=9)
    return _save(figure, path)
