"""Regression tests: the cases of the second independent fault probe (issue 25) give a clean
refusal or a correct result.

Grouped as in the probe's report: outputs that destroy inputs, sweep grids sized before they are
enumerated, tracebacks (a child process's, an interruption while the command line loads), a
production trace in milliseconds read as seconds, and the permissions of atomically written
files.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shockwave import atomic
from shockwave.cli import exit_codes, main
from shockwave.cli.paths import check_distinct_paths
from shockwave.errors import OutputError
from shockwave.sweep import SpecError, load_spec
from shockwave.sweep.cells import DEFAULT_MAX_CELLS
from shockwave.sweep.spec import grid_axes, parse_spec

from .conftest import CANONICAL_TRACE, PRODUCTION

REPO = Path(__file__).resolve().parents[1]


def one_line_error(captured: Any) -> str:
    """The CLI's stderr: one line, no traceback."""
    err: str = captured.err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def workload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the canonical trace in the working directory (``w.trace``)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "w.trace"
    shutil.copyfile(CANONICAL_TRACE, path)
    return path


SIMULATE = ["simulate", "--trace", "w.trace", "--throughputs", "tacc", "--gpus", "32"]


# ---------------------------------------------------------------- outputs that destroy inputs
@pytest.mark.parametrize(
    ("options", "flags"),
    [
        (["--output", "w.trace"], ("--output", "--trace")),
        (["--checkpoint", "./w.trace"], ("--checkpoint", "--trace")),
        (["--timing", "sub/../w.trace"], ("--timing", "--trace")),
        (["--output", "x.json", "--timing", "x.json"], ("--output", "--timing")),
        (["--output", "x.json", "--checkpoint", "x.json"], ("--output", "--checkpoint")),
    ],
)
def test_simulate_refuses_an_output_that_is_an_input_or_another_output(
    workload: Path, capsys: pytest.CaptureFixture[str], options: list[str], flags: tuple[str, str]
) -> None:
    (workload.parent / "sub").mkdir()
    before = workload.read_bytes()
    assert main([*SIMULATE, "--policy", "fifo", *options]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert all(flag in line for flag in flags) and "same file" in line
    assert capsys.readouterr().out == ""  # refused before the run: no summary printed
    assert workload.read_bytes() == before
    assert not (workload.parent / "x.json").exists()


def test_a_hard_link_or_a_symbolic_link_to_the_input_is_the_same_file(
    workload: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.link(workload, "hard.json")
    os.symlink(workload, "soft.json")
    before = workload.read_bytes()
    for output in ("hard.json", "soft.json"):
        argv = ["compare", *SIMULATE[1:], "--policies", "fifo", "--output", output]
        assert main(argv) == exit_codes.OUTPUT
        line = one_line_error(capsys.readouterr())
        assert f"--output {output}" in line and "--trace w.trace" in line
    assert workload.read_bytes() == before


def test_compare_refuses_an_input_in_the_place_of_a_plot(
    workload: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = workload.parent / "plots"
    plots.mkdir()
    shutil.copyfile(workload, plots / "jct_cdf.png")
    argv = ["compare", "--trace", "plots/jct_cdf.png", *SIMULATE[3:], "--policies", "fifo"]
    assert main([*argv, "--plots", "plots"]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert "--plots" in line and "--trace plots/jct_cdf.png" in line


def test_resume_checkpoints_on_to_its_file_but_no_other_output_may_take_it(
    workload: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = workload.parent / "run.ckpt"
    saved.write_bytes(b"a checkpoint")
    argv = ["simulate", "--resume", "run.ckpt"]
    assert main([*argv, "--output", "run.ckpt"]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert "--output run.ckpt" in line and "--resume run.ckpt" in line
    # --resume FILE alone (checkpoints to FILE, by design) gets past the check: to the reading
    assert main(argv) == exit_codes.INPUT
    assert "--resume" in one_line_error(capsys.readouterr())
    assert saved.read_bytes() == b"a checkpoint"


def test_trace_commands_refuse_to_write_over_their_inputs(
    workload: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = workload.read_bytes()
    assert main(["trace", "convert", "w.trace", "--throughputs", "tacc", "-o", "w.jsonl"]) == 0
    capsys.readouterr()
    os.symlink("w.jsonl", "link.jsonl")
    native = Path("w.jsonl").read_bytes()
    argv = ["trace", "convert", "link.jsonl", "--throughputs", "tacc", "-o", "w.jsonl"]
    assert main(argv) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert "--output w.jsonl" in line and "PATH link.jsonl" in line
    assert Path("w.jsonl").read_bytes() == native
    shutil.copyfile(REPO / "traces" / "tacc_throughputs.json", "t.jsonl")
    argv = ["trace", "generate", "--jobs", "4", "--gpus", "8", "--throughputs", "t.jsonl"]
    assert main([*argv, "-o", "t.jsonl"]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert "--output t.jsonl" in line and "--throughputs t.jsonl" in line
    assert workload.read_bytes() == before


def test_bench_refuses_one_file_for_json_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    for suite in ("scale", "market"):
        assert main(["bench", suite, "-o", str(out), "--markdown", str(out)]) == exit_codes.OUTPUT
        line = one_line_error(capsys.readouterr())
        assert "--output" in line and "--markdown" in line
    assert not out.exists()


def test_sweep_refuses_an_out_that_is_its_spec_or_holds_its_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copyfile(CANONICAL_TRACE, tmp_path / "results.parquet")
    spec = tmp_path / "s.toml"
    spec.write_text(
        'policies = ["fifo"]\n[[traces]]\npath = "results.parquet"\nthroughputs = "tacc"\n'
        "gpus = 32\n"
    )
    text = spec.read_text()
    assert main(["sweep", str(spec), "--out", str(spec), "--workers", "1"]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert f"--out {spec}" in line and "the spec" in line
    assert main(["sweep", str(spec), "--out", str(tmp_path), "--workers", "1"]) == exit_codes.OUTPUT
    line = one_line_error(capsys.readouterr())
    assert "--out (results.parquet)" in line and "the spec's trace" in line
    assert spec.read_text() == text
    assert (tmp_path / "results.parquet").read_bytes() == CANONICAL_TRACE.read_bytes()


def test_the_shared_helper(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("a")
    check_distinct_paths({"--out": str(b), "--other": None}, {"--in": str(a), "--none": ""})
    with pytest.raises(OutputError, match=r"^--out .* is the same file as --in ") as info:
        check_distinct_paths({"--out": str(tmp_path / "." / "a")}, {"--in": str(a)})
    assert info.value.exit_status == exit_codes.OUTPUT
    check_distinct_paths({"--save": str(a)}, {"--load": str(a)}, replaces=[("--save", "--load")])
    with pytest.raises(OutputError, match=r"^--x .* and --y .* are the same file"):
        check_distinct_paths({"--x": str(b), "--y": str(b)})
    assert atomic.same_file(a, a) and not atomic.same_file(a, b)


# ------------------------------------------------------------------------- sweep grid sizes
def _grid_spec(seeds: int, rounds: int, planning: int) -> str:
    return (
        'policies = ["fifo", "shockwave"]\n'
        f"seeds = {list(range(seeds))}\n"
        f"[simulation]\nround_seconds = {list(range(60, 60 + rounds))}\n"
        "[[traces]]\ngenerate = { jobs = 30, gpus = 16, seed = 1 }\n"
        f"[params.shockwave]\nplanning_rounds = {list(range(1, planning + 1))}\n"
    )


@pytest.mark.parametrize(
    ("seeds", "rounds", "planning", "cells"),
    [(1000, 1000, 1000, 1_001_000_000), (100, 100, 99, 1_000_000)],
)
def test_a_huge_grid_is_refused_before_it_is_enumerated(
    tmp_path: Path, seeds: int, rounds: int, planning: int, cells: int
) -> None:
    path = tmp_path / "huge.toml"
    path.write_text(_grid_spec(seeds, rounds, planning))
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert time.perf_counter() - started < 5  # sized, not enumerated
    message = str(info.value)
    assert message.startswith(f"{path}: the grid has {cells:,} cells")
    assert f"seeds {seeds:,}" in message and f"simulation settings {rounds:,}" in message
    assert f"policy settings {planning + 1:,}" in message and "--max-cells" in message
    assert f"{DEFAULT_MAX_CELLS:,}" in message


def test_the_sweep_command_refuses_a_huge_grid_with_status_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "huge.toml"
    path.write_text(_grid_spec(100, 100, 99))
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "1"]) == exit_codes.INPUT
    line = one_line_error(capsys.readouterr())
    assert str(path) in line and "1,000,000 cells" in line
    assert not out.exists()  # nothing created: refused before any work
    assert main(["sweep", str(path), "--out", str(out), "--max-cells", "0"]) == exit_codes.USAGE
    assert "--max-cells" in one_line_error(capsys.readouterr())


def test_max_cells_moves_the_limit_and_the_size_is_the_number_of_cells(tmp_path: Path) -> None:
    text = (
        'policies = ["fifo", "shockwave"]\nmechanics = ["exact", "gavel"]\nseeds = [0, 1]\n'
        "[[traces]]\ngenerate = { jobs = 30, gpus = 16, seed = [1, 2] }\ngpus = [16, 32]\n"
        "[params.shockwave]\nplanning_rounds = [10, 20]\n"
    )
    path = tmp_path / "s.toml"
    with pytest.raises(SpecError, match="the grid has 48 cells .* the limit of 47"):
        parse_spec(text, path, max_cells=47)
    spec = parse_spec(text, path, max_cells=48)
    data = {
        "policies": ["fifo", "shockwave"], "mechanics": ["exact", "gavel"], "seeds": [0, 1],
        "traces": [{"generate": {"jobs": 30, "gpus": 16, "seed": [1, 2]}, "gpus": [16, 32]}],
        "params": {"shockwave": {"planning_rounds": [10, 20]}},
    }  # fmt: skip
    assert grid_axes(data) == {
        "traces x GPUs": 4, "mechanics": 2, "policy settings": 3, "simulation settings": 1,
        "seeds": 2,
    }  # fmt: skip
    assert len(spec.cells()) == 48


# ----------------------------------------------------------------------------- tracebacks
def test_bench_scale_with_a_size_the_generator_refuses_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["bench", "scale", "--sizes", "100:4", "--policies", "fifo"]
    assert main(argv) == exit_codes.USAGE
    line = one_line_error(capsys.readouterr())
    assert "--sizes" in line and "100:4" in line and "gang size 8" in line


def test_a_failing_scale_child_reports_one_line() -> None:
    command = [sys.executable, "-m", "shockwave.bench.scale", "--one", "100", "4", "fifo", "exact"]
    child = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    assert child.returncode == 1
    assert "Traceback" not in child.stderr
    assert child.stderr.strip().splitlines() == [
        "GeneratorParameterError: --gpus (gpus): gang size 8 has a positive probability but "
        "the cluster has only 4 GPUs (change --gang-size-mix)"
    ]


#: A process that presses Ctrl-C while the command line imports one of its heavy modules.
INTERRUPT_WHILE_IMPORTING = """
import os, signal, sys
import shockwave

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
from shockwave.cli import main
sys.exit(main(["--version"]))
"""


@pytest.mark.parametrize(
    "module", ["shockwave.cli.simulate_commands", "shockwave.policies", "scipy.optimize"]
)
def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback(module: str) -> None:
    command = [sys.executable, "-c", INTERRUPT_WHILE_IMPORTING, module]
    child = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    assert "Traceback" not in child.stderr and "KeyboardInterrupt" not in child.stderr
    assert child.returncode == exit_codes.INTERRUPTED, child.stderr
    assert child.stderr.strip() == "shockwave: interrupted"


#: A process that presses Ctrl-C when the given module is imported, from before ``import
#: shockwave`` (the console script's own first line imports ``shockwave.cli``).
INTERRUPT_FROM_THE_START = """
import os, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
from shockwave.cli import main
sys.exit(main(["--version"]))
"""


@pytest.mark.parametrize(
    "module",
    [
        "importlib.metadata",  # the package's first import, right after its first instruction
        "shockwave.errors",
        "numpy",
        "shockwave.throughputs",
        "shockwave.workload",
        "shockwave.cli",
        "shockwave.cli.app",
        "shockwave.policies",
        "scipy.optimize",
    ],
)
def test_ctrl_c_while_the_package_itself_loads_exits_130_without_a_traceback(module: str) -> None:
    """Issue 25's leftover: an interruption inside ``import shockwave`` (numpy and the package's
    own modules, before the command line's code runs) printed a traceback."""
    command = [sys.executable, "-c", INTERRUPT_FROM_THE_START, module]
    child = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    if child.returncode == 0 and module == "importlib.metadata":
        pytest.skip("importlib.metadata was loaded with the interpreter here")
    assert child.returncode == exit_codes.INTERRUPTED, child.stderr
    assert child.stderr == "shockwave: interrupted\n"
    assert child.stdout == ""


#: ``sitecustomize`` of the console-script test: the first import the ``shockwave`` package
#: itself makes (its first instructions have run) writes one byte to the parent's pipe.
SYNC_SITECUSTOMIZE = """
import os, sys

class _Sync:
    sent = False

    def find_spec(self, name, path=None, target=None):
        if not self.sent and "shockwave" in sys.modules and name != "shockwave":
            self.sent = True
            os.write(int(os.environ["SHOCKWAVE_TEST_SYNC_FD"]), b"!")
        return None

sys.meta_path.insert(0, _Sync())
"""


@pytest.mark.parametrize("delay_ms", [0, 1, 3, 10, 30, 100, 250])
def test_the_console_script_interrupted_at_any_early_instant_exits_130_quietly(
    tmp_path: Path, delay_ms: int
) -> None:
    """The real ``shockwave`` console script, sent SIGINT ``delay_ms`` after the package's first
    instruction (while numpy, the package and the command line load, about a second): one
    line, status 130, every time."""
    script = Path(sys.executable).parent / "shockwave"
    if not script.is_file():
        pytest.skip("no shockwave console script beside this interpreter")
    (tmp_path / "sitecustomize.py").write_text(SYNC_SITECUSTOMIZE)
    read, write = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SHOCKWAVE_TEST_SYNC_FD": str(write)}
    try:
        child = subprocess.Popen(
            [str(script), "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env, pass_fds=(write,), cwd=tmp_path,
        )  # fmt: skip
    finally:
        os.close(write)
    try:
        assert os.read(read, 1) == b"!", "the package was never imported"
        time.sleep(delay_ms / 1000)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        os.close(read)
        if child.poll() is None:
            child.kill()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert (child.returncode, err, out) == (exit_codes.INTERRUPTED, "shockwave: interrupted\n", "")


def test_only_the_command_line_gets_the_start_up_handler() -> None:
    """A program that imports shockwave (not its command line) keeps Python's Ctrl-C."""
    code = (
        "import signal, shockwave; "
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert child.stdout.strip() == "True"
    code = (
        "import signal, sys; from shockwave.cli import main; main(['simulate']); "
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, file=sys.stderr)"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    # main() gave Ctrl-C back before running a command
    assert child.stderr.splitlines()[-1] == "True"


def test_the_entry_point_module_imports_nothing_heavy() -> None:
    code = "import sys, shockwave.cli; print(sorted(m for m in sys.modules if 'scipy' in m " \
        "or m.startswith('shockwave.cli.') or m.startswith('shockwave.policies')))"  # fmt: skip
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert child.stdout.strip() == "[]"


# ---------------------------------------------------------------- production traces in ms
TIRESIAS_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"
#: A 53-day job and a one-minute one, times in milliseconds.
MILLISECONDS = [TIRESIAS_HEADER, "1,2,100000,30000,vgg19,4579200000,90", "2,1,50000,5,m,60000,4"]


def _csv(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_tiresias_trace_in_milliseconds_is_refused_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = _csv(tmp_path, MILLISECONDS), tmp_path / "o.jsonl"
    argv = ["trace", "convert", "--from", "tiresias", str(path), "-o", str(out)]
    assert main(argv) == exit_codes.INPUT
    line = one_line_error(capsys.readouterr())
    assert f"{path}:2" in line and "'duration'" in line and "145 years" in line
    assert "--time-unit ms" in line and not out.exists()


def test_time_unit_ms_converts_the_53_day_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = _csv(tmp_path, MILLISECONDS), tmp_path / "o.jsonl"
    argv = ["trace", "convert", "--from", "tiresias", str(path), "-o", str(out)]
    assert main([*argv, "--time-unit", "ms", "--start", "60000"]) == 0  # --start in ms too
    lines = out.read_text().splitlines()
    header, jobs = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["conversion"]["time_unit"] == "ms" and header["conversion"]["origin"] == 1e5
    assert [(j["trace_duration"], j["arrival_time"]) for j in jobs] == [(53 * 86400.0, 0.0)]
    capsys.readouterr()
    # told the times are seconds, the converter believes it
    assert main([*argv, "--time-unit", "s"]) == 0
    jobs = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert jobs[0]["trace_duration"] == 4579200000.0


def test_submissions_spread_over_decades_look_like_milliseconds(tmp_path: Path) -> None:
    from shockwave.errors import TraceError
    from shockwave.traces.production import ConversionOptions, read_production

    # two months of submissions in ms, short jobs
    path = _csv(tmp_path, [TIRESIAS_HEADER, "1,1,0,1,m,5000,0", "2,1,5184000000,1,m,5000,0"])
    with pytest.raises(TraceError, match="look like milliseconds") as info:
        read_production("tiresias", path)
    assert (info.value.line, info.value.field) == (3, "submit_time")
    workload = read_production("tiresias", path, ConversionOptions(time_unit="ms"))
    assert [j.arrival_time for j in workload.jobs] == [0.0, 60 * 86400.0]
    # a seconds trace within a year converts as before, its header unchanged
    plain = read_production("tiresias", PRODUCTION / "tiresias")
    assert plain.conversion is not None and "time_unit" not in plain.conversion


def test_time_unit_is_refused_where_it_does_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "o.jsonl")
    argv = ["trace", "convert", "--from", "helios", str(PRODUCTION / "helios"), "-o", out]
    assert main([*argv, "--time-unit", "ms"]) == exit_codes.USAGE
    assert "--time-unit" in one_line_error(capsys.readouterr())
    argv = ["trace", "convert", str(CANONICAL_TRACE), "--throughputs", "tacc", "-o", out]
    assert main([*argv, "--time-unit", "ms"]) == exit_codes.USAGE
    assert "--time-unit" in one_line_error(capsys.readouterr())


# ------------------------------------------------------------ permissions of atomic writes
def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_mode_of_the_umask(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        assert atomic.current_umask() == umask
        atomic.atomic_write_text(tmp_path / "a.txt", "a")
        with atomic.atomic_writer(tmp_path / "b.txt") as out:
            out.write("b")
        with open(tmp_path / "c.txt", "w") as plain:  # what open() gives, for comparison
            plain.write("c")
    finally:
        os.umask(previous)
    expected = 0o666 & ~umask
    assert _mode(tmp_path / "a.txt") == _mode(tmp_path / "b.txt") == expected
    assert _mode(tmp_path / "c.txt") == expected


def test_replacing_a_file_keeps_its_mode(tmp_path: Path) -> None:
    for mode in (0o644, 0o640, 0o600, 0o664):
        target = tmp_path / f"{mode:o}.json"
        target.write_text("old")
        target.chmod(mode)
        atomic.atomic_write_bytes(target, b"new")
        assert _mode(target) == mode and target.read_bytes() == b"new"
        with atomic.atomic_writer(target, "wb") as out:
            out.write(b"newer")
        assert _mode(target) == mode


def test_a_cli_output_is_not_made_private(
    workload: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    previous = os.umask(0o022)
    try:
        assert main(["trace", "convert", "w.trace", "--throughputs", "tacc", "-o", "w.jsonl"]) == 0
    finally:
        os.umask(previous)
    assert _mode(workload.parent / "w.jsonl") == 0o644
