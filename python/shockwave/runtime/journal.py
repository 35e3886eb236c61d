"""The scheduler's journal: every round of a real run, durable, so a killed scheduler resumes.

One SQLite database (standard library) in WAL mode with ``synchronous=FULL`` (each commit is
fsync'd). Every round is one transaction (written by :class:`JournalWriter`, an observer of the
round loop, after the round is decided and before it is carried out) holding

* the :class:`~shockwave.scheduling.ClusterState` handed to the policy and the policy's answer
  (on resume the policy's calls are replayed into a fresh policy, as a check: the rounds whose
  answer differs are reported, :func:`replay_divergence`); on typed slots (a heterogeneous
  cluster) instead the round's time and active job ids, and the decision: its job ids, the GPU
  type of each one's gang and the typed policy's ``X[i, k]`` (not replayed on resume), and
* the round loop's snapshot after the decision (:class:`~shockwave.rounds.snapshot.RoundSnapshot`,
  the same snapshot a simulation checkpoint holds, the policy's own state included): a resume
  restores it,

together with the events of the round (starts, stops, completions, crashes) as readable rows.
``shockwave cluster run --resume DIR`` reads the run's settings back from the ``meta`` table.

State is data, never code: every blob is JSON plus numpy arrays
(:mod:`shockwave.persistence`), so reading a journal that someone edited cannot run
anything. Every round row carries a SHA-256 digest chained over the rows before it (its index,
boundary, state and decision, and the previous row's digest), and the snapshot row the digest
of its round's row and of its own data: a flipped bit, a deleted or reordered round, a snapshot
of another round are refused on resume with a :class:`JournalError` naming the journal and the
round (the command line's exit status 3).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shockwave import persistence
from shockwave.blas_threads import one_blas_thread
from shockwave.errors import DataError
from shockwave.rounds.observers import RoundObserver, RoundReport
from shockwave.scheduling.protocol import AllocationPolicy, Policy, RoundPolicy
from shockwave.scheduling.state import ClusterState, SampleLog
from shockwave.workload import Workload

if TYPE_CHECKING:
    from shockwave.rounds.loop import RoundLoop

#: Version of the journal's layout (a resume refuses a journal of another version). Version 3:
#: the round loop's snapshot and the state's fields of what differs between worlds; version 2:
#: data-only blobs and chained digests; version 1 held pickles.
JOURNAL_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    idx INTEGER PRIMARY KEY,
    trace_time REAL NOT NULL,
    wall_time REAL NOT NULL,
    state BLOB NOT NULL,
    decision BLOB NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    round INTEGER,
    data BLOB,
    digest TEXT
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    wall_time REAL NOT NULL,
    round INTEGER,
    job INTEGER,
    kind TEXT NOT NULL,
    detail TEXT
);
"""


class JournalError(DataError, ValueError):
    """A journal that cannot be resumed (missing, another version, corrupt or tampered with)."""


@dataclass(frozen=True)
class JournalRound:
    """One journaled round: its index, boundary (trace seconds), the policy's input and answer."""

    index: int
    trace_time: float
    state: dict[str, Any]
    decision: Any


class Journal:
    """A run's journal (see the module notes).

    Args:
        path: the database file.
        create: start a new journal (the file must not exist) or open an existing one.
    """

    def __init__(self, path: str | PathLike[str], *, create: bool) -> None:
        self.path = Path(path)
        if create and self.path.exists():
            raise JournalError(f"{self.path}: a journal already exists (resume it with --resume)")
        if not create and not self.path.is_file():
            raise JournalError(f"{self.path}: no journal to resume")
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: cannot open the journal ({exc})") from None
        if create:
            self._db.executescript(_SCHEMA)
            self.set_meta({"journal_version": JOURNAL_VERSION, "created": time.time()})
        else:
            try:
                version = self.meta().get("journal_version")
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"{self.path}: not a shockwave journal ({exc})") from None
            if version != JOURNAL_VERSION:
                raise JournalError(
                    f"{self.path}: journal version {version!r}, this shockwave reads "
                    f"{JOURNAL_VERSION}"
                )
        self._events: list[tuple[float, int | None, int | None, str, str | None]] = []

    # ----------------------------------------------------------------------------- meta
    def set_meta(self, values: dict[str, Any]) -> None:
        """Store JSON values under their keys (one transaction)."""
        with self._transaction():
            for key, value in values.items():
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    (key, json.dumps(value)),
                )

    def meta(self) -> dict[str, Any]:
        """Every meta value.

        Raises:
            JournalError: for a meta value that is not JSON.
        """
        rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        try:
            return {key: json.loads(value) for key, value in rows}
        except (TypeError, json.JSONDecodeError) as exc:
            raise JournalError(f"{self.path}: a meta value is not JSON ({exc})") from None

    # --------------------------------------------------------------------------- rounds
    def event(self, kind: str, *, job: int | None = None, round_index: int | None = None,
              detail: str | None = None) -> None:  # fmt: skip
        """Buffer an event row; it is written with the next round (or :meth:`flush`)."""
        self._events.append((time.time(), round_index, job, kind, detail))

    def append_round(
        self,
        index: int,
        trace_time: float,
        state: dict[str, Any],
        decision: Any,
        snapshot: Any,
    ) -> None:
        """Write round ``index`` (its policy input and answer), the scheduler's snapshot and the
        buffered events in one durable transaction."""
        state_blob, decision_blob = persistence.encode(state), persistence.encode(decision)
        snapshot_blob = persistence.encode(snapshot)
        with self._transaction():
            row = self._db.execute(
                "SELECT digest FROM rounds WHERE idx < ? ORDER BY idx DESC LIMIT 1", (index,)
            ).fetchone()
            digest = _round_digest(
                row[0] if row else "", index, trace_time, state_blob, decision_blob
            )
            self._db.execute(
                "INSERT OR REPLACE INTO rounds (idx, trace_time, wall_time, state, decision, "
                "digest) VALUES (?, ?, ?, ?, ?, ?)",
                (index, trace_time, time.time(), state_blob, decision_blob, digest),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO snapshot (id, round, data, digest) VALUES (0, ?, ?, ?)",
                (index, snapshot_blob, _snapshot_digest(digest, snapshot_blob)),
            )
            self._write_events()

    def flush(self) -> None:
        """Write the buffered events now."""
        if self._events:
            with self._transaction():
                self._write_events()

    def rounds(self) -> list[JournalRound]:
        """Every journaled round, in order, each checked against its chained digest.

        Raises:
            JournalError: naming the round that is missing, altered or unreadable.
        """
        rows = self._query(
            "SELECT idx, trace_time, state, decision, digest FROM rounds ORDER BY idx"
        )
        out = []
        previous = ""
        for expected, (index, trace_time, state, decision, digest) in enumerate(rows):
            where = f"{self.path}: round {expected}"
            if index != expected:
                raise JournalError(f"{where} is missing (the next journaled round is {index})")
            if not isinstance(state, bytes) or not isinstance(decision, bytes):
                raise JournalError(f"{where}: its state or decision is not a blob")
            if digest != _round_digest(previous, index, trace_time, state, decision):
                raise JournalError(f"{where}: its digest does not match (corrupt or altered)")
            previous = digest
            try:
                out.append(
                    JournalRound(
                        index, trace_time, persistence.decode(state), persistence.decode(decision)
                    )
                )
            except persistence.StateFormatError as exc:
                raise JournalError(f"{where}: {exc}") from None
            if not isinstance(out[-1].state, dict):
                raise JournalError(f"{where}: its state is not a table of fields")
        return out

    def snapshot(self) -> tuple[int, Any] | None:
        """``(round, snapshot)`` of the latest round, or ``None`` before the first; checked
        against the digest of that round's row (read :meth:`rounds` first).

        Raises:
            JournalError: for a snapshot of another round, altered or unreadable.
        """
        rows = self._query("SELECT round, data, digest FROM snapshot WHERE id = 0")
        if not rows:
            return None
        index, data, digest = rows[0]
        last = self._query("SELECT idx, digest FROM rounds ORDER BY idx DESC LIMIT 1")
        if not last or last[0][0] != index:
            raise JournalError(f"{self.path}: the snapshot is not of the last journaled round")
        if not isinstance(data, bytes) or digest != _snapshot_digest(last[0][1], data):
            raise JournalError(f"{self.path}: the snapshot's digest does not match (corrupt)")
        try:
            return int(index), persistence.decode(data)
        except persistence.StateFormatError as exc:
            raise JournalError(f"{self.path}: the snapshot: {exc}") from None

    def _query(self, sql: str) -> list[Any]:
        try:
            return self._db.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: cannot read the journal ({exc})") from None

    def events(self) -> list[tuple[float, int | None, int | None, str, str | None]]:
        """Every event row: (wall time, round, job, kind, detail)."""
        return self._db.execute(
            "SELECT wall_time, round, job, kind, detail FROM events ORDER BY id"
        ).fetchall()

    def close(self) -> None:
        """Write buffered events and close the database."""
        self.flush()
        self._db.close()

    # -------------------------------------------------------------------------- helpers
    def _write_events(self) -> None:
        self._db.executemany(
            "INSERT INTO events (wall_time, round, job, kind, detail) VALUES (?, ?, ?, ?, ?)",
            self._events,
        )
        self._events.clear()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _round_digest(
    previous: str, index: int, trace_time: float, state: bytes, decision: bytes
) -> str:
    """A round row's digest, chained to the previous row's."""
    hasher = hashlib.sha256(previous.encode())
    hasher.update(f"|{index}|{float(trace_time)!r}|".encode())
    for blob in (state, decision):
        hasher.update(len(blob).to_bytes(8, "little"))
        hasher.update(blob)
    return hasher.hexdigest()


def _snapshot_digest(round_digest: str, data: bytes) -> str:
    return hashlib.sha256(round_digest.encode() + data).hexdigest()


#: The state fields a round row holds (the workload and the sample log are the run's own).
_STATE_FIELDS = tuple(
    f.name for f in dataclasses.fields(ClusterState) if f.name not in ("workload", "_samples")
)


class JournalWriter(RoundObserver):
    """Journals every round of a real run, with the loop's snapshot (see the module notes).

    The snapshot is taken after the round is decided: a resume continues at the next round (the
    round in flight is lost, :class:`~shockwave.runtime.live_cluster.LiveCluster`).
    """

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def round_decided(self, loop: RoundLoop, report: RoundReport) -> None:
        state = report.state
        decision = report.decision
        answer: Any = report.answer
        if decision.types is not None:  # typed slots: the round's jobs and their GPU types
            typed = getattr(loop.world, "typed", None)
            assert typed is not None
            names: tuple[str, ...] = typed.cluster.types
            fields: dict[str, Any] = {"time": report.time, "job_ids": report.job_ids[report.active]}
            answer = {
                "job_ids": report.job_ids[decision.jobs],
                "types": [names[k] for k in decision.types.tolist()],
                "fractions": report.fractions,
            }
        else:
            assert state is not None  # a real run asks its policy every round
            fields = {name: getattr(state, name) for name in _STATE_FIELDS}
        snapshot = dataclasses.replace(loop.snapshot(), round_index=report.round_index + 1)
        self.journal.append_round(
            report.round_index, report.time, fields, answer, snapshot.to_data()
        )


def replay_divergence(
    policy: Policy, rounds: list[JournalRound], workload: Workload, samples: SampleLog
) -> list[int]:
    """Ask a fresh ``policy`` every journaled question again, in order; return the rounds whose
    answer differs from the journaled one (a policy that is not deterministic, or another
    version of it).

    Raises:
        TypeError, ValueError, KeyError, IndexError: for a journaled state that does not fit.
    """
    policy.reset()
    diverged = []
    for entry in rounds:
        state = ClusterState(workload=workload, _samples=samples, **entry.state)
        with one_blas_thread():  # as the round loop asked it
            if isinstance(policy, RoundPolicy):
                answer: Any = np.sort(np.asarray(policy.schedule(state), dtype=np.int64))
            else:
                assert isinstance(policy, AllocationPolicy)
                answer = np.clip(np.asarray(policy.allocate(state), dtype=np.float64), 0, 1)
        if not np.array_equal(answer, entry.decision):
            diverged.append(entry.index)
    return diverged
