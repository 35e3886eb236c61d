"""The ``exact`` mechanics: principled rounds over exact per-epoch profiles.

* Rounds are a fixed grid, ``tau`` seconds apart from the first arrival; a job that arrives inside
  a round is admitted at the next boundary; rounds in which the cluster is empty are skipped.
* Every round the policy is asked with up-to-date state. An allocation policy's fractions go
  through the round mechanism; the mechanism's time counters are reset (deficits folded) at most
  every ``recompute_interval_seconds``, as Gavel's own scheduler does; the greedy packing runs any
  job that fits, so no GPU idles while a runnable job fits (work conservation).
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

import numpy as np
import numpy.typing as npt

from shockwave.policies.protocol import AllocationPolicy, Policy
from shockwave.sim.config import SimulationConfig
from shockwave.sim.engine import BoundaryHook, Engine, ProgressCallback, ProgressColumns
from shockwave.sim.profile_progress import ProfileProgress
from shockwave.workload import Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ExactEngine(Engine):
    """Simulates the ``exact`` mechanics (see the module notes)."""

    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        config: SimulationConfig,
        progress: ProgressCallback | None,
    ) -> None:
        super().__init__(workload, policy, config, progress)
        self.profiles = ProfileProgress(self.jobs)
        self.work_done = np.zeros(self.n, dtype=np.float64)
        self.epoch = np.zeros(self.n, dtype=np.int64)  # epoch in progress at work_done
        self.rng = np.random.default_rng(config.seed)
        self.makespan = 0.0
        self.start()

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

    def start(self) -> None:
        self._origin = float(self.arrival[0])
        self._grid = 0
        self._k = 0
        self._pending: tuple[IntArray, FloatArray, FloatArray, FloatArray] | None = None

    @property
    def round_index(self) -> int:
        return self._k

    def run(self, until_round: int | None = None, at_boundary: BoundaryHook | None = None) -> bool:
        tau = self.tau
        while self.finished < self.n:
            k = self._k
            if at_boundary is not None:
                at_boundary(k)
            if until_round is not None and k >= until_round:
                return False
            self.check_round_limit(k)
            now = self._origin + self._grid * tau
            if self._pending is not None:
                self._finish_round(k, *self._pending)
                self._pending = None
            self.admit_until(now, k)
            active = self.active()
            if active.shape[0] == 0:
                upcoming = self.pending_arrival_time()
                if upcoming is None:
                    break
                self._grid = int(np.ceil((upcoming - self._origin) / tau))
                continue
            chosen = self._choose(now, k, active)
            self.record_round(k, now, active, chosen)
            self._pending = self._run_round(k, now, chosen)
            self._grid += 1
            self._k += 1
        self.makespan = float(np.nanmax(self.completion_time))
        return True

    def _choose(self, now: float, k: int, active: IntArray) -> IntArray:
        state = self.build_state(now, k, active)
        if self.mechanism is None:
            return np.sort(self.schedule_round(state, active))
        mechanism = self.mechanism
        assert isinstance(self.policy, AllocationPolicy)
        first = k == 0
        if first or now - mechanism.last_reset_time >= self.config.recompute_interval_seconds:
            mechanism.reset_counters(active, now, accrued=True)
        mechanism.set_allocation(active, self.allocate(state))
        chosen = mechanism.select(
            active,
            self.gang[active],
            np.asarray(state.throughput),
            self.gpus,
            run_zero_priority=True,
        )
        mechanism.accrue(active, self.tau)
        return np.sort(chosen)

    def _run_round(
        self, k: int, now: float, jobs: IntArray
    ) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        """Advance the round's jobs; return (jobs, run seconds, completion times, work done)."""
        tau = self.tau
        restarted = (self.previous_round_run[jobs] != k - 1) | (k == 0)
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
        self.service[jobs] += run
        self.round_busy[k - 1] = float(run @ self.gang[jobs])
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
        self.samples.record(jobs, k, rates, sizes)
        done = ~np.isnan(completion)
        if done.any():
            self.complete(jobs[done], completion[done], k)
