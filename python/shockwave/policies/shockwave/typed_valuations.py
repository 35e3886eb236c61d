"""What the Shockwave policy expects each job to gain on each GPU type: the typed market's
valuations ``v[i, t, k]``.

``v[i, t, k]`` is the expected fraction of job ``i``'s work it gains in round ``t`` of the
window if it holds its gang of type ``k`` continuously from now (the homogeneous model's
``a[i, t]``, :mod:`shockwave.adaptation`, on type ``k``'s speeds). Two sources:

* **Jobs that follow epoch profiles** (a native workload's adapting jobs on a simulated typed
  cluster, :mod:`~shockwave.heterogeneous.typed_profiles`): one adaptation model
  (:class:`~shockwave.adaptation.JobModels`) per type, each holding the jobs that can run there
  with their profile on that type (the same batch sizes epoch by epoch, that type's durations).
  Every model sees the same progress (epochs done and the batch size in use: a job's position
  is the same on every type), so every type's prediction follows the same learned adaptation
  and differs only in speed; the fractions are of the job's epochs.
* **Static jobs** (a ``.trace``, or a real run's typed view): the job runs at ``T[i, k]``
  iterations/s, so ``v[i, t, k] = clip(r_i - T[i, k] tau t, 0, T[i, k] tau) / steps_i`` with
  ``r_i`` its iterations left, exactly; the fractions are of its iterations.

A type a job cannot run on (throughput 0, or a gang larger than the type) is worth 0 there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.adaptation import Estimator, JobModels
from shockwave.heterogeneous.protocol import TypedAllocationState
from shockwave.persistence import StateReader
from shockwave.policies.shockwave.saved_state import models_data, models_of

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class TypedPrediction:
    """The typed market's inputs for the active jobs (rows in the state's order).

    Attributes:
        valuations: ``(N, T, K)`` ``v[i, t, k]`` (module notes).
        offsets: ``(N,)`` the fraction of each job's work done, in ``[0, 1]``.
        remaining_seconds: ``(N, K)`` expected remaining runtime if served continuously on
            type ``k``, seconds (inf where it cannot run).
        usable: ``(N, K)`` whether the job can run on the type.
    """

    valuations: FloatArray
    offsets: FloatArray
    remaining_seconds: FloatArray
    usable: BoolArray


class TypedPredictor:
    """Per-type predictions of the active jobs of a typed cluster (see the module notes).

    Args:
        estimator: the adaptation models' estimator (``markov``, ``dirichlet``, ``oracle``).
    """

    def __init__(self, estimator: Estimator) -> None:
        self.estimator: Estimator = estimator
        #: one model per GPU type (jobs that follow profiles; created at their first sight)
        self.models: list[JobModels] = []
        #: job id -> whether each type's model holds it
        self.held: dict[int, tuple[bool, ...]] = {}

    def predict(self, state: TypedAllocationState, rounds: int) -> TypedPrediction:
        """The prediction of ``rounds`` rounds of ``state.round_seconds`` for ``state``'s jobs."""
        n, k = state.throughput.shape
        usable = (state.throughput > 0.0) & (state.gang[:, None] <= state.counts[None, :])
        if state.profiles is None or state.epochs_done is None:
            return _static(state, rounds, usable)
        self._sync(state)
        valuations = np.zeros((n, rounds, k), dtype=np.float64)
        remaining = np.full((n, k), np.inf, dtype=np.float64)
        offsets = np.zeros(n, dtype=np.float64)
        for column, model in enumerate(self.models):
            rows = np.flatnonzero(state.profiles.usable[state.positions, column])
            if rows.shape[0] == 0:
                continue
            prediction = model.predict(rounds, state.round_seconds, job_ids=state.job_ids[rows])
            valuations[rows, :, column] = prediction.valuations
            remaining[rows, column] = prediction.remaining_mean_seconds
            offsets[rows] = prediction.offsets
        valuations *= usable[:, None, :]
        remaining[~usable] = np.inf
        return TypedPrediction(valuations, offsets, remaining, usable)

    def _sync(self, state: TypedAllocationState) -> None:
        """Add new jobs to the models of their types, drop gone ones, report progress."""
        profiles, done = state.profiles, state.epochs_done
        assert profiles is not None
        assert done is not None
        k = len(profiles.types)
        if not self.models:
            self.models = [JobModels(self.estimator) for _ in range(k)]
        active = set(state.job_ids.tolist())
        for job_id in [j for j in self.held if j not in active]:
            for model, held in zip(self.models, self.held.pop(job_id), strict=True):
                if held:
                    model.remove(job_id)
        for job_id, position in zip(state.job_ids.tolist(), state.positions.tolist(), strict=True):
            if job_id in self.held:
                continue
            holds = tuple(bool(profiles.usable[position, c]) for c in range(k))
            for column, (model, can) in enumerate(zip(self.models, holds, strict=True)):
                if not can:
                    continue
                progress = profiles.progress[column]
                start = int(progress.segment_start[position])
                stop = start + int(progress.segments[position])
                model.add(
                    job_id,
                    progress.batch_size[start:stop],
                    progress.duration[start:stop],
                    epoch_counts=progress.count[start:stop],
                )
            self.held[job_id] = holds
        epochs = profiles.progress[0].epochs[state.positions]
        epoch = np.minimum(np.floor(done).astype(np.int64), epochs - 1)
        batch = profiles.progress[0].epoch_facts(state.positions, epoch)[0]
        finished = np.minimum(done, epochs.astype(np.float64))
        for column, model in enumerate(self.models):
            rows = np.flatnonzero(profiles.usable[state.positions, column])
            if rows.shape[0]:
                model.observe(state.job_ids[rows], finished[rows], batch[rows])

    # ------------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict[str, Any]:
        """The models (their own encoding) and which types hold each job, as data."""
        ids = np.array(list(self.held), dtype=np.int64)
        holds = np.array(list(self.held.values()), dtype=np.bool_).reshape(
            ids.shape[0], len(self.models)
        )
        return {
            "models": [models_data(model) for model in self.models],
            "held_ids": ids,
            "held_types": holds,
        }

    def restore(self, saved: StateReader) -> None:
        """Take back :meth:`snapshot`, checked."""
        raw = saved.raw("models")
        if not isinstance(raw, list):
            raise saved.error("models", "expected a list of adaptation models")
        models: list[JobModels] = []
        for index in range(len(raw)):
            model = models_of(StateReader({"model": raw[index]}, f"{saved.where}.models"), "model")
            if model is None:
                raise saved.error("models", f"model {index} is missing")
            models.append(model)
        ids = saved.array("held_ids", np.int64, (None,))
        holds = saved.array("held_types", np.bool_, (ids.shape[0], len(models)))
        saved.done()
        self.models = models
        self.held = {
            int(job): tuple(bool(v) for v in row)
            for job, row in zip(ids.tolist(), holds.tolist(), strict=True)
        }


def _static(state: TypedAllocationState, rounds: int, usable: BoolArray) -> TypedPrediction:
    """Exact valuations of jobs that run at constant speed (module notes)."""
    tau = state.round_seconds
    total = np.maximum(state.total_steps.astype(np.float64), 1.0)
    left = np.maximum(state.remaining_steps.astype(np.float64), 0.0)
    rate = np.where(usable, state.throughput, 0.0)  # iterations/s
    per_round = rate * tau  # (N, K)
    before = per_round[:, None, :] * np.arange(rounds, dtype=np.float64)[None, :, None]
    gained = np.clip(left[:, None, None] - before, 0.0, per_round[:, None, :])
    valuations: FloatArray = gained / total[:, None, None]
    with np.errstate(divide="ignore"):
        remaining = np.where(usable, left[:, None] / np.where(usable, rate, 1.0), np.inf)
    offsets: FloatArray = np.clip(1.0 - left / total, 0.0, 1.0)
    return TypedPrediction(valuations, offsets, remaining, usable)
