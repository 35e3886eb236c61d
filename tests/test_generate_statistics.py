"""The generator honours its parameters: mixes within sampling error, supports exactly.

Sampled proportions are checked against their probabilities within ``Z`` binomial standard
errors (the seeds are fixed, so these tests are deterministic; the bound only says how close a
correct generator must come).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from shockwave.catalog import ORIGINAL_JOB_TEMPLATES
from shockwave.throughputs import ThroughputTable, format_job_type
from shockwave.traces import GeneratorParameters, TraceRecord, generate_records
from shockwave.traces.generator_parameters import ARRIVAL_GPU_SECONDS

Z = 4.5
JOBS = 20_000


def assert_proportion(count: int, total: int, probability: float) -> None:
    error = math.sqrt(probability * (1 - probability) / total)
    assert abs(count / total - probability) <= Z * error + 1 / total, (count, total, probability)


@cache
def sample() -> tuple[GeneratorParameters, list[TraceRecord]]:
    """A large trace with the original's parameters (and 20% high-priority jobs)."""
    parameters = GeneratorParameters(
        jobs=JOBS, gpus=256, seed=7, mean_interarrival=40.0, high_priority_fraction=0.2
    )
    return parameters, generate_records(parameters)


def test_templates_are_drawn_uniformly() -> None:
    _, records = sample()
    counts = Counter(record.job_type for record in records)
    assert set(counts) == {format_job_type(t.model, t.batch_size) for t in ORIGINAL_JOB_TEMPLATES}
    for count in counts.values():
        assert_proportion(count, JOBS, 1 / 21)


def test_gang_sizes_follow_the_mix_and_recommendation_stays_on_one_gpu() -> None:
    parameters, records = sample()
    distributed = [r.scale_factor for r in records if r.model != "Recommendation"]
    counts = Counter(distributed)
    for size, probability in zip(parameters.gang_sizes, parameters.gang_size_mix, strict=True):
        assert_proportion(counts[size], len(distributed), probability)
    assert {r.scale_factor for r in records if r.model == "Recommendation"} == {1}


def test_durations_fall_in_the_buckets_with_the_buckets_mix() -> None:
    parameters, records = sample()
    grid_seconds = np.round(3600 * parameters.duration_grid_hours()).astype(int)
    bucket_of_point = np.empty(len(grid_seconds), dtype=int)
    for index, (start, stop) in enumerate(parameters.duration_buckets()):
        bucket_of_point[start:stop] = index
    point_of_duration = {int(s): i for i, s in enumerate(grid_seconds)}
    buckets = Counter(
        int(bucket_of_point[point_of_duration[int(r.duration or 0)]]) for r in records
    )
    for index, probability in enumerate(parameters.duration_bucket_mix):
        assert_proportion(buckets[index], JOBS, probability)
    # within a bucket, every grid point is equally likely: the small bucket's 20 points
    small = Counter(int(r.duration or 0) for r in records if r.duration in set(grid_seconds[:20]))
    assert len(small) == 20
    for count in small.values():
        assert_proportion(count, sum(small.values()), 1 / 20)


def test_modes_follow_the_mix_and_short_accordion_jobs_become_static() -> None:
    parameters, records = sample()
    threshold = parameters.accordion_min_seconds
    short = [r.mode for r in records if (r.duration or 0) < threshold]
    long = [r.mode for r in records if (r.duration or 0) >= threshold]
    assert "accordion" not in short
    assert "static" not in long  # the mix has no static jobs: every static job was relabelled
    assert_proportion(Counter(long)["accordion"], len(long), 0.5)
    assert_proportion(Counter(short)["static"], len(short), 0.5)
    assert short  # the grid's two shortest points (720 s, 895 s) are below 1000 s


def test_relabelling_can_be_switched_off() -> None:
    parameters = GeneratorParameters(jobs=2000, gpus=256, seed=3, accordion_min_seconds=0)
    modes = Counter(r.mode for r in generate_records(parameters))
    assert modes["static"] == 0
    assert_proportion(modes["accordion"], 2000, 0.5)


def test_arrivals_are_poisson_with_the_mean_inter_arrival_time() -> None:
    parameters, records = sample()
    arrivals = np.array([r.arrival_time for r in records])
    assert arrivals[0] == 0
    assert (np.diff(arrivals) >= 0).all()
    assert (arrivals == np.floor(arrivals)).all()
    mean_gap = (arrivals[-1] - arrivals[0]) / (JOBS - 1)
    lam = parameters.effective_mean_interarrival
    assert abs(mean_gap - lam) <= Z * lam / math.sqrt(JOBS - 1) + 1 / (JOBS - 1)


def test_inter_arrival_times_are_exponential() -> None:
    parameters = GeneratorParameters(jobs=3000, gpus=32, seed=12, mean_interarrival=1000.0)
    gaps = np.diff([r.arrival_time for r in generate_records(parameters)])
    # arrivals are whole seconds: the gaps are off by less than 1 s of a 1000 s mean
    assert stats.kstest(gaps, stats.expon(scale=1000.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("gpus", [32, 256, 6500])
def test_the_default_arrival_rate_keeps_the_original_contention(gpus: int) -> None:
    parameters = GeneratorParameters(jobs=5000, gpus=gpus, seed=1)
    assert parameters.effective_mean_interarrival == ARRIVAL_GPU_SECONDS / gpus
    arrivals = [r.arrival_time for r in generate_records(parameters)]
    jobs_per_gpu_second = (5000 - 1) / (gpus * (arrivals[-1] - arrivals[0]))
    canonical = 1 / (32 * 40.0)  # 120 jobs on 32 GPUs, one every 40 s
    assert jobs_per_gpu_second == pytest.approx(canonical, rel=Z / math.sqrt(5000) + 0.01)


def test_a_zero_mean_inter_arrival_time_starts_every_job_at_zero() -> None:
    records = generate_records(GeneratorParameters(jobs=50, gpus=64, mean_interarrival=0.0))
    assert {r.arrival_time for r in records} == {0.0}


def test_high_priority_jobs_follow_their_fraction() -> None:
    parameters, records = sample()
    high = sum(r.priority_weight == parameters.high_priority_weight for r in records)
    assert_proportion(high, JOBS, parameters.high_priority_fraction)
    assert {r.priority_weight for r in records} == {1.0, parameters.high_priority_weight}


def test_priorities_share_the_template_stream_as_in_the_original() -> None:
    plain = generate_records(GeneratorParameters(jobs=200, gpus=64, seed=5))
    weighted = generate_records(
        GeneratorParameters(jobs=200, gpus=64, seed=5, high_priority_fraction=0.2)
    )
    # the first template is drawn before any priority; later ones see the priority draws
    assert plain[0].job_type == weighted[0].job_type
    assert [r.job_type for r in plain] != [r.job_type for r in weighted]
    # the other streams are untouched
    assert [r.arrival_time for r in plain] == [r.arrival_time for r in weighted]


TACC = ThroughputTable.bundled("tacc")


def mixes(size: int) -> st.SearchStrategy[tuple[float, ...]]:
    """Probability vectors of ``size`` entries with some zeros, summing to 1."""
    weights = st.lists(
        st.sampled_from([0.0, 0.0, 0.01, 0.1, 0.3, 1.0, 2.5]), min_size=size, max_size=size
    ).filter(lambda w: sum(w) > 0)
    return weights.map(lambda w: tuple(x / sum(w) for x in w))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 60),
    gang_mix=mixes(4),
    mode_mix=mixes(3),
    bucket_mix=mixes(4),
    min_seconds=st.sampled_from([0.0, 1000.0, 3600.0]),
    gpus=st.integers(8, 10_000),
)
def test_every_drawn_value_lies_in_the_support_of_its_parameters(
    seed: int,
    jobs: int,
    gang_mix: tuple[float, ...],
    mode_mix: tuple[float, float, float],
    bucket_mix: tuple[float, ...],
    min_seconds: float,
    gpus: int,
) -> None:
    parameters = GeneratorParameters(
        jobs=jobs,
        gpus=gpus,
        seed=seed,
        gang_size_mix=gang_mix,
        mode_mix=mode_mix,
        duration_bucket_mix=bucket_mix,
        accordion_min_seconds=min_seconds,
        throughputs=TACC,
    )
    records = generate_records(parameters)
    assert len(records) == jobs
    gangs = {w for w, q in zip(parameters.gang_sizes, gang_mix, strict=True) if q > 0}
    modes = {m for m, q in zip(("static", "accordion", "gns"), mode_mix, strict=True) if q > 0}
    grid = np.round(3600 * parameters.duration_grid_hours()).astype(int)
    allowed_seconds = {
        int(s)
        for (start, stop), q in zip(parameters.duration_buckets(), bucket_mix, strict=True)
        if q > 0
        for s in grid[start:stop]
    }
    previous = 0.0
    for record in records:
        duration = record.duration or 0
        assert record.scale_factor in (gangs if record.model != "Recommendation" else {1})
        relabelled = "accordion" in modes and duration < min_seconds
        assert record.mode in modes or (record.mode == "static" and relabelled)
        assert not (record.mode == "accordion" and duration < min_seconds)
        assert int(duration) in allowed_seconds
        assert record.arrival_time >= previous
        previous = record.arrival_time
        thr = TACC.isolated(record.model, record.initial_batch_size, record.scale_factor)
        assert record.total_steps == int(duration * thr)
