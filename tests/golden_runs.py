"""Golden outputs: simulations (and fake real runs) recorded once, compared byte for byte.

The round-loop refactor (issue 21) must not move a single number. Every case here was run with
the code before the refactor (main at a1f77fc) and its outputs stored in
``tests/data/golden/``; ``tests/test_golden_outputs.py`` runs the cases again and compares.

What is compared, per case:

* ``result``: the result JSON exactly as ``shockwave simulate --output`` writes it (wall-clock
  timing is not part of it), stored whole for the small cases and as a SHA-256 digest for the
  large ones (with its makespan, rounds and average JCT beside it, to say how far a mismatch
  is);
* ``record``: a SHA-256 digest of every array of the raw record (per job and per round, the
  GPU busy times included) except the policy's wall time per round and the run's wall time.

Cases: the canonical trace (TACC throughputs, 32 GPUs) under both mechanics and all eight
policies; generated 460-job (128 GPUs) and 2,000-job (512 GPUs) traces under both mechanics and
all eight policies; a 20,000-job trace on 6,500 GPUs (slow); seeded throughput noise and a round
overhead; the planned view (``actual=``); every canonical case again stopped, checkpointed,
loaded and resumed twice on the way; and runs of the real runtime's scheduler on the simulated
clock of ``tests/runtime_fakes.py`` (plain, with faults, interrupted and resumed).

Record (only to regenerate the files, with the reference code checked out)::

    python -m tests.golden_runs --record [--slow]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from shockwave.metrics import SimulationResult
from shockwave.policies import POLICIES
from shockwave.scheduling import SimulationConfig
from shockwave.sim import Simulation
from shockwave.traces import GeneratorParameters, generate_workload, load_workload
from shockwave.workload import Workload
from tests.golden_platform import golden_path, record_path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "data" / "golden"
CANONICAL_TRACE = HERE.parent / "traces" / "canonical_120jobs.trace"
TACC = HERE.parent / "traces" / "tacc_throughputs.json"

#: Record fields that are wall-clock measurements (left out of the digest).
_WALL_CLOCK = ("round_policy_seconds", "wall_seconds")
#: Record fields left out of the digest besides those: the workload and the settings (the
#: record held them as ``config`` when the outputs were recorded; the result JSON has them).
_SKIPPED = (
    "workload", "config", "gpus", "round_seconds", "seed", "mechanics", "policy_name",
    *_WALL_CLOCK,
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One simulation: a workload (by name), a policy and the configuration."""

    name: str
    workload: str
    policy: str
    config: SimulationConfig
    actual: str | None = None
    #: stop, save, load and continue at these round boundaries (empty: run straight through)
    stops: tuple[int, ...] = ()
    slow: bool = False
    #: store the whole result JSON (small cases) or only its digest
    whole: bool = True


# ------------------------------------------------------------------------------- workloads
@cache
def workload(name: str) -> Workload:
    """The named workload: ``canonical``, ``gen-<jobs>-<gpus>`` (seed 1), or ``actual-canonical``
    (the canonical jobs as they "really" ran: see :func:`actual_of`)."""
    if name == "canonical":
        return load_workload(CANONICAL_TRACE, TACC)
    if name == "actual-canonical":
        return actual_of(workload("canonical"))
    if name.startswith("gen-"):
        _, jobs, gpus = name.split("-")
        return generate_workload(GeneratorParameters(jobs=int(jobs), gpus=int(gpus), seed=1))
    raise KeyError(name)


def actual_of(plans: Workload) -> Workload:
    """The same jobs, each running its planned regimes in reverse order at other speeds (a
    seeded draw): a planned view whose plans do not come true."""
    rng = np.random.default_rng(2021)
    jobs = []
    for job in plans.jobs:
        sizes = job.batch_sizes[::-1].copy()
        seconds = job.epoch_seconds[::-1] * rng.uniform(0.7, 1.4)
        jobs.append(dataclasses.replace(job, batch_sizes=sizes, epoch_seconds=seconds))
    return plans.with_jobs(jobs)


# ----------------------------------------------------------------------------------- cases
def simulation_cases() -> list[Case]:
    out: list[Case] = []
    for mechanics in ("exact", "gavel"):
        for policy in POLICIES:
            config = SimulationConfig(gpus=32, mechanics=mechanics)  # type: ignore[arg-type]
            out.append(Case(f"canonical-{mechanics}-{policy}", "canonical", policy, config))
            out.append(
                Case(
                    f"canonical-{mechanics}-{policy}-resumed",
                    "canonical",
                    policy,
                    config,
                    stops=(40, 41, 150),
                )
            )
    for jobs, gpus in ((460, 128), (2000, 512)):
        for mechanics in ("exact", "gavel"):
            for policy in POLICIES:
                config = SimulationConfig(gpus=gpus, mechanics=mechanics)  # type: ignore[arg-type]
                out.append(
                    Case(
                        f"gen{jobs}-{mechanics}-{policy}",
                        f"gen-{jobs}-{gpus}",
                        policy,
                        config,
                        whole=False,
                    )
                )
    noisy = SimulationConfig(gpus=32, throughput_noise=0.3, seed=3, round_overhead_seconds=2.0)
    for policy in ("shockwave", "gavel", "themis"):
        out.append(Case(f"canonical-noise-{policy}", "canonical", policy, noisy))
        out.append(
            Case(f"canonical-noise-{policy}-resumed", "canonical", policy, noisy, stops=(77,))
        )
    for policy in POLICIES:
        config = SimulationConfig(gpus=32)
        out.append(
            Case(f"planned-{policy}", "canonical", policy, config, actual="actual-canonical")
        )
    config = SimulationConfig(gpus=32)
    plan = "actual-canonical"
    out.append(Case("planned-shockwave-resumed", "canonical", "shockwave", config, plan, (30, 90)))
    big = "gen-20000-6500"
    for mechanics, policy in (("exact", "shockwave"), ("gavel", "gavel"), ("exact", "fifo")):
        config = SimulationConfig(gpus=6500, mechanics=mechanics)  # type: ignore[arg-type]
        out.append(
            Case(f"gen20000-{mechanics}-{policy}", big, policy, config, slow=True, whole=False)
        )
    return out


def golden_name(case: Case) -> str:
    """The recorded outputs a case is compared with (a resumed run: the straight run's)."""
    return case.name.removesuffix("-resumed")


def run_case(case: Case) -> SimulationResult:
    """Run ``case`` (stopping, saving and loading at ``case.stops`` on the way)."""
    actual = None if case.actual is None else workload(case.actual)
    simulation = Simulation(workload(case.workload), case.policy, case.config, actual=actual)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "run.ckpt"
        for stop in case.stops:
            assert simulation.run(until_round=stop) is None, f"{case.name}: ended before {stop}"
            simulation.save(path)
            simulation = Simulation.load(path)
        result = simulation.run()
    assert result is not None
    return result


# --------------------------------------------------------------------------------- outputs
def result_text(result: SimulationResult) -> str:
    """The result file's text (``shockwave simulate --output``)."""
    return result.to_json(indent=1) + "\n"


def record_digest(result: SimulationResult) -> str:
    """SHA-256 of every record array but the wall-clock ones (see the module notes)."""
    record = result.record
    hasher = hashlib.sha256()
    for field in dataclasses.fields(record):
        if field.name in _SKIPPED:
            continue
        value = getattr(record, field.name)
        hasher.update(field.name.encode())
        if value is None:
            hasher.update(b"none")
            continue
        array = np.ascontiguousarray(np.asarray(value))
        hasher.update(f"{array.dtype.str}{array.shape}".encode())
        hasher.update(array.tobytes())
    return hasher.hexdigest()


def outputs(case: Case, result: SimulationResult) -> dict[str, Any]:
    """What is stored for ``case``."""
    text = result_text(result)
    out: dict[str, Any] = {
        "record": record_digest(result),
        "result_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "makespan": result.makespan,
        "rounds": result.rounds,
        "avg_jct": result.avg_jct,
    }
    if case.whole:
        out["result"] = text
    return out


# ----------------------------------------------------------------------- real runs (fake)
@dataclass(frozen=True)
class RuntimeCase:
    """A real run of the scheduler on ideal fake jobs (``tests/runtime_fakes.py``)."""

    name: str
    run: Callable[[Path], Any]


def runtime_cases() -> list[RuntimeCase]:
    from tests.runtime_fakes import Fault
    from tests.test_runtime_scheduler import make_workload, run_fake

    def plain(policy: str, seed: int, jobs: int) -> Callable[[Path], Any]:
        return lambda tmp: run_fake(make_workload(seed=seed, jobs=jobs), policy, tmp)[0]

    def faults(tmp: Path) -> Any:
        scripted = {
            (0, 0): Fault("crash", 7.0),
            (2, 0): Fault("hang"),
            (5, 0): Fault("crash", 1.0),
            (5, 1): Fault("crash", 1.0),
        }
        options: dict[str, object] = {"faults": scripted, "startup": 0.5}
        return run_fake(make_workload(seed=1), "gavel", tmp, **options)[0]

    def interrupted(policy: str) -> Callable[[Path], Any]:
        def go(tmp: Path) -> Any:
            from tests.runtime_fakes import FakeClock

            workload = make_workload(seed=5)
            clock = FakeClock()
            checkpoints: dict[int, float] = {}
            first = run_fake(
                workload, policy, tmp, clock=clock, checkpoints=checkpoints, interrupt_at=1065.0
            )[0]
            assert first.incomplete
            return run_fake(
                workload, policy, tmp, resume=True, clock=clock, checkpoints=checkpoints
            )[0]

        return go

    cases = [
        RuntimeCase(f"runtime-{policy}", plain(policy, 0, 8))
        for policy in ("fifo", "gavel", "themis", "allox", "gandiva-fair", "mst", "ossp")
    ]
    cases.append(RuntimeCase("runtime-shockwave", plain("shockwave", 3, 10)))
    cases.append(RuntimeCase("runtime-faults-gavel", faults))
    cases.append(RuntimeCase("runtime-resumed-themis", interrupted("themis")))
    cases.append(RuntimeCase("runtime-resumed-shockwave", interrupted("shockwave")))
    return cases


def runtime_outputs(result: Any) -> dict[str, Any]:
    """A real run's result JSON (its run directory left out) and record digest."""
    data = result.to_dict()
    data.pop("run_dir")
    # added after the outputs were recorded: the other programs' CPU load during a real run
    # (none on the simulated clock; tests/test_machine_load.py covers it)
    assert data.pop("machine_load") is None
    return {"result": json.dumps(data, indent=1), "record": record_digest(result)}


def run_runtime_case(case: RuntimeCase) -> Any:
    with tempfile.TemporaryDirectory() as scratch:
        return case.run(Path(scratch) / "run")


# --------------------------------------------------------------------------------- storage
def golden_file(kind: str) -> Path:
    """The recording of ``kind`` this machine compares against (``tests/golden_platform.py``)."""
    return golden_path(GOLDEN, kind)


def load_golden(kind: str) -> dict[str, Any]:
    with gzip.open(golden_file(kind), "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _write(kind: str, data: dict[str, Any]) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    # mtime 0: the same outputs give the same file bytes
    with (
        open(record_path(GOLDEN, kind), "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle,
    ):
        handle.write(text.encode())


def _record(slow: bool) -> Iterator[str]:
    simulations: dict[str, Any] = {}
    large: dict[str, Any] = {}
    for case in simulation_cases():
        if case.stops or (case.slow and not slow):
            continue
        (large if case.slow else simulations)[golden_name(case)] = outputs(case, run_case(case))
        yield case.name
    _write("simulations", simulations)
    if slow:
        _write("simulations_20000", large)
    real = {}
    for runtime_case in runtime_cases():
        real[runtime_case.name] = runtime_outputs(run_runtime_case(runtime_case))
        yield runtime_case.name
    _write("runtime", real)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help="run every case and store it")
    parser.add_argument("--slow", action="store_true", help="the 20,000-job cases too")
    args = parser.parse_args()
    if not args.record:
        parser.error("nothing to do (--record)")
    for name in _record(args.slow):
        print("recorded", name, flush=True)


if __name__ == "__main__":
    main()
