"""Run real training jobs under a scheduling policy: the round-based cluster runtime.

The same policies that drive the simulator (every built-in one, or your own, through the same
:class:`~shockwave.scheduling.AllocationPolicy` / ``RoundPolicy`` protocol and
:class:`~shockwave.scheduling.ClusterState`) drive real processes here, under the same round
loop (:mod:`shockwave.rounds`): each round the scheduler builds the state from what the jobs
reported, asks the policy, and grants leases; jobs checkpoint when preempted and resume when
scheduled (:mod:`shockwave.job` is their side). The parts: :mod:`~shockwave.runtime.scheduler`
(the run), :mod:`~shockwave.runtime.live_cluster` (the cluster world),
:mod:`~shockwave.runtime.processes` and :mod:`~shockwave.runtime.lifecycle` (the jobs'
processes and phases), :mod:`~shockwave.runtime.failures` (restarts and kills),
:mod:`~shockwave.runtime.accounting` (reports), :mod:`~shockwave.runtime.journal`.

* :func:`run_workload` runs a workload of runnable jobs (each with a ``run`` spec: a bundled
  family or a user command) and returns a :class:`RunResult`;
* :func:`resume_run` continues a run whose scheduler was killed or interrupted, from its journal;
* executors: ``local`` (default: child processes) and ``ray`` (``pip install 'shockwave[ray]'``);
* on a heterogeneous cluster (``RuntimeConfig(cluster=ClusterSpec.parse("v100:1,p100:1"))``)
  slots are typed: the policy is a typed one (``gavel``, ``themis``, ``fifo``, ...:
  :mod:`shockwave.heterogeneous.registry`) and every gang runs on slots of the type it chose.

A run directory holds ``journal.sqlite`` (every round, durable), ``workload.jsonl`` (the run's
own copy of the workload), ``checkpoints/``, ``logs/`` (each job's output) and ``result.json``.
See ``docs/runtime.md``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shockwave import __version__
from shockwave.atomic import atomic_write_text
from shockwave.errors import OutputError
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.heterogeneous.registry import make_typed_policy, resolve_typed_policy
from shockwave.heterogeneous.workload_check import check_workload_on_cluster
from shockwave.job.spec import SlotKind
from shockwave.policies import make_policy, resolve_policy_name
from shockwave.runtime.config import (
    DEFAULT_RUN_ROUND_SECONDS,
    EXECUTORS,
    RuntimeConfig,
    resolve_slot_kind,
)
from shockwave.runtime.executor import Executor, check_runnable
from shockwave.runtime.journal import Journal, JournalError
from shockwave.runtime.live_cluster import RunProgressCallback, RunStatus
from shockwave.runtime.local_executor import LocalExecutor
from shockwave.runtime.machine_load import CpuLoadMeter
from shockwave.runtime.result import RunResult, run_result
from shockwave.runtime.scheduler import RuntimeScheduler
from shockwave.scheduling.protocol import Policy
from shockwave.traces import read_native, write_native
from shockwave.workload import Workload

__all__ = [
    "DEFAULT_RUN_ROUND_SECONDS",
    "EXECUTORS",
    "JournalError",
    "RunDirectoryBusyError",
    "RunProgressCallback",
    "RunResult",
    "RunStatus",
    "RuntimeConfig",
    "resume_run",
    "run_workload",
]

JOURNAL_NAME = "journal.sqlite"
LOCK_NAME = "lock"
WORKLOAD_NAME = "workload.jsonl"
RESULT_NAME = "result.json"

#: Settings stored in the journal so that a resume runs with the same ones.
_CONFIG_KEYS = (
    "gpus",
    "round_seconds",
    "executor",
    "ray_address",
    "slot_kind",
    "max_restarts",
    "checkpoint_every_seconds",
    "boundary_timeout_seconds",
    "start_timeout_seconds",
    "stop_timeout_seconds",
    "recompute_interval_seconds",
)


def run_workload(
    workload: Workload,
    policy: str | Policy | TypedAllocationPolicy,
    config: RuntimeConfig,
    *,
    policy_parameters: Mapping[str, Any] | None = None,
    progress: RunProgressCallback | None = None,
) -> RunResult:
    """Run ``workload`` for real under ``policy`` (see the module notes).

    Args:
        workload: runnable jobs (``shockwave cluster generate``, or jobs with a ``run`` key).
        policy: a built-in policy's name or a policy instance (a run with an instance can be
            resumed only by passing an equivalent instance to :func:`resume_run`); on a
            heterogeneous cluster (``config.cluster``) a typed policy's name (``gavel``,
            ``themis``, ``fifo``, ...) or instance.
        config: the cluster, the executor and the run directory (created; it must not hold a
            journal already).
        policy_parameters: parameters of a built-in policy given by name.
        progress: called often with the run's :class:`RunStatus` (for a live display).

    Returns:
        The result, also written to ``run_dir/result.json``. A run interrupted by Ctrl-C returns
        a result with ``incomplete = True`` (and re-raises nothing: check the flag).

    Raises:
        ValueError: for a workload that cannot run, a bad policy or setting, or slots the
            machine does not have; on a heterogeneous cluster, naming a GPU type the workload
            does not know or a job no type can run
            (:func:`~shockwave.heterogeneous.workload_check.check_workload_on_cluster`).
        JournalError: if ``run_dir`` already holds a journal.
    """
    if config.cluster is not None:  # bad types and jobs no type can run: before anything
        check_workload_on_cluster(workload, config.cluster)
    if isinstance(policy, str):
        parameters = dict(policy_parameters or {})
        name, instance = _named_policy(policy, parameters, config)
    else:
        if policy_parameters:
            raise ValueError("policy_parameters apply to a policy given by name only")
        name, parameters, instance = f"<instance of {type(policy).__name__}>", {}, policy
    slot_kind = _slot_kind(config)
    for job in workload.jobs:  # everything that can be checked, before anything is written
        check_runnable(job, config.gpus, config.workdir)
    run_dir = config.run_dir
    if (run_dir / JOURNAL_NAME).exists():
        raise JournalError(
            f"{run_dir / JOURNAL_NAME}: a journal already exists (resume it with --resume)"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir)
    try:
        journal = Journal(run_dir / JOURNAL_NAME, create=True)
        text = _workload_text(workload, run_dir / WORKLOAD_NAME)
        journal.set_meta(
            {
                "policy": name,
                "policy_parameters": parameters,
                "config": _config_meta(config),
                "workdir": str(config.workdir),
                "output": None if config.output is None else str(config.output),
                "workload_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "shockwave_version": __version__,
            }
        )
        instance.reset()
        return _execute(workload, instance, config, journal, slot_kind, progress, resume=False)
    finally:
        lock.release()


def resume_run(
    run_dir: str | Path,
    *,
    policy: Policy | TypedAllocationPolicy | None = None,
    progress: RunProgressCallback | None = None,
) -> RunResult:
    """Continue the run in ``run_dir`` from its journal (a killed or interrupted scheduler).

    The settings, the policy and the workload come from the run directory. Jobs resume from
    their checkpoints; the round that was in flight when the scheduler stopped is lost.

    Args:
        run_dir: the run's directory (or its ``journal.sqlite``).
        policy: required if the run was started with a policy instance, else not allowed.
        progress: as for :func:`run_workload`.

    Raises:
        JournalError: for a missing or unreadable journal, or a run that already finished.
    """
    run_dir = Path(os.path.abspath(run_dir))
    if run_dir.name == JOURNAL_NAME:
        run_dir = run_dir.parent
    if not (run_dir / JOURNAL_NAME).is_file():
        raise JournalError(f"{run_dir / JOURNAL_NAME}: no journal to resume")
    lock = RunLock(run_dir)
    try:
        journal = Journal(run_dir / JOURNAL_NAME, create=False)
        meta = journal.meta()
        if meta.get("finished"):
            journal.close()
            raise JournalError(f"{run_dir}: this run has finished; nothing to resume")
        workload = read_native(run_dir / WORKLOAD_NAME)
        try:
            output = meta.get("output")
            config = RuntimeConfig(
                **dict(meta["config"]),
                run_dir=run_dir,
                workdir=Path(meta["workdir"]),
                output=None if output is None else Path(output),
            )
            name = str(meta["policy"])
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(
                f"{journal.path}: the run's settings are unreadable ({exc})"
            ) from None
        if name.startswith("<instance"):
            if policy is None:
                raise JournalError(f"{run_dir}: the run used {name}: pass an equivalent policy")
            instance = policy
        else:
            if policy is not None:
                raise JournalError(f"{run_dir}: the run used the built-in policy {name!r}")
            _, instance = _named_policy(name, meta.get("policy_parameters") or {}, config)
        instance.reset()
        slot_kind = _slot_kind(config)
        return _execute(workload, instance, config, journal, slot_kind, progress, resume=True)
    finally:
        lock.release()


def _execute(
    workload: Workload,
    policy: Policy | TypedAllocationPolicy,
    config: RuntimeConfig,
    journal: Journal,
    slot_kind: SlotKind,
    progress: RunProgressCallback | None,
    *,
    resume: bool,
) -> RunResult:
    started = time.perf_counter()
    meter = CpuLoadMeter().start()
    executor = make_executor(config)
    try:
        scheduler = RuntimeScheduler(
            workload, policy, config, executor, journal, slot_kind, progress
        )
        if resume:
            snapshot = journal.snapshot()
            if snapshot is not None:
                scheduler.restore(journal.rounds(), snapshot[1])
        scheduler.execute()
    except BaseException:
        executor.close()
        journal.close()
        raise
    result = run_result(scheduler, time.perf_counter() - started, executor.name, meter.stop())
    text = result.to_json(indent=1) + "\n"
    atomic_write_text(config.run_dir / RESULT_NAME, text)
    if config.output is not None:
        atomic_write_text(config.output, text)
    if not result.incomplete:
        journal.set_meta({"finished": True})
    journal.close()
    return result


class RunDirectoryBusyError(OutputError, JournalError):
    """The run directory belongs to a scheduler that is still running (an output refused: exit
    status 4; also a :class:`JournalError`)."""


class RunLock:
    """An exclusive lock on a run directory for as long as a scheduler runs in it
    (``flock`` on its ``lock`` file: released by the kernel when the process dies, so a killed
    scheduler never leaves a stale lock). A second scheduler, a ``--resume`` of a live run
    among them, is refused.

    Raises:
        RunDirectoryBusyError: if another process holds the lock.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            self._fd = None
            raise RunDirectoryBusyError(
                f"{run_dir}: another scheduler is running in this run directory "
                "(wait for it to end, or stop it, then --resume)"
            ) from None

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def make_executor(config: RuntimeConfig) -> Executor:
    """The executor ``config`` names."""
    if config.executor == "ray":
        from shockwave.runtime.ray_executor import RayExecutor  # optional dependency

        return RayExecutor(config)
    return LocalExecutor()


def _named_policy(
    name: str, parameters: dict[str, Any], config: RuntimeConfig
) -> tuple[str, Policy | TypedAllocationPolicy]:
    """A built-in policy by name with ``parameters``: a typed one on a heterogeneous cluster,
    the simulator's otherwise; with its resolved name."""
    if config.cluster is None:
        resolved = resolve_policy_name(name)
        return resolved, make_policy(resolved, parameters)
    resolved = resolve_typed_policy(name)
    return resolved, make_typed_policy(resolved, parameters=parameters)


def _config_meta(config: RuntimeConfig) -> dict[str, Any]:
    """The settings a resume runs with (the cluster spec as its text, when there is one)."""
    meta: dict[str, Any] = {key: getattr(config, key) for key in _CONFIG_KEYS}
    if config.cluster is not None:
        meta["cluster"] = str(config.cluster)
    return meta


def _slot_kind(config: RuntimeConfig) -> SlotKind:
    if config.executor == "ray" and config.ray_address is not None:
        return config.slot_kind or "gpu"  # a remote cluster: its nodes say what they have
    return resolve_slot_kind(config.gpus, config.slot_kind)


def _workload_text(workload: Workload, path: Path) -> str:
    write_native(workload, path)
    return path.read_text(encoding="utf-8")
