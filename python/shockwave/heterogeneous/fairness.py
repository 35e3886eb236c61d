"""Finish-time fairness on a heterogeneous cluster, against Gavel's isolated allocation.

Gavel (``scheduler/policies/isolated.py``, commit c4fa400) defines a job's *isolated* share of a
typed cluster with ``m`` active jobs as an equal split of every type,

    ``S[i, k] = (N_k / m) / gang_i``, each row then divided by ``max(1, sum_k S[i, k])``

(a job never gets more than all of its time), and its isolated throughput as
``I_i = sum_k T[i, k] S[i, k]`` (iterations/s). Gavel's ``finish_time_fairness`` policies use it
with ``m`` the jobs active at each allocation (:func:`isolated_shares` serves both them and the
metric here).

The metric (``docs/simulator.md``, "Heterogeneous clusters"): job ``i``'s contention ``m_i`` is the
number of jobs active (arrived, not yet completed; itself included) averaged over time from its
arrival to its completion, the contention Themis's finish-time fairness observes; its isolated
runtime is ``t_iso_i = steps_i / I_i(m_i)`` seconds and

    ``rho_i = JCT_i / t_iso_i``,

rounded to :data:`~shockwave.metrics.RHO_DECIMALS` decimals as the homogeneous metric is. On one
type with single-GPU jobs this is ``JCT_i / ((steps_i / T_i) max(1, m_i / N))``, the homogeneous
Themis-style rho with time-averaged contention. A job that Gavel's failure rule dropped has no
rho (NaN) and counts in no job's contention (its drop time is not known).

A job that follows its epoch profiles (a native workload's, adapting or not) has no single
``T[i, k]``: its isolated runtime is the sum of its epochs' durations on its isolated share,
``t_iso_i = sum_e 1 / (sum_k S[i, k] / d_k(e))`` with ``d_k(e)`` the duration of epoch ``e``
on type ``k`` (:meth:`~shockwave.heterogeneous.typed_profiles.TypedProfiles.isolated_seconds`);
for a static profile (``d_k(e) = iterations_e / T[i, k]``) it equals ``steps_i / I_i`` above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from shockwave.metrics import RHO_DECIMALS

if TYPE_CHECKING:
    from shockwave.heterogeneous.typed_profiles import TypedProfiles

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def isolated_shares(counts: IntArray, gang: IntArray, active: float | FloatArray) -> FloatArray:
    """Gavel's isolated allocation ``S[i, k]`` (module notes): ``(n, K)`` time shares.

    Args:
        counts: GPUs of each type, ``(K,)``.
        gang: GPUs of each job, ``(n,)``.
        active: the jobs sharing the cluster, ``m`` (one number, or one per job), > 0.
    """
    m = np.asarray(active, dtype=np.float64)
    if m.ndim:
        m = m[:, None]
    share = (counts.astype(np.float64)[None, :] / m) / gang[:, None].astype(np.float64)
    out: FloatArray = share / np.maximum(share.sum(axis=1), 1.0)[:, None]
    return out


def mean_active_jobs(arrival: FloatArray, completion: FloatArray) -> FloatArray:
    """Per job, the number of active jobs averaged over ``[arrival_i, completion_i]`` (seconds;
    NaN completions, dropped jobs, count nowhere and get NaN); 1 for a job with no duration."""
    done = ~np.isnan(completion)
    times = np.concatenate([arrival[done], completion[done]])
    steps = np.concatenate([np.ones(int(done.sum())), -np.ones(int(done.sum()))])
    order = np.argsort(times, kind="stable")
    times, steps = times[order], steps[order]
    level = np.cumsum(steps)  # active jobs from times[j] to times[j + 1]
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])

    def integral(t: FloatArray) -> FloatArray:
        at = np.searchsorted(times, t, side="right") - 1
        result: FloatArray = area[at] + level[at] * (t - times[at])
        return result

    out = np.full(arrival.shape[0], np.nan)
    if not done.any():
        return out
    start, end = arrival[done], completion[done]
    span = end - start
    mean = np.ones(start.shape[0])
    positive = span > 0.0
    mean[positive] = (integral(end[positive]) - integral(start[positive])) / span[positive]
    out[done] = np.maximum(mean, 1.0)
    return out


def heterogeneous_ftf(
    jct: FloatArray,
    total_steps: IntArray,
    throughput: FloatArray,
    gang: IntArray,
    counts: IntArray,
    arrival: FloatArray,
    completion: FloatArray,
    profiles: TypedProfiles | None = None,
) -> tuple[FloatArray, FloatArray]:
    """``(rho, isolated_seconds)`` per job (module notes); NaN for dropped jobs. With
    ``profiles``, the jobs' isolated runtimes follow their epoch profiles on every type."""
    contention = mean_active_jobs(arrival, completion)
    done = ~np.isnan(contention)
    isolated = np.full(jct.shape[0], np.nan)
    if done.any():
        shares = isolated_shares(counts, gang[done], contention[done])
        if profiles is not None:
            isolated[done] = profiles.isolated_seconds(np.flatnonzero(done), shares)
            rho_profiles: FloatArray = np.round(jct / isolated, RHO_DECIMALS)
            return rho_profiles, isolated
        rate = np.sum(throughput[done] * shares, axis=1)
        isolated[done] = total_steps[done].astype(np.float64) / rate
    rho: FloatArray = np.round(jct / isolated, RHO_DECIMALS)
    return rho, isolated
