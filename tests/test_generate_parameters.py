"""Bad generator parameters raise ValueError naming the parameter and its option."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shockwave.catalog import JobTemplate
from shockwave.throughputs import ThroughputTable
from shockwave.traces import (
    GeneratorParameterError,
    GeneratorParameters,
    generate_records,
    generate_workload,
    write_generated,
)
from shockwave.traces.generator_parameters import option_name, parse_numbers, parse_templates

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("changes", "parameter"),
    [
        ({"jobs": 0}, "jobs"),
        ({"jobs": 2.5}, "jobs"),
        ({"jobs": True}, "jobs"),
        ({"gpus": 0}, "gpus"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**32}, "seed"),
        ({"mean_interarrival": -1.0}, "mean_interarrival"),
        ({"mean_interarrival": NAN}, "mean_interarrival"),
        ({"mean_interarrival": INF}, "mean_interarrival"),
        ({"min_duration_hours": 0.0}, "min_duration_hours"),
        ({"min_duration_hours": 1e-5}, "min_duration_hours"),
        ({"max_duration_hours": 0.1}, "max_duration_hours"),
        ({"max_duration_hours": INF}, "max_duration_hours"),
        ({"duration_grid_points": 0}, "duration_grid_points"),
        ({"duration_grid": "cubic"}, "duration_grid"),
        ({"duration_log_base": 1.0}, "duration_log_base"),
        ({"duration_grid": "logspace", "duration_grid_points": 1}, "duration_grid_points"),
        ({"duration_grid_points": 3}, "duration_grid_points"),  # an empty, possible bucket
        ({"duration_bucket_edges": (0.5, 0.2, 0.9)}, "duration_bucket_edges"),
        ({"duration_bucket_edges": (0.2, 0.5, 1.0)}, "duration_bucket_edges"),
        ({"duration_bucket_edges": (NAN, 0.5, 0.9)}, "duration_bucket_edges"),
        ({"duration_bucket_mix": (0.72, 0.28)}, "duration_bucket_mix"),
        ({"duration_bucket_mix": (0.72, 0.2, 0.05, 0.3)}, "duration_bucket_mix"),
        ({"duration_bucket_mix": (1.2, -0.2, 0.0, 0.0)}, "duration_bucket_mix"),
        ({"gang_sizes": "1,2,4,8"}, "gang_sizes"),
        ({"gang_sizes": (1, 2, 2, 8)}, "gang_sizes"),
        ({"gang_sizes": (0, 2, 4, 8)}, "gang_sizes"),
        ({"gang_sizes": ()}, "gang_sizes"),
        ({"gang_size_mix": (0.6, 0.4)}, "gang_size_mix"),
        ({"gang_size_mix": (0.6, 0.3, NAN, 0.1)}, "gang_size_mix"),
        ({"gpus": 4}, "gpus"),  # gang size 8 has probability 0.01
        ({"mode_mix": (0.5, 0.5)}, "mode_mix"),
        ({"mode_mix": (0.5, 0.5, 0.5)}, "mode_mix"),
        ({"accordion_min_seconds": -1.0}, "accordion_min_seconds"),
        ({"templates": ()}, "templates"),
        ({"templates": (("GPT-5", 32),)}, "templates"),
        ({"templates": (("LM", 0),)}, "templates"),
        ({"templates": ("LM (batch size 5)",)}, "templates"),
        ({"high_priority_fraction": 1.5}, "high_priority_fraction"),
        ({"high_priority_fraction": -0.1}, "high_priority_fraction"),
        ({"high_priority_weight": 0.0}, "high_priority_weight"),
    ],
)
def test_invalid_parameters_are_refused_by_name(changes: dict[str, Any], parameter: str) -> None:
    values: dict[str, Any] = {"jobs": 10, "gpus": 32, **changes}
    with pytest.raises(GeneratorParameterError) as error:
        GeneratorParameters(**values)
    assert isinstance(error.value, ValueError)
    assert error.value.parameter == parameter
    assert option_name(parameter) in str(error.value)


def test_templates_may_be_given_as_model_and_batch_size_pairs() -> None:
    values: dict[str, Any] = {"jobs": 3, "gpus": 8, "templates": [("LM", 5), ("LM", 10)]}
    assert GeneratorParameters(**values).templates == (JobTemplate("LM", 5), JobTemplate("LM", 10))


def test_a_small_cluster_is_fine_without_large_gangs() -> None:
    parameters = GeneratorParameters(jobs=50, gpus=2, gang_size_mix=(0.5, 0.5, 0.0, 0.0))
    assert max(r.scale_factor for r in generate_records(parameters)) <= 2
    single = GeneratorParameters(jobs=5, gpus=1, templates=(JobTemplate("Recommendation", 512),))
    assert {r.scale_factor for r in generate_records(single)} == {1}


def test_an_unreadable_throughput_file_is_named(tmp_path: Path) -> None:
    parameters = GeneratorParameters(jobs=5, gpus=8, throughputs=tmp_path / "missing.json")
    with pytest.raises(GeneratorParameterError, match="--throughputs") as error:
        generate_records(parameters)
    assert error.value.parameter == "throughputs"


def test_a_table_without_a_needed_throughput_is_refused_before_drawing() -> None:
    tacc = ThroughputTable.bundled("tacc")
    # ResNet-50 Accordion jobs switch to batch size 128, which no template starts at
    table = ThroughputTable(
        {key: thr for key, thr in tacc.entries.items() if key != ("ResNet-50", 128, 8)},
        source="cut",
    )
    parameters = GeneratorParameters(jobs=5, gpus=32, throughputs=table)
    with pytest.raises(GeneratorParameterError, match=r"ResNet-50 \(batch size 128\)', 8") as error:
        generate_workload(parameters)
    assert error.value.parameter == "throughputs"
    # without gang size 8, or without Accordion jobs, nothing needs that entry
    generate_workload(
        GeneratorParameters(jobs=5, gpus=32, throughputs=table, gang_size_mix=(0.6, 0.3, 0.1, 0.0))
    )
    generate_workload(
        GeneratorParameters(jobs=5, gpus=32, throughputs=table, mode_mix=(0.5, 0.0, 0.5))
    )


def test_a_zero_throughput_is_refused() -> None:
    parameters = GeneratorParameters(jobs=5, gpus=32, templates=(JobTemplate("Transformer", 256),))
    with pytest.raises(GeneratorParameterError, match="no positive throughput"):
        generate_records(parameters)


def test_the_output_suffix_must_name_a_format(tmp_path: Path) -> None:
    with pytest.raises(GeneratorParameterError, match="--output") as error:
        write_generated(GeneratorParameters(jobs=5, gpus=8), tmp_path / "trace.csv")
    assert error.value.parameter == "output"
    assert not (tmp_path / "trace.csv").exists()


def test_template_and_number_lists_parse_or_name_their_option() -> None:
    assert parse_templates(["LM:5,10;ResNet-18:32", "LM:5"]) == (
        JobTemplate("LM", 5),
        JobTemplate("LM", 10),
        JobTemplate("ResNet-18", 32),
        JobTemplate("LM", 5),
    )
    for bad in ("LM", "LM:", ":5", "LM:5,x"):
        with pytest.raises(GeneratorParameterError, match="--templates"):
            parse_templates([bad])
    assert parse_numbers("mode_mix", "0,0.5,0.5") == (0.0, 0.5, 0.5)
    with pytest.raises(GeneratorParameterError, match="--mode-mix"):
        parse_numbers("mode_mix", "0,half,0.5")


def test_numpy_numbers_are_accepted() -> None:
    parameters = GeneratorParameters(
        jobs=np.int64(20), gpus=np.int32(64), seed=np.uint32(7), mean_interarrival=np.float64(3.0)
    )
    plain = GeneratorParameters(jobs=20, gpus=64, seed=7, mean_interarrival=3.0)
    assert generate_records(parameters) == generate_records(plain)


def test_the_command_line_keeps_every_digit() -> None:
    parameters = GeneratorParameters(jobs=10, gpus=8, mean_interarrival=1280 / 6500)
    assert f"--mean-interarrival {1280 / 6500!r}" in parameters.command_line()


def test_the_command_line_names_what_differs_from_the_defaults() -> None:
    parameters = GeneratorParameters(
        jobs=10,
        gpus=8,
        seed=3,
        mode_mix=(1, 0, 0),
        templates=(JobTemplate("LM", 5), JobTemplate("ResNet-18", 32)),
    )
    assert parameters.command_line() == (
        "shockwave trace generate --jobs 10 --gpus 8 --seed 3 --mode-mix 1,0,0 "
        "--templates 'LM:5;ResNet-18:32'"
    )
