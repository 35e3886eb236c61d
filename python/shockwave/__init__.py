"""shockwave: fair and efficient GPU-cluster scheduling for dynamically adapting ML jobs.

A reimplementation of Shockwave (Zheng et al., NSDI '23): the dynamic Fisher market solved by
proportional response in Rust, a stochastic model of batch-size adaptation, a trace-driven
simulator and the baseline policies, and a runtime that schedules real training processes.

This module is the front door: everything a user needs for the common tasks, importable from
``shockwave`` itself (each name also lives in the module that holds its concept, see
``docs/architecture.md``)::

    from shockwave import SimulationConfig, Shockwave, load_workload, simulate

    workload = load_workload("traces/canonical_120jobs.trace", "tacc")
    result = simulate(workload, Shockwave(), SimulationConfig(gpus=32, mechanics="gavel"))

* workloads and traces: :func:`load_workload`, :func:`load_throughputs`, :func:`write_native`,
  :func:`generate_workload` with :class:`GeneratorParameters`; :class:`Workload`, :class:`Job`
  (its :class:`EpochProfile`, its :class:`RunSpec`), :class:`ThroughputTable`;
* simulation: :func:`simulate`, :class:`Simulation`, :class:`CheckpointSettings`,
  :func:`resume_simulation`; the settings :class:`SimulationConfig`; the result
  :class:`SimulationResult`;
* policies: :func:`make_policy` (by name, :data:`POLICIES`), the Shockwave policy
  :class:`Shockwave` and the baselines (:class:`Fifo`, :class:`AlloX`, ...); the protocol a
  policy of your own implements, :class:`AllocationPolicy` or :class:`RoundPolicy`, and what it
  sees, :class:`ClusterState`;
* the market on its own: :func:`solve` (:mod:`shockwave.market`) and its :class:`MarketSolution`;
* real runs: :func:`run_workload`, :func:`resume_run`, :class:`RuntimeConfig`, :class:`RunResult`;
* heterogeneous clusters: :class:`ClusterSpec`;
* errors: :class:`ShockwaveError`, the base of every error raised on purpose, and its kinds.

``import shockwave`` stays cheap: the workload types and the errors are imported at once,
everything else (the simulator, the policies, the runtime, the market) on first use.
The ``shockwave`` command line is the other entry point (``shockwave --help``).
"""

# No ``from __future__ import annotations`` here: it imports the ``__future__`` module, and
# nothing may run before the handler of Ctrl-C below is in place.
import sys as _sys


def _exit_interrupted(signum: int, frame: object) -> None:
    """Ctrl-C while the command line loads: say so and exit 130 (nothing is under way yet)."""
    import os  # loaded with the interpreter

    try:
        os.write(2, b"shockwave: interrupted\n")
    finally:
        os._exit(130)


def _quiet_interrupts_while_the_command_line_loads() -> None:
    """In the ``shockwave`` command (a main module that imports :mod:`shockwave.cli`, as the
    console script does), Ctrl-C from this, the package's first instruction, until the command
    line has loaded (numpy, scipy, the policies: the first second) exits 130 with one line,
    never a ``KeyboardInterrupt`` traceback; :func:`shockwave.cli.main` gives Ctrl-C back to
    Python before it runs a command. Any other program is left alone."""
    frame = _sys._getframe(1)  # nothing is imported before the handler is in place
    while frame.f_globals.get("__name__") != "__main__":
        if frame.f_back is None:
            return
        frame = frame.f_back
    if "shockwave.cli" not in frame.f_code.co_names:
        return
    signals = __import__("_signal")  # the interpreter's own (``signal`` would import enum)
    try:  # noqa: SIM105 - contextlib is not loaded yet
        signals.signal(signals.SIGINT, _exit_interrupted)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass


_quiet_interrupts_while_the_command_line_loads()

from importlib import import_module  # noqa: E402
from importlib.metadata import PackageNotFoundError, version  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from shockwave.epoch_profile import EpochProfile  # noqa: E402
from shockwave.errors import (  # noqa: E402
    DataError,
    InputError,
    JobFieldError,
    OutputError,
    RunFailedError,
    ShockwaveError,
    TraceError,
    UsageError,
)
from shockwave.run_spec import RunSpec  # noqa: E402
from shockwave.throughputs import ThroughputTable  # noqa: E402
from shockwave.workload import Job, Workload  # noqa: E402

if TYPE_CHECKING:
    from shockwave.heterogeneous import ClusterSpec
    from shockwave.market import MarketSolution, solve
    from shockwave.metrics import SimulationResult
    from shockwave.policies import (
        POLICIES,
        AlloX,
        Fifo,
        FinishTimeFairness,
        GandivaFair,
        MaxMinFairness,
        MaxSumThroughput,
        MinTotalDuration,
        make_policy,
    )
    from shockwave.policies.shockwave import Shockwave
    from shockwave.runtime import RunResult, RuntimeConfig, resume_run, run_workload
    from shockwave.scheduling import (
        AllocationPolicy,
        ClusterState,
        RoundPolicy,
        SimulationConfig,
    )
    from shockwave.sim import CheckpointSettings, Simulation, resume_simulation, simulate
    from shockwave.traces import (
        GeneratorParameters,
        generate_workload,
        load_throughputs,
        load_workload,
        write_native,
    )

try:
    __version__ = version("shockwave")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

#: The names imported on first use, with the module that holds each (``import shockwave`` must
#: not load the simulator, the policies, scipy, the runtime's process machinery or Ray).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("GeneratorParameters", "generate_workload", "load_throughputs", "load_workload",
         "write_native"),
        "shockwave.traces",
    ),
    **dict.fromkeys(
        ("CheckpointSettings", "Simulation", "resume_simulation", "simulate"), "shockwave.sim"
    ),
    **dict.fromkeys(
        ("AllocationPolicy", "ClusterState", "RoundPolicy", "SimulationConfig"),
        "shockwave.scheduling",
    ),
    **dict.fromkeys(
        ("POLICIES", "AlloX", "Fifo", "FinishTimeFairness", "GandivaFair", "MaxMinFairness",
         "MaxSumThroughput", "MinTotalDuration", "make_policy"),
        "shockwave.policies",
    ),
    "Shockwave": "shockwave.policies.shockwave",
    "SimulationResult": "shockwave.metrics",
    **dict.fromkeys(("MarketSolution", "solve"), "shockwave.market"),
    **dict.fromkeys(
        ("RunResult", "RuntimeConfig", "resume_run", "run_workload"), "shockwave.runtime"
    ),
    "ClusterSpec": "shockwave.heterogeneous",
}  # fmt: skip

__all__ = [
    "POLICIES",
    "AlloX",
    "AllocationPolicy",
    "CheckpointSettings",
    "ClusterSpec",
    "ClusterState",
    "DataError",
    "EpochProfile",
    "Fifo",
    "FinishTimeFairness",
    "GandivaFair",
    "GeneratorParameters",
    "InputError",
    "Job",
    "JobFieldError",
    "MarketSolution",
    "MaxMinFairness",
    "MaxSumThroughput",
    "MinTotalDuration",
    "OutputError",
    "RoundPolicy",
    "RunFailedError",
    "RunResult",
    "RunSpec",
    "RuntimeConfig",
    "Shockwave",
    "ShockwaveError",
    "Simulation",
    "SimulationConfig",
    "SimulationResult",
    "ThroughputTable",
    "TraceError",
    "UsageError",
    "Workload",
    "__version__",
    "generate_workload",
    "load_throughputs",
    "load_workload",
    "make_policy",
    "resume_run",
    "resume_simulation",
    "run_workload",
    "simulate",
    "solve",
    "write_native",
]


def __getattr__(name: str) -> Any:
    """Import a front-door name on first use (PEP 562) and keep it in the module."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shockwave' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's attributes, the front-door names not imported yet included."""
    return sorted(set(globals()) | set(__all__))
