"""Persisting state: a versioned, checked byte encoding of Python objects, written atomically.

A simulation checkpoint (``shockwave simulate --checkpoint``) and any program that keeps a
policy's state across restarts (a cluster runtime) use the same functions:

* :func:`dump_state` turns an object (an engine with its policy, or a policy alone) into bytes:
  a header line ``shockwave-state <version> <package version>\\n``, then the object pickled. The
  Rust parts serialise themselves: :class:`shockwave.adaptation.JobModels` pickles through
  ``JobModels.to_bytes()``, its own versioned little-endian encoding of every job's regimes,
  profile, counters and calibration, floats by their bits, so a restored model predicts bit for
  bit what the original predicts; the market's warm start is plain numpy arrays in the policy's
  last plan.
* :func:`load_state` checks the header (format, format version, the package version that wrote
  it: state is only promised to resume identically under the same version) and the type of the
  object, and raises ``ValueError`` naming what is wrong.
* :func:`save_state` / :func:`load_state_file` do the same through a file, replaced atomically
  (:mod:`shockwave.atomic`), so an interrupted save leaves the previous state intact.

Loading unpickles, which runs code named in the data: load only state files you wrote.
"""

from __future__ import annotations

import pickle
from os import PathLike
from pathlib import Path
from typing import TypeVar

from shockwave import __version__
from shockwave.atomic import atomic_write_bytes

#: Version of the state format (the header and the pickled layout of shockwave's classes).
STATE_FORMAT_VERSION = 1
_MAGIC = b"shockwave-state"

T = TypeVar("T")


def dump_state(obj: object) -> bytes:
    """``obj`` as state bytes (see the module notes)."""
    header = b"%s %d %s\n" % (_MAGIC, STATE_FORMAT_VERSION, __version__.encode("ascii", "replace"))
    return header + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def load_state(data: bytes, expected: type[T], *, source: str = "<state>") -> T:
    """The object of :func:`dump_state`'s ``data``, checked to be an ``expected``.

    Raises:
        ValueError: naming ``source``, for data that is not shockwave state, of another format
            version or package version, corrupted, or holding another type.
    """
    line, newline, body = data.partition(b"\n")
    parts = line.split(b" ")
    if not newline or len(parts) != 3 or parts[0] != _MAGIC:
        raise ValueError(f"{source}: not a shockwave state file")
    try:
        version = int(parts[1])
    except ValueError:
        raise ValueError(f"{source}: corrupted header {line[:80]!r}") from None
    if version != STATE_FORMAT_VERSION:
        raise ValueError(
            f"{source}: state format version {version}; this shockwave reads {STATE_FORMAT_VERSION}"
        )
    writer = parts[2].decode("ascii", "replace")
    if writer != __version__:
        raise ValueError(
            f"{source}: written by shockwave {writer}, this is {__version__}: state resumes "
            "identically only under the version that wrote it"
        )
    try:
        obj = pickle.loads(body)
    except Exception as exc:  # any corruption: truncated, wrong bytes, missing class
        raise ValueError(f"{source}: corrupted state ({type(exc).__name__}: {exc})") from None
    if not isinstance(obj, expected):
        raise ValueError(f"{source}: holds a {type(obj).__name__}, expected a {expected.__name__}")
    return obj


def save_state(path: str | PathLike[str], obj: object) -> None:
    """Write :func:`dump_state` of ``obj`` to ``path`` atomically."""
    atomic_write_bytes(path, dump_state(obj))


def load_state_file(path: str | PathLike[str], expected: type[T]) -> T:
    """:func:`load_state` of the file ``path``.

    Raises:
        OSError: when the file cannot be read.
        ValueError: as :func:`load_state`, naming the file.
    """
    return load_state(Path(path).read_bytes(), expected, source=str(path))
