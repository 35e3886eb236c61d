"""Policies' state as data: the small tables their checkpoints hold.

A policy keeps per-job values in dicts keyed by job id (AlloX's previous fractions, Themis'
isolated time used); :func:`id_table` saves one as two aligned arrays, and
:func:`read_id_table` reads it back, checked (:mod:`shockwave.persistence`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shockwave.persistence import StateReader


def id_table(values: dict[int, float]) -> dict[str, Any]:
    """``{job id: value}`` as ``{"ids": int64 array, "values": float64 array}`` (order kept)."""
    return {
        "ids": np.array(list(values), dtype=np.int64),
        "values": np.array(list(values.values()), dtype=np.float64),
    }


def read_id_table(saved: StateReader) -> dict[int, float]:
    """The dict of :func:`id_table`, checked (unique ids, aligned values).

    Raises:
        shockwave.persistence.StateFormatError: naming the field.
    """
    ids = saved.array("ids", np.int64, (None,))
    values = saved.array("values", np.float64, ids.shape)
    saved.done()
    if np.unique(ids).shape[0] != ids.shape[0]:
        raise saved.error("ids", "a job id appears twice")
    return dict(zip(ids.tolist(), values.tolist(), strict=True))
