"""The ``gavel`` mechanics: a cluster world that replays the original simulator, quirks included.

What happens at round boundary ``k`` (reference notes, section 3; steps 1 to 3 are
:meth:`GavelMechanics.close_round`, 4 and 5 the round loop's, 6 :meth:`GavelMechanics.run_round`):

1. advance the clock to the latest finish time of the jobs dispatched in round ``k - 1`` (rounds
   last ``max_i int(thr_i * tau) / thr_i``, slightly under ``tau``);
2. process those jobs, latest finish first: the restart penalty (20 s off a run longer than
   ``tau - 5`` s of a job absent from round ``k - 2``; round 0 is exempt; the steps shrink by the
   factor ``(exec - 20) / exec``), step accounting, completions at their exact finish time,
   zero-progress "failures" (a job dropped after 5), the throughput sample, the pending batch-size
   change (:mod:`shockwave.sim.runtime_batch_size`);
3. evaluate the runtime batch-size rules of the active jobs (pending flags);
4. admit the jobs that arrived by now;
5. schedule round ``k``: an allocation policy's fractions are recomputed only after an arrival,
   completion or failure **and** at least ``recompute_interval_seconds`` (1,000 s) after the
   previous recompute (the first two recomputes fall at t = 0 and at the first boundary); the
   round mechanism packs gangs; selected jobs that arrived after the last recompute have no
   allocation and are dropped, their GPUs stay idle
   (:class:`~shockwave.rounds.allocation.OnChanges`). A round policy is asked every round and
   its jobs run as returned.
6. dispatch: each job runs ``min(int(thr * tau), remaining)`` steps.

Deviations, only where the original is undefined: when no job runs although jobs are active, the
clock jumps to the next arrival as in the original, or, after the last arrival (where the
original would crash), to the earliest time a recompute is allowed; when the cluster empties
before a later arrival (the original stops there), the simulation continues at that arrival; a
batch-size change to a size whose throughput is 0 is refused like a missing one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.catalog import MODEL_FAMILIES
from shockwave.persistence import StateReader
from shockwave.rounds.allocation import AllocationRounds
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.world import ClusterWorld, Decision, ProgressColumns
from shockwave.scheduling.config import (
    GAVEL_MAX_FAILED_ATTEMPTS,
    GAVEL_OVERTIME_FACTOR,
    GAVEL_PENALTY_MARGIN_SECONDS,
    SimulationConfig,
)
from shockwave.sim.runtime_batch_size import epoch_counter, rescale, wants_change
from shockwave.throughputs import ThroughputTable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class GavelMechanics(ClusterWorld):
    """Replays the original simulator (see the module notes).

    Args:
        ledger: the run's books.
        config: the simulation's settings.
        allocation: the round mechanism of an allocation policy (``None`` for a round policy).

    Raises:
        ValueError: for a workload these mechanics cannot run (no throughput table, jobs
            without step counts, unknown runtime batch-size rules, a zero throughput).
    """

    progress_counter = "steps"
    batch_size_changes = "runtime-rules"
    original_quirks = True
    mechanics = "gavel"

    def __init__(
        self, ledger: JobLedger, config: SimulationConfig, allocation: AllocationRounds | None
    ) -> None:
        workload = ledger.workload
        self.ledger = ledger
        self.config = config
        self.tau = float(config.round_seconds)
        self.allocation = allocation
        self.mechanism = None if allocation is None else allocation.mechanism
        self.jobs = ledger.jobs
        self.gpus = ledger.gpus
        if workload.throughputs is None:
            raise ValueError(
                "the gavel mechanics need the workload's throughput table (read a .trace with "
                "--throughputs, or a native file that carries one)"
            )
        self.table: ThroughputTable = workload.throughputs
        for job in self.jobs:
            if job.total_steps is None or job.samples_per_epoch is None:
                raise ValueError(
                    f"job {job.job_id}: the gavel mechanics need total_steps and "
                    "samples_per_epoch (native files converted from a .trace carry them)"
                )
            if job.mode != "static" and job.model not in MODEL_FAMILIES:
                raise ValueError(
                    f"job {job.job_id}: the gavel mechanics know the runtime batch-size rules of "
                    f"{sorted(MODEL_FAMILIES)} only, not {job.model!r}"
                )
        n = ledger.n
        self.batch_size = np.array([j.initial_batch_size for j in self.jobs], dtype=np.int64)
        self.samples_per_epoch = np.array([j.samples_per_epoch for j in self.jobs], dtype=np.int64)
        self.total_steps = np.array([j.total_steps for j in self.jobs], dtype=np.int64)
        self.steps_run = np.zeros(n, dtype=np.int64)
        self.rates = np.array(
            [self._throughput(i, int(self.batch_size[i])) for i in range(n)], dtype=np.float64
        )
        zero = np.flatnonzero(self.rates <= 0.0)
        if zero.shape[0]:
            job = self.jobs[int(zero[0])]
            raise ValueError(f"job {job.job_id}: its throughput is 0, it could never run")
        self.flag_big = np.zeros(n, dtype=bool)
        self.flag_small = np.zeros(n, dtype=bool)
        self.needs_flag_check = np.zeros(n, dtype=bool)
        self.failures = np.zeros(n, dtype=np.int64)
        self.run_seconds = np.zeros(n, dtype=np.float64)
        # int(duration * 1.5) with duration the profile's runtime (the original's deadline)
        self.overtime_limit = np.array(
            [int(float(d) * GAVEL_OVERTIME_FACTOR) for d in ledger.exclusive], dtype=np.float64
        )
        self.latest_timestamp = np.zeros(n, dtype=np.float64)
        self.gpu_busy = np.zeros(self.gpus, dtype=np.float64)
        self.max_gang = int(ledger.gang.max())
        self.gpu_of = np.full((n, self.max_gang), -1, dtype=np.int64)
        self.placed_last_round = np.zeros(0, dtype=np.int64)
        self._round_start = 0.0
        self._round_end: float | None = None
        self._now = float(ledger.arrival[0])
        self._dispatched = np.zeros(0, dtype=np.int64)
        self._finish = np.zeros(0, dtype=np.float64)
        self._steps = np.zeros(0, dtype=np.int64)

    def _throughput(self, job: int, batch_size: int) -> float:
        info = self.jobs[job]
        try:
            return self.table.isolated(info.model, batch_size, info.gang_size)
        except KeyError as exc:
            raise ValueError(f"job {info.job_id}: {exc.args[0]}") from None

    # --------------------------------------------------------------------------- state
    def progress_columns(self, active: IntArray) -> ProgressColumns:
        per_epoch = -(-self.samples_per_epoch[active] // self.batch_size[active])
        steps_run = self.steps_run[active].astype(np.float64)
        total = self.total_steps[active].astype(np.float64)
        remaining = total - steps_run
        progress = steps_run / per_epoch
        thr = self.rates[active]
        return {
            "epochs_done": np.floor(progress).astype(np.int64),
            "epoch_progress": progress,
            "steps_run": steps_run,
            "total_steps": total,
            "remaining_steps": remaining,
            "batch_size": self.batch_size[active].copy(),
            "throughput": thr.copy(),
            "remaining_seconds": remaining / thr,
        }

    def gpu_busy_seconds(self) -> FloatArray:
        return np.array(self.gpu_busy, dtype=np.float64)

    def throughput(self, active: IntArray) -> FloatArray:
        return self.rates[active]

    # ---------------------------------------------------------------------------- clock
    def close_round(self, round_index: int) -> float:
        """Steps 1 to 3 of the module notes: the clock, the previous round, the batch-size
        rules."""
        dispatched, finish = self._dispatched, self._finish
        # 1. clock
        latest = float(finish.max()) if dispatched.shape[0] else 0.0
        if latest > 0.0:
            if self._round_end is not None:
                self._round_start = self._round_end
            self._round_end = latest
            self._now = latest
        else:
            self._now = self._idle_jump(self._now)
        now = self._now
        # 2. completions of round k - 1
        if dispatched.shape[0]:
            self._process_round(round_index, dispatched, finish, self._steps, self._round_start)
            self._dispatched = np.zeros(0, dtype=np.int64)
        # 3. runtime batch-size rules
        self._evaluate_flags()
        return now

    def admitted(self, jobs: IntArray) -> None:
        self.needs_flag_check[jobs] = True
        if jobs.shape[0]:
            self._note_change()

    def idle_until(self, arrival: float, round_index: int) -> float:
        # the original would stop when the cluster empties; continue at the next arrival
        self._now = arrival
        self._round_end = arrival
        self._note_change()
        return arrival

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        """Step 6: place the round's gangs and dispatch them."""
        chosen = decision.jobs
        self._place(chosen)
        self._dispatched = chosen
        thr = self.rates[chosen]
        full = (thr * self.tau).astype(np.int64)
        self._steps = np.minimum(full, self.total_steps[chosen] - self.steps_run[chosen])
        self._finish = np.maximum(now, now + self._steps / thr)

    def makespan(self) -> float:
        return self._now

    def _note_change(self) -> None:
        if self.allocation is not None:
            self.allocation.note_change()

    def _idle_jump(self, now: float) -> float:
        """Where the clock goes when no job ran in the previous round."""
        upcoming = self.ledger.pending_arrival_time()
        if upcoming is not None:
            return upcoming
        if self.mechanism is None:
            return now + self.tau  # a round policy is asked again at the next round
        return max(now, self.mechanism.last_reset_time + self.config.recompute_interval_seconds)

    # ------------------------------------------------------------------ round processing
    def _process_round(
        self,
        k: int,
        jobs: IntArray,
        finish: FloatArray,
        steps: IntArray,
        round_start: float,
    ) -> None:
        tau = self.tau
        ledger = self.ledger
        # The original pops its heap: latest finish first, then ascending job id.
        order = np.lexsort((jobs, -finish))
        jobs, finish, steps = jobs[order], finish[order], steps[order]
        execution = finish - round_start
        ran_before = ledger.previous_round_run[jobs] == k - 2
        penalised = (
            (k != 1)
            & ~ran_before
            & (execution != 0.0)
            & (tau - GAVEL_PENALTY_MARGIN_SECONDS < execution)
        )
        penalty = self.config.restart_penalty_seconds
        factor = np.where(
            penalised, (execution - penalty) / np.where(execution != 0, execution, 1.0), 1.0
        )
        steps = np.where(penalised, (steps * factor).astype(np.int64), steps)
        execution = np.where(penalised, execution - penalty, execution)
        self.latest_timestamp[jobs] = finish
        self.run_seconds[jobs] += execution
        over_time = self.run_seconds[jobs] > self.overtime_limit[jobs]
        gang = ledger.gang[jobs]
        smallest_share = np.where(gang > 1, steps // gang, steps)
        failed = (execution <= 0.0) & (smallest_share <= 0)
        ok = ~failed

        good = jobs[ok]
        self.failures[good] = 0
        self.steps_run[good] += steps[ok]
        finished = ok & ((self.total_steps[jobs] - self.steps_run[jobs] <= 0) | over_time)
        ledger.service[good] += execution[ok]
        if self.mechanism is not None:
            self.mechanism.record_run(good, execution[ok])
        placed = self.gpu_of[good]  # each job's GPUs, padded with -1
        held = placed >= 0
        self.gpu_busy[placed[held]] += np.broadcast_to(execution[ok][:, None], placed.shape)[held]
        ledger.round_busy[k - 1] = float(np.sum(execution[ok] * gang[ok]))

        self.failures[jobs[failed]] += 1
        dropped = failed & (self.failures[jobs] >= GAVEL_MAX_FAILED_ATTEMPTS)
        if failed.any():
            self._note_change()

        rates = np.where(execution > 0.0, steps / np.where(execution > 0.0, execution, 1.0), 0.0)
        ledger.samples.record(jobs, k, rates, self.batch_size[jobs])
        self.needs_flag_check[jobs] = True
        for job in jobs[self.flag_big[jobs] | self.flag_small[jobs]].tolist():
            self._apply_flag(job)
        leaving = jobs[finished | dropped]
        if leaving.shape[0]:
            ledger.dropped[jobs[dropped]] = True
            ledger.complete(leaving, self.latest_timestamp[leaving], k)
            self._note_change()

    def _apply_flag(self, job: int) -> None:
        info = self.jobs[job]
        change = rescale(
            info.mode,
            info.model,
            info.initial_batch_size,
            int(self.batch_size[job]),
            bool(self.flag_big[job]),
            int(self.total_steps[job]),
            int(self.steps_run[job]),
            int(self.samples_per_epoch[job]),
        )
        self.flag_big[job] = False
        self.flag_small[job] = False
        if change is None:
            return
        key = (info.model, change.batch_size, info.gang_size)
        if key not in self.table or self.table.entries[key] <= 0.0:
            return  # the original reverts a change to a batch size it has no throughput for
        self.batch_size[job] = change.batch_size
        self.rates[job] = self.table.entries[key]
        self.total_steps[job] = change.total_steps
        self.steps_run[job] = change.steps_run

    def _evaluate_flags(self) -> None:
        """The original evaluates every active job; only jobs whose state changed can differ."""
        ledger = self.ledger
        check = np.flatnonzero(self.needs_flag_check & ledger.admitted & ~ledger.done)
        self.needs_flag_check[check] = False
        for job in check.tolist():
            info = self.jobs[job]
            if info.mode == "static":
                continue
            counter = epoch_counter(
                int(self.steps_run[job]),
                int(self.samples_per_epoch[job]),
                int(self.batch_size[job]),
            )
            big, small = wants_change(
                info.mode,
                info.model,
                info.initial_batch_size,
                info.gang_size,
                int(self.batch_size[job]),
                counter,
            )
            self.flag_big[job] |= big
            self.flag_small[job] |= small

    # -------------------------------------------------------------------------- placement
    def _place(self, chosen: IntArray) -> None:
        """Assign GPU ids as the original does: larger gangs first, a job keeps its previous
        GPUs when they are all still free, others take the lowest free ids."""
        taken = np.zeros(self.gpus, dtype=bool)
        pointer = 0
        n = self.ledger.n
        kept_before = np.zeros(n, dtype=bool)
        kept_before[self.placed_last_round] = True
        gangs = self.ledger.gang[chosen]
        for gang in sorted(set(gangs.tolist()), reverse=True):
            group = chosen[gangs == gang]
            candidates = group[kept_before[group]]
            if candidates.shape[0]:
                old = self.gpu_of[candidates, :gang]
                keep = ~taken[old].any(axis=1)
                kept = candidates[keep]
                taken[old[keep].reshape(-1)] = True
                self.gpu_of[kept, :gang] = old[keep]
                placed = np.zeros(n, dtype=bool)
                placed[kept] = True
                fresh = group[~placed[group]]
            else:
                fresh = group
            if fresh.shape[0]:
                free = np.flatnonzero(~taken[pointer:]) + pointer
                needed = fresh.shape[0] * gang
                ids = free[:needed]
                taken[ids] = True
                pointer = int(ids[-1]) + 1
                self.gpu_of[fresh, :gang] = ids.reshape(fresh.shape[0], gang)
        self.placed_last_round = chosen.copy()

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name).copy() for name in _STATE_ARRAYS}
        out.update(
            round_start=self._round_start,
            round_end=self._round_end,
            now=self._now,
            dispatched=self._dispatched.copy(),
            finish=self._finish.copy(),
            steps=self._steps.copy(),
        )
        return out

    def restore(self, saved: StateReader) -> None:
        n = self.ledger.n
        shapes: dict[str, tuple[int | None, ...]] = {
            "gpu_busy": (self.gpus,),
            "gpu_of": (n, self.max_gang),
            "placed_last_round": (None,),
        }
        arrays = {
            name: saved.array(name, dtype, shapes.get(name, (n,)))
            for name, dtype in _STATE_ARRAYS.items()
        }
        if np.any(arrays["rates"] <= 0.0) or np.any(arrays["batch_size"] <= 0):
            raise saved.error("rates", "a throughput or a batch size is not positive")
        gpu_of = arrays["gpu_of"]
        if np.any((gpu_of < -1) | (gpu_of >= self.gpus)):
            raise saved.error("gpu_of", "a GPU index is out of range")
        placed = arrays["placed_last_round"]
        if np.any((placed < 0) | (placed >= n)):
            raise saved.error("placed_last_round", "a job index is out of range")
        round_start = saved.number("round_start")
        round_end = None if saved.raw("round_end") is None else saved.number("round_end")
        now = saved.number("now")
        dispatched = saved.array("dispatched", np.int64, (None,))
        if np.any((dispatched < 0) | (dispatched >= n)):
            raise saved.error("dispatched", "a job index is out of range")
        size = dispatched.shape
        finish = saved.array("finish", np.float64, size)
        steps = saved.array("steps", np.int64, size)
        saved.done()
        for name, value in arrays.items():
            setattr(self, name, value)
        self._round_start, self._round_end, self._now = round_start, round_end, now
        self._dispatched, self._finish, self._steps = dispatched, finish, steps


#: The arrays of the world's state in a snapshot, with their dtypes.
_STATE_ARRAYS: dict[str, type[np.generic]] = {
    "batch_size": np.int64,
    "rates": np.float64,
    "total_steps": np.int64,
    "steps_run": np.int64,
    "flag_big": np.bool_,
    "flag_small": np.bool_,
    "needs_flag_check": np.bool_,
    "failures": np.int64,
    "run_seconds": np.float64,
    "latest_timestamp": np.float64,
    "gpu_busy": np.float64,
    "gpu_of": np.int64,
    "placed_last_round": np.int64,
}
