"""Golden outputs of the heterogeneous simulator, recorded before it moved onto the round loop.

Every typed policy (:data:`shockwave.heterogeneous.TYPED_POLICIES`) on every set of
``tests/data/gavel`` (the tuning trace ``T2`` on 12:12:12 and the held-out ``H1``-``H4``) it
can run: the result JSON exactly as ``shockwave simulate --cluster ... --output`` writes it
(per-job JCTs and completion times, GPU-seconds per type per job, utilisation, the lease
extension share, the rounds), or the error a run stops with (Gavel's ECOS failure on ``H3``).
``tests/test_heterogeneous_golden.py`` runs the cases again and compares the text byte for
byte. The outputs in ``tests/data/golden/heterogeneous.json.gz`` were recorded with the typed
simulator's own loop (main at facf24a), before issue 22's typed world of the round loop.

Record (only to regenerate the file, with the reference code checked out)::

    python -m tests.golden_heterogeneous --record
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from shockwave.heterogeneous import (
    TYPED_POLICIES,
    GavelSolverError,
    HeterogeneousResult,
    TypedJobs,
    load_typed_trace,
    simulate_heterogeneous,
)
from tests.golden_platform import golden_path, record_path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "gavel"
GOLDEN_DIR = HERE / "data" / "golden"
#: Set -> its cluster (``tests/data/gavel/README.md``).
SETS = {
    "T2": "v100:12,p100:12,k80:12",
    "H1": "v100:12,p100:12,k80:12",
    "H2": "v100:8,p100:8,k80:8",
    "H3": "v100:24,p100:12,k80:6",
    "H4": "v100:6,p100:6,k80:6",
}
#: Policies that refuse multi-GPU jobs (only ``H4`` has none).
SINGLE_GPU_ONLY = {"allox"}
#: Policies slow to simulate (an LP and a MILP per level): outside ``T2``, marked slow.
SLOW = {"water-filling", "water-filling-agnostic"}


@dataclass(frozen=True)
class Case:
    set_name: str
    policy: str

    @property
    def name(self) -> str:
        return f"{self.set_name}-{self.policy}"

    @property
    def slow(self) -> bool:
        return self.policy in SLOW and self.set_name != "T2"


#: Typed policies added since the recording (their own tests guard them:
#: ``tests/test_typed_shockwave.py``).
POLICIES_ADDED_SINCE_RECORDING = ("shockwave",)


def cases() -> list[Case]:
    return [
        Case(set_name, policy)
        for set_name in SETS
        for policy in TYPED_POLICIES
        if (policy not in SINGLE_GPU_ONLY or set_name == "H4")
        and policy not in POLICIES_ADDED_SINCE_RECORDING
    ]


@cache
def jobs_of(set_name: str) -> TypedJobs:
    return load_typed_trace(
        DATA / f"{set_name}.trace", DATA / "simulation_throughputs.json.gz", SETS[set_name]
    )


#: Result keys added after the outputs were recorded (the heterogeneous finish-time fairness and
#: isolated times of issue 22's metrics, which have their own tests in
#: tests/test_heterogeneous_metrics.py): left out of the comparison, every recorded key stays
#: byte-identical.
ADDED_SINCE_RECORDING = ("worst_ftf", "unfair_fraction", "ftf", "isolated_seconds")


@cache
def result_of(set_name: str, policy: str) -> HeterogeneousResult | GavelSolverError:
    """One run (shared by the golden and the fidelity tests of one process), or the solver
    failure it stops with."""
    try:
        return simulate_heterogeneous(jobs_of(set_name), policy)
    except GavelSolverError as exc:
        return exc


def output(case: Case) -> dict[str, Any]:
    """The case's result JSON, or the error it stops with."""
    result = result_of(case.set_name, case.policy)
    if isinstance(result, GavelSolverError):
        return {"error": f"{type(result).__name__}: {result}"}
    data = result.to_dict()
    for key in ADDED_SINCE_RECORDING:
        data.pop(key)
    return {"result": json.dumps(data, indent=1, sort_keys=False) + "\n"}


@cache
def load_golden() -> dict[str, Any]:
    with gzip.open(golden_path(GOLDEN_DIR, "heterogeneous"), "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _record() -> None:
    out: dict[str, Any] = {}
    for case in cases():
        started = time.perf_counter()
        out[case.name] = output(case)
        print(f"{case.name}: {time.perf_counter() - started:.1f} s", flush=True)
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, indent=0, sort_keys=True).encode("utf-8")
    with gzip.GzipFile(record_path(GOLDEN_DIR, "heterogeneous"), "wb", mtime=0) as f:
        f.write(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--record", action="store_true", help="run every case, write the file")
    if parser.parse_args().record:
        _record()
