"""The messages between a job process and the scheduler (the lease protocol).

A job process talks to the scheduler over one connection (``multiprocessing.connection`` on a
Unix socket, authenticated with a per-run key; under the Ray executor the socket is served by the
job's Ray task on the job's own node, which relays to the scheduler through Ray). Every message is
one JSON object sent with ``send_bytes``.

The conversation of one job process (an *incarnation*)::

    job -> scheduler   hello          after restoring its checkpoint (or starting fresh)
    scheduler -> job   lease          how long it may train (seconds from receipt, max steps)
    job -> scheduler   progress       now and then while training (no answer)
    job -> scheduler   boundary       when the lease is over; the job waits for the answer:
    scheduler -> job   lease          extended: keep training (no restart), or
    scheduler -> job   stop           checkpoint and exit
    job -> scheduler   checkpointed   after saving its checkpoint, just before exiting 0
    job -> scheduler   finished       when its last epoch is done (with the digest), then exit 0
    job -> scheduler   failed         on an error it caught (best effort), then exit non-zero

The scheduler may also send ``stop`` at any time (Ctrl-C, the end of a run): the job checkpoints
at its next step and exits. A job that loses the connection does the same. The scheduler sends a
``lease`` only in answer to ``hello`` or ``boundary``; a job that receives one otherwise replaces
its current lease with it (its clock starting at receipt).

Counts in a :class:`Report` are cumulative over the job's whole life (all incarnations), so a
report can be repeated or lost without harm.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from shockwave.errors import DataError

#: Kinds of messages a job sends.
JobMessageKind = Literal["hello", "progress", "boundary", "checkpointed", "finished", "failed"]
JOB_MESSAGE_KINDS: tuple[JobMessageKind, ...] = (
    "hello",
    "progress",
    "boundary",
    "checkpointed",
    "finished",
    "failed",
)


class ProtocolError(DataError, ValueError):
    """A message that does not follow the protocol (the text names what is wrong)."""


@dataclass(frozen=True)
class Report:
    """A job's progress, cumulative over all its incarnations.

    Attributes:
        steps: iterations (optimiser steps) done.
        samples: training samples processed; ``samples / samples_per_epoch`` is the epoch
            progress.
        batch_size: the batch size the job trains at now.
        epoch_batch_sizes: the batch size of every completed epoch, run-length encoded as
            ``(batch_size, epochs)`` pairs.
        busy_seconds: seconds this incarnation has spent training (restore and start-up
            excluded), by the job's own clock.
        batch_stats: this incarnation's steps and the seconds they took, per batch size, as
            ``(batch size, steps, seconds)`` (the time from one step's report to the next,
            waits at boundaries and checkpoint writes excluded): the job's measured throughput
            at each batch size.
    """

    steps: int
    samples: int
    batch_size: int
    epoch_batch_sizes: tuple[tuple[int, int], ...] = ()
    busy_seconds: float = 0.0
    batch_stats: tuple[tuple[int, int, float], ...] = ()

    @property
    def epochs_completed(self) -> int:
        """Epochs in :attr:`epoch_batch_sizes`."""
        return sum(count for _, count in self.epoch_batch_sizes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "samples": self.samples,
            "batch_size": self.batch_size,
            "epoch_batch_sizes": [list(run) for run in self.epoch_batch_sizes],
            "busy_seconds": self.busy_seconds,
            "batch_stats": [list(entry) for entry in self.batch_stats],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Report:
        if not isinstance(data, dict):
            raise ProtocolError("report: must be an object")
        segments = data.get("epoch_batch_sizes", [])
        if not isinstance(segments, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(_is_count(v, 1) for v in r)
            for r in segments
        ):
            raise ProtocolError("report.epoch_batch_sizes: must be [[batch size, epochs], ...]")
        stats = data.get("batch_stats", [])
        if not isinstance(stats, list) or not all(
            isinstance(e, list)
            and len(e) == 3
            and _is_count(e[0], 1)
            and _is_count(e[1], 0)
            and _is_number(e[2])
            and e[2] >= 0
            for e in stats
        ):
            raise ProtocolError(
                "report.batch_stats: must be [[batch size, steps, seconds >= 0], ...]"
            )
        busy = data.get("busy_seconds", 0.0)
        if not _is_number(busy) or busy < 0:
            raise ProtocolError(f"report.busy_seconds: must be a number >= 0, got {busy!r}")
        for key, minimum in (("steps", 0), ("samples", 0), ("batch_size", 1)):
            if not _is_count(data.get(key), minimum):
                raise ProtocolError(
                    f"report.{key}: must be an integer >= {minimum}, got {data.get(key)!r}"
                )
        return cls(
            steps=data["steps"],
            samples=data["samples"],
            batch_size=data["batch_size"],
            epoch_batch_sizes=tuple((int(b), int(c)) for b, c in segments),
            busy_seconds=float(busy),
            batch_stats=tuple((int(b), int(n), float(t)) for b, n, t in stats),
        )


@dataclass(frozen=True)
class Lease:
    """How long a job may train before it asks again.

    Attributes:
        round_index: the scheduling round the lease belongs to.
        seconds: seconds from the lease's receipt until it ends (``inf``: no time limit).
        max_steps: the cumulative step count at which the lease ends (``None``: no step limit).
        checkpoint: save a checkpoint now and keep training (periodic checkpoints, so that a
            crashed job loses little work).
    """

    round_index: int
    seconds: float
    max_steps: int | None = None
    checkpoint: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round_index,
            "seconds": self.seconds if math.isfinite(self.seconds) else None,
            "max_steps": self.max_steps,
            "checkpoint": self.checkpoint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lease:
        seconds = data.get("seconds")
        if seconds is None:  # no time limit
            seconds = math.inf
        elif not _is_number(seconds) or seconds < 0:
            raise ProtocolError(f"lease.seconds: must be a number >= 0 or null, got {seconds!r}")
        max_steps = data.get("max_steps")
        if max_steps is not None and not _is_count(max_steps, 0):
            raise ProtocolError(f"lease.max_steps: must be an integer >= 0, got {max_steps!r}")
        if not _is_count(data.get("round"), 0):
            raise ProtocolError(f"lease.round: must be an integer >= 0, got {data.get('round')!r}")
        return cls(
            round_index=data["round"],
            seconds=float(seconds),
            max_steps=max_steps,
            checkpoint=bool(data.get("checkpoint", False)),
        )


@dataclass(frozen=True)
class JobMessage:
    """A message from a job process.

    Attributes:
        kind: what happened (see the module notes).
        job_id, incarnation: who sends it.
        report: the job's progress (every kind but ``failed``, where it may be ``None``).
        digest: hex digest of the final parameters (``finished`` only).
        text: the error (``failed``), or whether the job restored a checkpoint (``hello``:
            ``"restored"`` or ``"fresh"``).
        permanent: (``failed`` only) the error cannot go away by restarting the job (its
            input, options or checkpoint are not valid): the scheduler fails it at once.
    """

    kind: JobMessageKind
    job_id: int
    incarnation: int
    report: Report | None = None
    digest: str | None = None
    text: str | None = None
    permanent: bool = False

    def encode(self) -> bytes:
        data: dict[str, Any] = {
            "type": self.kind,
            "job": self.job_id,
            "incarnation": self.incarnation,
        }
        if self.report is not None:
            data["report"] = self.report.to_dict()
        if self.digest is not None:
            data["digest"] = self.digest
        if self.text is not None:
            data["text"] = self.text
        if self.permanent:
            data["permanent"] = True
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> JobMessage:
        """Parse a job's message; raises :class:`ProtocolError` naming what is wrong."""
        data = _object(raw)
        kind = data.get("type")
        if kind not in JOB_MESSAGE_KINDS:
            raise ProtocolError(f"unknown job message type {kind!r}")
        for key in ("job", "incarnation"):
            if not _is_count(data.get(key), 0):
                raise ProtocolError(f"{kind}.{key}: must be an integer >= 0")
        report = Report.from_dict(data["report"]) if "report" in data else None
        if report is None and kind != "failed":
            raise ProtocolError(f"{kind}: the report is missing")
        digest = data.get("digest")
        if kind == "finished" and not isinstance(digest, str):
            raise ProtocolError("finished.digest: must be a hex string")
        text = data.get("text")
        if text is not None and not isinstance(text, str):
            raise ProtocolError(f"{kind}.text: must be a string")
        permanent = data.get("permanent", False)
        if not isinstance(permanent, bool):
            raise ProtocolError(f"{kind}.permanent: must be a boolean")
        return cls(kind, data["job"], data["incarnation"], report, digest, text, permanent)


@dataclass(frozen=True)
class SchedulerMessage:
    """A message to a job: a lease (``lease`` is set) or the order to stop (``lease is None``)."""

    lease: Lease | None

    @property
    def stop(self) -> bool:
        return self.lease is None

    def encode(self) -> bytes:
        if self.lease is None:
            return b'{"type":"stop"}'
        return json.dumps({"type": "lease", **self.lease.to_dict()}, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> SchedulerMessage:
        data = _object(raw)
        kind = data.get("type")
        if kind == "stop":
            return cls(None)
        if kind == "lease":
            return cls(Lease.from_dict(data))
        raise ProtocolError(f"unknown scheduler message type {kind!r}")


def _object(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"message is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ProtocolError("message must be a JSON object")
    return data


def _is_count(value: Any, minimum: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= minimum


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
