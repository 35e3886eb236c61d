"""Gavel's ``gandiva``: equal time shares with Gandiva's random packing of jobs in pairs.

Gavel's ``GandivaPolicy`` (``policies/gandiva.py``, commit c4fa400; Gandiva is Xiao et al., OSDI
'18) is a packing policy: the mechanism may run two jobs of the same gang size on the same GPUs,
each at its co-located throughput (:mod:`.mechanism`). At every call:

* pairs formed earlier are kept while both jobs are active and the pair's normalised co-located
  throughput, ``sum`` over all types and both jobs of ``packed / isolated``, is at least 1 (a job
  left alone is re-paired every call);
* if the active jobs' GPUs fit in the cluster (``sum_i gang_i <= sum_k N_k``) nothing is packed:
  every job gets an equal share;
* otherwise the jobs not in a pair are paired at random: as many draws as there are such jobs,
  each drawing two of them (``random.Random(seed).sample``, Gavel's draws reproduced one for
  one) and pairing them if their gang sizes are equal; the others stay alone;
* every entry scheduled (a pair or a lone job) gets ``X[e, k] = N_k / (m gang_e)``, ``m`` the
  number of entries, each row scaled down to sum to at most 1; every other pair gets nothing.

Gavel's mechanism does not shuffle the type order for it (``Packing`` is in its name).
"""

from __future__ import annotations

import random

import numpy as np

from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState


class GavelGandiva(TypedAllocationPolicy):
    """Gavel's ``gandiva`` (see the module notes)."""

    name: str = "gandiva"  # type: ignore[misc]  # the base's per-instance name
    gavel_name = "gandiva"
    packs_jobs = True

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self._rng = random.Random(self.seed)
        # job id -> (its entry: (job id,) or (id, id), its partner's id or None)
        self._assigned: dict[int, tuple[tuple[int, ...], int | None]] = {}

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        ids = state.job_ids.tolist()
        active = set(ids)
        row = {job: i for i, job in enumerate(ids)}
        gang = dict(zip(ids, state.gang.tolist(), strict=True))
        names = sorted(range(len(state.types)), key=lambda k: state.types[k])  # Gavel's order
        pairs = {(ids[a], ids[b]): p for p, (a, b) in enumerate(state.pairs.tolist())}
        self._forget_stale(active, row, pairs, state, names)
        if sum(gang.values()) <= int(state.counts.sum()):
            entries: set[tuple[int, ...]] = {(job,) for job in ids}
        else:
            alone = [job for job in sorted(ids) if job not in self._assigned]
            draws = len(alone)
            attempt = 0
            while len(alone) > 1 and attempt < draws:
                attempt += 1
                first, second = self._rng.sample(alone, 2)  # Gavel's draw
                if gang[first] != gang[second]:
                    continue
                alone.remove(first)
                alone.remove(second)
                pair = (min(first, second), max(first, second))
                self._assigned[first] = (pair, second)
                self._assigned[second] = (pair, first)
            for job in alone:
                self._assigned[job] = ((job,), None)
            entries = {entry for entry, _ in self._assigned.values()}
        counts = state.counts.astype(np.float64)
        m = len(entries)
        x = np.zeros((len(ids) + len(pairs), len(state.types)))
        for entry in entries:
            r = row[entry[0]] if len(entry) == 1 else len(ids) + pairs[(entry[0], entry[1])]
            share = (counts / m) / gang[entry[0]]
            x[r] = share / max(float(np.sum(share)), 1.0)
        return x

    def _forget_stale(
        self,
        active: set[int],
        row: dict[int, int],
        pairs: dict[tuple[int, int], int],
        state: TypedAllocationState,
        names: list[int],
    ) -> None:
        """Drop pairs with a finished job or a normalised throughput below 1 (and every job
        left alone: its normalised throughput is 0)."""
        stale: list[int | None] = []
        for job, (entry, other) in self._assigned.items():
            if job not in active or (other is not None and other not in active):
                stale.extend([job, other])
                continue
            if len(entry) == 1 or _normalized(entry, row, pairs, state, names) < 1.0:
                stale.extend([job, other])
        for stale_job in stale:
            if stale_job is not None and stale_job in self._assigned:
                del self._assigned[stale_job]


def _normalized(
    entry: tuple[int, ...],
    row: dict[int, int],
    pairs: dict[tuple[int, int], int],
    state: TypedAllocationState,
    names: list[int],
) -> float:
    """``sum`` over types (in name order) and both jobs of co-located over isolated throughput;
    0 if either job cannot share some type."""
    colocated = state.pair_throughput[pairs[(entry[0], entry[1])]]
    total = 0.0
    for k in names:
        for i, job in enumerate(entry):
            packed = float(colocated[k, i])
            if packed <= 0.0:
                return 0.0
            total += packed / float(state.throughput[row[job], k])
    return total
