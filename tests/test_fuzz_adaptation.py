"""Fuzzing the adaptation model's public entry points (``shockwave.adaptation``).

Random sequences of ``JobModels`` calls with extreme, malformed and wrong-kind arguments: each
call returns or raises ``ValueError`` naming the field; predictions are finite where they exist,
and at every step the state restored from ``to_bytes`` predicts bit for bit the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shockwave.adaptation import ESTIMATORS, JobModels, predict_remaining
from shockwave.errors import InputError

from .fuzzing import any_float, any_int, anything, fuzz, junk

batch_size = st.one_of(st.sampled_from([16, 32, 64, 128]), any_int)
ids = st.one_of(st.integers(-2, 5), any_int)
floats_or_junk = anything(any_float)

steps = st.one_of(
    st.tuples(
        st.just("add"),
        ids,
        st.lists(batch_size, max_size=12),
        st.lists(st.one_of(st.floats(0.5, 50), any_float), max_size=12),
        st.one_of(st.none(), st.dictionaries(batch_size, any_float, max_size=2)),
        st.one_of(st.none(), any_float),
        # run-length counts: small, past the per-job limit (2**63 - 1 once hung), junk
        st.one_of(
            st.none(),
            st.lists(st.one_of(st.integers(1, 5), st.integers(1, 2**63 - 1), any_int), max_size=12),
            junk,
        ),
    ),
    st.tuples(st.just("remove"), st.one_of(ids, junk)),
    st.tuples(
        st.just("observe"),
        st.lists(ids, max_size=3),
        st.lists(st.one_of(st.floats(0, 12), any_float), max_size=3),
        st.lists(batch_size, max_size=3),
    ),
    st.tuples(
        st.just("throughput"),
        st.lists(ids, max_size=3),
        st.lists(st.one_of(st.integers(0, 40), any_int), max_size=3),
        st.lists(batch_size, max_size=3),
        st.lists(any_float, max_size=3),
        st.booleans(),
    ),
    st.tuples(
        st.just("predict"),
        st.one_of(st.integers(0, 30), any_int, junk),
        anything(st.sampled_from([120.0, 1.0, 1e-300, 1e300])),
        st.one_of(st.sampled_from(ESTIMATORS), junk),
    ),
)

FIELDS = (
    "job_id",
    "batch_sizes",
    "epoch_seconds",
    "epoch_counts",
    "extra_regimes",
    "samples_per_epoch",
    "job_ids",
    "epochs_done",
    "current_batch_sizes",
    "completed_counts",
    "completed_batch_sizes",
    "round_indices",
    "steps_per_second",
    "num_rounds",
    "round_seconds",
    "estimator",
    "state",
)


def named(exc: InputError) -> bool:
    """The error's argument is a field of the API, and its message starts with it."""
    return exc.argument in FIELDS and str(exc).startswith(f"{exc.argument}: ")


@fuzz(60)
@given(st.lists(steps, min_size=1, max_size=20))
def test_job_models_survive_any_sequence_of_calls(sequence: list[tuple[Any, ...]]) -> None:
    models = JobModels(threads=1)
    for step in sequence:
        kind, *args = step
        try:
            if kind == "add":
                job_id, sizes, seconds, extra, samples, counts = args
                models.add(
                    job_id,
                    sizes,
                    seconds,
                    extra_regimes=extra,
                    samples_per_epoch=samples,
                    epoch_counts=counts,
                )
            elif kind == "remove":
                models.remove(args[0])
            elif kind == "observe":
                models.observe(*args)
            elif kind == "throughput":
                job_ids, rounds, sizes, values, steps_per_second = args
                key = "steps_per_second" if steps_per_second else "epoch_seconds"
                models.observe_throughput(job_ids, rounds, sizes, **{key: values})
            else:
                rounds, seconds, estimator = args
                prediction = models.predict(rounds, seconds, estimator=estimator)
                assert np.all(np.isfinite(prediction.valuations))
                assert np.all(np.isfinite(prediction.offsets))
                assert np.all(np.isfinite(prediction.remaining_mean_seconds))
                copy = JobModels.from_bytes(models.to_bytes())
                again = copy.predict(rounds, seconds, estimator=estimator)
                assert again.valuations.tobytes() == prediction.valuations.tobytes()
                assert (
                    again.remaining_mean_seconds.tobytes()
                    == prediction.remaining_mean_seconds.tobytes()
                )
        except InputError as exc:
            assert named(exc), str(exc)


@fuzz(60)
@given(
    so_far=st.one_of(st.lists(batch_size, max_size=6), junk),
    regimes=st.one_of(st.dictionaries(batch_size, any_float, max_size=3), junk),
    total=st.one_of(any_int, junk),
    estimator=st.one_of(st.sampled_from(ESTIMATORS), junk),
    fraction=floats_or_junk,
)
def test_predict_remaining_never_fails_unnamed(
    so_far: Any, regimes: Any, total: Any, estimator: Any, fraction: Any
) -> None:
    try:
        mean, std = predict_remaining(
            so_far, regimes, total, estimator=estimator, epoch_fraction=fraction
        )
    except InputError as exc:
        assert exc.argument in (
            "batch_sizes_so_far",
            "epoch_seconds_by_batch_size",
            "total_epochs",
            "estimator",
            "epoch_fraction",
        ), str(exc)
        return
    assert np.isfinite(mean) and np.isfinite(std) and mean >= 0


@fuzz(60)
@given(data=st.binary(max_size=300), cut=st.integers(0, 10_000), flip=st.integers(0, 10_000))
def test_state_bytes_are_validated(data: bytes, cut: int, flip: int) -> None:
    models = JobModels()
    models.add(4, [32, 32, 64], [10.0, 10.0, 6.0], extra_regimes={128: 4.0})
    models.observe([4], [1.5], [32])
    good = models.to_bytes()
    mutated = bytearray(good)
    mutated[flip % len(good)] ^= 0xFF
    for candidate in (data, good[: cut % len(good)], bytes(mutated), b"markov\n" + data):
        try:
            restored = JobModels.from_bytes(candidate)
        except InputError as exc:
            assert exc.argument == "state", str(exc)
            continue
        restored.predict(5)  # whatever it restored must still be usable
