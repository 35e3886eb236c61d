"""Checkpoints of a typed simulation (``shockwave simulate --cluster ... --checkpoint FILE``).

A :class:`TypedSimulation` is the round loop of :func:`~shockwave.heterogeneous.simulate.
typed_round_loop` that saves itself as the homogeneous
:class:`~shockwave.sim.simulation.Simulation` does (the same
:class:`~shockwave.sim.checkpoint.CheckpointSettings`: every ``every_seconds`` of wall time and on
Ctrl-C, at a round boundary) and resumes bit for bit. Its checkpoint is a state file of kind
``"typed-simulation-checkpoint"`` (:mod:`shockwave.persistence`: JSON and numpy arrays, never a
pickle) holding

* ``inputs``: the cluster spec and the input files' bytes as read (the ``.trace`` and its
  throughput file, or the native ``.jsonl``), with the paths that name them in errors: the jobs
  are rebuilt from them exactly as the first run built them (:class:`TypedInputs`);
* ``config``: the :class:`~shockwave.heterogeneous.simulate.HeterogeneousConfig`, field by field;
* ``policy``: the typed policy's name, and ``policy_parameters`` its parameters (``shockwave``'s
  from ``--config``; the baselines have none but the seed; a checkpoint written before they
  were saved has none and resumes with the defaults, as it ran);
* ``wall_seconds``: the wall time spent before the save;
* ``snapshot``: the round loop's :class:`~shockwave.rounds.snapshot.RoundSnapshot` (books, the
  typed round mechanism, the typed world and the policy's state).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from shockwave.errors import DataError, TraceError, UsageError
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.heterogeneous.registry import make_typed_policy, resolve_typed_policy
from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.heterogeneous.simulate import HeterogeneousConfig, typed_result, typed_round_loop
from shockwave.heterogeneous.typed_jobs import (
    TypedJobs,
    parse_typed_trace,
    typed_jobs_from_profiles,
)
from shockwave.heterogeneous.typed_throughputs import TypedThroughputTable
from shockwave.persistence import StateFormatError, StateReader, load_state_file, save_state_file
from shockwave.rounds.snapshot import RoundSnapshot
from shockwave.sim.checkpoint import CheckpointSettings, checkpointing
from shockwave.traces import is_native
from shockwave.traces.native import parse_native

#: The kind of state file a typed simulation's checkpoint is.
TYPED_CHECKPOINT_KIND = "typed-simulation-checkpoint"

ByteArray = np.ndarray[Any, np.dtype[np.uint8]]


@dataclass(frozen=True)
class TypedInputs:
    """What a typed simulation's jobs are built from: the cluster and the input files as read.

    Attributes:
        cluster: the cluster spec.
        trace_path: the workload file as named (a ``.trace``, or a native ``.jsonl``, by its
            suffix, as :func:`shockwave.traces.is_native` says).
        trace: its bytes.
        throughputs_path: the throughput file of a ``.trace`` (``None`` for a ``.jsonl``).
        throughputs: its bytes (``None`` with it).
    """

    cluster: ClusterSpec
    trace_path: str
    trace: bytes
    throughputs_path: str | None = None
    throughputs: bytes | None = None

    @classmethod
    def read(
        cls,
        cluster: ClusterSpec,
        trace: str | PathLike[str],
        throughputs: str | PathLike[str] | None = None,
    ) -> TypedInputs:
        """Read the input files.

        Raises:
            TraceError: naming the file that cannot be read.
        """
        table = None if throughputs is None else _read(throughputs, "throughput file")
        return cls(
            cluster=cluster,
            trace_path=str(trace),
            trace=_read(trace, "trace" if not is_native(trace) else "workload"),
            throughputs_path=None if throughputs is None else str(throughputs),
            throughputs=table,
        )

    @property
    def native(self) -> bool:
        """Whether the workload is a native ``.jsonl`` (its jobs follow their profiles)."""
        return is_native(self.trace_path)

    def jobs(self) -> TypedJobs:
        """The jobs on the cluster, as ``simulate --cluster`` builds them.

        Raises:
            TraceError: (a ``DataError``) naming the file, line and field of malformed input.
            UsageError, DataError: the cluster check of a native workload (naming the type, or
                the job and its field).
            ValueError: naming the type or the job a ``.trace``'s table cannot serve.
        """
        if self.native:
            try:
                text = self.trace.decode("utf-8")
            except UnicodeDecodeError:
                raise TraceError("not UTF-8 text", path=self.trace_path) from None
            workload = parse_native(text, self.trace_path)
            # the cluster check's errors name the file (its source is the file's free text)
            workload = dataclasses.replace(workload, source=self.trace_path)
            return typed_jobs_from_profiles(workload, self.cluster)
        if self.throughputs is None or self.throughputs_path is None:
            raise ValueError(f"{self.trace_path}: a .trace needs its throughput file")
        table = TypedThroughputTable.from_bytes(self.throughputs, self.throughputs_path)
        return parse_typed_trace(self.trace, self.trace_path, table, self.cluster)

    def to_data(self) -> dict[str, Any]:
        """As a data tree (:mod:`shockwave.persistence`)."""
        return {
            "cluster": str(self.cluster),
            "trace_path": self.trace_path,
            "trace": _bytes_array(self.trace),
            "throughputs_path": self.throughputs_path,
            "throughputs": None if self.throughputs is None else _bytes_array(self.throughputs),
        }

    @classmethod
    def from_data(cls, saved: StateReader) -> TypedInputs:
        """The inputs of :meth:`to_data`'s tree.

        Raises:
            StateFormatError: naming the field.
        """
        try:
            cluster = ClusterSpec.parse(saved.text("cluster"))
        except ValueError as exc:
            raise saved.error("cluster", str(exc)) from None
        native = is_native(saved.text("trace_path"))
        inputs = cls(
            cluster=cluster,
            trace_path=saved.text("trace_path"),
            trace=saved.array("trace", np.uint8, (None,)).tobytes(),
            throughputs_path=None if native else saved.text("throughputs_path"),
            throughputs=None if native else saved.array("throughputs", np.uint8, (None,)).tobytes(),
        )
        if native and (saved.raw("throughputs_path") is not None or saved.raw("throughputs")
                       is not None):  # fmt: skip
            raise saved.error("throughputs", "a native workload has no throughput file")
        saved.done()
        return inputs


class TypedSimulation:
    """A typed simulation that can run to its end, save itself at round boundaries and resume.

    Args:
        inputs: the cluster and the input files.
        policy: a typed policy's name (ours or Gavel's).
        config: the settings.
        jobs: ``inputs.jobs()`` if already built (they must be).
        parameters: the policy's parameters
            (:func:`~shockwave.heterogeneous.registry.typed_policy_parameters`).

    Raises:
        ValueError: as :func:`~shockwave.heterogeneous.simulate.typed_round_loop`, or for an
            unknown policy or parameter.
    """

    def __init__(
        self,
        inputs: TypedInputs,
        policy: str,
        config: HeterogeneousConfig,
        *,
        jobs: TypedJobs | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        self.inputs = inputs
        self.config = config
        self.jobs = inputs.jobs() if jobs is None else jobs
        self.policy_name = resolve_typed_policy(policy)
        self.parameters = dict(parameters or {})
        self.policy: TypedAllocationPolicy = make_typed_policy(
            self.policy_name, config.seed, self.parameters
        )
        self.loop = typed_round_loop(self.jobs, self.policy, config)
        #: wall time spent running before the latest resume, seconds
        self.wall_seconds = 0.0

    @property
    def round_index(self) -> int:
        """The next round boundary the simulation will process."""
        return self.loop.round_index

    def run(self, *, checkpoint: CheckpointSettings | None = None) -> HeterogeneousResult:
        """Run to the end; with ``checkpoint``, save every ``checkpoint.every_seconds`` and, if
        asked, when interrupted (then ``KeyboardInterrupt`` is raised after the save).

        Raises:
            SimulationStalledError: if the run does not finish within ``config.max_rounds``.
            KeyboardInterrupt: when interrupted (after saving, with a checkpoint).
        """
        loop = self.loop
        started = time.perf_counter()
        try:
            with checkpointing(self, checkpoint, started) as checkpointer:
                loop.observers = [] if checkpointer is None else [checkpointer]
                loop.run()
        finally:
            self.wall_seconds += time.perf_counter() - started
            loop.observers = []
        return typed_result(loop, self.jobs, self.config, self.wall_seconds)

    def save(self, path: str | PathLike[str]) -> None:
        """Write this simulation to ``path`` (atomically; see the module notes)."""
        data = {
            "inputs": self.inputs.to_data(),
            "config": dataclasses.asdict(self.config),
            "policy": self.policy_name,
            "policy_parameters": self.parameters,
            "wall_seconds": self.wall_seconds,
            "snapshot": self.loop.snapshot().to_data(),
        }
        save_state_file(path, TYPED_CHECKPOINT_KIND, data)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> TypedSimulation:
        """A simulation saved by :meth:`save`, at the boundary it was saved at.

        Raises:
            OSError: when the file cannot be read.
            StateFormatError: (a ``ValueError``) naming the file and what is wrong, when it is
                not a typed checkpoint of this shockwave version, is corrupted or does not fit
                its schema (its inputs included).
        """
        where = str(path)
        saved = StateReader(load_state_file(path, TYPED_CHECKPOINT_KIND), where)
        inputs = TypedInputs.from_data(saved.table("inputs"))
        config = _config_of(saved.table("config"))
        policy = saved.text("policy")
        parameters = saved.raw("policy_parameters") if "policy_parameters" in saved.tree else {}
        if not isinstance(parameters, dict):
            raise saved.error("policy_parameters", f"expected a table, got {parameters!r:.80}")
        wall_seconds = saved.number("wall_seconds", finite=True, minimum=0.0)
        snapshot = RoundSnapshot.from_data(saved.raw("snapshot"), f"{where}: the snapshot")
        saved.done()
        try:
            simulation = cls(inputs, policy, config, parameters=parameters)
        except (TraceError, UsageError, DataError, ValueError) as exc:
            raise StateFormatError(f"{where}: {exc}") from None
        simulation.loop.restore(snapshot, f"{where}: the snapshot")
        simulation.wall_seconds = wall_seconds
        return simulation


def _config_of(saved: StateReader) -> HeterogeneousConfig:
    """The settings of ``dataclasses.asdict(config)``, checked by the configuration itself."""
    values: dict[str, Any] = {
        "round_seconds": saved.number("round_seconds", finite=True),
        "seed": saved.integer("seed"),
        "recompute_interval_seconds": saved.number("recompute_interval_seconds", finite=True),
        "max_rounds": None if saved.raw("max_rounds") is None else saved.integer("max_rounds", 1),
        "mechanics": saved.text("mechanics", ("gavel", "exact")),
        "restart_penalty_seconds": saved.number("restart_penalty_seconds", finite=True),
    }
    saved.done()
    try:
        return HeterogeneousConfig(**values)
    except ValueError as exc:
        raise StateFormatError(f"{saved.where}: {exc}") from None


def _read(path: str | PathLike[str], what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read {what} ({exc.strerror})", path=path) from None


def _bytes_array(data: bytes) -> ByteArray:
    return np.frombuffer(data, dtype=np.uint8)
