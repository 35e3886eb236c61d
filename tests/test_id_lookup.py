"""Vectorised lookup of integer identifiers."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shockwave.id_lookup import has_repeats, positions_of


@given(
    ids=st.lists(st.integers(-50, 50), unique=True, max_size=40),
    wanted=st.lists(st.integers(-60, 60), max_size=40),
)
def test_positions_of_matches_a_dictionary(ids: list[int], wanted: list[int]) -> None:
    index = {job: row for row, job in enumerate(ids)}
    rows = positions_of(np.array(ids, dtype=np.int64), np.array(wanted, dtype=np.int64))
    assert rows.dtype == np.int64
    assert rows.tolist() == [index.get(job, -1) for job in wanted]


@given(st.lists(st.integers(-5, 5), max_size=12))
def test_has_repeats(ids: list[int]) -> None:
    assert has_repeats(np.array(ids, dtype=np.int64)) == (len(set(ids)) != len(ids))
