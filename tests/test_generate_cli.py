"""``shockwave trace generate``: mirrors the Python API, refuses bad options by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from shockwave.catalog import JobTemplate
from shockwave.cli import main
from shockwave.throughputs import ThroughputTable
from shockwave.traces import GeneratorParameters, generate_records, load_workload, write_generated
from shockwave.traces.generator_parameters import GeneratorParameterError, option_name

TRACES = Path(__file__).resolve().parent.parent / "traces"
CANONICAL_TRACE = TRACES / "canonical_120jobs.trace"


def test_the_canonical_command_line_reproduces_the_canonical_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "canonical.trace"
    argv = ["trace", "generate", "--jobs", "120", "--gpus", "32", "--seed", "25", "-o", str(out)]
    assert main([*argv, "--mean-interarrival", "40", "--mode-mix", "0,0.5,0.5"]) == 0
    assert out.read_bytes() == CANONICAL_TRACE.read_bytes()
    assert "wrote 120 jobs" in capsys.readouterr().out


def test_options_give_the_same_file_as_the_api(tmp_path: Path) -> None:
    cli_out, api_out = tmp_path / "cli.jsonl", tmp_path / "api.jsonl"
    argv = [
        "trace", "generate", "--jobs", "80", "--gpus", "16", "--seed", "9",
        "--mean-interarrival", "12.5", "--min-duration-hours", "0.5", "--max-duration-hours", "3",
        "--duration-grid-points", "40", "--duration-grid", "geometric",
        "--duration-bucket-edges", "0.5", "--duration-bucket-mix", "0.9,0.1",
        "--gang-sizes", "1,2,4", "--gang-size-mix", "0.5,0.25,0.25", "--mode-mix", "0.2,0.4,0.4",
        "--accordion-min-seconds", "1800", "--templates", "LM:5,10", "--templates", "ResNet-18:32",
        "--throughputs", "wisr", "--high-priority-fraction", "0.1", "--high-priority-weight", "3",
        "-o", str(cli_out),
    ]  # fmt: skip
    assert main(argv) == 0
    parameters = GeneratorParameters(
        jobs=80,
        gpus=16,
        seed=9,
        mean_interarrival=12.5,
        min_duration_hours=0.5,
        max_duration_hours=3.0,
        duration_grid_points=40,
        duration_grid="geometric",
        duration_bucket_edges=(0.5,),
        duration_bucket_mix=(0.9, 0.1),
        gang_sizes=(1, 2, 4),
        gang_size_mix=(0.5, 0.25, 0.25),
        mode_mix=(0.2, 0.4, 0.4),
        accordion_min_seconds=1800.0,
        templates=(JobTemplate("LM", 5), JobTemplate("LM", 10), JobTemplate("ResNet-18", 32)),
        throughputs="wisr",
        high_priority_fraction=0.1,
        high_priority_weight=3.0,
    )
    write_generated(parameters, api_out)
    assert cli_out.read_bytes() == api_out.read_bytes()
    workload = load_workload(cli_out)
    assert len(workload) == 80
    assert workload.source == parameters.command_line()


def test_every_parameter_has_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["trace", "generate", "--help"])
    help_text = capsys.readouterr().out
    for name in GeneratorParameters.__dataclass_fields__:
        assert option_name(name) in help_text, name


@pytest.mark.parametrize(
    ("options", "option"),
    [
        (["--jobs", "0"], "--jobs"),
        (["--gpus", "4"], "--gpus"),
        (["--seed", "-3"], "--seed"),
        (["--mean-interarrival", "-5"], "--mean-interarrival"),
        (["--mode-mix", "0.5,0.6,0"], "--mode-mix"),
        (["--mode-mix", "a,b,c"], "--mode-mix"),
        (["--gang-sizes", "1,2.5,4,8"], "--gang-sizes"),
        (["--gang-size-mix", "1,0,0"], "--gang-size-mix"),
        (["--duration-bucket-edges", "0.9,0.5,0.2"], "--duration-bucket-edges"),
        (["--templates", "LM"], "--templates"),
        (["--templates", "Bert:8"], "--templates"),
        (["--throughputs", "nowhere.json"], "--throughputs"),
        (["-o", "out.csv"], "--output"),
    ],
)
def test_bad_options_fail_with_a_message_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], option: str
) -> None:
    argv = ["trace", "generate", "--jobs", "5", "--gpus", "32", "-o", str(tmp_path / "x.trace")]
    assert main([*argv, *options]) == 2
    assert option in capsys.readouterr().err


def test_on_a_cluster_a_gang_larger_than_every_type_is_capped(tmp_path: Path) -> None:
    # the same draws on two clusters: a gang of 4 or 8 GPUs, which no type of the small one can
    # hold, becomes 2 there (the largest gang size of the table that fits), its steps at 2 GPUs
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    argv = [
        "trace",
        "generate",
        "--jobs",
        "60",
        "--seed",
        "4",
        "--gang-size-mix",
        "0.25,0.25,0.25,0.25",
    ]
    assert main([*argv, "--cluster", "v100:2,p100:2,k80:2", "-o", str(small)]) == 0
    assert main([*argv, "--cluster", "v100:8,p100:8,k80:8", "-o", str(large)]) == 0
    capped, drawn = load_workload(small), load_workload(large)
    assert {job.gang_size for job in drawn.jobs} == {1, 2, 4, 8}
    table = capped.throughputs
    assert table is not None
    for job, original in zip(capped.jobs, drawn.jobs, strict=True):
        assert (job.model, job.trace_duration) == (original.model, original.trace_duration)
        assert job.gang_size == min(original.gang_size, 2)
        thr = table.isolated(job.model, job.initial_batch_size, job.gang_size)
        assert job.total_steps == int(float(job.trace_duration or 0) * thr)
    # the same jobs (and arrival rate, from the capacity and the expected gang) as the mix the
    # cap makes of it: 4 and 8 become 2, so 1 and 2 GPUs with 0.25 and 0.75
    same = tmp_path / "same.jsonl"
    mixed = ["--gang-sizes", "1,2", "--gang-size-mix", "0.25,0.75", "-o", str(same)]
    assert main([*argv[:-2], "--cluster", "v100:2,p100:2,k80:2", *mixed]) == 0
    assert small.read_text().splitlines()[1:] == same.read_text().splitlines()[1:]
    # every job of the capped trace runs
    result = tmp_path / "result.json"
    simulate = ["simulate", "--cluster", "v100:2,p100:2,k80:2", "--trace", str(small)]
    assert main([*simulate, "--policy", "gavel", "--output", str(result)]) == 0


def test_a_gang_is_capped_only_to_a_size_the_table_has_on_every_type() -> None:
    gavel = ThroughputTable.bundled("gavel")
    # ResNet-18 at batch size 32 has no 2-GPU throughput on k80: the 3-GPU types cap a gang of 4
    # or 8 to 1 GPU, not 2
    k80 = {key: thr for key, thr in gavel.entries_of("k80").items() if key[2] != 2}
    table = dataclasses.replace(gavel, other_types={**gavel.other_types, "k80": k80})
    parameters = GeneratorParameters.for_cluster(
        40, "v100:3,k80:3", seed=1, throughputs=table, templates=(JobTemplate("ResNet-18", 32),),
        gang_size_mix=(0.5, 0.0, 0.25, 0.25), mode_mix=(1.0, 0.0, 0.0),
    )  # fmt: skip
    assert parameters.gang_caps(table) == {JobTemplate("ResNet-18", 32): {1: 1, 4: 1, 8: 1}}
    assert {r.scale_factor for r in generate_records(parameters)} == {1}


def test_a_template_with_no_gang_that_fits_is_refused_naming_the_cluster() -> None:
    gavel = ThroughputTable.bundled("gavel")
    # ResNet-18 at batch size 32 on k80 only on 4 or 8 GPUs: no gang of it fits on 2 GPUs
    k80 = {key: thr for key, thr in gavel.entries_of("k80").items() if key[2] > 2}
    table = dataclasses.replace(gavel, other_types={**gavel.other_types, "k80": k80})
    parameters = GeneratorParameters.for_cluster(
        10, "v100:2,k80:2", throughputs=table, templates=(JobTemplate("ResNet-18", 32),),
        gang_size_mix=(0.0, 0.0, 0.5, 0.5), mode_mix=(1.0, 0.0, 0.0),
    )  # fmt: skip
    with pytest.raises(GeneratorParameterError, match="no GPU type of v100:2,k80:2") as error:
        generate_records(parameters)
    assert error.value.parameter == "cluster"
