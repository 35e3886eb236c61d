"""shockwave: fair and efficient GPU-cluster scheduling for dynamically adapting ML jobs.

A reimplementation of Shockwave (Zheng et al., NSDI '23): the dynamic Fisher market solved by
proportional response in Rust, a stochastic model of batch-size adaptation, a trace-driven
simulator and the baseline policies.

Main entry points:

* :func:`shockwave.traces.load_workload` reads a ``.trace`` (with a throughput table) or a
  native ``.jsonl`` workload into a :class:`~shockwave.workload.Workload` of jobs.
* the ``shockwave`` command line (``shockwave --help``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from shockwave.errors import InputError, JobFieldError, TraceError
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Job, Workload

try:
    __version__ = version("shockwave")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "InputError",
    "Job",
    "JobFieldError",
    "ThroughputTable",
    "TraceError",
    "Workload",
    "__version__",
]
