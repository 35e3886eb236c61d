"""Per-epoch profiles: the original's rules, and exact reproduction of its canonical profiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from shockwave.catalog import gns_staircase, model_family
from shockwave.profile_rules import (
    accordion_schedule,
    batch_size_schedule,
    epoch_durations,
    gns_schedule,
    num_epochs,
)
from shockwave.throughputs import ThroughputTable
from shockwave.workload import Workload


def test_canonical_profiles_reproduce_the_original_exactly(
    canonical_workload: Workload, reference_profiles: list[dict[str, Any]]
) -> None:
    assert len(canonical_workload) == len(reference_profiles) == 120
    for job, ref in zip(canonical_workload, reference_profiles, strict=True):
        assert job.job_id == ref["job_index"]
        assert job.num_epochs == ref["num_epochs"], job.job_id
        assert job.batch_sizes.tolist() == ref["bs_every_epoch"], job.job_id
        np.testing.assert_allclose(job.epoch_seconds, ref["duration_every_epoch"], rtol=1e-9)
        assert job.model == ref["model"] and job.dataset == ref["dataset"]
        assert job.samples_per_epoch == ref["num_samples_per_epoch"]
        assert job.gang_size == ref["scale_factor"]
        assert job.mode == ref["mode"]
        assert job.arrival_time == ref["arrival_time"]
        assert job.exclusive_seconds == pytest.approx(ref["total_duration_s"], rel=1e-9)


def test_num_epochs_rounds_steps_per_epoch_and_epochs_up() -> None:
    # LM: ceil(59675 / 10) = 5968 steps per epoch; 134583 steps -> 22.55 -> 23 epochs (job 0).
    assert num_epochs(134_583, 59_675, 10) == 23
    assert num_epochs(5968, 59_675, 10) == 1
    assert num_epochs(5969, 59_675, 10) == 2


def test_accordion_keeps_the_first_30_percent_and_critical_epochs() -> None:
    schedule = accordion_schedule("LM", 10, 100).tolist()
    # epochs 0..30 keep B0 (30 % rule, strict), then the maximum 80
    assert schedule[:31] == [10] * 31
    assert schedule[31:] == [80] * 69
    # LM's critical regime [0, 10) dominates for short jobs: epoch e switches iff e > 0.3 E
    assert accordion_schedule("LM", 10, 20).tolist() == [10] * 10 + [80] * 10


def test_accordion_resnet50_critical_windows_repeat_every_30_epochs_below_600() -> None:
    schedule = accordion_schedule("ResNet-50", 32, 700).tolist()
    assert schedule[30:40] == [32] * 10  # 30 mod 30 < 10: critical
    assert schedule[250:260] == [128] * 10
    assert schedule[600:610] == [128] * 10  # no critical windows from epoch 600 on


def test_accordion_never_adapts_transformer_or_a_job_already_at_the_maximum() -> None:
    assert accordion_schedule("Transformer", 16, 50).tolist() == [16] * 50
    assert accordion_schedule("ResNet-18", 256, 50).tolist() == [256] * 50


def test_accordion_recommendation_has_late_critical_windows() -> None:
    schedule = accordion_schedule("Recommendation", 512, 120).tolist()
    assert schedule[:37] == [512] * 37  # head regime [0, 30), then the 30 % rule: e > 36
    assert schedule[37:60] == [8192] * 23
    assert schedule[60:70] == [512] * 10
    assert schedule[70:80] == [8192] * 10
    assert schedule[80:90] == [512] * 10


def test_gns_final_epoch_quirk_keeps_the_initial_batch_size() -> None:
    # NOTES §2.4: ResNet-18/32/1 with E = 40 ends [..., 128, 128, 32]
    schedule = gns_schedule("ResNet-18", 32, 1, 40).tolist()
    assert schedule[:21] == [32] * 21
    assert schedule[21:31] == [64] * 10
    assert schedule[31:39] == [128] * 8
    assert schedule[39] == 32


def test_gns_last_epoch_in_the_first_stage_is_adapted() -> None:
    # first stage of ResNet-18/32/1 is [21, 31): with E = 25 the last epoch (24) is in it
    assert gns_schedule("ResNet-18", 32, 1, 25).tolist() == [32] * 21 + [64] * 4


def test_gns_single_stage_adapts_the_last_epoch() -> None:
    # ResNet-50/64/1 has one stage from epoch 101
    schedule = gns_schedule("ResNet-50", 64, 1, 150).tolist()
    assert schedule[:101] == [64] * 101 and schedule[101:] == [128] * 49


def test_gns_needs_more_epochs_than_the_first_threshold() -> None:
    staircase = gns_staircase("LM", 10, 1)
    assert staircase is not None and staircase.min_epochs == 12
    assert gns_schedule("LM", 10, 1, 11).tolist() == [10] * 11
    assert gns_schedule("LM", 10, 1, 12).tolist() == [10] * 11 + [20]


@pytest.mark.parametrize(
    ("model", "batch_size", "gang"),
    [("Transformer", 16, 1), ("LM", 10, 8), ("ResNet-50", 16, 1), ("ResNet-50", 32, 1)],
)
def test_gns_has_no_staircase_for_these_jobs(model: str, batch_size: int, gang: int) -> None:
    assert gns_staircase(model, batch_size, gang) is None
    assert gns_schedule(model, batch_size, gang, 500).tolist() == [batch_size] * 500


def test_static_mode_keeps_the_initial_batch_size() -> None:
    assert batch_size_schedule("static", "LM", 10, 1, 5).tolist() == [10] * 5
    with pytest.raises(ValueError, match="unknown adaptation mode"):
        batch_size_schedule("elastic", "LM", 10, 1, 5)  # type: ignore[arg-type]


def test_epoch_duration_is_samples_over_batch_over_throughput() -> None:
    table = ThroughputTable({("LM", 10, 1): 2.0, ("LM", 80, 1): 4.0})
    seconds = epoch_durations("LM", np.array([10, 80]), 1, table)
    samples = model_family("LM").samples_per_epoch
    assert seconds.tolist() == [samples / 10 / 2.0, samples / 80 / 4.0]


def test_epoch_duration_rejects_missing_or_zero_throughputs() -> None:
    table = ThroughputTable({("LM", 10, 1): 0.0})
    with pytest.raises(ValueError, match="never ends"):
        epoch_durations("LM", np.array([10]), 1, table)
    with pytest.raises(KeyError, match="LM \\(batch size 20\\)"):
        epoch_durations("LM", np.array([20]), 1, table)
