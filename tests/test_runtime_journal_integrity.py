"""The journal holds data, never code, and refuses corruption (issue 25, cases 2 and 9).

A journal crafted to run code on load runs none; a flipped bit, a deleted round, a truncated
blob, a snapshot of another round and a journal of the old (pickle) version are each refused on
resume with an error naming the journal (exit status 3 on the command line).
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave import persistence as state_codec
from shockwave.runtime.journal import Journal, JournalError
from shockwave.runtime.lifecycle import History, LiveJob
from shockwave.traces import write_native
from tests.test_runtime_scheduler import FakeClock, make_workload, run_fake


def _interrupted_run(tmp_path: Path) -> Path:
    workload = make_workload()
    clock = FakeClock()
    result, _, _ = run_fake(
        workload, "gavel", tmp_path, clock=clock, checkpoints={}, interrupt_at=clock.now + 35.0
    )
    assert result.incomplete
    return tmp_path / "journal.sqlite"


def _resume_error(journal_path: Path) -> str:
    journal = Journal(journal_path, create=False)

    def read_back() -> None:
        journal.rounds()
        journal.snapshot()

    try:
        with pytest.raises(JournalError) as caught:
            read_back()
    finally:
        journal.close()
    assert str(journal_path) in str(caught.value)
    return str(caught.value)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch PWNED",))


def test_a_pickle_crafted_to_run_code_runs_none(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    marker = tmp_path / "PWNED"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE snapshot SET data = ?", (pickle.dumps(_Boom()),))
        db.execute("UPDATE rounds SET state = ? WHERE idx = 0", (pickle.dumps(_Boom()),))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        _resume_error(path)
        with pytest.raises(state_codec.StateFormatError):
            state_codec.decode(pickle.dumps(_Boom()))
    finally:
        os.chdir(cwd)
    assert not marker.exists()


def test_a_flipped_bit_in_a_round_is_refused(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    with sqlite3.connect(path) as db:
        blob = bytearray(db.execute("SELECT state FROM rounds WHERE idx = 1").fetchone()[0])
        blob[len(blob) // 2] ^= 0x01
        db.execute("UPDATE rounds SET state = ? WHERE idx = 1", (bytes(blob),))
    assert "round 1: its digest does not match" in _resume_error(path)


def test_a_deleted_round_is_refused(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM rounds WHERE idx = 1")
    assert "round 1 is missing" in _resume_error(path)


def test_a_deleted_last_round_leaves_a_snapshot_of_another_round(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    with sqlite3.connect(path) as db:
        last = db.execute("SELECT MAX(idx) FROM rounds").fetchone()[0]
        db.execute("DELETE FROM rounds WHERE idx = ?", (last,))
    assert "not of the last journaled round" in _resume_error(path)


def test_an_old_pickle_journal_is_refused_by_version(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'journal_version'")
    with pytest.raises(JournalError, match="journal version 1"):
        Journal(path, create=False)


def test_a_tampered_journal_exits_3_naming_it_on_resume(tmp_path: Path) -> None:
    path = _interrupted_run(tmp_path)
    write_native(make_workload(), tmp_path / "workload.jsonl")
    journal = Journal(path, create=False)
    journal.set_meta(
        {"policy": "gavel", "config": {"gpus": 2, "round_seconds": 10.0}, "workdir": str(tmp_path)}
    )
    journal.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE rounds SET decision = X'00' WHERE idx = 0")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from shockwave.cli import main; sys.exit(main())",
         "cluster", "run", "--resume", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert str(path) in done.stderr and "round 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_codec_round_trips_the_schedulers_values_and_refuses_others() -> None:
    run = LiveJob(history=History(throughput={16: [3.0, 1.5]}, starts=[[1.0] * 5])).snapshot()
    value = {
        "array": np.arange(4, dtype=np.int64),
        "scalar": np.float64(2.5),
        "nan": math.nan,
        "nested": [(1, "a"), {2: None}],
        "run": run,
    }
    back = state_codec.decode(state_codec.encode(value))
    np.testing.assert_array_equal(back["array"], value["array"])
    assert type(back["scalar"]) is np.float64 and back["scalar"] == 2.5
    assert math.isnan(back["nan"])
    assert back["nested"] == [(1, "a"), {2: None}]
    assert back["run"]["throughput"] == {16: [3.0, 1.5]} and back["run"]["phase"] == "waiting"
    with pytest.raises(TypeError):
        state_codec.encode({"x": object()})
    with pytest.raises(TypeError):
        state_codec.encode({"run": LiveJob()})  # objects are saved as their data, never whole
    with pytest.raises(TypeError):
        state_codec.encode(np.array([object()]))
    blob = state_codec.encode(value)
    for bad in (blob[:10], blob[: len(blob) // 2], b"SWS1" + b"\xff" * 8, b"junk"):
        with pytest.raises(state_codec.StateFormatError):
            state_codec.decode(bad)
    # a tag that would name a class to build is refused (the document is re-framed so that only
    # the tag is wrong)
    length = int.from_bytes(blob[4:12], "little")
    document = blob[12 : 12 + length].replace(b'{"d":[["array"', b'{"o":"Popen","v":[["array"', 1)
    assert document != blob[12 : 12 + length]
    crafted = b"SWS1" + len(document).to_bytes(8, "little") + document + blob[12 + length :]
    with pytest.raises(state_codec.StateFormatError, match="unknown tag 'o'"):
        state_codec.decode(crafted)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    st.integers(0, 10_000),
)
def test_a_mutated_state_blob_decodes_or_is_refused_never_anything_else(
    flips: list[tuple[int, int]], cut: int
) -> None:
    """Fuzzing: bytes changed anywhere in a snapshot-like blob, or the blob cut short, give the
    same kinds of values or a StateFormatError, never another exception."""
    value = {"runs": [LiveJob(history=History(throughput={16: [1.0, 2.0]})).snapshot()], "k": 3,
             "a": np.arange(5.0)}  # fmt: skip
    blob = bytearray(state_codec.encode(value))
    for position, byte in flips:
        blob[position % len(blob)] = byte
    data = bytes(blob[: max(0, len(blob) - cut % (len(blob) + 1))])
    with contextlib.suppress(state_codec.StateFormatError):
        state_codec.decode(data)
