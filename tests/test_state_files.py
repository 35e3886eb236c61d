"""Simulation checkpoints are data, never pickles (issue 21, item 2; issue 25, case 2).

A checkpoint crafted to run code on load runs none; a truncated or bit-flipped file, a field of
the wrong type, a snapshot or file of another version, and content that does not fit its schema
each get an error naming the file and what is wrong (exit status 3 on the command line, no
traceback); an intact checkpoint resumes bit for bit (``tests/test_golden_outputs.py`` and
``tests/test_sim_checkpoint.py`` check that for every policy and both mechanics).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shockwave import __version__, persistence
from shockwave.cli import main
from shockwave.persistence import StateFormatError
from shockwave.scheduling import SimulationConfig
from shockwave.sim import Simulation
from shockwave.sim.checkpoint import CHECKPOINT_KIND
from shockwave.workload import Workload
from tests.fuzzing import fuzz


@pytest.fixture(scope="module")
def small(canonical_workload: Workload) -> Workload:
    return canonical_workload.with_jobs(canonical_workload.jobs[:16])


def _checkpoint(workload: Workload, path: Path, policy: str = "shockwave", **config: Any) -> Path:
    """A simulation of ``workload`` stopped at round 9 and saved to ``path``."""
    simulation = Simulation(workload, policy, SimulationConfig(gpus=6, **config))
    assert simulation.run(until_round=9) is None
    simulation.save(path)
    return path


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Decode the checkpoint, apply ``change`` to its tree, and write it back correctly signed
    (as someone who knows the format would: only the schema checks can catch it)."""
    tree = persistence.load_state_file(path, CHECKPOINT_KIND)
    change(tree)
    persistence.save_state_file(path, CHECKPOINT_KIND, tree)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch PWNED",))


def test_a_pickle_crafted_to_run_code_runs_none(
    small: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bomb = pickle.dumps(_Boom())
    body_is_pickle = tmp_path / "signed.ckpt"
    header = {
        "format": "shockwave-state",
        "kind": CHECKPOINT_KIND,
        "version": persistence.FILE_VERSION,
        "shockwave": __version__,
        "sha256": hashlib.sha256(bomb).hexdigest(),
    }
    body_is_pickle.write_bytes(json.dumps(header).encode() + b"\n" + bomb)
    old_format = tmp_path / "old.ckpt"  # what version 1 wrote: a header line, then a pickle
    old_format.write_bytes(b"shockwave-state 1 " + __version__.encode() + b"\n" + bomb)
    raw = tmp_path / "raw.ckpt"
    raw.write_bytes(bomb)
    expected = {
        body_is_pickle: "corrupted state",
        old_format: "older shockwave .* a pickle",
        raw: "not a shockwave state file",
    }
    for path, message in expected.items():
        with pytest.raises(StateFormatError, match=message) as caught:
            Simulation.load(path)
        assert str(path) in str(caught.value)
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from shockwave.cli import main; sys.exit(main())",
             "simulate", "--resume", str(path)],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        assert str(path) in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "PWNED").exists()


def test_a_truncated_or_altered_checkpoint_is_refused_naming_the_file(
    small: Workload, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _checkpoint(small, tmp_path / "run.ckpt")
    data = path.read_bytes()
    damaged = tmp_path / "damaged.ckpt"
    cases = {
        data[: len(data) // 2]: "corrupted state .*digest does not match",
        data[:40]: "not a shockwave state file",
        data[:-1] + bytes([data[-1] ^ 1]): "corrupted state .*digest does not match",
        b"": "not a shockwave state file",
    }
    for content, message in cases.items():
        damaged.write_bytes(content)
        with pytest.raises(StateFormatError, match=message):
            Simulation.load(damaged)
        assert main(["simulate", "--resume", str(damaged)]) == 3
        err = capsys.readouterr().err
        assert str(damaged) in err and "Traceback" not in err


def _set(part: str, **values: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets ``values`` in the checkpoint's ``part`` (``snapshot.ledger``, ...)."""

    def change(tree: dict[str, Any]) -> None:
        table = tree
        for key in part.split(".") if part else ():
            table = table[key]
        table.update(values)

    return change


def _drop(part: str, key: str) -> Callable[[dict[str, Any]], None]:
    return lambda tree: tree["snapshot"][part].pop(key)


#: (a change of a decoded checkpoint, the error it must give)
SCHEMA_CASES = [
    (_set("snapshot.ledger", admitted=np.zeros(16)), "ledger.admitted: expected dtype bool"),
    (_set("snapshot.ledger", done=np.zeros(3, dtype=bool)), r"ledger.done: expected shape \(16,\)"),
    (_set("snapshot.ledger", finished="3"), "ledger.finished: expected an integer"),
    (_drop("ledger", "service"), "ledger.service: missing"),
    (_set("snapshot.ledger", extra=1), r"unexpected fields \['extra'\]"),
    (_set("snapshot.world", rng={"bit_generator": "MT19937"}), "world.rng: not a random gen"),
    (_set("snapshot.world", epoch=np.full(16, 10**6)), "world.epoch: an epoch index is out of"),
    (
        _set("snapshot.policy", models=np.frombuffer(b"markov\nSWJM", np.uint8)),
        "policy 'shockwave'.models: not an adaptation model",
    ),
    (_set("snapshot.policy", owed=[1.0]), "policy 'shockwave'.owed: expected an array"),
    (_set("snapshot", version=2), "snapshot.version: 2; this shockwave reads 1"),
    (_set("config", gpus=0), r"config.gpus: 0 is out of range"),
    (_set("config", round_seconds=5.0), "restart_penalty_seconds must be shorter"),
    (_set("policy", name="nonesuch"), "unknown policy 'nonesuch'"),
    (_set("", workload=np.frombuffer(b"{}\n", np.uint8)), "workload: not a workload"),
]


@pytest.mark.parametrize(("change", "message"), SCHEMA_CASES)
def test_content_that_does_not_fit_its_schema_is_refused_naming_the_field(
    small: Workload,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _checkpoint(small, tmp_path / "run.ckpt")
    _rewrite(path, change)
    with pytest.raises(StateFormatError, match=message) as caught:
        Simulation.load(path)
    assert str(caught.value).startswith(str(path))
    assert main(["simulate", "--resume", str(path)]) == 3
    assert str(path) in capsys.readouterr().err


def test_a_checkpoint_of_another_version_or_kind_is_refused(
    small: Workload, tmp_path: Path
) -> None:
    path = _checkpoint(small, tmp_path / "run.ckpt")
    line, _, body = path.read_bytes().partition(b"\n")
    for key, value, message in (
        ("version", 3, "state format version 3; this shockwave reads 2"),
        ("shockwave", "0.0.1", "written by shockwave 0.0.1"),
        ("kind", "run-journal", "holds a 'run-journal', expected a 'simulation-checkpoint'"),
    ):
        header = json.loads(line)
        header[key] = value
        path.write_bytes(json.dumps(header).encode() + b"\n" + body)
        with pytest.raises(StateFormatError, match=message):
            Simulation.load(path)


@pytest.mark.parametrize("policy", ["fifo", "themis", "allox", "shockwave"])
def test_a_policy_state_of_the_wrong_types_is_refused(
    small: Workload, tmp_path: Path, policy: str
) -> None:
    path = _checkpoint(small, tmp_path / "run.ckpt", policy)

    def wrong_types(tree: dict[str, Any]) -> None:
        state = tree["snapshot"]["policy"]
        key = next(iter(state))
        state[key] = "not what the policy keeps"

    _rewrite(path, wrong_types)
    with pytest.raises(StateFormatError, match=f"policy '{policy}'"):
        Simulation.load(path)


@pytest.fixture(scope="module")
def intact(small: Workload, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    """An intact checkpoint's bytes (Themis, a small workload) and a scratch directory."""
    directory = tmp_path_factory.mktemp("fuzz")
    return _checkpoint(small, directory / "intact.ckpt", "themis").read_bytes(), directory


@fuzz(60)
@given(st.data())
def test_a_re_signed_mutation_loads_or_is_refused_cleanly(
    intact: tuple[bytes, Path], data: st.DataObject
) -> None:
    """Fuzzing: bytes of a checkpoint's body changed and the file re-signed (so that only the
    decoder and the schema checks stand in the way) give a StateFormatError or a simulation that
    loads, never another exception, never a huge allocation (part of the fuzzing campaign:
    ``HYPOTHESIS_PROFILE=fuzz``)."""
    blob, directory = intact
    line, _, rest = blob.partition(b"\n")
    body = bytearray(rest)
    for _ in range(data.draw(st.integers(1, 6))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    header = json.loads(line)
    header["sha256"] = hashlib.sha256(bytes(body)).hexdigest()
    path = directory / "mutated.ckpt"
    path.write_bytes(json.dumps(header).encode() + b"\n" + bytes(body))
    with contextlib.suppress(StateFormatError):
        Simulation.load(path)
