"""Gavel's simulator loop on a typed cluster (Gavel's ``scheduler.py``, commit c4fa400).

One iteration per round boundary, as Gavel's ``simulate`` (``docs/simulator.md``, "Heterogeneous
clusters", names every rule):

1. the clock moves to the latest finish time of the previous round's runs (the round ends when
   its slowest run ends), or, when nothing ran, to the next arrival;
2. the previous round's runs are processed latest finish first (then by job id): execution time
   ``finish - round start``; a run fails when it made no progress on some GPU of its gang
   (``steps // gang <= 0``): after 5 failures in a row the job is dropped; otherwise the steps
   count, the execution time goes to the job's counter on its type, and a job with no steps left
   completes at its finish time;
3. arrivals up to the clock are admitted;
4. the allocation is recomputed only after an arrival, a completion or a failure **and** at
   least ``recompute_interval_seconds`` (Gavel: 1,920 s) after the previous reset, or when the
   previous reset happened at t = 0 (so the first two happen at the first two boundaries), or
   when the trace has no more arrivals and nothing ran (Gavel then forgets its last reset);
5. the mechanism (:mod:`shockwave.heterogeneous.mechanism`) picks ``(job, type)`` pairs; jobs
   admitted since the last reset are dropped after the scan (their GPUs idle for the round);
6. each chosen job runs ``min(int(T[i, k] tau), steps left)`` steps, finishing at
   ``now + steps / T[i, k]``.

No restart penalty, no batch-size adaptation, no over-time cut-off: Gavel's simulator has none.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.mechanism import Entry, TypedRoundMechanism
from shockwave.heterogeneous.placement import GavelPlacement
from shockwave.heterogeneous.protocol import TypedAllocationPolicy, TypedAllocationState
from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.scheduling.config import GAVEL_MAX_FAILED_ATTEMPTS
from shockwave.scheduling.errors import PolicyOutputError, SimulationStalledError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Gavel's ``minimum_time_between_allocation_resets`` (its scheduler's default), seconds.
GAVEL_RESET_INTERVAL_SECONDS = 1920.0
#: Tolerance on returned shares (a solver's 1 + 1e-12 is accepted and clipped).
_SHARE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class HeterogeneousConfig:
    """Settings of a heterogeneous simulation under Gavel's mechanics.

    Attributes:
        round_seconds: round length tau (Gavel's ``time_per_iteration``; its default is 360 s).
        seed: Gavel's ``--seed``: the type-order shuffles use ``random.Random(seed + 5)``,
            ``fifo-agnostic`` ``random.Random(seed)``.
        recompute_interval_seconds: least time between two resets of the mechanism's counters
            (Gavel: 1,920 s).
        max_rounds: stop with :class:`SimulationStalledError` after this many round boundaries
            (``None``: a bound derived from the workload).
    """

    round_seconds: float = 360.0
    seed: int = 0
    recompute_interval_seconds: float = GAVEL_RESET_INTERVAL_SECONDS
    max_rounds: int | None = None

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


#: A run in flight: (finish time, entry, type, steps of each job of the entry).
_Run = tuple[float, Entry, int, tuple[int, ...]]


class GavelTypedEngine:
    """Replays Gavel's simulator on ``jobs`` (see the module notes)."""

    def __init__(
        self, jobs: TypedJobs, policy: TypedAllocationPolicy, config: HeterogeneousConfig
    ) -> None:
        policy.check_jobs(jobs.job_ids.tolist(), jobs.gang.tolist())
        self.jobs = jobs
        self.policy = policy
        self.config = config
        self.tau = float(config.round_seconds)
        self.n = len(jobs)
        self.types = jobs.cluster.types
        self.counts = np.asarray(jobs.cluster.counts, dtype=np.int64)
        self.throughput = jobs.throughput
        self.gang = jobs.gang
        self.arrival = jobs.arrival
        self.total_steps = jobs.total_steps
        n, k = self.throughput.shape
        self.steps_run = np.zeros(n, dtype=np.int64)
        self.failures = np.zeros(n, dtype=np.int64)
        self.admitted = np.zeros(n, dtype=bool)
        self.done = np.zeros(n, dtype=bool)
        self.dropped = np.zeros(n, dtype=bool)
        self.completion = np.full(n, np.nan)
        self.latest = np.zeros(n, dtype=np.float64)
        self.gpu_seconds = np.zeros((n, k), dtype=np.float64)
        self.busy_seconds = np.zeros(k, dtype=np.float64)
        self.rounds_run = np.zeros(n, dtype=np.int64)
        self.mechanism = TypedRoundMechanism(
            n, k, self.tau, jobs.colocated if policy.packs_jobs else None
        )
        self.placement = GavelPlacement(jobs.cluster.counts, jobs.cluster.server_sizes)
        self.type_rng = random.Random(config.seed + 5)
        span = float(self.arrival[-1] - self.arrival[0])
        slowest = np.where(self.throughput > 0.0, self.throughput, np.inf).min(axis=1)
        work = float(np.sum(self.total_steps / slowest))
        self.max_rounds = config.max_rounds or int((work + span) / self.tau) + 10 * n + 1000
        self.policy_seconds = 0.0

    def run(self) -> HeterogeneousResult:
        started = time.perf_counter()
        self.policy.reset()
        mechanism = self.mechanism
        ids = self.jobs.job_ids
        now = float(self.arrival[0])
        round_start = 0.0
        round_end: float | None = None
        running: list[
            tuple[float, Entry, int, tuple[int, ...]]
        ] = []  # (finish, entry, type, steps)
        next_arrival = 0
        remaining = self.n
        dirty = True
        rounds = 0
        while remaining > 0:
            if rounds >= self.max_rounds:
                raise SimulationStalledError(
                    f"{self.policy.name}: not finished after {rounds} rounds "
                    f"({self.n - remaining} of {self.n} jobs done)"
                )
            queue_empty = next_arrival >= self.n
            if queue_empty and not running:
                mechanism.last_reset_time = 0.0  # Gavel forces a reset
            latest = max((r[0] for r in running), default=0.0)
            if latest > 0.0:
                if round_end is not None:
                    round_start = round_end
                round_end = latest
                now = latest
            elif not queue_empty:
                now = float(self.arrival[next_arrival])
            # 2. the previous round's runs: latest finish first, then by entry (Gavel's heap:
            # jobs before pairs, by job ids)
            running.sort(key=lambda r: (-r[0], len(r[1]), *(int(ids[j]) for j in r[1])))
            for finish, entry, k, steps in running:
                changed, finished = self._process_run(entry, k, steps, finish, finish - round_start)
                dirty = dirty or changed
                remaining -= finished
            running = []
            # 3. arrivals
            end = int(np.searchsorted(self.arrival, now, side="right"))
            if end > next_arrival:
                new = np.arange(next_arrival, end, dtype=np.int64)
                before = np.flatnonzero(self.admitted & ~self.done).astype(np.int64)
                self.admitted[new] = True
                mechanism.admit(new, before, self.gang, ids)
                next_arrival = end
                dirty = True
            if remaining == 0:
                break
            active = np.flatnonzero(self.admitted & ~self.done).astype(np.int64)
            # 4. recompute
            since = now - mechanism.last_reset_time
            due = since >= self.config.recompute_interval_seconds
            if dirty and (due or mechanism.last_reset_time == 0):
                mechanism.reset(active, now)
                single, pairs = self._allocate(now, active)
                mechanism.set_allocation(active, single, pairs)
                dirty = False
            # 5. the scan, and Gavel's placement (for its lease-extension count)
            order = list(range(len(self.types)))
            if self.policy.shuffles_type_order:
                self.type_rng.shuffle(order)
            chosen = mechanism.select(
                active,
                self.gang[active],
                self.throughput[active],
                self.counts,
                order,
                run_zero_priority=self.policy.runs_zero_priority_jobs,
            )
            self.placement.place(
                chosen,
                gang=lambda e: int(self.gang[e[0]]),
                allocated=mechanism.allocated,
                active=lambda e: not all(self.done[j] for j in e),
                type_order=order,
            )
            # 6. dispatch
            for entry, k in chosen:
                if not mechanism.allocated(entry):
                    continue  # created since the last reset: its GPUs idle this round
                running.append(self._dispatch(entry, k, now))
            if not running and queue_empty and active.shape[0] and not dirty:
                raise SimulationStalledError(
                    f"{self.policy.name}: {active.shape[0]} job(s) are active but none can run "
                    "and nothing will change (Gavel would loop forever here)"
                )
            rounds += 1
        return HeterogeneousResult.build(
            self.jobs,
            self.policy,
            self.config,
            makespan=now,
            completion=self.completion,
            dropped=self.dropped,
            gpu_seconds=self.gpu_seconds,
            busy_seconds=self.busy_seconds,
            lease_extension_share=self.placement.extension_share,
            rounds=rounds,
            policy_seconds=self.policy_seconds,
            wall_seconds=time.perf_counter() - started,
        )

    def _dispatch(
        self, entry: Entry, k: int, now: float
    ) -> tuple[float, Entry, int, tuple[int, ...]]:
        """Steps and finish time of one run (a pair runs at its co-located throughputs)."""
        tau = self.tau
        if len(entry) == 1:
            rates = [float(self.throughput[entry[0], k])]
        else:
            assert self.mechanism.pairs is not None
            slot = self.mechanism.pairs.slot[entry]
            rates = self.mechanism.pairs.throughput[slot, k].tolist()
        steps = []
        finish = now
        for job, thr in zip(entry, rates, strict=True):
            count = min(int(thr * tau), int(self.total_steps[job] - self.steps_run[job]))
            steps.append(count)
            finish = max(finish, now + count / thr)
            self.rounds_run[job] += 1
        return finish, entry, k, tuple(steps)

    def _process_run(
        self, entry: Entry, k: int, steps: tuple[int, ...], finish: float, execution: float
    ) -> tuple[bool, int]:
        """One finished run; returns whether it changes the allocation's inputs and how many jobs
        it finished."""
        gang = int(self.gang[entry[0]])
        for job in entry:
            self.latest[job] = finish
        if any(s // gang <= 0 for s in steps) or execution <= 0.0:
            # some GPU of the gang made no progress: a job's run fails (a pair's just ends)
            if len(entry) > 1:
                return True, 0
            job = entry[0]
            self.failures[job] += 1
            if self.failures[job] >= GAVEL_MAX_FAILED_ATTEMPTS:
                self.dropped[job] = True
                self.done[job] = True
                self.mechanism.remove(job)
                return True, 1
            return True, 0
        completed: list[int] = []
        for job, count in zip(entry, steps, strict=True):
            if len(entry) == 1:
                self.failures[job] = 0
            self.steps_run[job] += count
            self.gpu_seconds[job, k] += execution * gang
            if self.total_steps[job] - self.steps_run[job] <= 0:
                completed.append(job)
        self.mechanism.record_run(entry, k, execution)
        self.busy_seconds[k] += execution * gang
        for job in completed:
            self.done[job] = True
            self.completion[job] = finish
            self.mechanism.remove(job)
        return bool(completed), len(completed)

    def _allocate(self, now: float, active: IntArray) -> tuple[FloatArray, FloatArray | None]:
        pairs = self.mechanism.pair_entries()
        row = {int(j): i for i, j in enumerate(active.tolist())}
        state = TypedAllocationState(
            time=now,
            types=self.types,
            counts=self.counts.copy(),
            job_ids=self.jobs.job_ids[active],
            throughput=self.throughput[active],
            gang=self.gang[active],
            weight=self.jobs.weight[active],
            remaining_steps=self.total_steps[active] - self.steps_run[active],
            time_since_arrival=now - self.arrival[active],
            pairs=np.array([[row[a], row[b]] for a, b in pairs], dtype=np.int64).reshape(-1, 2),
            pair_throughput=self.mechanism.pair_throughput(),
        )
        started = time.perf_counter()
        raw = self.policy.allocate(state)
        self.policy_seconds += time.perf_counter() - started
        x = np.asarray(raw, dtype=np.float64)
        rows = active.shape[0] + (len(pairs) if self.policy.packs_jobs else 0)
        expected = (rows, len(self.types))
        if x.shape != expected:
            raise PolicyOutputError(
                f"{self.policy.name}: expected an allocation of shape {expected}, got {x.shape}"
            )
        if not np.all(np.isfinite(x)):
            raise PolicyOutputError(f"{self.policy.name}: the allocation must be finite")
        if np.any(x < -_SHARE_TOLERANCE) or np.any(x > 1.0 + _SHARE_TOLERANCE):
            raise PolicyOutputError(f"{self.policy.name}: shares must lie in [0, 1]")
        x = np.clip(x, 0.0, 1.0)
        n = active.shape[0]
        return x[:n], (x[n:] if self.policy.packs_jobs else None)
