"""The trace generator: fidelity to the original, reproducibility, and round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave.catalog import ORIGINAL_JOB_TEMPLATES, JobTemplate
from shockwave.throughputs import ThroughputTable, format_job_type
from shockwave.traces import (
    GeneratorParameters,
    generate_records,
    generate_workload,
    load_workload,
    parse_trace_lines,
    read_native,
    write_generated,
    write_native,
)
from shockwave.traces.trace_writer import format_trace_line

TRACES = Path(__file__).resolve().parent.parent / "traces"
CANONICAL_TRACE = TRACES / "canonical_120jobs.trace"
TACC_FILE = TRACES / "tacc_throughputs.json"

#: The original's command line for the canonical trace, spelt out (all of it is also the default).
CANONICAL = GeneratorParameters(
    jobs=120,
    gpus=32,
    seed=25,
    mean_interarrival=40.0,
    min_duration_hours=0.2,
    max_duration_hours=5.0,
    duration_grid_points=100,
    mode_mix=(0.0, 0.5, 0.5),
    gang_size_mix=(0.6, 0.3, 0.09, 0.01),
    throughputs=TACC_FILE,
)


def test_the_originals_parameters_reproduce_the_canonical_trace_byte_for_byte(
    tmp_path: Path,
) -> None:
    out = tmp_path / "generated.trace"
    write_generated(CANONICAL, out)
    expected = CANONICAL_TRACE.read_text().splitlines()
    produced = out.read_text().splitlines()
    differing = [i for i, (a, b) in enumerate(zip(produced, expected, strict=True)) if a != b]
    assert differing == []
    assert out.read_bytes() == CANONICAL_TRACE.read_bytes()


def test_the_defaults_for_120_jobs_on_32_gpus_are_the_canonical_parameters(tmp_path: Path) -> None:
    out = tmp_path / "defaults.trace"
    write_generated(GeneratorParameters(jobs=120, gpus=32, seed=25), out)
    assert out.read_bytes() == CANONICAL_TRACE.read_bytes()


def test_native_output_is_the_canonical_workload(tmp_path: Path) -> None:
    out = tmp_path / "canonical.jsonl"
    write_generated(CANONICAL, out)
    generated = load_workload(out)
    reference = load_workload(CANONICAL_TRACE, TACC_FILE)
    assert generated.jobs == reference.jobs
    assert generated.throughputs == reference.throughputs


@pytest.mark.parametrize(
    ("jobs", "gpus", "seed", "mean_interarrival", "grid_points", "static_jobs"),
    [(220, 64, 4, 25.0, 100, 7), (460, 128, 1, 10.0, 100, 19), (900, 256, 15, 5.0, 1000, 27)],
)
def test_the_originals_larger_traces_have_their_documented_relabelled_jobs(
    jobs: int, gpus: int, seed: int, mean_interarrival: float, grid_points: int, static_jobs: int
) -> None:
    # Those traces are not bundled; their parameters are in their file names (the original's
    # reproduce scripts), and their count of static (relabelled Accordion) jobs is in the notes.
    parameters = GeneratorParameters(
        jobs=jobs,
        gpus=gpus,
        seed=seed,
        mean_interarrival=mean_interarrival,
        duration_grid_points=grid_points,
    )
    assert parameters.throughputs_label == "wisr"
    records = generate_records(parameters)
    assert sum(record.mode == "static" for record in records) == static_jobs


@pytest.mark.parametrize("suffix", [".trace", ".jsonl"])
def test_the_same_seed_gives_the_same_bytes(tmp_path: Path, suffix: str) -> None:
    parameters = GeneratorParameters(jobs=200, gpus=64, seed=11, mode_mix=(0.2, 0.4, 0.4))
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    write_generated(parameters, first)
    write_generated(parameters, second)
    assert first.read_bytes() == second.read_bytes()


def test_different_seeds_give_different_traces(tmp_path: Path) -> None:
    texts = set()
    for seed in range(5):
        out = tmp_path / f"seed{seed}.trace"
        write_generated(GeneratorParameters(jobs=50, gpus=32, seed=seed), out)
        texts.add(out.read_bytes())
    assert len(texts) == 5


def test_a_longer_trace_starts_with_the_shorter_one() -> None:
    short = generate_records(GeneratorParameters(jobs=30, gpus=128, seed=3))
    long = generate_records(GeneratorParameters(jobs=90, gpus=128, seed=3))
    assert long[:30] == short


def test_trace_output_profiles_to_the_generated_workload(tmp_path: Path) -> None:
    parameters = GeneratorParameters(jobs=150, gpus=256, seed=5, high_priority_fraction=0.3)
    out = tmp_path / "generated.trace"
    write_generated(parameters, out)
    workload = generate_workload(parameters)
    reread = load_workload(out, parameters.throughput_table())
    assert reread.jobs == workload.jobs


def test_native_output_round_trips(tmp_path: Path) -> None:
    parameters = GeneratorParameters(jobs=150, gpus=256, seed=5, duration_grid="geometric")
    out = tmp_path / "generated.jsonl"
    write_generated(parameters, out)
    workload = generate_workload(parameters)
    reread = read_native(out)
    assert reread.jobs == workload.jobs
    assert reread.throughputs == workload.throughputs
    assert reread.source == parameters.command_line()
    again = tmp_path / "again.jsonl"
    write_native(reread, again)
    assert again.read_bytes() == out.read_bytes()


def test_records_parse_back_from_their_trace_lines() -> None:
    parameters = GeneratorParameters(
        jobs=100, gpus=64, seed=2, high_priority_fraction=0.5, high_priority_weight=2.5
    )
    records = generate_records(parameters)
    text = "".join(format_trace_line(record) + "\n" for record in records)
    assert parse_trace_lines(text) == records
    assert {record.priority_weight for record in records} == {1.0, 2.5}


def test_the_writer_keeps_values_the_original_formats_would_change() -> None:
    record = generate_records(GeneratorParameters(jobs=1, gpus=8))[0]
    odd = dataclasses.replace(
        record, arrival_time=12.25, duration=1800.5, priority_weight=1.5, slo=1e-7
    )
    line = format_trace_line(odd)
    assert line.split("\t")[8:] == ["1.5", "1e-07", "1800.5", "12.25"]
    assert parse_trace_lines(line + "\n") == [odd]


def test_the_writer_writes_the_gavel_variant_for_records_without_duration() -> None:
    record = generate_records(GeneratorParameters(jobs=1, gpus=8, mode_mix=(1, 0, 0)))[0]
    gavel = dataclasses.replace(record, duration=None)
    line = format_trace_line(gavel)
    assert len(line.split("\t")) == 10
    assert parse_trace_lines(line) == [gavel]
    with pytest.raises(ValueError, match="mode 'gns'"):
        format_trace_line(dataclasses.replace(gavel, mode="gns"))


def test_steps_are_the_duration_times_the_throughput_truncated() -> None:
    parameters = GeneratorParameters(jobs=300, gpus=512, seed=4)
    table = parameters.throughput_table()
    for record in generate_records(parameters):
        thr = table.isolated(record.model, record.initial_batch_size, record.scale_factor)
        assert record.duration is not None
        assert record.total_steps == int(record.duration * thr)
        assert record.total_steps >= 1


@pytest.mark.parametrize(
    ("gpus", "table"), [(8, "tacc"), (32, "tacc"), (33, "wisr"), (6500, "wisr")]
)
def test_the_default_throughput_table_follows_the_cluster_size(gpus: int, table: str) -> None:
    parameters = GeneratorParameters(jobs=20, gpus=gpus, seed=1)
    assert parameters.throughputs_label == table
    assert parameters.throughput_table() == ThroughputTable.bundled(table)


def test_the_workload_carries_the_tables_rows_of_the_models_drawn() -> None:
    parameters = GeneratorParameters(
        jobs=40, gpus=16, seed=9, templates=(JobTemplate("LM", 10), JobTemplate("LM", 20))
    )
    workload = generate_workload(parameters)
    assert workload.throughputs is not None
    assert {model for model, _, _ in workload.throughputs.entries} == {"LM"}
    assert {job.model for job in workload} == {"LM"}
    assert [job.job_id for job in workload] == list(range(40))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 200))
def test_a_grid_point_is_drawn_as_numpys_choice_draws_it(seed: int, size: int) -> None:
    # the generator draws randint(0, len) where the original calls np.random.choice(bucket)
    points = np.linspace(0.2, 5.0, size)
    original, ours = np.random.RandomState(seed), np.random.RandomState(seed)
    for _ in range(20):
        assert original.choice(points) == points[ours.randint(0, size)]


def test_linear_and_geometric_grids() -> None:
    linear = GeneratorParameters(jobs=1, gpus=8).duration_grid_hours()
    assert np.array_equal(linear, np.linspace(0.2, 5.0, 100))
    geometric = GeneratorParameters(
        jobs=1, gpus=8, duration_grid="geometric", duration_grid_points=30
    ).duration_grid_hours()
    ratios = geometric[1:] / geometric[:-1]
    assert geometric[0] == pytest.approx(0.2)
    assert geometric[-1] == pytest.approx(5.0)
    assert np.allclose(ratios, ratios[0])


def test_the_logspace_grid_is_the_originals_construction() -> None:
    grid = GeneratorParameters(
        jobs=1, gpus=8, duration_grid="logspace", duration_grid_points=10, duration_log_base=2.0
    ).duration_grid_hours()
    # b**k for 9 exponents evenly spaced over [1, 10], 0 in front, over b**10; rounded to 0.01 h
    exponents = np.linspace(1, 10, 9)
    expected = [0.2] + [round(2.0**k / 2.0**10 * 4.8 + 0.2, 2) for k in exponents]
    assert grid.tolist() == pytest.approx(expected, abs=1e-12)


def test_templates_carry_the_canonical_traces_launch_fields() -> None:
    by_type = {format_job_type(t.model, t.batch_size): t for t in ORIGINAL_JOB_TEMPLATES}
    seen = set()
    for line in CANONICAL_TRACE.read_text().splitlines():
        job_type, command, directory, steps_arg, needs_data = line.split("\t")[:5]
        template = by_type[job_type]
        assert (command, directory, steps_arg) == (
            template.command,
            template.launch.working_directory,
            template.launch.num_steps_arg,
        )
        assert needs_data == str(int(template.launch.needs_data_dir))
        seen.add(job_type)
    assert seen == set(by_type)
    assert len(ORIGINAL_JOB_TEMPLATES) == 21
