"""The ``exact`` mechanics: a cluster world of principled rounds over exact per-epoch profiles.

* Rounds are a fixed grid, ``tau`` seconds apart from the first arrival; a job that arrives inside
  a round is admitted at the next boundary; rounds in which the cluster is empty are skipped.
* Every round the policy is asked with up-to-date state. An allocation policy's fractions go
  through the round mechanism (:class:`~shockwave.rounds.allocation.EveryRound`); the
  mechanism's time counters are reset (deficits folded) at most every
  ``recompute_interval_seconds``, as Gavel's own scheduler does; the greedy packing runs any job
  that fits, so no GPU idles while a runnable job fits (work conservation).
* A job follows its profile exactly: its progress is exclusive run time, epoch boundaries inside a
  round included (:mod:`shockwave.sim.profile_progress`); it completes at the exact instant its
  profile is done; GPUs it frees inside a round stay idle until the round ends.
* A job that did not run in the previous round (a restart, or its first start) loses the restart
  penalty (default 20 s) at the start of the round; every running job also loses the round
  overhead (``round_overhead_seconds``, default 0: a real cluster's turnaround at a boundary).
* Optional throughput noise: each job-round draws a factor ``exp(sigma Z - sigma^2 / 2)``
  (mean 1, ``Z`` standard normal, from a generator seeded by ``config.seed``), which scales the
  job's speed in that round. Policies see the noise-free isolated throughput in
  ``state.throughput`` and the measured rates in ``state.throughput_samples``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.persistence import StateReader
from shockwave.rounds.allocation import AllocationRounds
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.world import ClusterWorld, Decision, ProgressColumns
from shockwave.scheduling.config import SimulationConfig
from shockwave.sim.profile_progress import ProfileProgress

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: A round in flight: (jobs, run seconds, completion times, work done before it).
_Pending = tuple[IntArray, FloatArray, FloatArray, FloatArray]


class ExactProfiles(ClusterWorld):
    """The ``exact`` mechanics (see the module notes).

    Args:
        ledger: the run's books (its jobs, in admission order, are the ones simulated).
        config: the simulation's settings.
        allocation: the round mechanism of an allocation policy (``None`` for a round policy).
    """

    mechanics = "exact"

    def __init__(
        self, ledger: JobLedger, config: SimulationConfig, allocation: AllocationRounds | None
    ) -> None:
        self.ledger = ledger
        self.config = config
        self.tau = float(config.round_seconds)
        self.mechanism = None if allocation is None else allocation.mechanism
        n = ledger.n
        self.profiles = ProfileProgress(ledger.jobs)
        self.work_done = np.zeros(n, dtype=np.float64)
        self.epoch = np.zeros(n, dtype=np.int64)  # epoch in progress at work_done
        self.rng = np.random.default_rng(config.seed)
        self.origin = float(ledger.arrival[0])
        self.grid = 0
        self.pending: _Pending | None = None

    # ------------------------------------------------------------------------- state
    def progress_columns(self, active: IntArray) -> ProgressColumns:
        p = self.profiles
        seconds = self.work_done[active]
        index = self.epoch[active]
        fraction = p.fraction(active, index, seconds)
        iterations = p.iterations_done(active, index, seconds)
        total = p.total_iterations[active]
        size, iterations_per_epoch, duration = p.epoch_facts(active, index)
        return {
            "epochs_done": index.copy(),
            "epoch_progress": index + fraction,
            "steps_run": iterations,
            "total_steps": total.copy(),
            "remaining_steps": total - iterations,
            "batch_size": size,
            "throughput": iterations_per_epoch / duration,
            "remaining_seconds": p.total_seconds[active] - seconds,
        }

    # ---------------------------------------------------------------------------- clock
    def close_round(self, round_index: int) -> float:
        now = self.origin + self.grid * self.tau
        if self.pending is not None:
            self._finish_round(round_index, *self.pending)
            self.pending = None
        return now

    def idle_until(self, arrival: float, round_index: int) -> float:
        tau = self.tau
        self.grid = int(np.ceil((arrival - self.origin) / tau))
        while self.origin + self.grid * tau < arrival:  # a boundary rounded below the arrival
            self.grid += 1
        return self.origin + self.grid * tau

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        self.pending = self._run_round(round_index, now, np.sort(decision.jobs))
        self.grid += 1

    def makespan(self) -> float:
        return float(np.nanmax(self.ledger.completion_time))

    # ---------------------------------------------------------------------- the rounds
    def _run_round(
        self, k: int, now: float, jobs: IntArray
    ) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        """Advance the round's jobs; return (jobs, run seconds, completion times, work done)."""
        tau = self.tau
        restarted = (self.ledger.previous_round_run[jobs] != k - 1) | (k == 0)
        penalty = np.where(restarted, self.config.restart_penalty_seconds, 0.0)
        if self.config.round_overhead_seconds > 0.0:
            penalty = penalty + self.config.round_overhead_seconds
        speed = np.ones(jobs.shape[0])
        if self.config.throughput_noise > 0.0 and jobs.shape[0]:
            sigma = self.config.throughput_noise
            speed = np.exp(sigma * self.rng.standard_normal(jobs.shape[0]) - 0.5 * sigma * sigma)
        left = self.profiles.total_seconds[jobs] - self.work_done[jobs]
        capacity = (tau - penalty) * speed
        finishes = left <= capacity
        # (a huge noise can make a speed underflow to 0: divide only where the job finishes)
        finish_run = np.divide(left, speed, out=np.zeros_like(left), where=finishes)
        run = np.where(finishes, finish_run, tau - penalty)
        completion = np.where(finishes, now + penalty + run, np.nan)
        before = self.work_done[jobs].copy()
        self.work_done[jobs] = np.where(
            finishes, self.profiles.total_seconds[jobs], before + capacity
        )
        return jobs, run, completion, before

    def _finish_round(
        self, k: int, jobs: IntArray, run: FloatArray, completion: FloatArray, before: FloatArray
    ) -> None:
        """Book the round that just ended (boundary ``k``): service, samples, completions."""
        ledger = self.ledger
        ledger.service[jobs] += run
        ledger.book_busy(k, run, ledger.gang[jobs])
        if self.mechanism is not None:
            self.mechanism.record_run(jobs, run)
        p = self.profiles
        index = self.epoch[jobs]
        after = self.work_done[jobs]
        new_index = p.epoch_index(jobs, after)
        gained = p.iterations_done(jobs, new_index, after) - p.iterations_done(jobs, index, before)
        self.epoch[jobs] = new_index
        sizes = p.epoch_facts(jobs, index)[0]
        rates = np.where(run > 0.0, gained / np.where(run > 0.0, run, 1.0), 0.0)
        ledger.samples.record(jobs, k, rates, sizes)
        done = ~np.isnan(completion)
        if done.any():
            ledger.complete(jobs[done], completion[done], k)

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        pending = None
        if self.pending is not None:
            pending = {name: a.copy() for name, a in zip(_PENDING, self.pending, strict=True)}
        return {
            "work_done": self.work_done.copy(),
            "epoch": self.epoch.copy(),
            "rng": self.rng.bit_generator.state,
            "grid": self.grid,
            "pending": pending,
        }

    def restore(self, saved: StateReader) -> None:
        n = (self.ledger.n,)
        work_done = saved.array("work_done", np.float64, n)
        epoch = saved.array("epoch", np.int64, n)
        if np.any((epoch < 0) | (epoch > self.ledger.num_epochs)):
            raise saved.error("epoch", "an epoch index is out of range")
        rng = saved.raw("rng")
        grid = saved.integer("grid", 0)
        pending: _Pending | None = None
        if saved.raw("pending") is not None:
            table = saved.table("pending")
            jobs = table.array("jobs", np.int64, (None,))
            if np.any((jobs < 0) | (jobs >= self.ledger.n)):
                raise table.error("jobs", "a job index is out of range")
            size = jobs.shape
            pending = (
                jobs,
                table.array("run", np.float64, size),
                table.array("completion", np.float64, size),
                table.array("before", np.float64, size),
            )
            table.done()
        saved.done()
        try:
            self.rng.bit_generator.state = rng
        except (TypeError, ValueError, KeyError) as exc:
            raise saved.error("rng", f"not a random generator's state ({exc})") from None
        self.work_done, self.epoch, self.grid, self.pending = work_done, epoch, grid, pending


#: The names of a pending round's arrays in a snapshot.
_PENDING = ("jobs", "run", "completion", "before")
