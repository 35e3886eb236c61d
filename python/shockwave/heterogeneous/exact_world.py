"""The ``exact`` mechanics on a typed cluster: principled rounds, every gang on one GPU type.

* Rounds are a fixed grid, ``tau`` seconds apart from the first arrival; a job that arrives inside
  a round is admitted at the next boundary; rounds in which the cluster is empty are skipped.
* Every round the typed policy is asked with up-to-date state and the typed mechanism picks
  ``(job, type)`` pairs (:class:`~shockwave.heterogeneous.allocation.TypedRounds`,
  ``every-round``): each running gang is on one type, never split, and no type runs more GPUs
  than it has; any job that fits on a type where it can run does (work conservation).
* A static job runs at ``T[i, k]`` iterations/s on type ``k``
  (:meth:`~shockwave.heterogeneous.typed_world.TypedWorld.throughput_by_type`); a job that
  follows its epoch profiles (a native workload's, adapting or not:
  :mod:`~shockwave.heterogeneous.typed_profiles`) moves along its profile on type ``k``, epoch
  boundaries inside a round included, and keeps its epoch and the fraction of it done when it
  moves to another type. A job completes at the exact instant its last iteration (its last
  epoch) is done; GPUs it frees inside a round stay idle until the round ends.
* A job that did not run in the previous round (its first start, or a restart), **or that moves
  to another GPU type**, loses the restart penalty (``restart_penalty_seconds``, default 20 s)
  at the start of the round.
* **Placement**, only for the types given a server size above 1 (``v100:36/4``): every round
  the gangs chosen for such a type are packed onto its servers (largest first, best fit:
  :func:`~shockwave.heterogeneous.placement.pack_gangs`); a gang spread over several servers
  runs, that round, at its ``<type>_unconsolidated`` throughput where the ``.trace``'s table has
  a positive one (at the consolidated rate otherwise, and always for jobs that follow epoch
  profiles, which have no unconsolidated durations), and the result counts the rounds each job
  ran spread (``spread_rounds``). A type without a server size (one GPU per server, the
  default) has no placement: its gangs run at the consolidated rate, as before placement.
* Packing policies (jobs sharing GPUs) run under Gavel's mechanics only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.placement import pack_gangs
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.heterogeneous.typed_world import TypedWorld
from shockwave.persistence import StateReader
from shockwave.rounds.ledger import JobBooks
from shockwave.rounds.world import Decision
from shockwave.throughputs import PLACEMENT_SUFFIX

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The names of a pending round's arrays in a snapshot, with their dtypes.
_PENDING: dict[str, type[np.generic]] = {
    "jobs": np.int64,
    "types": np.int64,
    "run": np.float64,
    "completion": np.float64,
}


class ExactTypedWorld(TypedWorld):
    """The ``exact`` mechanics on a typed cluster (see the module notes).

    Args:
        books: the run's books.
        jobs: the typed jobs.
        allocation: the run's typed allocator.
        round_seconds: round length tau, seconds.
        restart_penalty_seconds: what a job loses when it starts, restarts or changes type.
    """

    mechanics = "exact"

    def __init__(
        self,
        books: JobBooks,
        jobs: TypedJobs,
        allocation: TypedRounds,
        round_seconds: float,
        restart_penalty_seconds: float,
    ) -> None:
        super().__init__(books, jobs, allocation, round_seconds)
        n = len(jobs)
        self.penalty = float(restart_penalty_seconds)
        self.restart_penalty_seconds = self.penalty
        #: iterations done (fractional: progress is exact within a round)
        self.progress = np.zeros(n, dtype=np.float64)
        self.origin = float(jobs.arrival[0])
        self.grid = 0
        self.pending: dict[str, npt.NDArray[Any]] | None = None
        cluster = jobs.cluster
        #: the types whose gangs are placed on servers (a server size above 1)
        self.placed_types = [k for k, size in enumerate(cluster.server_sizes) if size > 1]
        if self.placed_types:
            self.spread_rounds = np.zeros(n, dtype=np.int64)
        #: ``[i, k]``: iterations/s of job ``i`` spread over servers of type ``k`` (0: none
        #: known, the consolidated rate applies)
        self.unconsolidated = _unconsolidated_rates(jobs) if self.placed_types else None

    def remaining_steps(self, active: IntArray) -> IntArray:
        left = self.jobs.total_steps[active] - self.progress[active]
        return np.ceil(left).astype(np.int64)

    # ---------------------------------------------------------------------------- clock
    def close_round(self, round_index: int) -> float:
        now = self.origin + self.grid * self.round_seconds
        if self.pending is not None:
            self._finish_round(round_index, **self.pending)
            self.pending = None
        return now

    def idle_until(self, arrival: float, round_index: int) -> float:
        tau = self.round_seconds
        self.grid = int(np.ceil((arrival - self.origin) / tau))
        while self.origin + self.grid * tau < arrival:  # a boundary rounded below the arrival
            self.grid += 1
        return self.origin + self.grid * tau

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        assert decision.types is not None
        assert decision.pairs.shape[0] == 0
        jobs, types = decision.jobs, decision.types
        ran_before = self.books.previous_round_run[jobs] == round_index - 1
        moved = self.last_type[jobs] != types
        penalty = np.where(ran_before & ~moved & (round_index > 0), 0.0, self.penalty)
        self.last_type[jobs] = types
        if self.jobs.profiles is not None:
            self._place(jobs, types)
            self._run_profiles(now, jobs, types, penalty)
            return
        spread = self._place(jobs, types)
        rate = self.throughput_by_type(jobs)[np.arange(jobs.shape[0]), types]
        if self.unconsolidated is not None:
            slower = self.unconsolidated[jobs, types]
            rate = np.where(spread & (slower > 0.0), slower, rate)
        left = self.jobs.total_steps[jobs] - self.progress[jobs]
        capacity = (self.round_seconds - penalty) * rate
        finishes = left <= capacity
        run = np.where(finishes, left / rate, self.round_seconds - penalty)
        completion = np.where(finishes, now + penalty + run, np.nan)
        self.progress[jobs] = np.where(
            finishes, self.jobs.total_steps[jobs], self.progress[jobs] + capacity
        )
        self._pend(jobs, types, run, completion)

    def _place(self, jobs: IntArray, types: IntArray) -> npt.NDArray[np.bool_]:
        """Pack the round's gangs onto the servers of the placed types; which ones are spread
        over several servers (counted in ``spread_rounds``)."""
        spread = np.zeros(jobs.shape[0], dtype=np.bool_)
        if self.spread_rounds is None:
            return spread
        cluster = self.jobs.cluster
        for k in self.placed_types:
            on = np.flatnonzero(types == k)
            size = cluster.server_sizes[k]
            spans = pack_gangs(self.books.gang[jobs[on]].tolist(), cluster.counts[k] // size, size)
            spread[on] = np.asarray(spans) > 1
        self.spread_rounds[jobs[spread]] += 1
        return spread

    def _run_profiles(
        self, now: float, jobs: IntArray, types: IntArray, penalty: FloatArray
    ) -> None:
        """Run the round's jobs along their profiles on their types (the module notes)."""
        profiles = self.jobs.profiles
        assert profiles is not None
        run, finishes, epoch, fraction = profiles.advance(
            jobs, types, self.epoch[jobs], self.fraction[jobs], self.round_seconds - penalty
        )
        self.epoch[jobs], self.fraction[jobs] = epoch, fraction
        done_iterations = profiles.iterations_done(jobs, epoch, fraction)
        total = self.jobs.total_steps[jobs].astype(np.float64)
        self.progress[jobs] = np.where(finishes, total, np.minimum(done_iterations, total))
        completion = np.where(finishes, now + penalty + run, np.nan)
        self._pend(jobs, types, run, completion)

    def _pend(
        self, jobs: IntArray, types: IntArray, run: FloatArray, completion: FloatArray
    ) -> None:
        self.pending = {"jobs": jobs, "types": types, "run": run, "completion": completion}
        self.grid += 1
        self.rounds += 1

    def makespan(self) -> float:
        return float(np.nanmax(self.books.completion_time))

    def _finish_round(
        self,
        round_index: int,
        jobs: IntArray,
        types: IntArray,
        run: FloatArray,
        completion: FloatArray,
    ) -> None:
        """Book the round that just ended: service, time on each type, completions."""
        books, mechanism = self.books, self.allocation.mechanism
        gang = books.gang[jobs]
        books.service[jobs] += run
        books.book_busy(round_index, run, gang)
        np.add.at(self.gpu_seconds, (jobs, types), run * gang)
        np.add.at(self.busy_seconds, types, run * gang)
        for job, k, seconds in zip(jobs.tolist(), types.tolist(), run.tolist(), strict=True):
            mechanism.record_run((job,), k, seconds)
        done = ~np.isnan(completion)
        if done.any():
            self.steps_run[jobs[done]] = self.jobs.total_steps[jobs[done]]
            books.complete(jobs[done], completion[done], round_index)
            for job in jobs[done].tolist():
                mechanism.remove(job)
        self.steps_run[jobs[~done]] = np.floor(self.progress[jobs[~done]]).astype(np.int64)

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        return {
            "progress": self.progress.copy(),
            "steps_run": self.steps_run.copy(),
            "last_type": self.last_type.copy(),
            "epoch": self.epoch.copy(),
            "fraction": self.fraction.copy(),
            "gpu_seconds": self.gpu_seconds.copy(),
            "busy_seconds": self.busy_seconds.copy(),
            "grid": self.grid,
            "rounds": self.rounds,
            "pending": None if self.pending is None else dict(self.pending),
            "spread_rounds": None if self.spread_rounds is None else self.spread_rounds.copy(),
        }

    def restore(self, saved: StateReader) -> None:
        n, k = self.gpu_seconds.shape
        progress = saved.array("progress", np.float64, (n,))
        steps_run = saved.array("steps_run", np.int64, (n,))
        last_type = saved.array("last_type", np.int64, (n,))
        if np.any((last_type < -1) | (last_type >= k)):
            raise saved.error("last_type", "a GPU type index is out of range")
        epoch = saved.array("epoch", np.int64, (n,))
        if np.any(epoch < 0) or (
            self.jobs.profiles is not None
            and np.any(epoch >= self.jobs.profiles.progress[0].epochs)
        ):
            raise saved.error("epoch", "an epoch index is out of range")
        fraction = saved.array("fraction", np.float64, (n,))
        if np.any(~((fraction >= 0.0) & (fraction <= 1.0))):
            raise saved.error("fraction", "a fraction of an epoch is outside [0, 1]")
        gpu_seconds = saved.array("gpu_seconds", np.float64, (n, k))
        busy_seconds = saved.array("busy_seconds", np.float64, (k,))
        grid = saved.integer("grid", 0)
        rounds = saved.integer("rounds", 0)
        pending: dict[str, npt.NDArray[Any]] | None = None
        if saved.raw("pending") is not None:
            table = saved.table("pending")
            jobs = table.array("jobs", np.int64, (None,))
            pending = {"jobs": jobs}
            for name, dtype in _PENDING.items():
                if name != "jobs":
                    pending[name] = table.array(name, dtype, jobs.shape)
            if np.any((jobs < 0) | (jobs >= n)) or np.any(
                (pending["types"] < 0) | (pending["types"] >= k)
            ):
                raise table.error("jobs", "a job or type index is out of range")
            table.done()
        spread_rounds = None
        if self.spread_rounds is not None:
            spread_rounds = saved.array("spread_rounds", np.int64, (n,))
            if np.any(spread_rounds < 0):
                raise saved.error("spread_rounds", "a count of rounds is negative")
        elif saved.raw("spread_rounds") is not None:
            raise saved.error("spread_rounds", "this cluster has no server sizes to place on")
        saved.done()
        self.spread_rounds = spread_rounds
        self.progress, self.steps_run, self.last_type = progress, steps_run, last_type
        self.epoch, self.fraction = epoch, fraction
        self.gpu_seconds, self.busy_seconds = gpu_seconds, busy_seconds
        self.grid, self.rounds, self.pending = grid, rounds, pending


def _unconsolidated_rates(jobs: TypedJobs) -> FloatArray:
    """``[i, k]``: the ``<type>_unconsolidated`` throughput of each job on each type of the
    cluster in the jobs' table, iterations/s (0 where the table has none, or the jobs have no
    table or follow epoch profiles)."""
    out = np.zeros_like(jobs.throughput)
    table = jobs.table
    if table is None or jobs.profiles is not None:
        return out
    for k, name in enumerate(jobs.cluster.types):
        variant = name + PLACEMENT_SUFFIX
        if variant in table.entries:
            out[:, k] = [
                table.isolated(variant, t, g)
                for t, g in zip(jobs.job_types, jobs.gang.tolist(), strict=True)
            ]
    return out
