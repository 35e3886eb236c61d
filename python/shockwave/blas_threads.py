"""BLAS calls whose last bits do not depend on the machine's cores.

OpenBLAS splits a long dot product (more than some 30,000 values) over its threads, which
changes its last bits with the machine's core count (measured: ``0x1.9c66eab8c106ep+24`` on one
thread, ``...06fp+24`` on two, for 100,000 values), and its idle threads then spin (a fifth of a
100,000-job simulation's CPU time on two cores). Inside :func:`one_blas_thread` every BLAS call
runs on the calling thread alone, so its bits are those of the BLAS kernel the CPU selects
(``tests/golden_platform.py``) whatever the cores. The round loop asks every policy inside it
(:mod:`shockwave.rounds.loop`, :mod:`shockwave.heterogeneous.allocation`, the journal's replay)
and the books take their dot products inside it (:mod:`shockwave.rounds.ledger`).
"""

from __future__ import annotations

import functools
from typing import Any

from threadpoolctl import ThreadpoolController


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded in the process (inspected once)."""
    return ThreadpoolController().select(user_api="blas")


def one_blas_thread() -> Any:
    """A context in which BLAS calls run on the calling thread alone (entering and leaving it
    costs some 13 microseconds)."""
    return _blas().limit(limits=1)
