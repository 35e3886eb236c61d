"""Heterogeneous GPU clusters: Gavel's cluster model, mechanism and policies (issue 22).

* :class:`ClusterSpec` (``v100:12,p100:12,k80:12``), :class:`TypedThroughputTable` (every worker
  type of a throughput file), :class:`TypedJobs` (jobs with ``T[i, k]``, or a native workload's
  jobs with their epoch profiles on every type: :func:`typed_jobs_from_profiles`,
  :class:`TypedProfiles`);
* the typed worlds of the round loop (:class:`shockwave.rounds.RoundLoop`):
  :class:`GavelTypedWorld` (Gavel's simulator: its round mechanism, packing and placement) and
  :class:`ExactTypedWorld` (principled rounds, a restart penalty on a change of type), the typed
  policies asked through :class:`TypedRounds`; :func:`simulate_heterogeneous` runs them,
  :class:`TypedSimulation` too, saving itself to a checkpoint and resuming bit for bit;
* the policies, heterogeneity-aware and agnostic (:mod:`.registry`), Gavel's programs solved by
  ECOS's interior-point method (:mod:`.interior_point`; :class:`GavelSolverError` where it fails,
  as Gavel's run stops).
"""

from shockwave.heterogeneous.allocation import TypedRounds
from shockwave.heterogeneous.checkpoint import TypedInputs, TypedSimulation
from shockwave.heterogeneous.cluster import ClusterSpec
from shockwave.heterogeneous.exact_world import ExactTypedWorld
from shockwave.heterogeneous.gavel_policies import GavelSolverError
from shockwave.heterogeneous.gavel_world import GavelTypedWorld
from shockwave.heterogeneous.protocol import TypedAllocationPolicy, TypedAllocationState
from shockwave.heterogeneous.registry import (
    GAVEL_NAMES,
    TYPED_POLICIES,
    make_typed_policy,
    resolve_typed_policy,
)
from shockwave.heterogeneous.result import HeterogeneousResult
from shockwave.heterogeneous.simulate import (
    HeterogeneousConfig,
    load_typed_trace,
    simulate_heterogeneous,
    typed_result,
    typed_round_loop,
)
from shockwave.heterogeneous.typed_jobs import (
    TypedJobs,
    read_typed_trace,
    typed_jobs_from_profiles,
    typed_jobs_from_workload,
)
from shockwave.heterogeneous.typed_profiles import TypedProfiles
from shockwave.heterogeneous.typed_throughputs import TypedThroughputTable
from shockwave.heterogeneous.typed_world import TypedWorld
from shockwave.heterogeneous.workload_check import check_workload_on_cluster

__all__ = [
    "GAVEL_NAMES",
    "TYPED_POLICIES",
    "ClusterSpec",
    "ExactTypedWorld",
    "GavelSolverError",
    "GavelTypedWorld",
    "HeterogeneousConfig",
    "HeterogeneousResult",
    "TypedAllocationPolicy",
    "TypedAllocationState",
    "TypedInputs",
    "TypedJobs",
    "TypedProfiles",
    "TypedRounds",
    "TypedSimulation",
    "TypedThroughputTable",
    "TypedWorld",
    "check_workload_on_cluster",
    "load_typed_trace",
    "make_typed_policy",
    "read_typed_trace",
    "resolve_typed_policy",
    "simulate_heterogeneous",
    "typed_jobs_from_profiles",
    "typed_jobs_from_workload",
    "typed_result",
    "typed_round_loop",
]
