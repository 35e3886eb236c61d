"""The names of GPU (worker) types: ``v100``, ``p100``, ``k80``, as throughput tables name them.

One rule for every place that takes a type's name (a cluster spec, a job's ``gpu_types`` and
per-type profiles, a native workload file): letters, digits, ``_``, ``-`` and ``.``.
"""

from __future__ import annotations

import re

WORKER_TYPE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def is_worker_type_name(name: object) -> bool:
    """Whether ``name`` is a string that may name a GPU type."""
    return isinstance(name, str) and WORKER_TYPE_NAME.match(name) is not None
