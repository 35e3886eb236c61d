"""The Python entry point of a heterogeneous simulation: the round loop over a typed world.

A heterogeneous simulation is the one round loop (:class:`shockwave.rounds.RoundLoop`) over
the books of the typed jobs, a typed world (Gavel's mechanics,
:mod:`~shockwave.heterogeneous.gavel_world`, or the exact ones,
:mod:`~shockwave.heterogeneous.exact_world`) and a typed policy asked through
:class:`~shockwave.heterogeneous.allocation.TypedRounds`. :func:`typed_round_loop` builds it
(a loop can stop at a boundary, be saved as a :class:`~shockwave.rounds.RoundSnapshot` and be
restored into a fresh one); :func:`simulate_heterogeneous` runs it to its result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from os import PathLike
from typing import Literal

import numpy as np

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.exact_world import ExactTypedWorld
from shockwave.heterogeneous.gavel_world import GavelTypedWorld
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.heterogeneous.registry import make_typed_policy
from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.heterogeneous.typed_jobs import TypedJobs, read_typed_trace
from shockwave.heterogeneous.typed_throughputs import TypedThroughputTable
from shockwave.heterogeneous.typed_world import TypedWorld, typed_books
from shockwave.rounds.loop import RoundLoop
from shockwave.scheduling.config import DEFAULT_RESTART_PENALTY_SECONDS

#: Gavel's ``minimum_time_between_allocation_resets`` (its scheduler's default), seconds.
GAVEL_RESET_INTERVAL_SECONDS = 1920.0
#: The mechanics of a typed cluster.
TypedMechanics = Literal["gavel", "exact"]


@dataclass(frozen=True)
class HeterogeneousConfig:
    """Settings of a heterogeneous simulation.

    Attributes:
        round_seconds: round length tau (Gavel's ``time_per_iteration``; its default is 360 s).
        seed: Gavel's ``--seed``: the type-order shuffles use ``random.Random(seed + 5)``,
            ``fifo-agnostic`` ``random.Random(seed)``.
        recompute_interval_seconds: least time between two resets of the mechanism's counters
            (Gavel: 1,920 s).
        max_rounds: stop with :class:`~shockwave.scheduling.SimulationStalledError` after this
            many round boundaries (``None``: a bound derived from the workload).
        mechanics: ``gavel`` (Gavel's simulator, quirks included) or ``exact`` (principled
            rounds: a fixed grid, the restart penalty, work conservation).
        restart_penalty_seconds: under ``exact``, what a job loses at the start of a round in
            which it starts, restarts or moves to another GPU type, seconds (Gavel's
            simulator has none).
    """

    round_seconds: float = 360.0
    seed: int = 0
    recompute_interval_seconds: float = GAVEL_RESET_INTERVAL_SECONDS
    max_rounds: int | None = None
    mechanics: TypedMechanics = "gavel"
    restart_penalty_seconds: float = DEFAULT_RESTART_PENALTY_SECONDS

    def __post_init__(self) -> None:
        if not (np.isfinite(self.round_seconds) and 1.0 <= self.round_seconds <= 86_400.0):
            raise ValueError(f"round_seconds must be in [1, 86400], got {self.round_seconds!r}")
        if not (np.isfinite(self.recompute_interval_seconds)
                and self.recompute_interval_seconds >= 0.0):  # fmt: skip
            raise ValueError(
                "recompute_interval_seconds must be finite and >= 0, "
                f"got {self.recompute_interval_seconds!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if self.max_rounds is not None and not (
            isinstance(self.max_rounds, int) and self.max_rounds >= 1
        ):
            raise ValueError(f"max_rounds must be an integer >= 1, got {self.max_rounds!r}")
        if self.mechanics not in ("gavel", "exact"):
            raise ValueError(f"mechanics must be 'gavel' or 'exact', got {self.mechanics!r}")
        penalty = self.restart_penalty_seconds
        if not (np.isfinite(penalty) and penalty >= 0.0):
            raise ValueError(f"restart_penalty_seconds must be finite and >= 0, got {penalty!r}")
        if self.mechanics == "exact" and penalty >= self.round_seconds:
            raise ValueError(
                f"restart_penalty_seconds ({penalty!r}) must be shorter than a round "
                f"({self.round_seconds!r} s) under the exact mechanics"
            )


def typed_round_loop(
    jobs: TypedJobs, policy: TypedAllocationPolicy, config: HeterogeneousConfig
) -> RoundLoop:
    """The round loop of a heterogeneous simulation (the policy is reset first).

    Raises:
        ValueError: naming a job the policy cannot schedule, a packing policy under the
            exact mechanics or for jobs with epoch profiles.
    """
    policy.check_jobs(jobs.job_ids.tolist(), jobs.gang.tolist())
    if config.mechanics == "exact" and policy.packs_jobs:
        raise ValueError(
            f"{policy.name} packs jobs onto shared GPUs: it runs under the gavel mechanics only"
        )
    if jobs.profiles is not None and policy.packs_jobs:
        raise ValueError(
            f"{policy.name} packs jobs onto shared GPUs, which needs their co-located "
            "throughputs from a table: static jobs (a .trace) only"
        )
    policy.reset()
    books = typed_books(jobs)
    allocation = TypedRounds(
        books,
        jobs,
        policy,
        cadence="on-changes" if config.mechanics == "gavel" else "every-round",
        round_seconds=float(config.round_seconds),
        recompute_interval_seconds=config.recompute_interval_seconds,
        seed=config.seed,
    )
    world: TypedWorld
    if config.mechanics == "gavel":
        world = GavelTypedWorld(books, jobs, allocation, config.round_seconds)
    else:
        world = ExactTypedWorld(
            books, jobs, allocation, config.round_seconds, config.restart_penalty_seconds
        )
    return RoundLoop(
        books,
        world,
        policy,
        round_seconds=config.round_seconds,
        allocation=allocation,
        max_rounds=config.max_rounds,
    )


def typed_result(
    loop: RoundLoop, jobs: TypedJobs, config: HeterogeneousConfig, wall_seconds: float
) -> HeterogeneousResult:
    """The result of a finished :func:`typed_round_loop`."""
    world, books, policy = loop.world, loop.ledger, loop.policy
    assert isinstance(world, TypedWorld)
    assert isinstance(policy, TypedAllocationPolicy)
    placement = getattr(world, "placement", None)
    return HeterogeneousResult.build(
        jobs,
        policy,
        config,
        makespan=world.makespan(),
        completion=np.where(books.dropped, np.nan, books.completion_time),
        dropped=books.dropped,
        gpu_seconds=world.gpu_seconds,
        busy_seconds=world.busy_seconds,
        lease_extension_share=0.0 if placement is None else placement.extension_share,
        rounds=world.rounds,
        policy_seconds=float(sum(books.round_policy_seconds)) + books.policy_seconds,
        wall_seconds=wall_seconds,
        spread_rounds=world.spread_rounds,
    )


def simulate_heterogeneous(
    jobs: TypedJobs,
    policy: str | TypedAllocationPolicy,
    config: HeterogeneousConfig | None = None,
) -> HeterogeneousResult:
    """Simulate ``jobs`` on their cluster under ``policy``.

    Args:
        jobs: the jobs and their throughput on each type of the cluster
            (:func:`load_typed_trace`, :func:`~shockwave.heterogeneous.typed_jobs.read_typed_trace`
            or :func:`~shockwave.heterogeneous.typed_jobs.typed_jobs_from_workload`).
        policy: a name (``gavel``, ``gavel-agnostic``, ``themis``, ``mst``, ``ossp``, ``fifo``,
            ..., or Gavel's names such as ``max_min_fairness_perf``) or a policy instance.
        config: mechanics, round length, seed, recompute interval (Gavel's defaults: ``gavel``,
            360 s, 0, 1,920 s).
    """
    config = config or HeterogeneousConfig()
    if isinstance(policy, str):
        policy = make_typed_policy(policy, config.seed)
    started = time.perf_counter()
    loop = typed_round_loop(jobs, policy, config)
    loop.run()
    return typed_result(loop, jobs, config, time.perf_counter() - started)


def load_typed_trace(
    trace: str | PathLike[str],
    throughputs: str | PathLike[str] | TypedThroughputTable,
    cluster: str | ClusterSpec,
) -> TypedJobs:
    """Read a ``.trace`` for ``cluster`` (a spec or its text, ``v100:12,p100:12,k80:12``) with a
    throughput file (or table) that has every type of the cluster."""
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
    table = (
        throughputs
        if isinstance(throughputs, TypedThroughputTable)
        else TypedThroughputTable.from_file(throughputs)
    )
    return read_typed_trace(trace, table, spec)
