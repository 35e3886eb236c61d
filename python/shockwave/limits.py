"""Limits on input-chosen sizes, checked before anything is allocated.

An input can ask for arbitrarily large arrays (a job of 10^12 epochs, a run-length count of
10^12, a planning window of 10^12 rounds). Allocating first fails late and badly: numpy raises a
``MemoryError`` after the operating system has handed out what it could, a Rust allocation aborts
the interpreter. So every such size is checked up front, and refused with a ``ValueError`` (or a
:class:`~shockwave.errors.TraceError` in the readers) that names the argument and the limit:

* :data:`MAX_EPOCHS_PER_JOB`: epochs of one job (its per-epoch profile holds two numbers per
  epoch; real jobs have at most thousands);
* :data:`INT64_MAX`: every integer handed to numpy's int64 arrays or the Rust core;
* :data:`MAX_SECONDS`: a job's arrival time and its total run time; :data:`MIN_EPOCH_SECONDS`:
  its shortest epoch; :data:`MIN_WEIGHT` and :data:`MAX_WEIGHT`: its priority weight;
* the memory this process can still allocate (:func:`available_memory_bytes`: the least of
  the machine's available memory, the room under the address-space limit ``RLIMIT_AS`` and the
  room under the cgroup's memory limit) for totals (:func:`check_memory`).

The Rust core checks its own allocations the same way (``rust/core/src/limits.rs``), and holds
the epoch limits (:data:`MAX_EPOCHS_PER_JOB`, :data:`MIN_EPOCH_SECONDS`) that the adaptation
model and the workloads share.
"""

from __future__ import annotations

import os

from shockwave import _core

#: Most epochs one job may have, per run of its profile and in all (160 MB of per-epoch
#: profile at this size); the adaptation model's limit too (``JobModels.add``'s
#: ``epoch_counts``, ``predict_remaining``'s ``total_epochs``).
MAX_EPOCHS_PER_JOB: int = _core.MAX_EPOCHS_PER_JOB
#: Largest integer numpy's int64 and the Rust core hold.
INT64_MAX = 2**63 - 1
#: Latest arrival and longest total run time of a job, seconds (about 31,700 years): beyond it
#: sums of times lose whole seconds and round counts stop being exact.
MAX_SECONDS = 1e12
#: Shortest epoch of a job, seconds (a microsecond): shorter ones make throughputs overflow
#: (a subnormal epoch made the adaptation model's valuations infinite). Every epoch duration the
#: adaptation model takes (profiles, extra regimes, measured epochs) is held to it as well.
MIN_EPOCH_SECONDS: float = _core.MIN_EPOCH_SECONDS
#: Range of a job's priority weight: policies divide by weights and multiply them by budgets
#: and boosts, which stays finite within it (a subnormal weight made max-min fairness overflow).
MIN_WEIGHT, MAX_WEIGHT = 1e-300, 1e300


def _machine_memory_bytes() -> int | None:
    """``MemAvailable`` on Linux; the physical memory elsewhere; ``None`` if neither can be
    read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _status_bytes(key: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` in bytes (0 where it cannot be read)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _address_space_bytes() -> int | None:
    """Room left under the soft address-space limit (``RLIMIT_AS``, ``ulimit -v``): the limit
    less the address space in use (``VmSize``); ``None`` when unlimited or unknown."""
    try:
        import resource  # POSIX only
    except ImportError:
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    return max(0, soft - _status_bytes("VmSize:"))


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as file:
            return int(file.read().strip())
    except (OSError, ValueError):  # "max" (no limit) does not parse
        return None


def _stat_bytes(path: str, key: str) -> int:
    try:
        with open(path, encoding="ascii") as file:
            for line in file:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_bytes() -> int | None:
    """Room left under the cgroup's memory limit: the limit less the usage not counting the
    inactive page cache (cgroup v2 ``memory.max`` of the process's cgroup or of the mount's
    root, then v1 ``memory.limit_in_bytes``); ``None`` without a limit."""
    directories = []
    try:
        with open("/proc/self/cgroup", encoding="ascii") as cgroups:
            for line in cgroups:
                if line.startswith("0::") and line[3:].strip() not in ("", "/"):
                    directories.append("/sys/fs/cgroup" + line[3:].strip())
    except OSError:
        pass
    directories.append("/sys/fs/cgroup")
    for directory in directories:
        limit = _read_int(f"{directory}/memory.max")
        if limit is not None:
            used = _read_int(f"{directory}/memory.current") or 0
            cache = _stat_bytes(f"{directory}/memory.stat", "inactive_file")
            return max(0, limit - max(0, used - cache))
    v1 = "/sys/fs/cgroup/memory"
    limit = _read_int(f"{v1}/memory.limit_in_bytes")
    if limit is None:
        return None
    used = _read_int(f"{v1}/memory.usage_in_bytes") or 0
    cache = _stat_bytes(f"{v1}/memory.stat", "total_inactive_file")
    return max(0, limit - max(0, used - cache))


#: What bounds :func:`available_memory_bytes`, for the messages.
_BOUNDS = {
    "machine": "of memory available",
    "address space": "of memory available under the address-space limit (RLIMIT_AS, ulimit -v)",
    "cgroup": "of memory available under the cgroup's memory limit",
}


def _memory_budget() -> tuple[int, str] | None:
    bounds = [
        (value, name)
        for value, name in (
            (_machine_memory_bytes(), "machine"),
            (_address_space_bytes(), "address space"),
            (_cgroup_bytes(), "cgroup"),
        )
        if value is not None
    ]
    return min(bounds) if bounds else None


def available_memory_bytes() -> int | None:
    """Memory this process can still allocate, bytes: the least of the machine's available
    memory (``MemAvailable`` on Linux; the physical memory elsewhere), the room left under the
    address-space limit (``RLIMIT_AS``) and the room left under the cgroup's memory limit
    (``None`` if none can be read). The Rust core's guard reads the same."""
    budget = _memory_budget()
    return None if budget is None else budget[0]


def memory_problem(nbytes: int, what: str) -> str | None:
    """Why ``nbytes`` for ``what`` cannot be allocated, or ``None`` if it can."""
    budget = _memory_budget()
    if budget is not None and nbytes > budget[0]:
        available, bound = budget
        return (
            f"{what} would need {nbytes / 1e9:.3g} GB, more than the {available / 1e9:.3g} GB "
            f"{_BOUNDS[bound]}"
        )
    return None


def check_memory(argument: str, nbytes: int, what: str) -> None:
    """Raise ``ValueError`` naming ``argument`` if ``nbytes`` do not fit in available memory."""
    problem = memory_problem(nbytes, what)
    if problem is not None:
        raise ValueError(f"{argument}: {problem}")
