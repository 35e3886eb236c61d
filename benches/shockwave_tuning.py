"""Tuning run of the Shockwave policy's defaults, on generated traces (not the canonical one).

The defaults of :class:`~shockwave.policies.shockwave.Shockwave` must not be picked against the
canonical trace's result table. This script tunes on traces drawn by the generator (the
canonical trace is seed 25 of the first set and is never drawn), under the ``gavel`` mechanics:

every configuration of :data:`GRID` runs on four sets of traces: ``like-canonical`` (the
canonical trace's generator parameters: 120 jobs, 32 GPUs, TACC, seeds 1-4), ``heavy`` (the same
at twice the arrival rate, seeds 1-4), ``large`` (460 jobs on 128 GPUs with WISR throughputs,
the original's 128-GPU experiment's parameters, seeds 1-2) and ``scale`` (2,000 jobs on 512
GPUs, seed 1). The last set was added after the scale suite showed that a default tuned on the
first three alone (no fairness boost, ``lambda = 0``) left a third of the jobs unfair at 5,000
jobs on 1,024 GPUs (worst rho 7.4), which none of the smaller traces revealed.

A set's score for a configuration is

    mean over its traces of (makespan / makespan_gavel + avg JCT / avg JCT_gavel)
        + (number of traces on which worst rho > 1.5 or the unfair fraction > 3 %),

``gavel`` being the max-min-fairness baseline on the same trace (lower is better; the fairness
targets count as violations). The ranking is by the mean of the four sets' scores. The default
is chosen among the configurations within :data:`TIE_TOLERANCE` (0.5 %) of the best score: the
one with the largest fairness margin (the lowest worst rho over all eleven traces), then the best
score. (Scores that close are within the noise of the solver's path: a faster market solver
that changed no result by more than a few percent swapped the first three configurations of
an earlier run, whose scores were within 0.2 %, and its first was 0.02 from the worst-rho
target on one trace.)

The choice is then validated at the scale suite's largest size, :data:`VALIDATION` (20,000 jobs
on 6,500 GPUs, seed 1, ``exact`` mechanics, as ``benches/scale_suite.py`` runs it): a
configuration that misses the fairness targets there is passed over for the next in the order
above (at most :data:`MAX_VALIDATIONS` are tried). This step was added when a run picked
``lambda = 0`` again, which held the targets on every tuning trace but reached worst rho 1.9 at
20,000 jobs. The report goes to a Markdown file.

    python benches/shockwave_tuning.py --output docs/shockwave_tuning.md
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shockwave.atomic import atomic_write_text
from shockwave.policies import make_policy
from shockwave.scheduling import SimulationConfig
from shockwave.sim import simulate
from shockwave.traces import GeneratorParameters, generate_workload
from shockwave.workload import Workload

#: The grid searched (every combination). Earlier runs on the three smaller sets narrowed it:
#: a 3-round critical window and a remaining exponent of 6 never ranked first, and the best
#: scores with makespan weights 0.5, 1 and 2 were within 0.5 % (1 is dropped). The fairness
#: exponent and the owed-round carry, which decide fairness at scale, keep their full ranges.
GRID: dict[str, list[Any]] = {
    "makespan_weight": [0.5, 2.0],
    "critical_window_rounds": [1.0],
    "remaining_exponent": [2.0, 4.0],
    "fairness_exponent": [0.0, 4.0, 12.0],
    "max_owed_rounds": [0.0, 2.0, 20.0],
}
#: Configurations whose score is within this fraction of the best one tie (module docs).
TIE_TOLERANCE = 0.005
WORST_RHO_TARGET = 1.5
UNFAIR_TARGET = 0.03
#: The held-out validation trace (jobs, GPUs, generator seed), simulated with ``exact``
#: mechanics, and how many configurations are tried on it at most.
VALIDATION = (20_000, 6_500, 1)
MAX_VALIDATIONS = 4

#: Traces of each set: (jobs, GPUs, mean inter-arrival s or None for the default, seeds).
WORKLOAD_SETS: dict[str, tuple[int, int, float | None, tuple[int, ...]]] = {
    "like-canonical": (120, 32, None, (1, 2, 3, 4)),
    "heavy": (120, 32, 20.0, (1, 2, 3, 4)),
    "large": (460, 128, None, (1, 2)),
    "scale": (2000, 512, None, (1,)),
}


@dataclass(frozen=True)
class Outcome:
    """Metrics of one simulation."""

    makespan: float
    avg_jct: float
    worst_ftf: float
    unfair_fraction: float


def workloads(name: str) -> list[tuple[Workload, int]]:
    """The traces of a set, with their cluster sizes."""
    jobs, gpus, interarrival, seeds = WORKLOAD_SETS[name]
    return [
        (
            generate_workload(
                GeneratorParameters(jobs=jobs, gpus=gpus, seed=s, mean_interarrival=interarrival)
            ),
            gpus,
        )
        for s in seeds
    ]


def run(
    trace: tuple[Workload, int],
    policy: str,
    parameters: dict[str, Any],
    mechanics: str = "gavel",
) -> Outcome:
    """Simulate a trace on its cluster (``gavel`` mechanics unless told otherwise)."""
    workload, gpus = trace
    config = SimulationConfig(gpus=gpus, mechanics=mechanics)  # type: ignore[arg-type]
    result = simulate(workload, make_policy(policy, parameters), config).to_dict()
    return Outcome(
        result["makespan"], result["avg_jct"], result["worst_ftf"], result["unfair_fraction"]
    )


def score(outcomes: Sequence[Outcome], references: Sequence[Outcome]) -> float:
    """The tuning score (module docs)."""
    total = 0.0
    for outcome, reference in zip(outcomes, references, strict=True):
        total += outcome.makespan / reference.makespan + outcome.avg_jct / reference.avg_jct
        total += float(
            outcome.worst_ftf > WORST_RHO_TARGET or outcome.unfair_fraction > UNFAIR_TARGET
        ) * len(outcomes)
    return total / len(outcomes)


def configurations() -> list[dict[str, Any]]:
    """The grid, without the combinations that cannot differ."""
    out = []
    for values in itertools.product(*GRID.values()):
        parameters = dict(zip(GRID, values, strict=True))
        if (
            parameters["makespan_weight"] == 0.0
            and parameters["critical_window_rounds"] != GRID["critical_window_rounds"][0]
        ):
            continue  # without a makespan budget the critical window changes nothing
        out.append(parameters)
    return out


@dataclass
class Candidate:
    """A configuration with its outcomes per set."""

    parameters: dict[str, Any]
    outcomes: dict[str, list[Outcome]]
    scores: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.scores.values()) / len(self.scores)

    @property
    def worst_rho(self) -> float:
        """Largest worst rho over every trace of every set."""
        return max(o.worst_ftf for outcomes in self.outcomes.values() for o in outcomes)


def preference(ranked: Sequence[Candidate]) -> list[Candidate]:
    """The configurations in the order the default is chosen from: the one with the lowest worst
    rho among those tied with the best (module docs), then the others by score."""
    tied = [c for c in ranked if c.total <= ranked[0].total * (1.0 + TIE_TOLERANCE)]
    first = min(tied, key=lambda c: (c.worst_rho, c.total))
    return [first, *(c for c in ranked if c is not first)]


def fair(outcome: Outcome) -> bool:
    return outcome.worst_ftf <= WORST_RHO_TARGET and outcome.unfair_fraction <= UNFAIR_TARGET


def validated_choice(
    ranked: Sequence[Candidate],
) -> tuple[Candidate, list[tuple[Candidate, Outcome]]]:
    """The first configuration in :func:`preference` order that holds the fairness targets on
    the validation trace (the first one if none of :data:`MAX_VALIDATIONS` does), and what each
    tried configuration measured there."""
    jobs, gpus, seed = VALIDATION
    trace = (generate_workload(GeneratorParameters(jobs=jobs, gpus=gpus, seed=seed)), gpus)
    order = preference(ranked)
    tried = []
    for candidate in order[:MAX_VALIDATIONS]:
        outcome = run(trace, "shockwave", candidate.parameters, mechanics="exact")
        tried.append((candidate, outcome))
        print(f"validation {candidate.parameters}: {outcome}", flush=True)
        if fair(outcome):
            return candidate, tried
    return order[0], tried


def evaluate(
    candidate: Candidate,
    name: str,
    traces: list[tuple[Workload, int]],
    references: list[Outcome],
) -> None:
    outcomes = [run(t, "shockwave", candidate.parameters) for t in traces]
    candidate.outcomes[name] = outcomes
    candidate.scores[name] = score(outcomes, references)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=Path("docs/shockwave_tuning.md"))
    parser.add_argument("--top", type=int, default=25, help="rows of the ranking to write")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    traces = {name: workloads(name) for name in WORKLOAD_SETS}
    references = {name: [run(t, "gavel", {}) for t in ts] for name, ts in traces.items()}
    candidates = [Candidate(p, {}, {}) for p in configurations()]
    for candidate in candidates:
        for name in WORKLOAD_SETS:
            evaluate(candidate, name, traces[name], references[name])
        print(f"{candidate.total:.4f} {candidate.scores} {candidate.parameters}", flush=True)
    candidates.sort(key=lambda c: c.total)
    chosen, validations = validated_choice(candidates)
    print(f"default: {chosen.parameters}", flush=True)
    seconds = time.perf_counter() - started
    text = report(candidates[: args.top], chosen, validations, len(candidates), references, seconds)
    atomic_write_text(args.output, text)


def report(
    best: Sequence[Candidate],
    chosen: Candidate,
    validations: Sequence[tuple[Candidate, Outcome]],
    configurations_tried: int,
    references: dict[str, list[Outcome]],
    seconds: float,
) -> str:
    """The ranking as Markdown."""
    keys = list(GRID)
    sets = ", ".join(
        f"`{name}` ({jobs} jobs, {gpus} GPUs, "
        + (f"mean inter-arrival {ia:g} s" if ia else "default arrival rate")
        + f", seeds {', '.join(map(str, seeds))})"
        for name, (jobs, gpus, ia, seeds) in WORKLOAD_SETS.items()
    )
    lines = [
        "# Tuning run of the Shockwave policy's defaults",
        "",
        f"Generated by `python benches/shockwave_tuning.py` ({seconds / 60:.0f} min on the 2-core "
        "development VM), `gavel` mechanics, on generated traces only: " + sets + ". The "
        "canonical trace (seed 25 of the first set's parameters) is not used. Method and score: "
        "see the script's docstring (lower is better; relative to the `gavel` baseline on the "
        "same trace, plus 1 per trace missing worst rho <= 1.5 or unfair <= 3 %). Grid: "
        + "; ".join(f"`{k}` in {{{', '.join(map(str, v))}}}" for k, v in GRID.items())
        + f" ({configurations_tried} configurations).",
        "",
        "Baseline `gavel` (makespan s / avg JCT s / worst rho / unfair %): "
        + "; ".join(
            f"{name}: " + ", ".join(
                f"{r.makespan:,.0f} / {r.avg_jct:,.0f} / {r.worst_ftf:.2f} / "
                f"{100 * r.unfair_fraction:.1f}" for r in refs
            )
            for name, refs in references.items()
        ),
        "",
        f"## Ranking (mean of the {len(WORKLOAD_SETS)} sets' scores), best {len(best)}",
        "",
        "| rank | score | " + " | ".join(f"`{k}`" for k in keys) + " | "
        + " | ".join(f"{n} score | {n} worst rho / unfair % (max)" for n in WORKLOAD_SETS)
        + " | worst rho, all traces |",
        "|" + "---|" * (3 + len(keys) + 2 * len(WORKLOAD_SETS)),
    ]  # fmt: skip
    for rank, c in enumerate(best, start=1):
        cells = []
        for name in WORKLOAD_SETS:
            outcomes = c.outcomes[name]
            cells.append(f"{c.scores[name]:.4f}")
            cells.append(
                f"{max(o.worst_ftf for o in outcomes):.2f} / "
                f"{100 * max(o.unfair_fraction for o in outcomes):.1f}"
            )
        rank_cell = f"**{rank}** (default)" if c is chosen else str(rank)
        lines.append(
            f"| {rank_cell} | {c.total:.4f} | "
            + " | ".join(str(c.parameters[k]) for k in keys)
            + " | " + " | ".join(cells) + f" | {c.worst_rho:.3f} |"
        )  # fmt: skip
    tied = sum(c.total <= best[0].total * (1.0 + TIE_TOLERANCE) for c in best)
    jobs, gpus, seed = VALIDATION
    lines += [
        "",
        f"Order of preference: the lowest worst rho among the {tied} configurations within "
        f"{100 * TIE_TOLERANCE:g} % of the best score, then the ranking. Validation on "
        f"{jobs:,} jobs and {gpus:,} GPUs (seed {seed}, `exact` mechanics; makespan s / avg "
        "JCT s / worst rho / unfair %):",
        "",
    ]
    rank_of = {id(c): rank for rank, c in enumerate(best, start=1)}
    for candidate, o in validations:
        verdict = "holds the targets" if fair(o) else "misses the targets"
        lines.append(
            f"- rank {rank_of.get(id(candidate), '> ' + str(len(best)))} "
            f"({', '.join(f'{k} = {candidate.parameters[k]}' for k in keys)}): "
            f"{o.makespan:,.0f} / {o.avg_jct:,.0f} / {o.worst_ftf:.2f} / "
            f"{100 * o.unfair_fraction:.2f}, {verdict}"
        )
    lines += [
        "",
        "Default: the row marked (default), "
        + ", ".join(f"`{k} = {chosen.parameters[k]}`" for k in keys) + ".",
        "",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
