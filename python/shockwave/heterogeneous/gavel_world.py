"""Gavel's simulator on a typed cluster (its ``scheduler.py``, commit c4fa400) as a cluster world.

What happens at round boundary ``k``, as Gavel's ``simulate`` (``docs/simulator.md``,
"Heterogeneous clusters", names every rule; steps 1 and 2 are
:meth:`GavelTypedWorld.close_round`, 3 to 5 the round loop's and the allocator's, 6
:meth:`GavelTypedWorld.run_round`):

1. the clock moves to the latest finish time of the previous round's runs (the round ends when
   its slowest run ends), or, when nothing ran, to the next arrival (with no arrival left,
   Gavel forgets its last reset:
   :meth:`~shockwave.heterogeneous.allocation.TypedRounds.forget_reset`);
2. the previous round's runs are processed latest finish first (then jobs before pairs, by job
   ids): execution time ``finish - round start``; a run fails when it made no progress on some
   GPU of its gang (``steps // gang <= 0``): after 5 failures in a row the job is dropped;
   otherwise the steps count, the execution time goes to the entry's counter on its type, and
   a job with no steps left completes at its finish time;
3. arrivals up to the clock are admitted;
4. the allocation is recomputed when due and the typed mechanism picks ``(entry, type)`` pairs
   (:class:`~shockwave.heterogeneous.allocation.TypedRounds`, ``on-changes``);
5. Gavel's placement puts the round's gangs on GPUs and counts its lease extensions
   (:mod:`shockwave.heterogeneous.placement`);
6. each chosen job runs ``min(int(T[i, k] tau), steps left)`` steps, finishing at
   ``now + steps / T[i, k]`` (a pair at its co-located throughputs).

A job that follows its epoch profiles (a native workload's, adapting or not:
:mod:`~shockwave.heterogeneous.typed_profiles`) runs along its profile on type ``k`` for at most
``tau`` seconds instead: its steps are the whole iterations it reaches (all it has left when its
last epoch ends first) and it finishes when that stretch of its profile ends; a run that fails
leaves its epoch where it was, and a job keeps its epoch when it moves to another type (no
restart penalty, as for static jobs). Packing policies take static jobs only (co-located
throughputs come from a throughput table).

When the cluster empties before a later arrival, Gavel still holds a boundary with no job (it
recomputes there when due, over no job): :meth:`GavelTypedWorld.idle_until` keeps it. No
restart penalty, no batch-size adaptation, no over-time cut-off: Gavel's simulator has none.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.heterogeneous.allocation import TypedRounds, decision_entries
from shockwave.heterogeneous.mechanism import Entry
from shockwave.heterogeneous.placement import GavelPlacement
from shockwave.heterogeneous.typed_jobs import TypedJobs
from shockwave.heterogeneous.typed_world import TypedWorld
from shockwave.persistence import StateReader
from shockwave.rounds.ledger import JobBooks
from shockwave.rounds.world import Decision
from shockwave.scheduling.config import GAVEL_MAX_FAILED_ATTEMPTS
from shockwave.scheduling.errors import SimulationStalledError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: A run in flight: (finish time, entry, type, steps of each job of the entry).
_Run = tuple[float, Entry, int, tuple[int, ...]]


class GavelTypedWorld(TypedWorld):
    """Gavel's simulator mechanics on a typed cluster (see the module notes)."""

    original_quirks = True
    progress_counter = "steps"
    mechanics = "gavel"

    def __init__(
        self, books: JobBooks, jobs: TypedJobs, allocation: TypedRounds, round_seconds: float
    ) -> None:
        super().__init__(books, jobs, allocation, round_seconds)
        n = len(jobs)
        self.failures = np.zeros(n, dtype=np.int64)
        self.placement = GavelPlacement(jobs.cluster.counts, jobs.cluster.server_sizes)
        self.now = float(jobs.arrival[0])
        self.round_start = 0.0
        self.round_end: float | None = None
        self.running: list[_Run] = []
        #: for jobs that follow their profiles: the position a run in flight reaches
        self.next_epoch = np.zeros(n, dtype=np.int64)
        self.next_fraction = np.zeros(n, dtype=np.float64)

    # ---------------------------------------------------------------------------- clock
    def close_round(self, round_index: int) -> float:
        books = self.books
        queue_empty = books.next_arrival >= books.n
        if queue_empty and not self.running:
            self.allocation.forget_reset()
        latest = max((run[0] for run in self.running), default=0.0)
        if latest > 0.0:
            if self.round_end is not None:
                self.round_start = self.round_end
            self.round_end = latest
            self.now = latest
        elif not queue_empty:
            self.now = float(books.arrival[books.next_arrival])
        ids = books.job_ids
        # latest finish first, then by entry (Gavel's heap: jobs before pairs, by job ids)
        self.running.sort(key=lambda r: (-r[0], len(r[1]), *(int(ids[j]) for j in r[1])))
        for finish, entry, k, steps in self.running:
            self._process_run(round_index, entry, k, steps, finish, finish - self.round_start)
        self.running = []
        return self.now

    def idle_until(self, arrival: float, round_index: int) -> float:
        # Gavel's loop holds a boundary with no job active, then moves to the arrival.
        self.allocation.empty_boundary(self, self.now)
        self.rounds += 1
        self.now = arrival
        return arrival

    def run_round(self, round_index: int, now: float, decision: Decision) -> None:
        runs = decision_entries(decision)
        done = self.books.done
        self.placement.place(
            runs,
            gang=lambda e: int(self.jobs.gang[e[0]]),
            allocated=lambda e: True,
            active=lambda e: not all(done[j] for j in e),
            type_order=range(self.jobs.cluster.num_types),
        )
        self.running = [self._dispatch(entry, k, now) for entry, k in runs]
        self.rounds += 1
        books = self.books
        if not self.running and books.next_arrival >= books.n and not self.allocation.changed:
            active = int(np.count_nonzero(books.admitted & ~books.done))
            raise SimulationStalledError(
                f"{self.allocation.policy.name}: {active} job(s) are active but none can run "
                "and nothing will change (Gavel would loop forever here)"
            )

    def makespan(self) -> float:
        return self.now

    # ------------------------------------------------------------------------- the runs
    def _dispatch(self, entry: Entry, k: int, now: float) -> _Run:
        """Steps and finish time of one run (a pair runs at its co-located throughputs)."""
        tau = self.round_seconds
        if self.jobs.profiles is not None:
            return self._dispatch_along_profile(entry[0], k, now)
        if len(entry) == 1:
            rates = [float(self.throughput_by_type(np.asarray(entry))[0, k])]
        else:
            pairs = self.allocation.mechanism.pairs
            assert pairs is not None
            rates = pairs.throughput[pairs.slot[entry], k].tolist()
        steps = []
        finish = now
        total = self.jobs.total_steps
        for job, thr in zip(entry, rates, strict=True):
            count = min(int(thr * tau), int(total[job] - self.steps_run[job]))
            steps.append(count)
            finish = max(finish, now + count / thr)
        return finish, entry, k, tuple(steps)

    def _dispatch_along_profile(self, job: int, k: int, now: float) -> _Run:
        """A run of at most ``tau`` seconds along the job's profile on type ``k`` (module
        notes): its whole iterations and the time that stretch takes."""
        profiles = self.jobs.profiles
        assert profiles is not None
        one = np.array([job], dtype=np.int64)
        run, finishes, epoch, fraction = profiles.advance(
            one, np.array([k], dtype=np.int64), self.epoch[one], self.fraction[one],
            np.array([self.round_seconds]),
        )  # fmt: skip
        total = int(self.jobs.total_steps[job])
        reached = total
        if not finishes[0]:
            done = float(profiles.iterations_done(one, epoch, fraction)[0])
            reached = min(int(np.floor(done)), total)
        self.next_epoch[job], self.next_fraction[job] = epoch[0], fraction[0]
        return now + float(run[0]), (job,), k, (reached - int(self.steps_run[job]),)

    def _process_run(
        self,
        round_index: int,
        entry: Entry,
        k: int,
        steps: tuple[int, ...],
        finish: float,
        execution: float,
    ) -> None:
        """One finished run: its steps, its time on type ``k``, completions and failures."""
        books, mechanism = self.books, self.allocation.mechanism
        gang = int(books.gang[entry[0]])
        if any(s // gang <= 0 for s in steps) or execution <= 0.0:
            # some GPU of the gang made no progress: a job's run fails (a pair's just ends)
            self.allocation.note_change()
            if len(entry) > 1:
                return
            job = entry[0]
            self.failures[job] += 1
            if self.failures[job] >= GAVEL_MAX_FAILED_ATTEMPTS:
                books.dropped[job] = True
                books.complete(np.array([job], dtype=np.int64), np.array([finish]), round_index)
                mechanism.remove(job)
            return
        completed: list[int] = []
        for job, count in zip(entry, steps, strict=True):
            if len(entry) == 1:
                self.failures[job] = 0
            self.steps_run[job] += count
            if self.jobs.profiles is not None:
                self.epoch[job], self.fraction[job] = self.next_epoch[job], self.next_fraction[job]
            self.gpu_seconds[job, k] += execution * gang
            books.service[job] += execution
            if self.jobs.total_steps[job] - self.steps_run[job] <= 0:
                completed.append(job)
        mechanism.record_run(entry, k, execution)
        self.busy_seconds[k] += execution * gang
        if completed:
            self.allocation.note_change()
            done = np.asarray(completed, dtype=np.int64)
            books.complete(done, np.full(done.shape, finish), round_index)
            for job in completed:
                mechanism.remove(job)

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        return {
            "steps_run": self.steps_run.copy(),
            "gpu_seconds": self.gpu_seconds.copy(),
            "busy_seconds": self.busy_seconds.copy(),
            "failures": self.failures.copy(),
            "epoch": self.epoch.copy(),
            "fraction": self.fraction.copy(),
            "next_epoch": self.next_epoch.copy(),
            "next_fraction": self.next_fraction.copy(),
            "now": self.now,
            "round_start": self.round_start,
            "round_end": self.round_end,
            "rounds": self.rounds,
            "running": [
                [finish, list(entry), k, list(steps)] for finish, entry, k, steps in self.running
            ],
            "placement": self.placement.snapshot(),
        }

    def restore(self, saved: StateReader) -> None:
        n, k = self.gpu_seconds.shape
        steps_run = saved.array("steps_run", np.int64, (n,))
        gpu_seconds = saved.array("gpu_seconds", np.float64, (n, k))
        busy_seconds = saved.array("busy_seconds", np.float64, (k,))
        failures = saved.array("failures", np.int64, (n,))
        position = {}
        for name in ("epoch", "next_epoch"):
            position[name] = saved.array(name, np.int64, (n,))
            if np.any(position[name] < 0):
                raise saved.error(name, "an epoch index is out of range")
        for name in ("fraction", "next_fraction"):
            position[name] = saved.array(name, np.float64, (n,))
            if np.any(~((position[name] >= 0.0) & (position[name] <= 1.0))):
                raise saved.error(name, "a fraction of an epoch is outside [0, 1]")
        now = saved.number("now")
        round_start = saved.number("round_start")
        round_end = None if saved.raw("round_end") is None else saved.number("round_end")
        rounds = saved.integer("rounds", 0)
        running = _runs(saved, n, k)
        self.placement.restore(saved.table("placement"), n)
        saved.done()
        self.steps_run, self.gpu_seconds, self.busy_seconds = steps_run, gpu_seconds, busy_seconds
        self.failures, self.now, self.round_start = failures, now, round_start
        self.round_end, self.rounds, self.running = round_end, rounds, running
        self.epoch, self.fraction = position["epoch"], position["fraction"]
        self.next_epoch, self.next_fraction = position["next_epoch"], position["next_fraction"]


def _runs(saved: StateReader, num_jobs: int, num_types: int) -> list[_Run]:
    """The runs in flight of a snapshot, checked."""
    raw = saved.raw("running")
    if not isinstance(raw, list):
        raise saved.error("running", "expected a list of runs")
    out: list[_Run] = []
    for item in raw:
        ok = isinstance(item, list) and len(item) == 4
        if ok:
            finish, entry, k, steps = item
            ok = (
                isinstance(finish, float)
                and isinstance(entry, list)
                and len(entry) in (1, 2)
                and all(isinstance(j, int) and 0 <= j < num_jobs for j in entry)
                and isinstance(k, int)
                and 0 <= k < num_types
                and isinstance(steps, list)
                and len(steps) == len(entry)
                and all(isinstance(s, int) for s in steps)
            )
        if not ok:
            raise saved.error("running", f"not a run (finish, entry, type, steps): {item!r:.80}")
        out.append((finish, tuple(entry), k, tuple(steps)))
    return out
