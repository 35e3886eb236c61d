"""Run-length encoded profiles (:mod:`shockwave.epoch_profile`): bit for bit the expanded ones."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import shockwave.epoch_profile as epoch_profile_module
from shockwave.adaptation import JobModels
from shockwave.epoch_profile import EpochColumn, EpochProfile, merge_columns
from shockwave.errors import JobFieldError
from shockwave.sim.profile_progress import ProfileProgress, iterations_per_epoch
from shockwave.traces.native import decode_epoch_column, decode_epochs, encode_epochs
from shockwave.workload import Job

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Durations that do not sum exactly in floating point (sequential and pairwise sums differ).
_SECONDS = st.sampled_from([0.1, 0.7, 1.3, 36.4, 101.9, 1e3 / 3.0, 7.000000000000001])


@st.composite
def profiles(draw: st.DrawFn) -> tuple[IntArray, FloatArray]:
    """An expanded profile: runs of batch sizes and durations, neighbours possibly equal."""
    runs = draw(
        st.lists(
            st.tuples(st.sampled_from([16, 32, 64, 128]), _SECONDS, st.integers(1, 400)),
            min_size=1,
            max_size=8,
        )
    )
    sizes = np.array([b for b, _, n in runs for _ in range(n)], dtype=np.int64)
    seconds = np.array([s for _, s, n in runs for _ in range(n)], dtype=np.float64)
    return sizes, seconds


def _job(sizes: Any, seconds: Any, job_id: int = 3) -> Job:
    return Job(job_id, 0.0, 1, "ResNet-18", "CIFAR-10", "gns", sizes, seconds)


@given(profiles())
def test_runs_reproduce_the_expanded_profile_bit_for_bit(
    profile: tuple[IntArray, FloatArray],
) -> None:
    sizes, seconds = profile
    runs = EpochProfile.from_epochs(sizes, seconds)
    assert np.array_equal(runs.expand_batch_sizes(), sizes)
    assert np.array_equal(runs.expand_seconds(), seconds)
    assert runs.num_epochs == sizes.size
    # maximal runs: neighbours differ
    same = (runs.batch_sizes[1:] == runs.batch_sizes[:-1]) & (runs.seconds[1:] == runs.seconds[:-1])
    assert not same.any()
    running = np.cumsum(seconds)
    ends = np.cumsum(runs.counts) - 1
    assert runs.running_seconds.tobytes() == running[ends].tobytes()
    assert runs.total_seconds == float(running[-1])
    assert runs.pairwise_total == float(np.sum(seconds))
    assert np.array_equal(runs.first_epochs, ends - runs.counts + 1)
    assert runs.seconds_before.tobytes() == np.concatenate(([0.0], running[ends[:-1]])).tobytes()


@given(profiles())
def test_runs_from_unmerged_runs_and_from_columns(profile: tuple[IntArray, FloatArray]) -> None:
    sizes, seconds = profile
    canonical = EpochProfile.from_epochs(sizes, seconds)
    ones = np.ones(sizes.size, dtype=np.int64)
    assert EpochProfile.from_segments(sizes, seconds, ones) == canonical
    size_column = EpochProfile.from_epochs(sizes, np.zeros(sizes.size))
    second_column = EpochProfile.from_epochs(np.zeros(sizes.size, dtype=np.int64), seconds)
    merged = merge_columns(
        size_column.batch_sizes, size_column.counts, second_column.seconds, second_column.counts
    )
    assert merged == canonical
    assert merged.running_seconds.tobytes() == canonical.running_seconds.tobytes()


def test_long_runs_are_summed_in_chunks_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(epoch_profile_module, "_CHUNK_EPOCHS", 7)
    sizes = np.repeat([32, 64, 32], [20, 3, 50])
    seconds = np.repeat([0.1, 1.3, 0.7], [20, 3, 50])
    runs = EpochProfile.from_epochs(sizes, seconds)
    running = np.cumsum(seconds)
    assert runs.running_seconds.tobytes() == running[np.cumsum(runs.counts) - 1].tobytes()


def test_bad_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="count"):
        EpochProfile.from_segments([32], [1.0], [0])
    with pytest.raises(ValueError, match="one of each per run"):
        EpochProfile.from_segments([32, 64], [1.0], [1, 1])
    with pytest.raises(ValueError, match="entries"):
        EpochProfile.from_epochs([32, 64], [1.0])


@given(profiles())
def test_a_job_holds_its_profile_as_runs(profile: tuple[IntArray, FloatArray]) -> None:
    sizes, seconds = profile
    job = _job(sizes, seconds)
    runs = EpochProfile.from_epochs(sizes, seconds)
    assert job.profile == runs
    assert np.array_equal(job.batch_sizes, sizes) and np.array_equal(job.epoch_seconds, seconds)
    assert not job.batch_sizes.flags.writeable and not job.epoch_seconds.flags.writeable
    assert job.num_epochs == sizes.size and job.initial_batch_size == int(sizes[0])
    assert job.exclusive_seconds == float(seconds.sum())
    # the same job from runs, from run-length columns, through vars(), pickle and replace
    assert _job(runs, runs) == job
    column = EpochColumn(runs.batch_sizes, runs.counts)
    assert _job(column, seconds) == job
    assert Job(**vars(job)) == job
    assert pickle.loads(pickle.dumps(job)) == job
    assert dataclasses.replace(job, weight=2.0).profile == runs
    # what the simulator reads of it
    iterations = -(-50000 // sizes)
    assert np.array_equal(iterations_per_epoch(job), iterations)


def test_a_job_pickled_with_expanded_profiles_still_loads() -> None:
    job = _job([32, 32, 64], [1.0, 1.0, 2.0])
    state = dict(vars(job))
    state["batch_sizes"] = np.array([32, 32, 64])
    state["epoch_seconds"] = np.array([1.0, 1.0, 2.0])
    legacy = object.__new__(Job)
    legacy.__setstate__(state)
    assert legacy == job


def test_profile_errors_still_name_the_field() -> None:
    with pytest.raises(JobFieldError, match="has 1 entries but batch_sizes has 2"):
        _job([32, 32], [1.0])
    with pytest.raises(JobFieldError, match="non-empty"):
        _job([], [])
    with pytest.raises(JobFieldError, match="batch_sizes.*>= 1"):
        _job([32, 0], [1.0, 1.0])
    with pytest.raises(JobFieldError, match="epoch_seconds"):
        _job([32], [float("nan")])
    runs = EpochProfile.from_epochs([32], [1.0])
    with pytest.raises(JobFieldError, match="same EpochProfile"):
        _job(runs, [1.0])
    with pytest.raises(JobFieldError, match="run counts"):
        _job(EpochColumn([32], [0]), [1.0])
    with pytest.raises(JobFieldError, match="has 3 entries but batch_sizes has 2"):
        _job(EpochColumn([32], [2]), EpochColumn([1.0], [3]))


@given(profiles())
def test_file_columns_decode_without_expanding(profile: tuple[IntArray, FloatArray]) -> None:
    sizes, seconds = profile
    for values in (sizes, seconds):
        encoded = encode_epochs(values)
        column = decode_epoch_column(encoded, "x")
        expanded = column.expand() if isinstance(column, EpochColumn) else np.asarray(column)
        assert np.array_equal(expanded, values)
        assert np.array_equal(decode_epochs(encoded, "x"), values)
    job = _job(
        decode_epoch_column(encode_epochs(sizes), "batch_sizes"),
        decode_epoch_column(encode_epochs(seconds), "epoch_seconds"),
    )
    assert job == _job(sizes, seconds)


def _reference_segments(job: Job) -> dict[str, FloatArray]:
    """The simulator's segment columns computed from the expanded profile (the former code)."""
    seconds, sizes = job.epoch_seconds, job.batch_sizes
    change = np.flatnonzero((seconds[1:] != seconds[:-1]) | (sizes[1:] != sizes[:-1])) + 1
    first = np.concatenate(([0], change)).astype(np.int64)
    counts = np.diff(np.concatenate((first, [seconds.shape[0]]))).astype(np.int64)
    iterations = iterations_per_epoch(job)[first].astype(np.float64)
    running = np.cumsum(seconds)
    return {
        "first_epoch": first.astype(np.float64),
        "count": counts.astype(np.float64),
        "duration": seconds[first],
        "batch_size": sizes[first].astype(np.float64),
        "iterations": iterations,
        "seconds_before": np.concatenate(([0.0], running[first[1:] - 1])),
        "iterations_before": np.concatenate(([0.0], np.cumsum(iterations * counts)[:-1])),
        "total": running[-1:],
    }


@given(st.lists(profiles(), min_size=1, max_size=4))
def test_simulator_segments_equal_those_of_the_expanded_profiles(
    profiles_: list[tuple[IntArray, FloatArray]],
) -> None:
    jobs = [_job(sizes, seconds, job_id=k) for k, (sizes, seconds) in enumerate(profiles_)]
    progress = ProfileProgress(jobs)
    reference = [_reference_segments(job) for job in jobs]
    for name in ("first_epoch", "count", "duration", "batch_size", "iterations"):
        mine = getattr(progress, name).astype(np.float64)
        assert mine.tobytes() == np.concatenate([r[name] for r in reference]).tobytes(), name
    for name in ("seconds_before", "iterations_before"):
        assert (
            getattr(progress, name).tobytes()
            == np.concatenate([r[name] for r in reference]).tobytes()
        )
    totals = np.concatenate([r["total"] for r in reference])
    assert progress.total_seconds.tobytes() == totals.tobytes()


@given(profiles(), st.sampled_from(["markov", "dirichlet"]))
def test_the_adaptation_model_takes_runs_bit_for_bit(
    profile: tuple[IntArray, FloatArray], estimator: str
) -> None:
    sizes, seconds = profile
    runs = EpochProfile.from_epochs(sizes, seconds)
    expanded = JobModels(estimator)  # type: ignore[arg-type]
    expanded.add(1, sizes, seconds, samples_per_epoch=5e4)
    compact = JobModels(estimator)  # type: ignore[arg-type]
    compact.add(1, runs.batch_sizes, runs.seconds, samples_per_epoch=5e4, epoch_counts=runs.counts)
    assert compact.to_bytes() == expanded.to_bytes()
    a = expanded.predict(6, 120.0)
    b = compact.predict(6, 120.0)
    assert a.valuations.tobytes() == b.valuations.tobytes()
    assert a.remaining_mean_seconds.tobytes() == b.remaining_mean_seconds.tobytes()


def test_a_job_given_unmerged_runs_holds_them_merged() -> None:
    unmerged = EpochProfile([32, 32, 64], [1.0, 1.0, 2.0], [2, 3, 1])
    assert not unmerged.is_canonical()
    job = _job(unmerged, unmerged)
    assert job.profile.is_canonical() and job.profile.counts.tolist() == [5, 1]
    assert job == _job([32] * 5 + [64], [1.0] * 5 + [2.0])
