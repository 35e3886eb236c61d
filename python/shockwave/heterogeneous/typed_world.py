"""What every typed cluster world shares: its jobs, their speed on each GPU type, its books.

A typed world is a :class:`~shockwave.rounds.ClusterWorld` whose decisions say the GPU type of
every gang (:attr:`Decision.types <shockwave.rounds.Decision>`). Two implementations:
:class:`~shockwave.heterogeneous.gavel_world.GavelTypedWorld` (Gavel's simulator, quirks
included) and :class:`~shockwave.heterogeneous.exact_world.ExactTypedWorld` (the principled
rounds). Its policies are the typed ones (:mod:`shockwave.heterogeneous.registry`), asked
through :class:`~shockwave.heterogeneous.allocation.TypedRounds` with a state of their own
(:class:`~shockwave.heterogeneous.protocol.TypedAllocationState`), not a
:class:`~shockwave.scheduling.ClusterState`.

A job's speed on type ``k`` comes from one place, :meth:`TypedWorld.throughput_by_type`: the
static ``T[i, k]`` of :attr:`TypedJobs.throughput
<shockwave.heterogeneous.typed_jobs.TypedJobs.throughput>` for a ``.trace``'s jobs, or, for
jobs that follow their epoch profiles (:attr:`TypedJobs.profiles
<shockwave.heterogeneous.typed_jobs.TypedJobs.profiles>`), the iterations per second of the
epoch each job is in (:attr:`TypedWorld.epoch`) on each type
(:meth:`~shockwave.heterogeneous.typed_profiles.TypedProfiles.throughput`): the mechanism, the
policy's state and the worlds' progress all read it there.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.rounds.ledger import JobBooks
from shockwave.rounds.world import ClusterWorld, ProgressColumns

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@runtime_checkable
class TypedView(Protocol):
    """What the typed allocator reads of a cluster world: a simulated typed world, or a real
    run's live cluster on typed slots (:mod:`shockwave.runtime.typed_slots`)."""

    round_seconds: float
    #: what a job loses in a round in which it starts, restarts or moves to another type, s
    restart_penalty_seconds: float

    def throughput_by_type(self, active: IntArray) -> FloatArray:
        """``T[i, k]`` of each job of ``active`` (iterations/s; 0: it cannot run there)."""
        ...

    def remaining_steps(self, active: IntArray) -> IntArray:
        """Iterations each job of ``active`` has left."""
        ...

    def epochs_done(self, active: IntArray) -> FloatArray | None:
        """For jobs that follow their epoch profiles, the epochs each job of ``active`` has
        done plus the fraction of the one in progress (``None`` otherwise)."""
        ...

    def previous_types(self, active: IntArray, round_index: int) -> IntArray:
        """The type each job of ``active`` ran on in round ``round_index - 1`` (-1: it did not
        run then)."""
        ...


def typed_books(jobs: TypedJobs) -> JobBooks:
    """The books of a typed run: the jobs in trace order (arrivals are non-decreasing, so that
    is admission order), each job's exclusive time taken on its slowest usable type."""
    if jobs.profiles is not None:
        total = jobs.profiles.total_seconds
        exclusive = np.where(np.isfinite(total), total, -np.inf).max(axis=1)
    else:
        usable = jobs.throughput > 0.0
        slowest = np.where(usable, jobs.throughput, np.inf).min(axis=1)
        exclusive = jobs.total_steps / slowest
    return JobBooks(
        job_ids=jobs.job_ids,
        arrival=jobs.arrival,
        gang=jobs.gang,
        weight=jobs.weight,
        exclusive=exclusive,
        gpus=jobs.cluster.total_gpus,
    )


class TypedWorld(ClusterWorld):
    """A typed cluster (see the module notes).

    Args:
        books: the run's books (:func:`typed_books`).
        jobs: the typed jobs.
        allocation: the run's typed allocator.
        round_seconds: round length tau, seconds.
    """

    def __init__(
        self, books: JobBooks, jobs: TypedJobs, allocation: TypedRounds, round_seconds: float
    ) -> None:
        self.books = books
        self.jobs = jobs
        self.allocation = allocation
        self.round_seconds = float(round_seconds)
        n, k = jobs.throughput.shape
        self.steps_run = np.zeros(n, dtype=np.int64)
        #: ``[i, k]``: GPU-seconds job ``i`` ran on type ``k``
        self.gpu_seconds = np.zeros((n, k), dtype=np.float64)
        #: GPU-seconds each type was busy (GPUs shared by a pair count once)
        self.busy_seconds = np.zeros(k, dtype=np.float64)
        #: round boundaries the world went through
        self.rounds = 0
        #: for jobs that follow their profiles: the epoch each job is in, and the fraction of
        #: it done (the same position on every type)
        self.epoch = np.zeros(n, dtype=np.int64)
        self.fraction = np.zeros(n, dtype=np.float64)
        #: what a job loses when it starts, restarts or changes type (0: Gavel's mechanics)
        self.restart_penalty_seconds = 0.0
        #: the type each job ran on last (-1: never ran; kept by the exact mechanics, which
        #: charge a move its restart)
        self.last_type = np.full(n, -1, dtype=np.int64)
        #: rounds each job ran spread over several servers, where the world places gangs on
        #: servers (the exact mechanics with server sizes); ``None``: no such placement
        self.spread_rounds: IntArray | None = None

    def throughput_by_type(self, active: IntArray) -> FloatArray:
        """``T[i, k]``: iterations/s of each job of ``active`` on its gang of type ``k`` (0: it
        cannot run there). The one source of a job's speed on a type: the static table's, or
        that of the epoch each job is in (module notes)."""
        profiles = self.jobs.profiles
        if profiles is None:
            return self.jobs.throughput[active]
        return profiles.throughput(active, self.epoch[active])

    def remaining_steps(self, active: IntArray) -> IntArray:
        """Iterations each job of ``active`` has left."""
        return self.jobs.total_steps[active] - self.steps_run[active]

    def epochs_done(self, active: IntArray) -> FloatArray | None:
        """Epochs done plus the fraction of the one in progress (jobs that follow profiles)."""
        if self.jobs.profiles is None:
            return None
        done: FloatArray = self.epoch[active] + self.fraction[active]
        return done

    def previous_types(self, active: IntArray, round_index: int) -> IntArray:
        """The type each job of ``active`` ran on in the previous round (-1: it did not)."""
        ran = self.books.previous_round_run[active] == round_index - 1
        previous: IntArray = np.where(ran, self.last_type[active], -1)
        return previous

    def progress_columns(self, active: IntArray) -> ProgressColumns:
        raise TypeError(
            "a typed cluster runs typed policies (shockwave.heterogeneous.registry), which see "
            "a TypedAllocationState; the homogeneous policies' ClusterState has no GPU types"
        )

    def throughput(self, active: IntArray) -> FloatArray:
        raise TypeError("a typed cluster's throughputs are per type: throughput_by_type")
