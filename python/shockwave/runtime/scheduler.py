"""The scheduler of a real run: the round loop over the live cluster, journaled.

:class:`RuntimeScheduler` assembles a real run from its parts and runs it:

* the books (:class:`~shockwave.rounds.ledger.JobLedger`) and, for an allocation policy, the
  round mechanism asked every round (:class:`~shockwave.rounds.allocation.EveryRound`);
* the live cluster (:class:`~shockwave.runtime.live_cluster.LiveCluster`) over the jobs'
  processes (:class:`~shockwave.runtime.processes.JobProcesses`);
* the round loop (:class:`~shockwave.rounds.loop.RoundLoop`), the same loop as every
  simulation's, with the journal (:class:`~shockwave.runtime.journal.JournalWriter`) as its
  observer.

**Resume.** A killed or interrupted scheduler resumes from its journal like a simulation from
its checkpoint: the round loop restores the latest snapshot (the books, the mechanism, the jobs'
records and the policy's own state). The policy's journaled calls are also replayed into the
policy, reset, as a check (``RunResult.replay_divergence``); it then takes the snapshot's state
back. The round that was in flight is
lost; its jobs resume from their checkpoints.

**Typed slots.** With a heterogeneous cluster (``RuntimeConfig.cluster``) the policy is a typed
one (:func:`~shockwave.heterogeneous.registry.make_typed_policy`), asked every round through
the typed allocator (:class:`~shockwave.heterogeneous.allocation.TypedRounds`, ``every-round``,
as the ``exact`` mechanics) over the jobs' planned speed on each type
(:mod:`shockwave.runtime.typed_slots`); every gang runs on slots of the type it chose.

**Interruption.** Ctrl-C (or SIGTERM) tells every running job to checkpoint and stop, and the
run ends with a result marked incomplete; it can be resumed like a killed one. Any other error
(a policy error, a full disk) also stops every job with a checkpoint before it is raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.job.spec import SlotKind
from shockwave.persistence import StateFormatError
from shockwave.rounds.allocation import AllocationRounds, EveryRound
from shockwave.rounds.ledger import JobLedger
from shockwave.rounds.loop import RoundLoop, check_policy
from shockwave.rounds.snapshot import RoundSnapshot
from shockwave.runtime.config import RuntimeConfig
from shockwave.runtime.executor import Executor, job_launch
from shockwave.runtime.journal import Journal, JournalError, JournalRound, JournalWriter
from shockwave.runtime.journal import replay_divergence as replayed
from shockwave.runtime.live_cluster import LiveCluster, RunProgressCallback
from shockwave.runtime.processes import JobProcesses, RunClock
from shockwave.runtime.typed_slots import planned_typed_jobs
from shockwave.scheduling.protocol import AllocationPolicy, Policy
from shockwave.scheduling.record import SimulationRecord
from shockwave.sim.plan_view import PlanView
from shockwave.workload import Workload


class RuntimeScheduler:
    """Runs a workload for real (see the module notes).

    Args:
        workload: runnable jobs (each with a ``run`` spec and ``samples_per_epoch``).
        policy: any policy of the simulator (reset); on a heterogeneous cluster
            (``config.cluster``) a typed one.
        config: the run's settings.
        executor: where job processes run.
        journal: the run's journal (new, or opened for a resume).
        slot_kind: what a slot is.
        progress: live-display callback.
        clock: the wall clock, seconds (tests drive the scheduler with a simulated one).

    Raises:
        ValueError: for a job that cannot run, a bad policy, or a gang larger than the cluster.
        TypeError: for a policy that does not fit the cluster (a typed one on a homogeneous
            cluster, or the reverse).
    """

    def __init__(
        self,
        workload: Workload,
        policy: Policy | TypedAllocationPolicy,
        config: RuntimeConfig,
        executor: Executor,
        journal: Journal,
        slot_kind: SlotKind,
        progress: RunProgressCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if config.cluster is None or not isinstance(policy, TypedAllocationPolicy):
            check_policy(policy)
        if config.cluster is not None and not isinstance(policy, TypedAllocationPolicy):
            raise TypeError(
                f"a heterogeneous cluster ({config.cluster}) runs a typed policy "
                f"(shockwave.heterogeneous.make_typed_policy), got {type(policy).__name__}"
            )
        for job in workload.jobs:
            job_launch(job, 0, (0,), slot_kind, "")  # refuses a job that cannot run
        self.workload = workload
        self.policy = policy
        self.config = config
        self.executor = executor
        self.journal = journal
        self.slot_kind = slot_kind
        ledger = JobLedger(workload, config.gpus)
        plan = PlanView(ledger.jobs)
        typed = None
        allocation: AllocationRounds | TypedRounds | None = None
        if config.cluster is not None:
            assert isinstance(policy, TypedAllocationPolicy)
            policy.check_jobs(ledger.job_ids.tolist(), ledger.gang.tolist())
            typed = planned_typed_jobs(ledger, plan, config.cluster)
            allocation = TypedRounds(
                ledger,
                typed,
                policy,
                cadence="every-round",
                round_seconds=float(config.round_seconds),
                recompute_interval_seconds=config.recompute_interval_seconds,
                seed=0,
            )
        elif isinstance(policy, AllocationPolicy):
            allocation = EveryRound(
                ledger.n,
                float(config.round_seconds),
                config.gpus,
                config.recompute_interval_seconds,
            )
        self.clock = RunClock(clock, base=float(ledger.arrival[0]), started=clock())
        self.processes = JobProcesses(
            ledger.jobs,
            ledger.job_ids,
            plan.regimes,
            config,
            executor,
            journal,
            slot_kind,
            self.clock,
        )
        self.ledger = ledger
        self.typed = typed
        self.world = LiveCluster(ledger, config, self.processes, allocation, plan, progress, typed)
        self.loop = RoundLoop(
            ledger,
            self.world,
            policy,
            round_seconds=config.round_seconds,
            allocation=allocation,
            observers=[JournalWriter(journal)],
        )
        #: the run was interrupted (Ctrl-C, SIGTERM) before every job ended
        self.incomplete = False
        #: rounds whose replayed policy answer differed from the journal's, on resume
        self.replay_divergence: list[int] = []
        #: the trace time the last job ended (or the run stopped), seconds
        self.makespan = 0.0

    def restore(self, rounds: list[JournalRound], snapshot: object) -> None:
        """Continue a journaled run from its latest snapshot (see the module notes).

        Raises:
            JournalError: naming the journal, for a snapshot or a journaled round that does
                not fit this run.
        """
        where = f"{self.journal.path}: the snapshot"
        try:
            restored = RoundSnapshot.from_data(snapshot, where)
            self.loop.restore(restored, where)
        except StateFormatError as exc:
            raise JournalError(str(exc)) from None
        # the check replays into the policy itself (reset), which then takes the snapshot back
        # (a typed policy's questions are not journaled: the snapshot alone restores it)
        try:
            if not isinstance(self.policy, TypedAllocationPolicy):
                self.replay_divergence = replayed(
                    self.policy, rounds, self.ledger.view, self.ledger.samples
                )
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise JournalError(
                f"{self.journal.path}: a journaled round does not fit this run ({exc})"
            ) from None
        self.policy.reset()
        self.policy.restore(restored.policy)
        self.processes.round_index = self.loop.round_index
        self.journal.event("resumed", round_index=self.loop.round_index)

    def execute(self) -> None:
        """Run the jobs for real until every one has finished or failed (Ctrl-C: see the
        module notes)."""
        processes = self.processes
        for directory in (processes.checkpoint_path(0).parent, processes.log_path(0).parent):
            directory.mkdir(parents=True, exist_ok=True)
        self.clock.started = self.clock.wall()
        try:
            self.loop.run()
        except KeyboardInterrupt:
            self.incomplete = True
            self.journal.event("interrupted", round_index=processes.round_index)
            processes.stop_everything()
        except BaseException as exc:  # a policy error, a full disk: no job loses its work
            self.journal.event(
                "error", round_index=processes.round_index, detail=f"{type(exc).__name__}: {exc}"
            )
            processes.stop_everything()
            raise
        finally:
            self.journal.flush()
            self.executor.close()
        self.makespan = self.world.makespan()

    def record(self, wall_seconds: float) -> SimulationRecord:
        """The raw record of the run."""
        return self.ledger.record(
            policy_name=self.policy.name,
            mechanics=self.world.mechanics,
            round_seconds=self.config.round_seconds,
            seed=0,
            makespan=self.makespan,
            wall_seconds=wall_seconds,
            gpu_busy_seconds=None,
        )
