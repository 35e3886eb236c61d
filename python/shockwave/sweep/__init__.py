"""Experiment sweeps: a grid of simulations on a process pool or a Ray cluster.

A sweep spec (TOML, :mod:`shockwave.sweep.spec`) names policies, mechanics, traces (files or
generated), cluster sizes, seeds, simulation settings and parameter grids; every combination is a
*cell*, one simulation (:mod:`shockwave.sweep.cells`). :func:`run_sweep` runs the cells not yet
recorded on a local process pool (:class:`ProcessPool`) or as Ray tasks
(:mod:`shockwave.sweep.ray_backend`) and appends their rows to Parquet datasets
(:mod:`shockwave.sweep.dataset`); :func:`write_report` turns them into Markdown tables and PNG
figures. The paper's experiments are specs shipped in the package
(:mod:`shockwave.sweep.experiments`, ``shockwave reproduce``). See ``docs/sweep.md``.
"""

from __future__ import annotations

from shockwave.sweep.cells import Cell
from shockwave.sweep.dataset import load_jobs, load_results, read_results
from shockwave.sweep.pool import ProcessPool, default_workers
from shockwave.sweep.runner import SweepSummary, run_sweep
from shockwave.sweep.spec import SpecError, SweepSpec, load_spec, parse_spec
from shockwave.sweep.worker import CellOutcome, execute

__all__ = [
    "Cell",
    "CellOutcome",
    "ProcessPool",
    "SpecError",
    "SweepSpec",
    "SweepSummary",
    "default_workers",
    "execute",
    "load_jobs",
    "load_results",
    "load_spec",
    "parse_spec",
    "read_results",
    "run_sweep",
]
