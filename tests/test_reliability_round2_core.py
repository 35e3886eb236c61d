"""Regression tests of the independent fault probe's core cases (issue 25).

1. Epoch counts: a run count of ``2**63 - 1`` kept a core busy (uninterruptibly) for centuries,
   and any count was accepted; now a job has at most ``MAX_EPOCHS_PER_JOB`` epochs per run and
   in all, refused at once naming ``epoch_counts``.
2. Memory: under an address-space limit ``predict`` aborted the interpreter (the guard read
   ``MemAvailable`` only); the guard now also reads ``RLIMIT_AS`` and the cgroup's limit, and an
   allocation that fails all the same is a ``MemoryError``.
3. Silent wrong results: complex (and object, text) arrays lost their imaginary part and the
   market solved them as converged; subnormal epoch durations gave infinite valuations.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from shockwave import _core, limits, market
from shockwave.adaptation import JobModels, predict_remaining
from shockwave.errors import InputError

MAX_EPOCHS = 10_000_000


def run_python(code: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; its last line of output is what the test reads."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


#: Prelude of a subprocess that limits its own address space to what it uses plus ``ROOM``
#: bytes (set after the imports, whose address space varies by machine).
LIMITED = """
import resource

def vm_size():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

def limit_address_space(room):
    limit = vm_size() + room
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
"""

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/self/status (Linux)"
)


# ------------------------------------------------------------------------------ 1. epoch counts
def test_the_epoch_limit_is_one_constant_of_the_core() -> None:
    assert _core.MAX_EPOCHS_PER_JOB == limits.MAX_EPOCHS_PER_JOB == MAX_EPOCHS
    assert _core.MIN_EPOCH_SECONDS == limits.MIN_EPOCH_SECONDS == 1e-6


def test_a_run_count_of_2_to_the_63_is_refused_at_once_not_summed_for_centuries() -> None:
    # In a subprocess: before the fix the call never returned (and ignored Ctrl-C).
    done = run_python(
        """
        from shockwave.adaptation import JobModels
        try:
            JobModels().add(1, [32], [1.0], epoch_counts=[2**63 - 1])
        except ValueError as exc:
            print(exc)
        """,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("epoch_counts: job 1: run 0 has 9223372036854775807 epochs")
    assert "at most 10000000" in done.stdout


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        ([MAX_EPOCHS + 1], "run 0 has 10000001 epochs"),
        ([1, 10**9], "run 1 has 1000000000 epochs"),
        ([MAX_EPOCHS, 1], "the runs have more than 10000000 epochs in all"),
        ([MAX_EPOCHS // 2 + 1, MAX_EPOCHS // 2], "the runs have more than 10000000 epochs in all"),
    ],
)
def test_epoch_counts_are_bounded_per_run_and_in_all(counts: list[int], reason: str) -> None:
    models = JobModels()
    with pytest.raises(ValueError, match=f"^epoch_counts: job 1: {reason}") as raised:
        models.add(1, [32] * len(counts), [1.0] * len(counts), epoch_counts=counts)
    assert isinstance(raised.value, InputError) and raised.value.argument == "epoch_counts"
    assert len(models) == 0


def test_a_job_of_exactly_the_limit_is_accepted_and_predicted() -> None:
    models = JobModels()
    models.add(1, [32, 64], [1.0, 0.5], epoch_counts=[MAX_EPOCHS // 2, MAX_EPOCHS // 2])
    prediction = models.predict(4, 120.0)
    assert np.all(np.isfinite(prediction.valuations))
    assert prediction.remaining_mean_seconds[0] > 0


def test_predict_remaining_bounds_total_epochs() -> None:
    with pytest.raises(ValueError, match=r"^total_epochs: must be in \[1, 10000000\]"):
        predict_remaining([32], {32: 1.0}, MAX_EPOCHS + 1)
    mean, std = predict_remaining([32], {32: 1.0}, MAX_EPOCHS)
    assert np.isfinite(mean) and np.isfinite(std)


# ------------------------------------------------------------------------------------ 2. memory
@linux_only
def test_predict_under_an_address_space_limit_is_refused_not_an_abort() -> None:
    # 2 GB of valuations under 1 GB of address space: the machine's MemAvailable alone let it
    # through and the allocation aborted the interpreter ("memory allocation ... failed").
    done = run_python(
        LIMITED
        + """
from shockwave.adaptation import JobModels
models = JobModels()
models.add(1, [32], [1.0])
limit_address_space(1 << 30)
try:
    models.predict(2**28)
except ValueError as exc:
    print(type(exc).__name__, exc)
except MemoryError as exc:
    print("MemoryError", exc)
"""
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("InputError num_rounds: valuations of 1 jobs x 268435456 rounds")
    assert "address-space limit (RLIMIT_AS" in done.stdout


@linux_only
def test_the_market_guard_respects_the_address_space_limit() -> None:
    # 64 MB of valuations need about 1.6 GB of working memory: refused under 1 GB of room.
    done = run_python(
        LIMITED
        + """
import numpy as np
from shockwave import market
valuations = np.full((1, 1 << 23), 0.1)
limit_address_space(1 << 30)
try:
    market.solve(valuations, [1], 1.0, method="proportional_response", max_iter=1)
except ValueError as exc:
    print(exc)
"""
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("valuations: solving a market of 1 jobs x 8388608 rounds")
    assert "RLIMIT_AS" in done.stdout


@linux_only
def test_a_failed_allocation_is_a_memory_error_naming_the_argument() -> None:
    done = run_python(
        LIMITED
        + """
from shockwave import _core
limit_address_space(1 << 30)
try:
    _core._allocation_probe(1 << 30)  # 8 GB
except MemoryError as exc:
    print("MemoryError", exc)
print(_core._allocation_probe(1000))
"""
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    first, second = done.stdout.splitlines()
    assert first.startswith("MemoryError len: could not allocate 8.590 GB")
    assert second == "1000"


def test_an_allocation_past_any_address_space_is_a_memory_error_in_process() -> None:
    with pytest.raises(MemoryError, match="^len: could not allocate"):
        _core._allocation_probe(2**61)
    assert _core._allocation_probe(3) == 3


@linux_only
def test_python_memory_checks_read_the_address_space_limit() -> None:
    done = run_python(
        LIMITED
        + """
from shockwave import limits
limit_address_space(1 << 30)
print(limits.available_memory_bytes())
print(limits.memory_problem(2 << 30, "x"))
"""
    )
    assert done.returncode == 0, done.stderr[-2000:]
    available, problem = done.stdout.splitlines()
    assert 0 <= int(available) <= 1 << 30
    assert problem.startswith("x would need 2.15 GB") and "RLIMIT_AS" in problem


def test_the_memory_budget_is_at_most_the_machines() -> None:
    machine = limits._machine_memory_bytes()
    available = limits.available_memory_bytes()
    if machine is not None:
        assert available is not None and 0 <= available <= machine


# ------------------------------------------------------------------- 3. non-real and subnormal
BASE: dict[str, Any] = {
    "valuations": np.full((2, 3), 0.2),
    "gang_sizes": np.array([1, 1]),
    "supply": 1.0,
}
OPTIONAL: dict[str, Any] = {
    "budgets": np.ones(2),
    "progress": np.zeros(2),
    "ceilings": np.ones(2),
    "warm_start": np.full((2, 3), 0.1),
}


def non_real(value: Any, kind: str) -> Any:
    array = np.asarray(value)
    if kind == "complex":
        return array + 1j
    if kind == "object":
        return array.astype(object)
    return array.astype(str)


@pytest.mark.parametrize("kind", ["complex", "object", "text"])
@pytest.mark.parametrize("name", [*BASE, *OPTIONAL])
def test_solve_refuses_non_real_arrays_naming_the_argument(name: str, kind: str) -> None:
    args = {**BASE, **OPTIONAL}
    args[name] = non_real(args[name], kind)
    with pytest.raises(InputError) as raised:
        market.solve(**args)
    assert raised.value.argument == name, str(raised.value)


def test_complex_valuations_are_not_solved_as_converged() -> None:
    valuations = np.array([[0.5 + 3j, 0.2], [0.1, 0.4 - 2j]])
    expected = r"^valuations: expected numbers, got an array of dtype complex128 \(complex numbers"
    with pytest.raises(ValueError, match=expected):
        market.solve(valuations, [1, 1], 1.0)
    # a real array of a complex dtype is refused too: the dtype says what the caller meant
    with pytest.raises(ValueError, match="^valuations: "):
        market.solve(np.full((1, 2), 0.5, dtype=np.complex128), [1], 1.0)
    with pytest.raises(ValueError, match="^supply: expected numbers, got .*complex"):
        market.solve(np.full((1, 2), 0.5), [1], [1 + 0j, 1.0])


def test_the_other_market_functions_refuse_non_real_arrays() -> None:
    bids = np.full((2, 3), 0.1) + 0j
    with pytest.raises(ValueError, match="^bids: "):
        market.shift_bids(bids)
    with pytest.raises(ValueError, match="^bids: "):
        market.align_bids(bids, [1, 2], [2, 1])
    with pytest.raises(ValueError, match="^bids: "):
        market.warm_start_bids(bids)
    with pytest.raises(ValueError, match="^budgets: "):
        market.warm_start_bids(bids.real, previous_budgets=[1, 1], budgets=[1 + 1j, 1])
    with pytest.raises(ValueError, match="^shares: "):
        market.round_schedule(np.full((2, 3), 0.5, dtype=object), [1, 1], 1.0)
    with pytest.raises(ValueError, match="^deficit: "):
        market.round_schedule(np.full((2, 3), 0.5), [1, 1], 1.0, deficit=[0j, 0j])
    # real input of every dtype kind still works
    assert market.shift_bids(np.ones((2, 3), dtype=np.int32)).shape == (2, 3)
    assert market.solve(np.full((1, 2), True), [1], 1.0).converged


@pytest.mark.parametrize("kind", ["complex", "object"])
def test_the_adaptation_model_refuses_non_real_arrays(kind: str) -> None:
    def bad(values: list[Any]) -> Any:
        return non_real(values, kind)

    # one value of a regime mapping: complex, or an object numpy cannot hold as a real dtype
    one = 1 + 1j if kind == "complex" else Fraction(1)

    models = JobModels()
    calls = {
        "batch_sizes": lambda: models.add(1, bad([32]), [1.0]),
        "epoch_seconds": lambda: models.add(1, [32], bad([1.0])),
        "epoch_counts": lambda: models.add(1, [32], [1.0], epoch_counts=bad([2])),
        "extra_regimes": lambda: models.add(1, [32], [1.0], extra_regimes={64: one}),
        "epochs_done": lambda: models.observe([7], bad([1.0]), [32]),
        "steps_per_second": lambda: models.observe_throughput(
            [7], [0], [32], steps_per_second=bad([1.0])
        ),
        "job_ids": lambda: models.predict(2, job_ids=bad([7])),
        "epoch_seconds_by_batch_size": lambda: predict_remaining([32], {32: one}, 3),
        "batch_sizes_so_far": lambda: predict_remaining(bad([32]), {32: 1.0}, 3),
    }
    models.add(7, [32, 64], [1.0, 0.5], samples_per_epoch=100.0)
    for name, call in calls.items():
        with pytest.raises(InputError) as raised:
            call()
        assert raised.value.argument == name, (name, str(raised.value))
    assert list(models.job_ids) == [7]


def test_subnormal_epoch_durations_are_refused_naming_the_field() -> None:
    # 5e-324 s epochs made the valuations infinite (epochs per second overflow)
    models = JobModels()
    with pytest.raises(ValueError, match=r"^epoch_seconds: job 1: epoch 0 lasts 5e-324 s; .*1e-6"):
        models.add(1, [32], [5e-324])
    expected = "^epoch_seconds: job 1: epoch 3 lasts 1e-7 s; durations must be finite and at least"
    with pytest.raises(ValueError, match=expected + " 1e-6 s"):
        models.add(1, [32, 64], [1.0, 1e-7], epoch_counts=[3, 1])
    with pytest.raises(ValueError, match="^extra_regimes: job 1: an epoch of batch size 64 "):
        models.add(1, [32], [1.0], extra_regimes={64: 5e-324})
    with pytest.raises(ValueError, match="^epoch_seconds_by_batch_size: an epoch of batch size"):
        predict_remaining([32], {32: 5e-324}, 3)
    models.add(2, [32], [10.0], samples_per_epoch=1000.0)
    with pytest.raises(ValueError, match="^epoch_seconds: job 2: the measured epoch lasts 5e-324"):
        models.observe_throughput([2], [0], [32], epoch_seconds=[5e-324])
    with pytest.raises(ValueError, match="^steps_per_second: job 2: 1e308 steps/s make an epoch"):
        models.observe_throughput([2], [0], [32], steps_per_second=[1e308])
    assert list(models.job_ids) == [2]


@pytest.mark.parametrize("estimator", ["markov", "dirichlet", "oracle"])
def test_the_shortest_accepted_epochs_give_finite_valuations(estimator: Any) -> None:
    models = JobModels(estimator)
    models.add(1, [32, 64], [1e-6, 1e-6], epoch_counts=[MAX_EPOCHS // 2, MAX_EPOCHS // 2])
    models.add(2, [32], [1e-6], extra_regimes={64: 1e-6}, samples_per_epoch=1.0)
    models.observe_throughput([2], [0], [32], epoch_seconds=[1e-6])
    for round_seconds in (1e-300, 1.0, 120.0, 1e300):
        prediction = models.predict(3, round_seconds)
        assert np.all(np.isfinite(prediction.valuations)), (round_seconds, prediction.valuations)
        assert np.all(prediction.valuations.sum(axis=1) <= 1.0 + 1e-9)
        assert np.all(np.isfinite(prediction.remaining_mean_seconds))
