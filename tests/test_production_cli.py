"""``shockwave trace convert --from ...`` and ``trace inspect`` on its output, through the
console entry point; the ``.trace`` usage of ``convert`` is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave.cli import main
from shockwave.traces import read_native, write_native
from shockwave.traces.production import ConversionOptions, read_production

from .conftest import CANONICAL_TRACE, PRODUCTION


@pytest.mark.parametrize("source", ["philly", "helios", "pai", "tiresias"])
def test_convert_writes_what_read_production_reads(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"{source}.jsonl"
    assert main(["trace", "convert", "--from", source, str(PRODUCTION / source), "-o",
                 str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    expected = read_production(source, PRODUCTION / source)
    assert f"wrote {len(expected)} jobs to {out}" in printed
    assert f"kept {len(expected)}, dropped" in printed
    written = read_native(out)
    assert list(written) == list(expected)
    assert written.conversion == expected.conversion
    # the command's direct records are the bytes the validated jobs make
    standard = tmp_path / "standard.jsonl"
    write_native(expected, standard)
    assert out.read_bytes() == standard.read_bytes()
    header = json.loads(out.read_text().splitlines()[0])
    assert header["version"] == (3 if source == "pai" else 2)
    assert header["conversion"]["from"] == source
    assert "throughputs" not in header  # the exact mechanics need none


def test_filters_and_settings_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.jsonl"
    argv = [
        "trace", "convert", "--from", "helios", str(PRODUCTION / "helios"), "-o", str(out),
        "--vc", "vcA,vcC", "--status", "completed,TIMEOUT", "--min-gpus", "1", "--max-gpus",
        "16", "--start", "2020-04-01", "--end", "2020-04-03 00:00", "--mode", "static",
        "--seed", "7", "--throughputs", "wisr", "--max-jobs", "5", "--sample", "1",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    options = ConversionOptions(
        throughputs="wisr", seed=7, mode="static", start="2020-04-01", end="2020-04-03 00:00",
        statuses=("completed", "TIMEOUT"), vcs=("vcA", "vcC"), min_gpus=1, max_gpus=16,
        max_jobs=5, sample=1.0,
    )  # fmt: skip
    expected = read_production("helios", PRODUCTION / "helios", options)
    assert [j.source_id for j in read_native(out)] == ["h1", "h6", "h8"]
    assert list(read_native(out)) == list(expected)
    assert all(j.mode == "static" for j in expected)
    assert "filters:" in printed and "vc=['vcA', 'vcC']" in printed


def test_inspect_shows_the_conversion_and_the_distributions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "helios.jsonl"
    assert main(["trace", "convert", "--from", "helios", str(PRODUCTION / "helios"),
                 "-o", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["trace", "inspect", str(out), "--gpus", "64"]) == 0
    printed = capsys.readouterr().out
    assert "source:               helios trace" in printed
    assert "jobs read:            10; kept 7, dropped 3" in printed
    assert "CPU-only (no GPU): 2; never ran (no positive run time): 1" in printed
    assert "arrival 0:            submission at 2020-04-01 00:00:00" in printed
    # gangs 1, 8, 4, 16, 2, 3, 64; run times 3600, 600, 45, 86400, 7200, 120, 1e6 s
    gangs = "1: 1 (14.3%), 2: 1 (14.3%), 3-4: 2 (28.6%), 5-8: 1 (14.3%), 9-16: 1 (14.3%), "
    assert f"gang-size buckets:    {gangs}33-64: 1 (14.3%)\n" in printed
    runtimes = "< 1 min: 1 (14.3%), 1-10 min: 1 (14.3%), 10 min-1 h: 1 (14.3%), 1-10 h: 2 "
    assert f"runtime buckets:      {runtimes}(28.6%), 10-100 h: 1 (14.3%), >= 100 h: 1" in printed
    assert "runtime percentiles:  p10 1.5 min, p25 6 min, p50 1 h, p75 13 h" in printed
    assert "contention on 64 GPUs" in printed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--vc", "a"], "--vc: only for production traces"),
        (["--max-jobs", "3", "--sample", "0.5"], "--max-jobs, --sample: only for production"),
        ([], "needs --throughputs"),
    ],
)
def test_production_options_need_from(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.jsonl"
    assert main(["trace", "convert", str(CANONICAL_TRACE), "-o", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("source", "extra", "message"),
    [
        ("tiresias", ["--vc", "a"], "--vc: the tiresias trace records no virtual cluster"),
        ("pai", ["--status", "Failed", "--vc", "x"], "--vc: the pai trace"),
        ("helios", ["--sample", "2"], "--sample: must be a fraction"),
        ("helios", ["--start", "April"], "--start: the helios trace's clock is date-times"),
        ("helios", ["--min-gpus", "0"], "--min-gpus: must be an integer in [1,"),
        ("helios", ["--throughputs", "nonesuch.json"], "nonesuch.json"),
    ],
)
def test_bad_production_options_are_usage_errors(
    source: str,
    extra: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "w.jsonl"
    status = main(["trace", "convert", "--from", source, str(PRODUCTION / source), "-o",
                   str(out), *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert status == (3 if "nonesuch" in message else 2), err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_argparse_refuses_unknown_sources_and_modes(capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--from", "borg"], ["--from", "helios", "--mode", "elastic"]):
        with pytest.raises(SystemExit) as info:
            main(["trace", "convert", str(PRODUCTION), "-o", "w.jsonl", *extra])
        assert info.value.code == 2
        assert "invalid choice" in capsys.readouterr().err


def test_nothing_left_to_convert_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.jsonl"
    argv = ["trace", "convert", "--from", "helios", str(PRODUCTION / "helios"), "-o", str(out)]
    assert main([*argv, "--min-gpus", "1000"]) == 3
    assert "no job to convert: 10 read" in capsys.readouterr().err
    assert not out.exists()
