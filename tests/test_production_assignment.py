"""The seeded rule that gives production-trace jobs a model family, a mode and epochs
(``shockwave.traces.production.assignment``), checked against an independent reading of its
documentation, and its promises: reproducible bit for bit, independent of the other jobs, the
trace's run time kept."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.catalog import MODEL_FAMILIES, ORIGINAL_JOB_TEMPLATES
from shockwave.profile_rules import batch_size_schedule
from shockwave.throughputs import ThroughputTable
from shockwave.traces.production import (
    MAX_EPOCHS,
    ConversionOptions,
    JobAssigner,
    convert_production,
    job_uniforms,
    read_production,
)
from shockwave.traces.production.assignment import NoJobTypeError
from shockwave.workload import Job

from .conftest import PRODUCTION

TACC = ThroughputTable.bundled("tacc")


def documented_uniforms(seed: int, source_id: str) -> tuple[float, float]:
    """Rule 1 as the documentation states it."""
    digest = hashlib.blake2b(f"{seed}\0{source_id}".encode(), digest_size=16).digest()
    return (
        (int.from_bytes(digest[:8], "big") >> 11) / 2**53,
        (int.from_bytes(digest[8:], "big") >> 11) / 2**53,
    )


def documented_epochs(model: str, batch_size: int, gang: int, duration: float) -> int:
    """Rules 4 and 5 with the TACC table (gangs 1, 2, 4, 8)."""
    reference = max(w for w in (1, 2, 4, 8) if w <= gang and (model, batch_size, w) in TACC)
    samples = MODEL_FAMILIES[model].samples_per_epoch
    seconds = samples / batch_size / TACC.isolated(model, batch_size, reference) * reference / gang
    return min(max(math.floor(duration / seconds + 0.5), 1), MAX_EPOCHS)


@pytest.mark.parametrize("seed", [0, 1, 12345])
@pytest.mark.parametrize("gang", [1, 2, 3, 8, 16, 1000])
def test_job_type_mode_and_epochs_follow_the_documented_rule(seed: int, gang: int) -> None:
    assigner = JobAssigner(TACC, seed=seed)
    candidates = [t for t in ORIGINAL_JOB_TEMPLATES if gang == 1 or t.model != "Recommendation"]
    for number in range(40):
        source_id = f"job-{number}"
        duration = 10.0 ** (number % 7)  # 1 s .. 11.6 days
        u_type, u_mode = documented_uniforms(seed, source_id)
        assert job_uniforms(seed, source_id) == (u_type, u_mode)
        template = candidates[math.floor(u_type * len(candidates))]
        mode = "accordion" if u_mode < 0.5 else "gns"
        if mode == "accordion" and duration < 1000:
            mode = "static"
        profile = assigner.profile(source_id, gang, duration)
        assert (profile.model, int(profile.batch_sizes[0]), profile.mode) == (
            template.model, template.batch_size, mode
        )  # fmt: skip
        epochs = documented_epochs(template.model, template.batch_size, gang, duration)
        assert (
            profile.batch_sizes.tolist()
            == batch_size_schedule(mode, template.model, template.batch_size, gang, epochs).tolist()
        )
        assert profile.dataset == MODEL_FAMILIES[template.model].dataset


@settings(max_examples=200, deadline=None)
@given(
    source_id=st.text(min_size=1, max_size=20),
    gang=st.one_of(st.integers(1, 4096), st.integers(1, 2**63 - 1)),
    duration=st.floats(1e-3, 0.999e12, allow_nan=False),
    seed=st.integers(0, 2**63 - 1),
)
def test_the_profile_sums_to_the_run_time_within_one_epoch(
    source_id: str, gang: int, duration: float, seed: int
) -> None:
    profile = JobAssigner(TACC, seed=seed).profile(source_id, gang, duration)
    total = math.fsum(profile.epoch_seconds.tolist())
    assert abs(total - duration) <= 1e-12 * duration * len(profile.epoch_seconds)
    assert abs(total - duration) < profile.epoch_seconds.min()
    assert 1 <= len(profile.batch_sizes) <= MAX_EPOCHS
    assert (profile.epoch_seconds > 0).all()
    Job(job_id=0, arrival_time=0.0, gang_size=gang, model=profile.model, dataset=profile.dataset,
        mode=profile.mode, batch_sizes=profile.batch_sizes, epoch_seconds=profile.epoch_seconds,
        samples_per_epoch=profile.samples_per_epoch)  # fmt: skip  # a valid job
    # epoch durations keep the table's ratios between batch sizes
    by_size = {b: s for b, s in zip(profile.batch_sizes.tolist(), profile.epoch_seconds.tolist(),
                                    strict=True)}  # fmt: skip
    family = MODEL_FAMILIES[profile.model]
    speed = {b: family.samples_per_epoch / s for b, s in by_size.items()}  # samples per s
    reference = max(w for w in (1, 2, 4, 8) if w <= gang)
    for b in speed:
        ratio = speed[b] / speed[profile.batch_sizes[0]]
        wanted = (TACC.isolated(profile.model, b, reference) * b) / (
            TACC.isolated(profile.model, int(profile.batch_sizes[0]), reference)
            * int(profile.batch_sizes[0])
        )
        assert ratio == pytest.approx(wanted, rel=1e-9)


def test_epochs_are_at_most_one_per_millisecond() -> None:
    assigner = JobAssigner(TACC, seed=0)
    for number in range(50):
        profile = assigner.profile(str(number), 2**40, 0.0105)
        assert len(profile.batch_sizes) <= 10
        assert profile.epoch_seconds.min() >= 1e-4


def test_samples_per_epoch_scale_with_the_epochs() -> None:
    assigner = JobAssigner(TACC, seed=0, mode="static")
    for number in range(30):
        duration = 50.0 * 1.7**number
        profile = assigner.profile(f"s{number}", 1, duration)
        family = MODEL_FAMILIES[profile.model]
        scale = profile.epoch_seconds[0] / (
            family.samples_per_epoch / profile.batch_sizes[0]
            / TACC.isolated(profile.model, int(profile.batch_sizes[0]), 1)
        )  # fmt: skip
        assert profile.samples_per_epoch == max(1, math.floor(family.samples_per_epoch * scale
                                                              + 0.5))  # fmt: skip


def test_static_mode_and_the_recommendation_family() -> None:
    static = JobAssigner(TACC, seed=3, mode="static")
    mixed = JobAssigner(TACC, seed=3)
    models_of_wide_jobs = set()
    for number in range(300):
        profile = static.profile(str(number), 1 + number % 5, 5000.0)
        assert profile.mode == "static" and len(set(profile.batch_sizes.tolist())) == 1
        models_of_wide_jobs.add(mixed.profile(str(number), 2 + number % 7, 5000.0).model)
        assert mixed.profile(str(number), 1, 5000.0).mode in ("accordion", "gns")
    assert "Recommendation" not in models_of_wide_jobs  # 1 GPU only
    assert len(models_of_wide_jobs) == 4


def test_modes_mix_about_half_and_half() -> None:
    assigner = JobAssigner(TACC, seed=0)
    modes = [assigner.profile(str(n), 1, 7200.0).mode for n in range(2000)]
    assert 0.45 < modes.count("accordion") / len(modes) < 0.55
    assert modes.count("static") == 0


def test_a_table_without_the_families_is_refused() -> None:
    table = ThroughputTable({("ResNet-18", 32, 4): 10.0}, source="tiny")
    assigner = JobAssigner(table, mode="static")
    assert assigner.profile("x", 4, 100.0).model == "ResNet-18"
    assert assigner.profile("x", 64, 100.0).model == "ResNet-18"  # sped up from 4 GPUs
    with pytest.raises(NoJobTypeError, match="tiny.*2 GPUs"):
        assigner.profile("x", 2, 100.0)
    with pytest.raises(NoJobTypeError):  # adaptive modes need the batch sizes they reach
        JobAssigner(table).profile("x", 4, 100.0)


@pytest.mark.parametrize("source", ["philly", "helios", "pai", "tiresias"])
def test_conversion_is_reproducible_bit_for_bit(source: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    convert_production(source, PRODUCTION / source, first)
    convert_production(source, PRODUCTION / source, second)
    assert first.read_bytes() == second.read_bytes()
    convert_production(source, PRODUCTION / source, second, ConversionOptions(seed=1))
    assert first.read_bytes() != second.read_bytes()


def test_a_job_gets_the_same_profile_whatever_the_filters() -> None:
    whole = {j.source_id: j for j in read_production("helios", PRODUCTION / "helios")}
    for options in (
        ConversionOptions(vcs=("vcA",)),
        ConversionOptions(max_jobs=2),
        ConversionOptions(min_gpus=4),
        ConversionOptions(sample=0.5, seed=0),
    ):
        part = read_production("helios", PRODUCTION / "helios", options)
        assert 0 < len(part) < len(whole)
        for job in part:
            same = whole[job.source_id]
            assert job.model == same.model and job.mode == same.mode
            assert np.array_equal(job.batch_sizes, same.batch_sizes)
            assert np.array_equal(job.epoch_seconds, same.epoch_seconds)


@pytest.mark.parametrize(
    ("source", "source_id", "model", "batch_sizes", "mode", "samples"),
    [
        ("philly", "application_1_0001", "LM", [[40, 109], [80, 254]], "accordion", 73_701),
        ("helios", "h5", "ResNet-18", [[128, 5]], "gns", 49_543),
        ("pai", "jD", "Transformer", [[128, 78]], "accordion", 10_027),
        ("tiresias", "6", "ResNet-50", [[32, 135]], "gns", 99_926),
    ],
)
def test_the_worked_examples_of_the_documentation(
    source: str, source_id: str, model: str, batch_sizes: list[list[int]], mode: str, samples: int
) -> None:
    """docs/production_traces.md works these jobs through the rule by hand: keep it true."""
    (job,) = [j for j in read_production(source, PRODUCTION / source) if j.source_id == source_id]
    runs = [[b, n] for b, n in zip(*np.unique(job.batch_sizes, return_counts=True), strict=True)]
    assert (job.model, runs, job.mode, job.samples_per_epoch) == (
        model, batch_sizes, mode, samples
    )  # fmt: skip
