"""Gavel's placement of a round's entries on GPUs, and its lease-extension count.

Gavel (``scheduler.py``, ``_schedule_jobs_on_workers``, commit c4fa400) numbers the GPUs of each
type server by server, and every round, type by type (in the round's type order):

* takes the entries the scan chose for the type, largest gang first (stable);
* for each gang size, largest first: an entry that ran on this type last round keeps its GPUs if
  none of them is taken yet (its **lease is extended**); then every other entry with an
  allocation takes the free GPUs of the servers in order (an entry without an allocation gets
  none: it does not run).

It counts a lease-extension *opportunity* for every entry of the previous round with a job still
active, and an *extension* for every entry placed on exactly the GPUs it had. The share of
extensions is what Gavel reports (``get_num_lease_extensions``). Placement decides nothing else
in the simulation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shockwave.heterogeneous.mechanism import Entry


class GavelPlacement:
    """GPU ids per type and the previous round's placement.

    Args:
        counts: GPUs of each type.
        server_sizes: GPUs per server of each type.
    """

    def __init__(self, counts: Sequence[int], server_sizes: Sequence[int]) -> None:
        # each type's GPU ids, server after server (Gavel consumes them in this order)
        self.gpus: list[list[int]] = []
        start = 0
        for count, size in zip(counts, server_sizes, strict=True):
            self.gpus.append(list(range(start, start + (count // size) * size)))
            start += count
        self.previous: dict[Entry, tuple[int, tuple[int, ...]]] = {}
        self.opportunities = 0
        self.extensions = 0

    def place(
        self,
        chosen: Sequence[tuple[Entry, int]],
        gang: Callable[[Entry], int],
        allocated: Callable[[Entry], bool],
        active: Callable[[Entry], bool],
        type_order: Sequence[int],
    ) -> None:
        """Place the round's ``chosen`` entries (in the scan's order) and count the leases."""
        for entry in self.previous:
            if active(entry):
                self.opportunities += 1
        placed: dict[Entry, tuple[int, tuple[int, ...]]] = {}
        for k in type_order:
            jobs = sorted(((e, gang(e)) for e, t in chosen if t == k), key=lambda eg: -eg[1])
            gpus = self.gpus[k]
            taken: set[int] = set()
            pointer = 0
            for size in sorted({g for _, g in jobs}, reverse=True):
                for entry, g in jobs:
                    if g != size or entry not in self.previous:
                        continue
                    kind, ids = self.previous[entry]
                    if kind == k and not taken.intersection(ids):
                        placed[entry] = (k, ids)
                        taken.update(ids)
                for entry, g in jobs:
                    if g != size or not allocated(entry):
                        continue
                    ids_list = list(placed[entry][1]) if entry in placed else []
                    while len(ids_list) < g and pointer < len(gpus):
                        worker = gpus[pointer]
                        pointer += 1
                        if worker not in taken:
                            ids_list.append(worker)
                            taken.add(worker)
                    placed[entry] = (k, tuple(ids_list))
        for entry, (_, ids) in placed.items():
            before = self.previous.get(entry)
            if before is not None and set(before[1]) == set(ids):
                self.extensions += 1
        self.previous = placed

    @property
    def extension_share(self) -> float:
        """Extensions over opportunities (0 with no opportunity), a fraction."""
        return self.extensions / self.opportunities if self.opportunities else 0.0
