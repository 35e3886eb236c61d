"""A cluster of several GPU types: ``ClusterSpec`` and its ``v100:12,p100:12,k80:12`` syntax.

Types are named as the throughput table names its worker types (``v100``, ``p100``, ``k80`` in
Gavel's tables). The order of the types is the order written: Gavel's simulator visits its types
in the order ``v100, p100, k80`` (fastest first), and so does the round mechanism here, in the
order of the spec. An optional server size per type (``v100:36/4``: 36 GPUs in servers of 4) is
parsed and validated for placement; the Gavel mechanics use one GPU per server, as Gavel's
``--num_gpus_per_server 1:1:1`` default, so placement plays no part in them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shockwave.limits import INT64_MAX

_TYPE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_ITEM = re.compile(r"^(?P<type>[^:]+):(?P<count>[^/]+)(?:/(?P<server>.+))?$")
#: Most GPUs of one type a spec may hold (a bound on every allocation sized by it).
MAX_GPUS_PER_TYPE = 10_000_000


@dataclass(frozen=True)
class ClusterSpec:
    """GPU types and how many of each.

    Attributes:
        types: worker-type names, in the order the round mechanism visits them.
        counts: GPUs of each type (>= 1).
        server_sizes: GPUs per server of each type (1 when not given).
    """

    types: tuple[str, ...]
    counts: tuple[int, ...]
    server_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.types:
            raise ValueError("a cluster needs at least one GPU type")
        if len(self.counts) != len(self.types):
            raise ValueError(f"{len(self.types)} types but {len(self.counts)} counts")
        sizes = self.server_sizes or tuple(1 for _ in self.types)
        if len(sizes) != len(self.types):
            raise ValueError(f"{len(self.types)} types but {len(sizes)} server sizes")
        object.__setattr__(self, "server_sizes", tuple(sizes))
        seen: set[str] = set()
        for name, count, size in zip(self.types, self.counts, sizes, strict=True):
            if not isinstance(name, str) or not _TYPE_NAME.match(name):
                raise ValueError(f"GPU type {name!r}: a name of letters, digits, '_', '-', '.'")
            if name in seen:
                raise ValueError(f"GPU type {name!r} is listed twice")
            seen.add(name)
            if isinstance(count, bool) or not isinstance(count, int):
                raise ValueError(f"GPU type {name!r}: count must be an integer, got {count!r}")
            if not 1 <= count <= MAX_GPUS_PER_TYPE:
                raise ValueError(
                    f"GPU type {name!r}: count must be in [1, {MAX_GPUS_PER_TYPE}], got {count}"
                )
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= count:
                raise ValueError(
                    f"GPU type {name!r}: server size must be an integer in [1, {count}], "
                    f"got {size!r}"
                )
            if count % size:
                raise ValueError(
                    f"GPU type {name!r}: {count} GPUs do not fill servers of {size} exactly"
                )

    @classmethod
    def parse(cls, text: str) -> ClusterSpec:
        """Read ``"v100:12,p100:12,k80:12"`` (optionally ``"v100:36/4"``: servers of 4).

        Raises:
            ValueError: naming the item that is malformed.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a cluster spec is 'TYPE:COUNT[,TYPE:COUNT...]', got an empty one")
        types: list[str] = []
        counts: list[int] = []
        sizes: list[int] = []
        for raw in text.split(","):
            item = raw.strip()
            match = _ITEM.match(item)
            if match is None:
                raise ValueError(
                    f"cluster item {item!r} is not 'TYPE:COUNT' or 'TYPE:COUNT/SERVER_SIZE'"
                )
            name = match["type"].strip()
            count = _integer(match["count"], f"GPU type {name!r}: count")
            size = (
                1
                if match["server"] is None
                else _integer(match["server"], f"GPU type {name!r}: server size")
            )
            types.append(name)
            counts.append(count)
            sizes.append(size)
        return cls(tuple(types), tuple(counts), tuple(sizes))

    @classmethod
    def homogeneous(cls, gpus: int, worker_type: str = "v100") -> ClusterSpec:
        """``gpus`` GPUs of one type (what ``--gpus N`` means)."""
        return cls((worker_type,), (gpus,))

    @property
    def num_types(self) -> int:
        return len(self.types)

    @property
    def total_gpus(self) -> int:
        return sum(self.counts)

    @property
    def is_homogeneous(self) -> bool:
        return len(self.types) == 1

    def count(self, worker_type: str) -> int:
        """GPUs of ``worker_type``; ``KeyError`` naming it if the cluster has none."""
        try:
            return self.counts[self.types.index(worker_type)]
        except ValueError:
            raise KeyError(f"the cluster has no GPU type {worker_type!r}") from None

    def __str__(self) -> str:
        parts = []
        for name, count, size in zip(self.types, self.counts, self.server_sizes, strict=True):
            parts.append(f"{name}:{count}" + (f"/{size}" if size != 1 else ""))
        return ",".join(parts)


def _integer(text: str, what: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"\d+", text):
        raise ValueError(f"{what} must be a positive integer, got {text!r}")
    value = int(text)
    if value > INT64_MAX:
        raise ValueError(f"{what} is too large: {text}")
    return value
