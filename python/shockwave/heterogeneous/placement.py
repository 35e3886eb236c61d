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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shockwave.heterogeneous.mechanism import Entry
from shockwave.persistence import StateReader


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
        type_order: Iterable[int],
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

    def snapshot(self) -> dict[str, Any]:
        """The previous round's placement and the counts, as data."""
        return {
            "previous": [[list(e), k, list(ids)] for e, (k, ids) in self.previous.items()],
            "opportunities": self.opportunities,
            "extensions": self.extensions,
        }

    def restore(self, saved: StateReader, num_jobs: int) -> None:
        """Take back :meth:`snapshot`, every field checked."""
        raw = saved.raw("previous")
        if not isinstance(raw, list):
            raise saved.error("previous", "expected a list of placements")
        previous: dict[Entry, tuple[int, tuple[int, ...]]] = {}
        for item in raw:
            ok = isinstance(item, list) and len(item) == 3
            if ok:
                entry, k, ids = item
                ok = (
                    isinstance(entry, list)
                    and all(isinstance(j, int) and 0 <= j < num_jobs for j in entry)
                    and isinstance(k, int)
                    and 0 <= k < len(self.gpus)
                    and isinstance(ids, list)
                    and all(isinstance(g, int) and g in self.gpus[k] for g in ids)
                )
            if not ok:
                raise saved.error("previous", f"not a placement: {item!r:.80}")
            previous[tuple(entry)] = (k, tuple(ids))
        opportunities = saved.integer("opportunities", 0)
        extensions = saved.integer("extensions", 0)
        saved.done()
        self.previous, self.opportunities, self.extensions = previous, opportunities, extensions


def pack_gangs(gangs: Sequence[int], servers: int, server_size: int) -> list[int]:
    """Pack one type's gangs onto its servers, as the ``exact`` mechanics place them: the number
    of servers each gang spans, in the order given.

    Gangs are taken largest first (ties in the order given). Each goes whole onto the fullest
    server that still holds it (best fit; the lowest-numbered on ties); a gang that no server
    holds whole is spread over the servers with the most free GPUs, most first (the fewest
    servers; the lowest-numbered on ties).

    Args:
        gangs: GPUs of each gang; their sum may not exceed ``servers * server_size``.
        servers: servers of the type.
        server_size: GPUs per server.

    Raises:
        ValueError: if the gangs do not fit on the type.
    """
    if sum(gangs) > servers * server_size:
        raise ValueError(f"{sum(gangs)} GPUs of gangs on {servers} servers of {server_size}")
    free = [server_size] * servers
    spans = [0] * len(gangs)
    for i in sorted(range(len(gangs)), key=lambda i: -gangs[i]):
        need = gangs[i]
        fits = [s for s in range(servers) if free[s] >= need]
        if fits:
            best = min(fits, key=lambda s: (free[s], s))
            free[best] -= need
            spans[i] = 1
            continue
        for s in sorted(range(servers), key=lambda s: (-free[s], s)):
            if need == 0:
                break
            take = min(free[s], need)
            free[s] -= take
            need -= take
            spans[i] += 1
    return spans
