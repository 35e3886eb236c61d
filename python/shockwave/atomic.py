"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Every file shockwave writes (results, workloads, checkpoints, throughput tables) goes through
:func:`atomic_write_bytes` or :func:`atomic_write_text`: the content is written to a temporary
file in the target's directory, flushed and ``fsync``'d, then renamed over the target (an atomic
operation on POSIX file systems), and the directory is ``fsync``'d so that the rename survives a
crash. An interruption or a full disk leaves the previous file intact and no temporary file
behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from os import PathLike
from pathlib import Path


def atomic_write_bytes(path: str | PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see the module notes).

    Raises:
        OSError: if the directory does not exist or cannot be written, or the disk is full;
            the previous content of ``path`` is then unchanged.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def atomic_write_text(path: str | PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` atomically (UTF-8 by default)."""
    atomic_write_bytes(path, text.encode(encoding))


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
