"""Identical jobs held once in the ECOS-method interior point (``BlockConeProgram.merged``).

A merged program factors one block per class of identical jobs and still takes every sum over all
jobs in their order and memory layout, so its solve must give the bits of the unmerged solve: the
flag, the iteration count and every share. The programs are Gavel's (the builders of
``gavel_programs``) with jobs drawn from a few kinds, as Gavel's traces draw them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.heterogeneous.cone_program import BlockConeProgram, FloatArray
from shockwave.heterogeneous.gavel_programs import (
    finish_time_program,
    max_min_program,
    max_sum_program,
    rate_feasibility_program,
    water_filling_program,
)
from shockwave.heterogeneous.interior_point import ConeSolution, solve_cone_program

Builder = Callable[[FloatArray, FloatArray, FloatArray, np.random.Generator, FloatArray],
                   BlockConeProgram]  # fmt: skip


def _max_min(w: FloatArray, g: FloatArray, c: FloatArray, rng: np.random.Generator,
             kind: FloatArray) -> BlockConeProgram:  # fmt: skip
    return max_min_program(w, g, c)


def _max_sum(w: FloatArray, g: FloatArray, c: FloatArray, rng: np.random.Generator,
             kind: FloatArray) -> BlockConeProgram:  # fmt: skip
    return max_sum_program(w, g, c)


def _rates(w: FloatArray, g: FloatArray, c: FloatArray, rng: np.random.Generator,
           kind: FloatArray) -> BlockConeProgram:  # fmt: skip
    return rate_feasibility_program(w, 0.02 * kind, g, c)


def _finish_time(w: FloatArray, g: FloatArray, c: FloatArray, rng: np.random.Generator,
                 kind: FloatArray) -> BlockConeProgram:  # fmt: skip
    return finish_time_program(w, 1.0 + kind, 0.5 * kind, g, c)


def _water_filling(w: FloatArray, g: FloatArray, c: FloatArray, rng: np.random.Generator,
                   kind: FloatArray) -> BlockConeProgram:  # fmt: skip
    n = w.shape[0]
    return water_filling_program(w, np.ones(n), np.zeros(n), 0.01 * kind, g, c)


BUILDERS: dict[str, Builder] = {
    "max_min": _max_min,
    "max_sum": _max_sum,
    "rate_feasibility": _rates,
    "finish_time": _finish_time,
    "water_filling": _water_filling,
}


def _jobs(seed: int, n: int, kinds: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``n`` jobs drawn from ``kinds`` kinds: throughputs on 3 types, gangs, a per-kind value."""
    rng = np.random.default_rng(seed)
    speeds = rng.uniform(0.1, 3.0, (kinds, 3))
    gangs = rng.choice([1.0, 2.0, 4.0, 8.0], kinds)
    value = rng.uniform(0.0, 1.0, kinds)
    kind = rng.integers(0, kinds, n)
    counts = np.full(3, max(1.0, n / 8.0))
    return speeds[kind], gangs[kind], counts, value[kind]


def _bits(solution: ConeSolution) -> tuple[object, ...]:
    return (
        solution.flag,
        solution.iterations,
        solution.x_job.tobytes(),
        solution.x_job.shape,
        solution.x_global.tobytes(),
    )


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize(("n", "kinds"), [(1, 1), (2, 1), (9, 3), (300, 30), (3000, 60)])
def test_a_merged_solve_gives_the_bits_of_the_unmerged_one(name: str, n: int, kinds: int) -> None:
    w, g, c, kind = _jobs(n + kinds, n, kinds)
    program = BUILDERS[name](w, g, c, np.random.default_rng(0), kind)
    merged = program.merged()
    assert merged.num_jobs == n
    assert merged.num_blocks == len({row.tobytes() for row in np.column_stack([w, g, kind])})
    unmerged = solve_cone_program(program, merge=False)
    assert unmerged.optimal
    assert _bits(solve_cone_program(program)) == _bits(unmerged)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    kinds=st.integers(1, 12),
    name=st.sampled_from(sorted(BUILDERS)),
)
def test_merging_never_changes_a_bit(seed: int, n: int, kinds: int, name: str) -> None:
    w, g, c, kind = _jobs(seed, n, kinds)
    program = BUILDERS[name](w, g, c, np.random.default_rng(seed), kind)
    assert _bits(solve_cone_program(program)) == _bits(solve_cone_program(program, merge=False))


def test_classes_are_told_apart_by_their_bits_and_kept_in_the_order_of_their_first_job() -> None:
    one_ulp = np.nextafter(1.0, 2.0)
    w = np.array([[2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [2.0, 1.0, 0.5], [one_ulp, 1.0, 1.0]])
    program = max_min_program(w, np.array([1.0, 1.0, 1.0, 1.0]), np.full(3, 2.0))
    merged = program.merged()
    assert merged.num_blocks == 3 and merged.num_jobs == 4
    assert merged.members is not None and merged.members.tolist() == [0, 1, 0, 2]
    assert np.array_equal(merged.expand(merged.local_job), program.local_job)
    # a gang is a coefficient too (the coupling rows)
    other_gang = max_min_program(w, np.array([1.0, 1.0, 2.0, 1.0]), np.full(3, 2.0))
    assert other_gang.merged() is other_gang
    # -0.0 and 0.0 are different bits
    signed = max_sum_program(np.array([[0.0, 1.0], [-0.0, 1.0]]), np.ones(2), np.ones(2))
    assert signed.merged() is signed
    assert merged.merged() is merged


def test_expand_keeps_the_layout_of_a_column_slice() -> None:
    w = np.array([[2.0, 1.0, 0.5], [2.0, 1.0, 0.5], [1.0, 1.0, 1.0]])
    merged = max_min_program(w, np.ones(3), np.full(3, 2.0)).merged()
    parent = np.arange(2 * 8, dtype=np.float64).reshape(2, 8)
    view = parent[:, :3]
    out = merged.expand(view)
    assert out.strides == (8 * 8, 8) and np.array_equal(out, parent[[0, 0, 1], :3])
    with pytest.raises(ValueError, match="column slices"):
        merged.expand(np.ones((2, 6))[:, ::2])


def test_members_must_index_the_rows() -> None:
    program = max_sum_program(np.ones((2, 2)), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="members"):
        BlockConeProgram(
            job_c=program.job_c,
            global_c=program.global_c,
            local_job=program.local_job,
            local_global=program.local_global,
            local_h=program.local_h,
            lp_rows=program.lp_rows,
            soc_size=program.soc_size,
            coupling=program.coupling,
            coupling_h=program.coupling_h,
            members=np.array([0, 2]),
        )


@pytest.mark.parametrize("subscripts", ["nik,ni->k", "nij,nik->jk"])
@pytest.mark.parametrize("jobs", [1, 7, 5000])
def test_a_sum_over_jobs_of_class_terms_has_the_bits_of_einsum_over_every_job(
    subscripts: str, jobs: int
) -> None:
    rng = np.random.default_rng(jobs)
    classes = 6
    w = rng.standard_normal((classes, 3)) * 10.0 ** rng.uniform(-6, 6, (classes, 3))
    merged = max_min_program(w[rng.integers(0, classes, jobs)], np.ones(jobs), np.ones(3))
    merged = merged.merged()
    blocks = merged.num_blocks
    shared = rng.standard_normal((blocks, 8, 4)) * 10.0 ** rng.uniform(-8, 8, (blocks, 8, 4))
    other_shape = (blocks, 8) if subscripts == "nik,ni->k" else (blocks, 8, 4)
    other = rng.standard_normal(other_shape) * 10.0 ** rng.uniform(-8, 8, other_shape)
    expected = np.einsum(subscripts, merged.expand(shared), merged.expand(other))
    assert merged.job_sum(subscripts, shared, other).tobytes() == expected.tobytes()


def test_class_sum_refuses_what_it_cannot_sum() -> None:
    from shockwave import InputError, _core

    terms = np.ones((2, 3, 4))
    assert _core.class_sum(terms, np.array([1, 0, 1])).tolist() == [9.0] * 4
    with pytest.raises(InputError, match="members") as info:
        _core.class_sum(terms, np.array([0, 2]))
    assert info.value.argument == "members"
    with pytest.raises(InputError, match="terms"):
        _core.class_sum(np.ones((2, 3, 8))[:, :, ::2], np.array([0]))
