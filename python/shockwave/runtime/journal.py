"""The scheduler's journal: every round of a real run, durable, so a killed scheduler resumes.

One SQLite database (standard library) in WAL mode with ``synchronous=FULL`` (each commit is
fsync'd). Every round is one transaction holding

* the :class:`~shockwave.sim.state.ClusterState` handed to the policy and the policy's answer
  (to replay the policy's calls on resume, which rebuilds whatever state the policy keeps), and
* a snapshot of the scheduler's own state after the decision,

together with the events of the round (starts, stops, completions, crashes) as readable rows.
``shockwave cluster run --resume DIR`` reads the run's settings back from the ``meta`` table.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import time
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

#: Version of the journal's layout (a resume refuses a journal of another version).
JOURNAL_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    idx INTEGER PRIMARY KEY,
    trace_time REAL NOT NULL,
    wall_time REAL NOT NULL,
    state BLOB NOT NULL,
    decision BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    round INTEGER,
    data BLOB
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


class JournalError(ValueError):
    """A journal that cannot be resumed (missing, another version, another workload)."""


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
        """Every meta value."""
        rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return {key: json.loads(value) for key, value in rows}

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
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO rounds (idx, trace_time, wall_time, state, decision) "
                "VALUES (?, ?, ?, ?, ?)",
                (index, trace_time, time.time(), _dump(state), _dump(decision)),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO snapshot (id, round, data) VALUES (0, ?, ?)",
                (index, _dump(snapshot)),
            )
            self._write_events()

    def flush(self) -> None:
        """Write the buffered events now."""
        if self._events:
            with self._transaction():
                self._write_events()

    def rounds(self) -> list[JournalRound]:
        """Every journaled round, in order."""
        rows = self._db.execute(
            "SELECT idx, trace_time, state, decision FROM rounds ORDER BY idx"
        ).fetchall()
        return [JournalRound(i, t, _load(s), _load(d)) for i, t, s, d in rows]

    def snapshot(self) -> tuple[int, Any] | None:
        """``(round, snapshot)`` of the latest round, or ``None`` before the first."""
        row = self._db.execute("SELECT round, data FROM snapshot WHERE id = 0").fetchone()
        return None if row is None else (int(row[0]), _load(row[1]))

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


def _dump(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _load(blob: bytes) -> Any:
    return pickle.loads(blob)  # the run's own journal, written by this package
