"""Placement under the exact mechanics on a typed cluster with server sizes (``v100:8/4``): the
gangs of each round are packed onto the fewest servers (largest first, best fit), a gang spread
over several servers runs at its ``<type>_unconsolidated`` throughput, and the result counts the
rounds each job ran spread; without server sizes nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from shockwave.cli import main
from shockwave.heterogeneous import (
    ClusterSpec,
    HeterogeneousConfig,
    TypedAllocationPolicy,
    TypedAllocationState,
    TypedJobs,
    TypedThroughputTable,
    simulate_heterogeneous,
)
from shockwave.heterogeneous.placement import pack_gangs

GAVEL = Path(__file__).resolve().parent / "data" / "gavel"
EXACT = HeterogeneousConfig(mechanics="exact", round_seconds=60.0, restart_penalty_seconds=20.0)
FloatArray = npt.NDArray[np.float64]


class AllOnFirstType(TypedAllocationPolicy):
    """Every job's time on the first type (the scan then runs whatever fits there)."""

    name = "all-on-first-type"

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        x = np.zeros((state.num_active, len(state.types)))
        x[:, 0] = 1.0
        return x


def _jobs(cluster: str, gangs: list[int], steps: list[int], *, table: bool = True) -> TypedJobs:
    """Jobs of one type ``toy`` on ``v100``: 10 iterations/s on a gang in one server, 4 spread
    (``v100_unconsolidated``), whatever the gang."""
    n = len(gangs)
    rates = TypedThroughputTable(
        {
            "v100": {("toy", g): 10.0 for g in gangs},
            "v100_unconsolidated": {("toy", g): 4.0 for g in gangs},
        }
    )
    return TypedJobs(
        job_ids=np.arange(n, dtype=np.int64),
        job_types=("toy",) * n,
        arrival=np.zeros(n),
        gang=np.asarray(gangs, dtype=np.int64),
        weight=np.ones(n),
        total_steps=np.asarray(steps, dtype=np.int64),
        throughput=np.full((n, 1), 10.0),
        cluster=ClusterSpec.parse(cluster),
        table=rates if table else None,
    )


def test_gangs_are_packed_largest_first_onto_the_fullest_server_that_holds_them() -> None:
    # two servers of 4: 4 fills server 0, each 2 goes to server 1 (none spread); filling the
    # servers in order (2, then 4 over servers 0 and 1) would have spread the 4
    assert pack_gangs([2, 4, 2], servers=2, server_size=4) == [1, 1, 1]
    assert pack_gangs([1, 4, 2, 1], servers=2, server_size=4) == [1, 1, 1, 1]
    # best fit: the 1 goes where 1 GPU is left (server 0 after the 3), not to the empty server
    assert pack_gangs([3, 1, 4], servers=2, server_size=4) == [1, 1, 1]
    # two servers of 3 and three gangs of 2: the third is spread over the two 1-GPU remainders
    assert pack_gangs([2, 2, 2], servers=2, server_size=3) == [1, 1, 2]
    # a gang larger than a server spans the fewest servers: 8 over two servers of 4, 5 over 2
    assert pack_gangs([8], servers=2, server_size=4) == [2]
    assert pack_gangs([5, 2], servers=3, server_size=4) == [2, 1]
    with pytest.raises(ValueError, match="10 GPUs"):
        pack_gangs([4, 4, 2], servers=2, server_size=4)


def test_a_gang_spread_over_servers_runs_at_its_unconsolidated_rate() -> None:
    # one 8-GPU job of 1,000 iterations; 60 s rounds, 20 s restart penalty at its start.
    # In one server of 8 (or with no server size): 40 s x 10 = 400, then 600 in 60 s: 120 s.
    # Over two servers of 4, at 4/s: 40 s x 4 = 160, 240 a round after: 880 after 4 rounds,
    # the last 120 in 30 s: done at 240 + 30 = 270 s, spread in all 5 rounds.
    spread = simulate_heterogeneous(_jobs("v100:8/4", [8], [1000]), AllOnFirstType(), EXACT)
    assert spread.completion[0] == pytest.approx(270.0)
    assert spread.spread_rounds is not None and spread.spread_rounds.tolist() == [5]
    assert spread.to_dict()["spread_rounds"] == [5]
    whole = simulate_heterogeneous(_jobs("v100:8/8", [8], [1000]), AllOnFirstType(), EXACT)
    assert whole.completion[0] == pytest.approx(120.0)
    assert whole.to_dict()["spread_rounds"] == [0]
    # no server size: no placement, the result as before (no spread_rounds key)
    plain = simulate_heterogeneous(_jobs("v100:8", [8], [1000]), AllOnFirstType(), EXACT)
    assert plain.completion[0] == pytest.approx(120.0)
    assert plain.spread_rounds is None and "spread_rounds" not in plain.to_dict()
    # no unconsolidated rate known (hand-built jobs without a table): counted, at full speed
    unknown = _jobs("v100:8/4", [8], [1000], table=False)
    counted = simulate_heterogeneous(unknown, AllOnFirstType(), EXACT)
    assert counted.completion[0] == pytest.approx(120.0)
    assert counted.to_dict()["spread_rounds"] == [2]


def test_two_four_gpu_jobs_and_a_two_gpu_job_on_servers_of_four() -> None:
    # v100:8/4, 1,000 iterations each at 10/s; the mechanism runs jobs (0, 1), then (2, 0),
    # then (1, 2), then 1 alone:
    #   round 0: 0 and 1 start (penalty): 400 each
    #   round 1: 2 starts (400), 0 goes on (600: done at 120 s). Packed largest first, 0 takes
    #            a whole server and 2 half of the other; in the scan's order (2, then 0) on the
    #            GPUs in order, 0 would have been spread over both servers
    #   round 2: 1 restarts (400: 800), 2 goes on (600: done at 180 s)
    #   round 3: 1 goes on, 200 left: done at 200 s. Nothing is ever spread.
    jobs = _jobs("v100:8/4", [4, 4, 2], [1000, 1000, 1000])
    result = simulate_heterogeneous(jobs, AllOnFirstType(), EXACT)
    assert result.completion.tolist() == pytest.approx([120.0, 200.0, 180.0])
    assert result.to_dict()["spread_rounds"] == [0, 0, 0]


def test_a_gang_left_without_a_whole_server_is_spread() -> None:
    # three 2-GPU jobs on two servers of 3 (v100:6/3), 1,000 iterations each: all three run in
    # rounds 0 and 1, job 2 (the last of equal gangs) over the two 1-GPU remainders at 4/s:
    # 40 s x 4 + 60 s x 4 = 400; jobs 0 and 1 are done at 120 s; alone in round 2, job 2 is on
    # one server again (no penalty: it ran last round, on this type) and runs its last 600 at
    # 10/s: done at 180 s. Without server sizes all three are done at 120 s.
    placed = simulate_heterogeneous(
        _jobs("v100:6/3", [2, 2, 2], [1000] * 3), AllOnFirstType(), EXACT
    )
    assert placed.completion.tolist() == pytest.approx([120.0, 120.0, 180.0])
    assert placed.to_dict()["spread_rounds"] == [0, 0, 2]
    plain = simulate_heterogeneous(_jobs("v100:6", [2, 2, 2], [1000] * 3), AllOnFirstType(), EXACT)
    assert plain.completion.tolist() == pytest.approx([120.0, 120.0, 120.0])


def test_the_command_line_reports_spread_rounds_only_with_server_sizes(tmp_path: Path) -> None:
    trace = tmp_path / "small.trace"
    trace.write_text("".join((GAVEL / "T2.trace").read_text().splitlines(keepends=True)[:25]))
    run = ["simulate", "--trace", str(trace), "--throughputs",
           str(GAVEL / "simulation_throughputs.json.gz"), "--policy", "gavel", "--mechanics",
           "exact"]  # fmt: skip
    placed, plain = tmp_path / "placed.json", tmp_path / "plain.json"
    assert main([*run, "--cluster", "v100:4/2,p100:4/2,k80:4/2", "--output", str(placed)]) == 0
    assert main([*run, "--cluster", "v100:4,p100:4,k80:4", "--output", str(plain)]) == 0
    spread = json.loads(placed.read_text())["spread_rounds"]
    assert len(spread) == 25 and sum(spread) > 0
    assert "spread_rounds" not in json.loads(plain.read_text())


def test_jobs_along_profiles_are_counted_spread_but_keep_their_speed(tmp_path: Path) -> None:
    # a native workload's profiles have no unconsolidated durations: spread gangs run at the
    # consolidated rate, so the run is the run without server sizes, spread rounds counted
    workload = tmp_path / "w.jsonl"
    generate = ["trace", "generate", "--jobs", "20", "--cluster", "v100:4,p100:4,k80:4"]
    mix = ["--gang-size-mix", "0.25,0.25,0.25,0.25"]
    assert main([*generate, *mix, "--seed", "3", "-o", str(workload)]) == 0
    results = []
    for cluster in ("v100:4/2,p100:4/2,k80:4/2", "v100:4,p100:4,k80:4"):
        out = tmp_path / f"{len(results)}.json"
        assert main(["simulate", "--cluster", cluster, "--trace", str(workload), "--policy",
                     "gavel", "--output", str(out)]) == 0  # fmt: skip
        results.append(json.loads(out.read_text()))
    placed, plain = results
    assert sum(placed.pop("spread_rounds")) > 0
    placed["cluster"] = plain["cluster"]
    assert placed == plain
