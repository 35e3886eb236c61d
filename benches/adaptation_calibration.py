"""Calibration of the generator's planned adaptation: what the bundled jobs really do, alone.

For every bundled family, adaptation mode (``gns``, ``accordion``) and initial batch size, the
real job (its trainer, its batch-size adapter: ``shockwave.job.trainer.train`` on a standalone
context, one thread) trains ``--epochs`` epochs for each *calibration seed* and records the
batch size of every epoch. The report gives, per (family, mode, initial batch size),

* ``gns``: the mean first epoch at each larger regime (the planned schedule's
  :data:`shockwave.runtime.generate.GNS_PLANNED_FIRST_EPOCHS`);
* ``accordion``: the share of the epochs after the critical phase trained back at the small
  batch (:data:`shockwave.runtime.generate.ACCORDION_PLANNED_RETURN_SHARE`).

The calibration seeds (default 100, 101, 102) are the jobs' training seeds; the workloads the
fidelity benchmark runs draw their jobs' training seeds from their own generator seeds, so
no calibrated job is ever a measured one. Run (about 5 minutes on 2 cores)::

    python benches/adaptation_calibration.py --out results/adaptation_calibration.json
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # one slot's threads, before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from shockwave.atomic import atomic_write_text  # noqa: E402
from shockwave.job.context import JobContext  # noqa: E402
from shockwave.job.families import FAMILIES  # noqa: E402
from shockwave.job.spec import JobLaunch  # noqa: E402
from shockwave.job.trainer import train  # noqa: E402
from shockwave.run_spec import RunSpec  # noqa: E402
from shockwave.runtime.generate import job_regimes  # noqa: E402


def trajectory(family: str, mode: str, initial: int, seed: int, epochs: int) -> list[int]:
    """The batch size of every epoch of the real job trained alone."""
    chosen = FAMILIES[family]
    regimes = job_regimes(chosen, mode, initial)  # type: ignore[arg-type]
    launch = JobLaunch(
        job_id=0,
        incarnation=0,
        model=family,
        mode=mode,
        epochs=epochs,
        batch_sizes=tuple(regimes),
        initial_batch_size=initial,
        samples_per_epoch=chosen.samples_per_epoch,
        gang_size=1,
        gpus=(0,),
        slot_kind="cpu",
        threads=1,
        checkpoint_path="",
        run=RunSpec(family=family, seed=seed),
    )
    ctx = JobContext.standalone(launch)
    with ctx:
        train(ctx)
    out: list[int] = []
    for size, count in ctx.snapshot().epoch_batch_sizes:
        out += [int(size)] * int(count)
    return out


def _cell(args: tuple[str, str, int, int, int]) -> dict[str, Any]:
    family, mode, initial, seed, epochs = args
    return {
        "family": family,
        "mode": mode,
        "initial": initial,
        "seed": seed,
        "schedule": trajectory(family, mode, initial, seed, epochs),
    }


def summarize(cells: list[dict[str, Any]], critical: int, epochs: int) -> dict[str, Any]:
    """Per (family, mode, initial batch size):

    * ``gns``: for every larger regime, the mean over seeds of the first epoch trained at it
      (``first_epoch``; a seed that never reached it within the measured epochs counts as
      reaching it at ``epochs``, a lower bound) and how many seeds reached it;
    * ``accordion``: the mean share of the epochs after the critical phase trained at the small
      (initial) batch size.
    """
    groups: dict[tuple[str, str, int], list[list[int]]] = {}
    for cell in cells:
        groups.setdefault((cell["family"], cell["mode"], cell["initial"]), []).append(
            cell["schedule"]
        )
    out: dict[str, Any] = {}
    for (family, mode, initial), schedules in sorted(groups.items()):
        key = f"{family}/{mode}/{initial}"
        if mode == "gns":
            regimes = job_regimes(FAMILIES[family], "gns", initial)[1:]
            firsts = {}
            for regime in regimes:
                seen = [s.index(regime) if regime in s else epochs for s in schedules]
                reached = sum(1 for s in schedules if regime in s)
                firsts[str(regime)] = {
                    "first_epoch": round(statistics.fmean(seen), 1),
                    "reached": reached,
                }
            out[key] = firsts
        else:
            share = [
                sum(1 for b in s[critical:] if b == initial) / len(s[critical:])
                for s in schedules
                if s[critical:]
            ]
            out[key] = {"return_share": round(statistics.fmean(share), 3) if share else None}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/adaptation_calibration.json"))
    parser.add_argument("--seeds", default="100,101,102")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--replay", type=Path, help="summarize the cells of an earlier --out file again"
    )
    args = parser.parse_args(argv)
    if args.replay:
        from shockwave.runtime.generate import ACCORDION_PLANNED_CRITICAL

        earlier = json.loads(args.replay.read_text())
        summary = summarize(earlier["cells"], ACCORDION_PLANNED_CRITICAL, earlier["epochs"])
        print(json.dumps(summary, indent=1))
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    todo = [
        (family, mode, initial, seed, args.epochs)
        for family in sorted(FAMILIES)
        for mode in ("gns", "accordion")
        for initial in FAMILIES[family].initial_batch_sizes
        for seed in seeds
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        cells = list(pool.map(_cell, todo))
    from shockwave.runtime.generate import ACCORDION_PLANNED_CRITICAL

    report = {
        "seeds": seeds,
        "epochs": args.epochs,
        "summary": summarize(cells, ACCORDION_PLANNED_CRITICAL, args.epochs),
        "cells": cells,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
