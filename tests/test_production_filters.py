"""Filters of ``trace convert --from``: the submission window (and the origin it sets),
--status, --vc, --min-gpus/--max-gpus, --max-jobs (ties in file order) and --sample, and the
options a source cannot apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from shockwave.traces.production import (
    ConversionOptionError,
    ConversionOptions,
    job_uniforms,
    read_production,
)

from .conftest import PRODUCTION

HELIOS = PRODUCTION / "helios"


def kept(
    options: ConversionOptions, source: str = "helios", path: Path = HELIOS
) -> dict[str, float]:
    """source id -> arrival of the jobs kept."""
    return {str(j.source_id): j.arrival_time for j in read_production(source, path, options)}


def dropped(options: ConversionOptions, reason: str) -> int:
    conversion = read_production("helios", HELIOS, options).conversion
    assert conversion is not None
    return int(conversion["dropped"][reason])


def test_virtual_cluster_status_and_gang_filters() -> None:
    assert set(kept(ConversionOptions(vcs=("vcA",)))) == {"h1", "h4", "h8", "h10"}
    assert dropped(ConversionOptions(vcs=("vcA",)), "vc") == 3
    assert set(kept(ConversionOptions(vcs=("vcB", "vcC")))) == {"h5", "h6", "h7"}
    assert set(kept(ConversionOptions(statuses=("completed",)))) == {"h1", "h8", "h10"}
    assert set(kept(ConversionOptions(statuses=("Failed", "TIMEOUT")))) == {"h5", "h6"}
    assert set(kept(ConversionOptions(min_gpus=2, max_gpus=8))) == {"h4", "h5", "h7", "h8"}
    assert dropped(ConversionOptions(min_gpus=2, max_gpus=8), "gpus") == 3
    # the origin stays the input's earliest submission: arrivals do not move
    assert kept(ConversionOptions(vcs=("vcC",))) == {"h6": 7200.0, "h7": 10800.0}
    assert set(kept(ConversionOptions(statuses=("Pass",)), "philly", PRODUCTION / "philly")) == {
        "application_1_0001", "application_1_0008", "application_1_0010"
    }  # fmt: skip


def test_the_window_keeps_start_inclusive_end_exclusive_and_sets_the_origin() -> None:
    options = ConversionOptions(start="2020-04-01 00:06:00", end="2020-04-02")
    # h8 is submitted at 2020-04-02 00:00:00, the end: out; the earliest inside is h4's 00:06
    assert kept(options) == {"h4": 0.0, "h5": 3240.0, "h6": 6840.0, "h7": 10440.0}
    assert dropped(options, "window") == 3
    conversion = read_production("helios", HELIOS, options).conversion
    assert conversion is not None and conversion["origin"] == "2020-04-01 00:06:00"
    assert conversion["filters"] == {"start": "2020-04-01 00:06:00", "end": "2020-04-02"}
    # seconds for the traces that count seconds; the earliest submission inside is the origin
    assert kept(ConversionOptions(start=50, end=350), "tiresias", PRODUCTION / "tiresias") == {
        "1": 50.0, "2": 0.0, "5": 250.0,
    }  # fmt: skip
    assert kept(ConversionOptions(start="2020-04-03T12:00"), "helios") == {"h10": 0.0}


def test_max_jobs_keeps_the_earliest_submitted_ties_in_file_order(tmp_path: Path) -> None:
    assert set(kept(ConversionOptions(max_jobs=3))) == {"h1", "h4", "h5"}
    assert dropped(ConversionOptions(max_jobs=3), "max_jobs") == 4
    assert len(kept(ConversionOptions(max_jobs=100))) == 7
    trace = tmp_path / "ties.csv"
    trace.write_text(
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
        "late,1,30,1,m,100,0\n"
        "tie1,1,20,1,m,100,0\n"
        "early,1,10,1,m,100,0\n"
        "tie2,1,20,1,m,100,0\n"
        "tie3,1,20,1,m,100,0\n"
    )
    assert list(kept(ConversionOptions(max_jobs=3), "tiresias", trace)) == ["tie1", "early", "tie2"]
    assert list(kept(ConversionOptions(max_jobs=1), "tiresias", trace)) == ["early"]


def test_sample_keeps_the_jobs_whose_seeded_draw_is_below_the_fraction() -> None:
    every = kept(ConversionOptions())
    for seed in range(6):
        for fraction in (0.3, 0.5, 0.9):
            wanted = {i for i in every if job_uniforms(seed, i, "sample")[0] < fraction}
            if not wanted:
                continue
            got = kept(ConversionOptions(sample=fraction, seed=seed))
            assert set(got) == wanted
            assert all(got[i] == every[i] for i in got)  # arrivals unchanged
    assert kept(ConversionOptions(sample=1.0)) == every


def test_no_job_left_is_an_input_error() -> None:
    with pytest.raises(ValueError, match=r"no job to convert: 10 read .*vc"):
        read_production("helios", HELIOS, ConversionOptions(vcs=("nowhere",)))


@pytest.mark.parametrize(
    ("source", "options", "option", "message"),
    [
        ("tiresias", {"vcs": ("a",)}, "--vc", "records no virtual cluster"),
        ("pai", {"vcs": ("a",)}, "--vc", "records no virtual cluster"),
        ("tiresias", {"statuses": ("a",)}, "--status", "records no status"),
        ("helios", {"start": 100}, "--start", "date-times"),
        ("helios", {"end": "yesterday"}, "--end", "date-times"),
        ("pai", {"start": "2020-01-01"}, "--start", "clock is seconds"),
        ("tiresias", {"start": "nan"}, "--start", "finite"),
        ("helios", {"start": "2020-04-02", "end": "2020-04-01"}, "--end", "after --start"),
    ],
)
def test_options_a_source_cannot_apply_are_refused(
    source: str, options: dict[str, object], option: str, message: str
) -> None:
    with pytest.raises(ConversionOptionError, match=message) as info:
        read_production(source, PRODUCTION / source, ConversionOptions(**options))
    assert info.value.option == option


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"seed": -1}, "--seed"),
        ({"seed": 1.5}, "--seed"),
        ({"mode": "elastic"}, "--mode"),
        ({"min_gpus": 0}, "--min-gpus"),
        ({"max_gpus": True}, "--max-gpus"),
        ({"min_gpus": 8, "max_gpus": 4}, "--min-gpus"),
        ({"max_jobs": 0}, "--max-jobs"),
        ({"sample": 0.0}, "--sample"),
        ({"sample": 1.5}, "--sample"),
        ({"statuses": ("",)}, "--status"),
    ],
)
def test_invalid_options_name_the_option(options: dict[str, object], option: str) -> None:
    with pytest.raises(ConversionOptionError) as info:
        ConversionOptions(**options)
    assert info.value.option == option and str(info.value).startswith(option)
