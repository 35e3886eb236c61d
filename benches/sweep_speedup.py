"""Speed-up of a sweep on more workers and on Ray: ``reproduce scale`` three ways, one session.

    python benches/sweep_speedup.py --output sweep_speedup.md          # about 72 s on two cores
    python benches/sweep_speedup.py --experiment canonical --modes pool1,pool2   # a quick look

Each mode sweeps the experiment's spec into a fresh directory with :func:`shockwave.sweep.run_sweep`
(the cells only: the spec is read once before, no report is written), in this order:

* ``pool1``: the local process pool with one worker (``--workers 1``);
* ``pool2``: the pool with two workers (``--workers 2``);
* ``ray``: a local Ray instance of two CPUs (``--ray --workers 2``), its start-up timed apart.

Ratios are of wall times measured in the same run. Every mode must give every cell the same
metrics (checked, by key): the run fails otherwise. Also reported: the sum of the cells' own
wall times (``timing_cell_seconds``), which tells how much of a mode's wall time the cells
account for, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shockwave.atomic import atomic_write_text
from shockwave.sweep import ProcessPool, load_spec, read_results, run_sweep
from shockwave.sweep.dataset import METRICS
from shockwave.sweep.experiments import spec_file
from shockwave.sweep.runner import Backend

MODES = ("pool1", "pool2", "ray")


def _backend(mode: str) -> tuple[Backend, float]:
    """The backend of ``mode`` and the seconds it took to start (Ray's instance)."""
    if mode == "pool1":
        return ProcessPool(1), 0.0
    if mode == "pool2":
        return ProcessPool(2), 0.0
    import ray

    from shockwave.sweep.ray_backend import RayCluster

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return RayCluster(), time.perf_counter() - started


def run(experiment: str, modes: Sequence[str], scratch: Path) -> list[dict[str, Any]]:
    """Sweep ``experiment`` once per mode; return one measurement per mode."""
    with spec_file(experiment) as path:
        spec = load_spec(path)
    rows: list[dict[str, Any]] = []
    reference: dict[str, dict[str, Any]] | None = None
    with open(os.devnull, "w") as quiet:
        for mode in modes:
            out = scratch / mode
            load_before = os.getloadavg()
            backend, startup = _backend(mode)
            started = time.perf_counter()
            summary = run_sweep(spec, out, backend, stream=quiet)
            wall = time.perf_counter() - started
            if mode == "ray":
                import ray

                ray.shutdown()
            results = read_results(out).to_pylist()
            assert summary.ran == len(results) == len(spec.cells()) and not summary.failed
            metrics = {r["key"]: {m: r[m] for m in METRICS} for r in results}
            if reference is None:
                reference = metrics
            elif metrics != reference:
                raise SystemExit(f"{mode}: the metrics differ from {modes[0]}'s")
            rows.append(
                {
                    "mode": mode,
                    "cells": len(results),
                    "wall": wall,
                    "startup": startup,
                    "cell_seconds": sum(r["timing_cell_seconds"] for r in results),
                    "load": (load_before[0], os.getloadavg()[0]),
                }
            )
            print(
                f"{mode}: {len(results)} cells in {wall:.1f} s (start-up {startup:.1f} s)",
                flush=True,
            )
    return rows


def report(experiment: str, rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of the measurements."""
    wall = {r["mode"]: r["wall"] for r in rows}
    label = {"pool1": "`--workers 1`", "pool2": "`--workers 2`", "ray": "`--ray --workers 2`"}
    lines = [
        f"`reproduce {experiment}` ({rows[0]['cells']} cells), {platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}. Every mode gave every cell the same metrics.",
        "",
        "| mode | wall (s) | vs `--workers 1` | vs `--workers 2` | sum of the cells' own "
        "times (s) | start-up (s) | load average before / after |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        one = f"{wall['pool1'] / r['wall']:.2f}x" if "pool1" in wall else ""
        two = f"{wall['pool2'] / r['wall']:.2f}x" if "pool2" in wall else ""
        lines.append(
            f"| {label[r['mode']]} | {r['wall']:.1f} | {one} | {two} | {r['cell_seconds']:.1f} | "
            f"{r['startup']:.1f} | {r['load'][0]:.2f} / {r['load'][1]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="scale")
    parser.add_argument(
        "--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES)
    )
    parser.add_argument("--output", type=Path, help="write the Markdown table here")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}")
    scratch = Path(tempfile.mkdtemp(prefix="sweep-speedup-"))
    try:
        text = report(args.experiment, run(args.experiment, modes, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(text)
    if args.output is not None:
        atomic_write_text(args.output, text)
    return text


if __name__ == "__main__":
    main()
