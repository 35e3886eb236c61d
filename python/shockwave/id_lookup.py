"""Locating integer identifiers (job ids) in an array of them, vectorised."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def positions_of(ids: npt.NDArray[np.integer], wanted: npt.NDArray[np.integer]) -> IntArray:
    """Index in ``ids`` (unique integers) of each of ``wanted``, or -1 where it is absent.

    One sort of ``ids`` and a binary search per wanted id: ``O((N + M) log N)``.
    """
    if ids.size == 0 or wanted.size == 0:
        return np.full(wanted.shape, -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    where = np.minimum(np.searchsorted(ordered, wanted), ids.size - 1)
    return np.where(ordered[where] == wanted, order[where], -1).astype(np.int64)


def has_repeats(ids: npt.NDArray[np.integer]) -> bool:
    """Whether an integer identifier occurs more than once."""
    ordered = np.sort(ids)
    return bool((ordered[1:] == ordered[:-1]).any())
