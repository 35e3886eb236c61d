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
* the machine's available memory (:func:`available_memory_bytes`) for totals
  (:func:`check_memory`).

The Rust core checks its own allocations the same way (``rust/core/src/limits.rs``).
"""

from __future__ import annotations

import os

#: Most epochs one job may have (160 MB of per-epoch profile at this size).
MAX_EPOCHS_PER_JOB = 10_000_000
#: Largest integer numpy's int64 and the Rust core hold.
INT64_MAX = 2**63 - 1
#: Latest arrival and longest total run time of a job, seconds (about 31,700 years): beyond it
#: sums of times lose whole seconds and round counts stop being exact.
MAX_SECONDS = 1e12
#: Shortest epoch of a job, seconds (a microsecond): shorter ones make throughputs overflow.
MIN_EPOCH_SECONDS = 1e-6
#: Range of a job's priority weight: policies divide by weights and multiply them by budgets
#: and boosts, which stays finite within it (a subnormal weight made max-min fairness overflow).
MIN_WEIGHT, MAX_WEIGHT = 1e-300, 1e300


def available_memory_bytes() -> int | None:
    """Memory the machine can give without swapping, bytes (``MemAvailable`` on Linux; the
    physical memory elsewhere; ``None`` if neither can be read)."""
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


def memory_problem(nbytes: int, what: str) -> str | None:
    """Why ``nbytes`` for ``what`` cannot be allocated, or ``None`` if it can."""
    available = available_memory_bytes()
    if available is not None and nbytes > available:
        return (
            f"{what} would need {nbytes / 1e9:.3g} GB, more than the {available / 1e9:.3g} GB "
            "of memory available"
        )
    return None


def check_memory(argument: str, nbytes: int, what: str) -> None:
    """Raise ``ValueError`` naming ``argument`` if ``nbytes`` do not fit in available memory."""
    problem = memory_problem(nbytes, what)
    if problem is not None:
        raise ValueError(f"{argument}: {problem}")
