"""Stochastic model of dynamic batch-size adaptation: remaining runtime and market valuations.

Under dynamic adaptation a job's epoch time changes as it trains: its batch size grows in steps
(GNS) or switches between a small and a large one (Accordion). The scheduler sees only the epochs
so far. This module predicts, for every active job,

* the **remaining runtime** if the job is served continuously on its gang (mean and standard
  deviation, seconds);
* the market's **valuations** ``a[i, t]``: the expected fraction of the job's epochs gained in
  round ``t`` of the next ``T`` rounds of ``round_seconds``, and the **offsets** ``c[i]``: the
  fraction of epochs already done.

**What "served in round t" assumes.** Valuations assume continuous service from now: ``a[i, t]``
is the expected progress of the job's ``(t + 1)``-th consecutive round of service. A job's row
therefore sums to at most its remaining fraction ``1 - c[i]`` and is 0 after its expected finish,
so a job close to its end is worth nothing in rounds it would not use, and a market with linear
utilities never plans it more rounds than it needs.

Three estimators share one API (:data:`Estimator`):

``"markov"``
    A Markov chain over the job's regimes (batch sizes) whose transition rows have Dirichlet
    priors (batch sizes rarely go back; every batch size of the profile is used before the end),
    learned online from the observed batch sizes, solved by a Bellman recursion over
    (epochs remaining, regime). Durations are calibrated by a shrunken per-regime ratio of measured
    to profiled throughput.
``"dirichlet"``
    The original Shockwave's estimator, for fidelity experiments: a Dirichlet posterior over the
    proportions of batch sizes observed on the *profile* schedule, with durations rounded to whole
    seconds and the original's sticky 40 % calibration; its valuations use the original planner's
    window-average epoch duration. It reproduces the original's quirks, including that the epoch
    in progress is left out of the estimate.
``"oracle"``
    The true remaining schedule of the profile, with the ``markov`` calibration (ablations).

The state of all jobs lives in Rust (:class:`JobModels`): add jobs on arrival, remove them on
completion, report progress with :meth:`JobModels.observe` and measured throughput with
:meth:`JobModels.observe_throughput`, and ask for numpy arrays with :meth:`JobModels.predict`.
:func:`predict_remaining` runs the same code for one job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import numpy.typing as npt

from shockwave import _core
from shockwave.arguments import (
    choice,
    float_array,
    int_array,
    integer,
    is_integer,
    mapping,
    real,
)
from shockwave.catalog import (
    ACCORDION_NEVER_ADAPTS,
    MODEL_FAMILIES,
    gns_staircase,
    model_family,
)
from shockwave.errors import InputError
from shockwave.profile_rules import epoch_durations
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job

#: Names of the remaining-runtime estimators.
Estimator = Literal["markov", "dirichlet", "oracle"]
#: The estimators, as the core names them (the same strings as :data:`Estimator`).
ESTIMATORS: tuple[Estimator, ...] = _core.ESTIMATORS
#: The core's default estimator.
DEFAULT_ESTIMATOR: Estimator = _core.DEFAULT_ESTIMATOR

ModelSettings = _core.ModelSettings
"""Settings of the adaptation model shared by all jobs (see :class:`JobModels` for each one),
validated by the core."""

#: The core's default settings: the defaults of :class:`JobModels` and :func:`predict_remaining`.
MODEL_DEFAULTS: ModelSettings = _core.ModelSettings()

#: Round length of the original simulator, seconds (its ``time_per_iteration``): the default
#: calibration window and prediction round.
ROUND_SECONDS: float = MODEL_DEFAULTS.calibration_round_seconds

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "MODEL_DEFAULTS",
    "ROUND_SECONDS",
    "Estimator",
    "JobModels",
    "JobState",
    "ModelSettings",
    "Prediction",
    "predict_remaining",
    "runtime_regimes",
]

Prediction = _core.Prediction
"""Predictions for ``N`` jobs (rows in the order of ``job_ids``): a Rust object whose arrays are
the core's buffers handed to numpy without copying, read-only.

Attributes:
    job_ids: job ids, shape ``(N,)``, int64.
    remaining_mean_seconds: expected remaining runtime if the job is served continuously on
        its gang, seconds, shape ``(N,)``.
    remaining_std_seconds: its standard deviation, seconds, shape ``(N,)``.
    valuations: ``a[i, t]``, the expected fraction of job ``i``'s epochs gained in round ``t``
        of the window under continuous service from now, shape ``(N, T)``.
    offsets: ``c[i]``, the fraction of job ``i``'s epochs done, shape ``(N,)``.
    round_seconds: length of one round of the window, seconds.
    estimator: the estimator that produced these numbers.

``len(prediction)`` is ``N``; ``prediction.longest_remaining_first()`` gives the job ids by
descending expected remaining runtime (ties: ascending job id)."""

JobState = _core.JobState
"""What :class:`JobModels` holds for one job (for inspection and tests).

Attributes:
    epochs_done: epochs completed plus the fraction of the current one.
    current_batch_size: batch size of the epoch in progress.
    batch_sizes: the job's regimes (candidate batch sizes), ascending, int64.
    window_factor: the ``dirichlet`` calibration multiplier of every planner duration (the
        original's sticky rescale; 1 until a check falls outside the 40 % band).
    rate_factors: the ``markov``/``oracle`` multiplier of each regime's profiled epoch
        duration, aligned with ``batch_sizes``."""


class JobModels:
    """Adaptation state of all active jobs, held in Rust, predicted in one batched call.

    Args:
        estimator: default estimator of :meth:`predict`.
        round_durations: ``dirichlet`` only: round profiled durations to whole seconds (min 1 s)
            as the original's planner does (``False``: use the profile's durations).
        calibration_round_seconds: round length of the original's calibration window, seconds.
        calibration_strength: pseudo-samples of the ``markov``/``oracle`` rate calibration at the
            job and the regime level (> 0).
        prior_strength: ``markov`` prior weight, in multiples of one even share of the job
            (``E / R`` epochs for ``R`` profile batch sizes), on each transition row and on the
            pooled forward and backward hazards (> 0).
        backward_share: ``markov`` prior backward hazard as a share of the forward one (>= 0).
        jump_decay: ``markov`` weight decay of forward jumps over more than one batch size.
        deadline: ``markov``: every batch size of the profile is visited before the job ends.
        max_blocks: ``markov``: most blocks of epochs in the Bellman recursion; jobs with at most
            this many epochs left are solved epoch by epoch.
        threads: worker threads for :meth:`predict` (0: one per core); results do not depend on
            it.

    Raises:
        InputError: naming the setting, if one is out of range.
    """

    def __init__(
        self,
        estimator: Estimator = DEFAULT_ESTIMATOR,
        *,
        round_durations: bool = MODEL_DEFAULTS.round_durations,
        calibration_round_seconds: float = MODEL_DEFAULTS.calibration_round_seconds,
        calibration_strength: float = MODEL_DEFAULTS.calibration_strength,
        prior_strength: float = MODEL_DEFAULTS.prior_strength,
        backward_share: float = MODEL_DEFAULTS.backward_share,
        jump_decay: float = MODEL_DEFAULTS.jump_decay,
        deadline: bool = MODEL_DEFAULTS.deadline,
        max_blocks: int = MODEL_DEFAULTS.max_blocks,
        threads: int = MODEL_DEFAULTS.threads,
    ) -> None:
        self._estimator = choice(estimator, "estimator", ESTIMATORS)
        settings = ModelSettings(
            round_durations=bool(round_durations),
            calibration_round_seconds=real(calibration_round_seconds, "calibration_round_seconds"),
            calibration_strength=real(calibration_strength, "calibration_strength"),
            prior_strength=real(prior_strength, "prior_strength"),
            backward_share=real(backward_share, "backward_share"),
            jump_decay=real(jump_decay, "jump_decay"),
            deadline=bool(deadline),
            max_blocks=integer(max_blocks, "max_blocks", minimum=0),
            threads=integer(threads, "threads", minimum=0),
        )
        self._core = _core.JobModelsCore(settings)

    @property
    def settings(self) -> ModelSettings:
        """The settings (the core's defaults where not given)."""
        return self._core.settings

    @property
    def estimator(self) -> Estimator:
        """Default estimator of :meth:`predict`."""
        return self._estimator

    def to_bytes(self) -> bytes:
        """The whole state (settings, default estimator and every job) as versioned bytes.

        The Rust state is encoded field by field (little-endian, floats by their bits, format
        ``SWJM`` version 1): :meth:`from_bytes` rebuilds a container that predicts bit for bit
        what this one predicts. Pickling a :class:`JobModels` uses this encoding.
        """
        return self._estimator.encode("ascii") + b"\n" + self._core.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> JobModels:
        """Rebuild the container of :meth:`to_bytes`.

        Raises:
            InputError: naming ``state`` for bytes that are not such a state (every length,
                index and value is checked before anything is allocated).
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InputError("state", f"expected bytes, got {type(data).__name__}")
        name, newline, core = bytes(data).partition(b"\n")
        if not newline or name.decode("ascii", "replace") not in ESTIMATORS:
            raise InputError("state", "not a JobModels state (no estimator line)")
        models = cls.__new__(cls)
        models._estimator = choice(name.decode("ascii"), "estimator", ESTIMATORS)
        models._core = _core.JobModelsCore.from_bytes(core)
        return models

    def __getstate__(self) -> bytes:
        return self.to_bytes()

    def __setstate__(self, state: bytes) -> None:
        restored = JobModels.from_bytes(state)
        self._estimator = restored._estimator
        self._core = restored._core

    def __len__(self) -> int:
        return len(self._core)

    def __contains__(self, job_id: object) -> bool:
        if not is_integer(job_id):
            return False
        return int(job_id) in self._core

    @property
    def job_ids(self) -> npt.NDArray[np.int64]:
        """Ids of the jobs held, ascending."""
        return self._core.job_ids()

    def add(
        self,
        job_id: int,
        batch_sizes: npt.ArrayLike,
        epoch_seconds: npt.ArrayLike,
        *,
        extra_regimes: Mapping[int, float] | None = None,
        samples_per_epoch: float | None = None,
        epoch_counts: npt.ArrayLike | None = None,
    ) -> None:
        """Add a job (on arrival) from its profile.

        Args:
            job_id: the job's id (not already held).
            batch_sizes: batch size of every epoch of the profile; its distinct values are the
                job's regimes, all of which the job uses.
            epoch_seconds: duration of every epoch on the job's gang, seconds (finite, at least
                :data:`~shockwave.limits.MIN_EPOCH_SECONDS`, a microsecond: shorter ones made
                the valuations overflow).
            epoch_counts: for a profile given run-length encoded, the epochs of each entry of
                ``batch_sizes`` and ``epoch_seconds`` (integers >= 1); the model is bit for bit
                the one of the expanded arrays. A job has at most
                :data:`~shockwave.limits.MAX_EPOCHS_PER_JOB` (10,000,000) epochs, per run and in
                all (the profile is summed epoch by epoch).
            extra_regimes: batch sizes the job may also run at, with their epoch seconds (for
                example those the original's runtime rules reach: :func:`runtime_regimes`).
            samples_per_epoch: training samples per epoch; needed for throughput given in
                steps/s.

        Raises:
            InputError: naming the field, for a held id or an invalid profile.
        """
        extra = mapping(extra_regimes or {}, "extra_regimes", _REGIMES)
        self._core.add(
            integer(job_id, "job_id"),
            int_array(batch_sizes, "batch_sizes"),
            float_array(epoch_seconds, "epoch_seconds"),
            int_array(list(extra.keys()), "extra_regimes"),
            float_array(list(extra.values()), "extra_regimes"),
            None if samples_per_epoch is None else real(samples_per_epoch, "samples_per_epoch"),
            None if epoch_counts is None else int_array(epoch_counts, "epoch_counts"),
        )

    def add_job(self, job: Job, *, throughputs: ThroughputTable | None = None) -> None:
        """Add a :class:`~shockwave.workload.Job` (its id, profile and samples per epoch).

        With ``throughputs``, the batch sizes the original's runtime rules can reach beyond the
        profile are added as extra regimes (:func:`runtime_regimes`), so that observations from
        the ``gavel`` simulator mechanics are accepted.
        """
        extra = runtime_regimes(job, throughputs) if throughputs is not None else {}
        samples = job.samples_per_epoch
        if samples is None and job.model in MODEL_FAMILIES:
            samples = model_family(job.model).samples_per_epoch
        profile = job.profile  # as held, run-length encoded (never expanded)
        self.add(
            job.job_id,
            profile.batch_sizes,
            profile.seconds,
            extra_regimes=extra,
            samples_per_epoch=None if samples is None else float(samples),
            epoch_counts=profile.counts,
        )

    def remove(self, job_id: int) -> None:
        """Remove a job (on completion). Raises ``InputError`` if it is not held."""
        self._core.remove(integer(job_id, "job_id"))

    def observe(
        self,
        job_ids: npt.ArrayLike,
        epochs_done: npt.ArrayLike,
        current_batch_sizes: npt.ArrayLike,
        *,
        completed_batch_sizes: npt.ArrayLike | None = None,
        completed_counts: npt.ArrayLike | None = None,
    ) -> None:
        """Record the progress of several jobs (each at most once per call).

        Args:
            job_ids: the jobs, shape ``(K,)``.
            epochs_done: epochs completed plus the fraction of the epoch in progress, per job;
                non-decreasing over calls and at most the job's epochs (equal: finished).
            current_batch_sizes: batch size of each job's epoch in progress (one of its regimes).
            completed_batch_sizes: the batch sizes of the epochs each job completed since its last
                observation, concatenated job after job. Without it, those epochs are taken to
                have run at the batch size that was current at the last observation (at the
                profile's first batch size before any).
            completed_counts: how many of ``completed_batch_sizes`` belong to each job, shape
                ``(K,)``; each must equal the job's newly completed epochs.

        Raises:
            InputError: naming the field (an unknown job, epochs going back or past the end, a
                batch size that is not one of the job's regimes, mismatched lengths). Nothing is
                recorded when an entry is invalid.
        """
        if (completed_batch_sizes is None) != (completed_counts is None):
            raise InputError(
                "completed_counts", "give completed_batch_sizes and completed_counts together"
            )
        self._core.observe(
            int_array(job_ids, "job_ids"),
            float_array(epochs_done, "epochs_done"),
            int_array(current_batch_sizes, "current_batch_sizes"),
            None
            if completed_batch_sizes is None
            else int_array(completed_batch_sizes, "completed_batch_sizes"),
            None if completed_counts is None else int_array(completed_counts, "completed_counts"),
        )

    def observe_throughput(
        self,
        job_ids: npt.ArrayLike,
        round_indices: npt.ArrayLike,
        batch_sizes: npt.ArrayLike,
        *,
        epoch_seconds: npt.ArrayLike | None = None,
        steps_per_second: npt.ArrayLike | None = None,
    ) -> None:
        """Record measured throughput: one sample per job and round in which it ran.

        Give exactly one of ``epoch_seconds`` (measured seconds per epoch at that rate) and
        ``steps_per_second`` (iterations per second; ``samples_per_epoch / batch_size`` of them
        make an epoch, so the job must have been added with ``samples_per_epoch``).

        Args:
            job_ids: the jobs, shape ``(K,)``; a job may appear several times.
            round_indices: index of the round measured, counted from the start of the simulation
                (the original's calibration extrapolates each sample back to the previous one,
                from round 0); increasing per job.
            batch_sizes: batch size the job ran at in that round (one of its regimes).
            epoch_seconds: measured epoch duration, seconds (at least
                :data:`~shockwave.limits.MIN_EPOCH_SECONDS`).
            steps_per_second: measured throughput, iterations/s (> 0, and the epoch it makes at
                least :data:`~shockwave.limits.MIN_EPOCH_SECONDS`).

        Raises:
            InputError: naming the field; nothing is recorded when an entry is invalid.
        """
        if (epoch_seconds is None) == (steps_per_second is None):
            raise InputError("epoch_seconds", "give exactly one of epoch_seconds, steps_per_second")
        if epoch_seconds is not None:
            kind, values = "epoch_seconds", float_array(epoch_seconds, "epoch_seconds")
        else:
            kind, values = "steps_per_second", float_array(steps_per_second, "steps_per_second")
        self._core.observe_throughput(
            int_array(job_ids, "job_ids"),
            int_array(round_indices, "round_indices"),
            int_array(batch_sizes, "batch_sizes"),
            values,
            kind,
        )

    def predict(
        self,
        num_rounds: int,
        round_seconds: float = ROUND_SECONDS,
        *,
        job_ids: npt.ArrayLike | None = None,
        estimator: Estimator | None = None,
    ) -> Prediction:
        """Predict remaining runtimes and valuations (the GIL is released meanwhile).

        A job whose state has not changed since its last prediction for the same estimator,
        window and round length is answered from that prediction, kept with the job (a memo,
        not part of :meth:`to_bytes`); every answer is bit for bit a fresh prediction's.

        Args:
            num_rounds: ``T``, rounds in the planning window (>= 0).
            round_seconds: length of a round, seconds.
            job_ids: which jobs, in which order (default: all, ascending id).
            estimator: overrides the default estimator.

        Raises:
            InputError: naming the argument (an unknown job, a bad window, valuations that would
                not fit in the memory this process can still allocate, or ``"oracle"`` for a job
                without a profile).
            MemoryError: naming ``num_rounds``, if the valuations could not be allocated all the
                same.
        """
        chosen = (
            self._estimator if estimator is None else choice(estimator, "estimator", ESTIMATORS)
        )
        return self._core.predict(
            integer(num_rounds, "num_rounds", minimum=0),
            real(round_seconds, "round_seconds"),
            chosen,
            None if job_ids is None else int_array(job_ids, "job_ids"),
        )

    def state(self, job_id: int) -> JobState:
        """The observed progress and calibration of one job."""
        return self._core.state(integer(job_id, "job_id"))


def predict_remaining(
    batch_sizes_so_far: npt.ArrayLike,
    epoch_seconds_by_batch_size: Mapping[int, float],
    total_epochs: int,
    *,
    estimator: Estimator = DEFAULT_ESTIMATOR,
    epoch_fraction: float = 0.0,
    round_durations: bool = MODEL_DEFAULTS.round_durations,
) -> tuple[float, float]:
    """Remaining runtime ``(mean_seconds, std_seconds)`` of one job.

    Runs the same code as :class:`JobModels` on a job without a profile.

    Args:
        batch_sizes_so_far: the batch size of every epoch trained so far: the completed epochs,
            then the epoch in progress (so ``len - 1`` epochs are complete).
        epoch_seconds_by_batch_size: the job's candidate regimes: epoch duration (seconds) per
            batch size. All of them count as batch sizes the job will use (the ``dirichlet``
            prior spreads over them; ``markov`` expects to visit each before the end).
        total_epochs: epochs of the job (>= ``len(batch_sizes_so_far)``, at most
            :data:`~shockwave.limits.MAX_EPOCHS_PER_JOB`).
        estimator: ``"markov"`` or ``"dirichlet"`` (``"oracle"`` needs a future schedule, which a
            job without a profile has not).
        epoch_fraction: fraction of the epoch in progress already done, in ``[0, 1)``.
        round_durations: ``dirichlet`` only: round durations to whole seconds like the original.

    Raises:
        InputError: naming the argument.
    """
    regimes = mapping(epoch_seconds_by_batch_size, "epoch_seconds_by_batch_size", _REGIMES)
    remaining = _core.predict_remaining(
        int_array(batch_sizes_so_far, "batch_sizes_so_far"),
        int_array(list(regimes.keys()), "epoch_seconds_by_batch_size"),
        float_array(list(regimes.values()), "epoch_seconds_by_batch_size"),
        integer(total_epochs, "total_epochs"),
        estimator=choice(estimator, "estimator", ESTIMATORS),
        epoch_fraction=real(epoch_fraction, "epoch_fraction"),
        round_durations=bool(round_durations),
    )
    return remaining.mean_seconds, remaining.std_seconds


def runtime_regimes(job: Job, throughputs: ThroughputTable) -> dict[int, float]:
    """Batch sizes the original's runtime rules can reach beyond the job's profile.

    The original simulator changes batch sizes by rules that differ from the profile's: GNS
    doubles the batch size whenever its staircase is ahead (even for jobs whose profile is static
    because they are short), Accordion switches between the initial and the model's largest batch
    size. Returns ``{batch size: epoch seconds on the job's gang}`` for the reachable batch sizes
    that are not in the profile and have a positive throughput in ``throughputs`` (the original
    refuses a change to a batch size without one). Models outside the catalog have none.
    """
    if job.model not in MODEL_FAMILIES or job.mode == "static":
        return {}
    family = model_family(job.model)
    start = job.initial_batch_size
    reachable: set[int] = set()
    if job.mode == "accordion":
        if job.model not in ACCORDION_NEVER_ADAPTS and start != family.max_batch_size:
            reachable = {start, family.max_batch_size}
    else:
        staircase = gns_staircase(job.model, start, job.gang_size)
        if staircase is not None:
            top = min(max(bs for _, bs in staircase.stages), family.max_batch_size)
            batch_size = start
            while batch_size < top:
                batch_size *= 2
                reachable.add(batch_size)
    in_profile = {int(b) for b in job.profile.distinct_batch_sizes()}
    candidates = sorted(
        b
        for b in reachable - in_profile
        if (job.model, b, job.gang_size) in throughputs
        and throughputs.isolated(job.model, b, job.gang_size) > 0
    )
    if not candidates:
        return {}
    seconds = epoch_durations(
        job.model, np.array(candidates, dtype=np.int64), job.gang_size, throughputs
    )
    return {b: float(s) for b, s in zip(candidates, seconds, strict=True)}


#: What the regime mappings hold (for their error messages).
_REGIMES = "batch size to epoch seconds"
