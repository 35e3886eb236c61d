"""The error hierarchy (``shockwave.errors``): one base carrying where and what, a kind per exit
status, each error still the built-in it always was, and the command line mapping statuses by
kind alone."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from shockwave import _core, errors
from shockwave.cli import exit_codes, main
from shockwave.config_file import ConfigError
from shockwave.errors import (
    DataError,
    InputError,
    InternalError,
    JobFieldError,
    OutputError,
    RunFailedError,
    ShockwaveError,
    TraceError,
    UsageError,
)
from shockwave.heterogeneous import GavelSolverError
from shockwave.job.protocol import ProtocolError
from shockwave.persistence import StateFormatError
from shockwave.runtime import JournalError, RunDirectoryBusyError
from shockwave.scheduling.errors import PolicyOutputError, SimulationStalledError
from shockwave.sweep import SpecError
from shockwave.traces.generator_parameters import GeneratorParameterError
from shockwave.traces.production.assignment import NoJobTypeError
from shockwave.traces.production.options import ConversionOptionError

PACKAGE = Path(errors.__file__).parent

#: Every error class of the package: (class, its kind, the built-in it derives from).
CLASSES = [
    (TraceError, DataError, ValueError),
    (JobFieldError, DataError, ValueError),
    (InputError, UsageError, ValueError),
    (GeneratorParameterError, UsageError, ValueError),
    (ConversionOptionError, UsageError, ValueError),
    (NoJobTypeError, UsageError, ValueError),
    (ConfigError, DataError, ValueError),
    (SpecError, DataError, ValueError),
    (JournalError, DataError, ValueError),
    (StateFormatError, DataError, ValueError),
    (ProtocolError, DataError, ValueError),
    (RunDirectoryBusyError, OutputError, ValueError),
    (PolicyOutputError, RunFailedError, ValueError),
    (SimulationStalledError, RunFailedError, RuntimeError),
    (GavelSolverError, RunFailedError, RuntimeError),
    (InternalError, InternalError, RuntimeError),
]


def test_every_error_class_of_the_package_is_listed() -> None:
    """A new error class must join the hierarchy (and this table)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                found.add(node.name)
    listed = {cls.__name__ for cls, _, _ in CLASSES}
    kinds = {"ShockwaveError", "UsageError", "DataError", "OutputError", "RunFailedError"}
    assert found - kinds == listed | {"RayUnavailableError"}  # its module needs Ray


@pytest.mark.parametrize(
    ("cls", "kind", "builtin"), CLASSES, ids=[c.__name__ for c, _, _ in CLASSES]
)
def test_each_error_has_one_kind_and_keeps_its_builtin(
    cls: type[ShockwaveError], kind: type[ShockwaveError], builtin: type[Exception]
) -> None:
    assert issubclass(cls, kind) and issubclass(cls, ShockwaveError) and issubclass(cls, builtin)
    assert cls.exit_status == kind.exit_status


def test_the_kinds_decide_the_exit_statuses() -> None:
    assert ShockwaveError.exit_status == exit_codes.INTERNAL == 1
    assert UsageError.exit_status == exit_codes.USAGE == 2
    assert DataError.exit_status == exit_codes.INPUT == 3
    assert OutputError.exit_status == exit_codes.OUTPUT == 4
    assert RunFailedError.exit_status == exit_codes.RUN_FAILED == 5
    assert InternalError.exit_status == exit_codes.INTERNAL
    # a busy run directory is an output error first, a journal error too
    assert RunDirectoryBusyError.exit_status == exit_codes.OUTPUT
    assert issubclass(RunDirectoryBusyError, JournalError)


def test_where_and_what() -> None:
    error = TraceError("must be > 0", path="w.jsonl", line=3, field="gang_size")
    assert (error.where, error.what) == ("w.jsonl:3: field 'gang_size'", "must be > 0")
    assert (error.path, error.line, error.field, error.reason) == (
        "w.jsonl", 3, "gang_size", "must be > 0",
    )  # fmt: skip
    assert str(error) == "w.jsonl:3: field 'gang_size': must be > 0"
    assert str(TraceError("bad", element=2)) == "<input>: JSON element 2: bad"
    job = JobFieldError(7, "weight", "must be finite")
    assert (job.where, job.what, job.field, job.job_id) == (
        "job 7: field 'weight'", "must be finite", "weight", 7,
    )  # fmt: skip
    solver = InputError("valuations", "must be finite")
    assert (solver.where, solver.what, solver.argument, solver.reason) == (
        "valuations", "must be finite", "valuations", "must be finite",
    )  # fmt: skip
    assert solver.args == ("valuations", "must be finite") and str(solver) == (
        "valuations: must be finite"
    )
    option = GeneratorParameterError("mean_interarrival", "must be > 0")
    assert str(option) == "--mean-interarrival (mean_interarrival): must be > 0"
    assert (option.field, option.parameter, option.what) == (
        "mean_interarrival", "mean_interarrival", "must be > 0",
    )  # fmt: skip
    config = ConfigError("c.toml", ("simulation", "round_seconds"), "must be a number", line=2)
    assert (config.where, config.key, config.line) == (
        "c.toml:2: simulation.round_seconds", "simulation.round_seconds", 2,
    )  # fmt: skip
    plain = SimulationStalledError("the simulation has not finished after 5 rounds")
    assert plain.where is None and str(plain) == plain.what
    assert str(DataError("bad", path="a.json")) == "a.json: bad"
    assert str(UsageError("bad", field="--gpus")) == "--gpus: bad"


@pytest.mark.parametrize(
    "error",
    [
        TraceError("bad", path="a.trace", line=2, field="x", element=None),
        JobFieldError(3, "weight", "bad"),
        InputError("budgets", "bad"),
        GeneratorParameterError("jobs", "bad"),
        ConversionOptionError("--max-gpus", "bad"),
        ConfigError("c.toml", "simulation.x", "bad", line=4),
        SpecError("s.toml", ("traces", 0), "bad", line=9),
        JournalError("j.sqlite: bad"),
        RunDirectoryBusyError("run: busy"),
        PolicyOutputError("bad"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_errors_survive_pickling_whole(error: ShockwaveError) -> None:
    """Worker processes and Ray send errors back pickled: every attribute arrives."""
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and copy.args == error.args
    assert vars(copy) == vars(error)


def test_the_rust_extensions_errors_fit_the_hierarchy() -> None:
    assert _core.InternalError is InternalError  # registered in the extension
    with pytest.raises(InternalError, match="internal error in shockwave's Rust core") as info:
        _core._panic_probe()
    assert isinstance(info.value, RuntimeError) and info.value.exit_status == 1
    with pytest.raises(InputError) as raised:  # the core's input errors: shockwave.InputError
        _core.JobModelsCore(_core.ModelSettings()).predict(2**62, 120.0, "markov")
    assert isinstance(raised.value, UsageError) and raised.value.exit_status == 2
    assert raised.value.where == raised.value.argument == "num_rounds"


def test_the_command_line_reports_an_error_by_its_kind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cli.app.run`` knows no library class: a new error of a kind gets the kind's status."""
    from shockwave.cli import trace_commands

    class NewInputError(DataError, ValueError):
        pass

    cases = [
        (NewInputError("no such thing", path="x.jsonl", line=4), 3, "x.jsonl:4: no such thing"),
        (UsageError("a bad option", field="--x"), 2, "--x: a bad option"),
        (OutputError("cannot write", path="out.json"), 4, "out.json: cannot write"),
        (RunFailedError("stalled"), 5, "the run failed: stalled"),
        (InternalError("a bug"), 1, "internal error (InternalError: a bug); please report it"),
    ]
    for error, status, message in cases:

        def fail(args: object, error: ShockwaveError = error) -> int:
            raise error

        monkeypatch.setattr(trace_commands, "_inspect", fail)
        assert main(["trace", "inspect", "whatever"]) == status
        err = capsys.readouterr().err
        assert err.startswith(f"shockwave: error: {message}") and err.count("\n") == 1, err
