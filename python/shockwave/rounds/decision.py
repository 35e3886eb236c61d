"""The check of a policy's answer: what the round loop accepts from a policy, and why not.

Both raise :class:`~shockwave.scheduling.PolicyOutputError` naming the policy and what is wrong,
so that a faulty policy stops the run with a clear message instead of a wrong result.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shockwave.scheduling.errors import PolicyOutputError
from shockwave.scheduling.state import ClusterState

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Tolerance on returned time fractions (a solver's 1 + 1e-12 is accepted and clipped to 1).
FRACTION_TOLERANCE = 1e-9
#: Tolerance on a typed policy's shares ``X[e, k]`` (its interior-point solutions).
SHARE_TOLERANCE = 1e-6


def check_fractions(policy: str, raw: object, state: ClusterState) -> FloatArray:
    """An allocation policy's answer as time fractions in ``[0, 1]``, one per active job
    (values within :data:`FRACTION_TOLERANCE` outside are clipped).

    Raises:
        PolicyOutputError: for an answer that is not numeric, of the wrong shape, not finite,
            or outside ``[0, 1]``.
    """
    try:
        x = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PolicyOutputError(f"{policy}: fractions are not numeric ({exc})") from None
    if x.shape != (state.num_active,):
        raise PolicyOutputError(
            f"{policy}: expected {state.num_active} time fractions (one per active "
            f"job), got an array of shape {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise PolicyOutputError(f"{policy}: time fractions must be finite")
    outside = (x < -FRACTION_TOLERANCE) | (x > 1.0 + FRACTION_TOLERANCE)
    if np.any(outside):
        bad = int(np.argmax(outside))
        raise PolicyOutputError(
            f"{policy}: time fraction {x[bad]!r} of job {int(state.job_ids[bad])} is outside [0, 1]"
        )
    return np.clip(x, 0.0, 1.0)


def check_round(
    policy: str,
    raw: object,
    state: ClusterState,
    active: IntArray,
    gang: IntArray,
    gpus: int,
) -> IntArray:
    """A round policy's answer (job ids) as the internal indices of the round's jobs.

    ``active`` holds the internal indices of the state's jobs, ``gang`` every job's gang size
    by internal index.

    Raises:
        PolicyOutputError: for ids that are not integers, a job twice, a job that is not active,
            or gangs that need more GPUs than the cluster has.
    """
    try:
        ids = np.asarray(raw, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise PolicyOutputError(f"{policy}: job ids are not integers ({exc})") from None
    if np.unique(ids).shape[0] != ids.shape[0]:
        raise PolicyOutputError(f"{policy}: a job was scheduled twice in one round")
    try:
        chosen = active[state.index_of(ids)]
    except ValueError as exc:
        raise PolicyOutputError(f"{policy}: {exc}") from None
    used = int(gang[chosen].sum())
    if used > gpus:
        raise PolicyOutputError(f"{policy}: the round needs {used} GPUs but the cluster has {gpus}")
    return chosen


def check_typed_allocation(policy: str, raw: object, shape: tuple[int, int]) -> FloatArray:
    """A typed policy's answer as shares ``X[e, k]`` in ``[0, 1]`` of ``shape`` (entries x GPU
    types; values within :data:`SHARE_TOLERANCE` outside are clipped).

    Raises:
        PolicyOutputError: for an answer that is not numeric, of the wrong shape, not finite,
            or outside ``[0, 1]``.
    """
    try:
        x = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PolicyOutputError(f"{policy}: the allocation is not numeric ({exc})") from None
    if x.shape != shape:
        raise PolicyOutputError(f"{policy}: expected an allocation of shape {shape}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise PolicyOutputError(f"{policy}: the allocation must be finite")
    if np.any(x < -SHARE_TOLERANCE) or np.any(x > 1.0 + SHARE_TOLERANCE):
        raise PolicyOutputError(f"{policy}: shares must lie in [0, 1]")
    return np.clip(x, 0.0, 1.0)
