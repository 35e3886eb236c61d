"""Settings of a real run: the cluster's slots, the round length, the executor, fault handling."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shockwave.arguments import is_integer
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.job.spec import SlotKind
from shockwave.scheduling.config import GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES

#: Executors: ``local`` (child processes of the scheduler) or ``ray`` (Ray tasks on a cluster).
ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("local", "ray")

#: Default round length of a real run, seconds (short: the bundled jobs train for minutes; the
#: paper's cluster used 120 s rounds).
DEFAULT_RUN_ROUND_SECONDS = 20.0


@dataclass(frozen=True)
class RuntimeConfig:
    """How to run a workload for real.

    Attributes:
        gpus: GPU slots in the cluster (G). On a machine without GPUs each slot is one CPU
            thread (a core), so ``gpus`` must not exceed the cores the scheduler may use. With
            a ``cluster``, its total (``0``, the default then, takes it from the cluster).
        cluster: the GPU types of a heterogeneous cluster (a :class:`ClusterSpec`; its text,
            ``v100:1,p100:1``, is parsed into one); ``None`` for a homogeneous one of ``gpus``
            slots. Its slots are numbered type after type in the spec's order (``v100``: 0,
            ``p100``: 1); a typed policy (:mod:`shockwave.heterogeneous.registry`) then
            chooses the type of every gang, and each gang runs on slots of its type.
        round_seconds: round length tau, seconds.
        executor: ``"local"`` (default: every job is a child process of the scheduler) or
            ``"ray"`` (every job runs in a Ray task that requests ``num_gpus = gang size``).
        ray_address: address of an existing Ray cluster to join (``None``: start a local Ray
            instance with ``gpus`` logical GPUs, and shut it down at the end).
        slot_kind: ``"gpu"`` (real GPUs: ``CUDA_VISIBLE_DEVICES`` is set), ``"cpu"`` (one CPU
            thread per slot) or ``None`` to detect (GPUs if the machine has at least ``gpus``).
        max_restarts: crashes after which a job is reported failed (each crash restarts it from
            its last checkpoint).
        checkpoint_every_seconds: a job that keeps its lease for this long is asked to save a
            checkpoint at its next round boundary (so a crash loses little work), seconds.
        boundary_timeout_seconds: a job that has not reached its round boundary this long after
            it is due (a hung step) is killed and counted as a crash, seconds.
        start_timeout_seconds: a started job that has not said hello within this long is
            killed and counted as a crash, seconds.
        stop_timeout_seconds: on an interruption, how long jobs get to checkpoint before they
            are killed, seconds.
        recompute_interval_seconds: for allocation policies, the minimum time between two
            resets of the round mechanism's time counters (as the ``exact`` mechanics).
        run_dir: where checkpoints, job logs, the journal and the result go.
        workdir: the working directory of every job process (for a user command, the
            workload file's directory, so that its relative paths mean what they mean there).
        output: a second file the result is written to (``cluster run --output``), also after
            a resume; ``None`` for none.

    ``run_dir``, ``workdir`` and ``output`` are made absolute (against the current directory)
    when the config is made, once: every path the scheduler hands a job, an executor or the
    journal is absolute, so a job process resolves them the same way from its own working
    directory, and a resume from another directory finds the same files.
    """

    gpus: int = 0
    round_seconds: float = DEFAULT_RUN_ROUND_SECONDS
    executor: ExecutorName = "local"
    ray_address: str | None = None
    slot_kind: SlotKind | None = None
    max_restarts: int = 3
    checkpoint_every_seconds: float = 60.0
    boundary_timeout_seconds: float = 60.0
    start_timeout_seconds: float = 120.0
    stop_timeout_seconds: float = 60.0
    recompute_interval_seconds: float = GAVEL_MIN_SECONDS_BETWEEN_RECOMPUTES
    run_dir: Path = Path("shockwave-run")
    workdir: Path = Path(".")
    output: Path | None = None
    cluster: ClusterSpec | None = None

    def __post_init__(self) -> None:
        cluster: object = self.cluster
        if isinstance(cluster, str):  # its text (a journal's, or a caller's)
            cluster = ClusterSpec.parse(cluster)
            object.__setattr__(self, "cluster", cluster)
        if cluster is not None:
            if not isinstance(cluster, ClusterSpec):
                raise ValueError(f"cluster must be a ClusterSpec or its text, got {cluster!r}")
            if self.gpus == 0:
                object.__setattr__(self, "gpus", cluster.total_gpus)
            elif self.gpus != cluster.total_gpus:
                raise ValueError(
                    f"gpus ({self.gpus!r}) must be the cluster's total ({cluster.total_gpus}: "
                    f"{cluster}), or left out"
                )
        if not is_integer(self.gpus, numpy=False) or self.gpus < 1:
            raise ValueError(f"gpus must be an integer >= 1, got {self.gpus!r}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {self.executor!r}")
        if self.slot_kind not in (None, "gpu", "cpu"):
            raise ValueError(f"slot_kind must be 'gpu', 'cpu' or None, got {self.slot_kind!r}")
        if (
            isinstance(self.max_restarts, bool)
            or not isinstance(self.max_restarts, int)
            or self.max_restarts < 0
        ):
            raise ValueError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}")
        for name in (
            "round_seconds",
            "checkpoint_every_seconds",
            "boundary_timeout_seconds",
            "start_timeout_seconds",
            "stop_timeout_seconds",
        ):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        value = self.recompute_interval_seconds
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"recompute_interval_seconds must be finite and >= 0, got {value!r}")
        object.__setattr__(self, "run_dir", Path(os.path.abspath(self.run_dir)))
        object.__setattr__(self, "workdir", Path(os.path.abspath(self.workdir)))
        if self.output is not None:
            object.__setattr__(self, "output", Path(os.path.abspath(self.output)))


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def machine_gpus() -> int:
    """NVIDIA GPUs the driver shows on this machine (0 without a driver)."""
    root = Path("/proc/driver/nvidia/gpus")
    try:
        return sum(1 for _ in root.iterdir())
    except OSError:
        return 0


def type_slots(config: RuntimeConfig) -> dict[str, tuple[int, ...]] | None:
    """The slots of each GPU type of ``config``'s cluster (numbered type after type, in the
    spec's order); ``None`` for a homogeneous cluster."""
    if config.cluster is None:
        return None
    slots: dict[str, tuple[int, ...]] = {}
    first = 0
    for name, count in zip(config.cluster.types, config.cluster.counts, strict=True):
        slots[name] = tuple(range(first, first + count))
        first += count
    return slots


def resolve_slot_kind(gpus: int, wanted: SlotKind | None) -> SlotKind:
    """The slot kind of a local run with ``gpus`` slots.

    Raises:
        ValueError: for GPU slots on a machine with fewer GPUs, or CPU slots beyond the cores
            (each CPU slot is one core; more would time-share and distort throughput).
    """
    have_gpus = machine_gpus()
    kind: SlotKind = wanted or ("gpu" if have_gpus >= gpus else "cpu")
    if kind == "gpu" and have_gpus < gpus:
        raise ValueError(f"--gpus {gpus}: this machine has {have_gpus} GPUs")
    if kind == "cpu":
        cores = usable_cores()
        if gpus > cores:
            raise ValueError(
                f"--gpus {gpus}: this machine has no GPUs to give, and each slot is then one "
                f"CPU core, but only {cores} cores are available; use --gpus {cores} or fewer"
            )
    return kind
