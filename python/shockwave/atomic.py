"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Every file shockwave writes (results, workloads, checkpoints, throughput tables, plots) goes
through :func:`atomic_write_bytes`, :func:`atomic_write_text` or, for content produced piece by
piece (a generated trace streamed to disk), the :func:`atomic_writer` context manager: the content
is written to a temporary file in the target's directory, flushed and ``fsync``'d, then renamed
over the target (an atomic operation on POSIX file systems), and the directory is ``fsync``'d so
that the rename survives a crash. An interruption or a full disk leaves the previous file intact
and no temporary file behind. The written file gets the permissions a new file would get
(``0o666`` less the process's umask), or, when it replaces a file, that file's permissions (not
the ``0o600`` of the temporary file).

:func:`check_writable` checks an output path before a long run starts (not a directory, its
directory exists and accepts a new file), so that a bad path fails in a second, not after the run.
:func:`same_file` tells whether two paths name one file (an output that would overwrite an input).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import IO, Literal, overload


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
        _set_mode(fd, target)
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


@overload
def atomic_writer(
    path: str | PathLike[str], mode: Literal["w"] = "w", *, encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[IO[str]]: ...


@overload
def atomic_writer(
    path: str | PathLike[str], mode: Literal["wb"], *, encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[IO[bytes]]: ...


def atomic_writer(
    path: str | PathLike[str], mode: Literal["w", "wb"] = "w", *, encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[IO[str]] | contextlib.AbstractContextManager[IO[bytes]]:
    """A file to write ``path`` through, piece by piece, replacing it atomically on success.

    ``with atomic_writer(path) as out: out.write(...)`` writes into a temporary file beside
    ``path`` (text mode ``"w"``, UTF-8 and ``"\n"`` newlines, or binary ``"wb"``); when the block
    ends normally the file is flushed, ``fsync``'d and renamed over ``path``. When the block
    raises (an error, ``KeyboardInterrupt``), the temporary file is removed and ``path`` keeps
    its previous content. Memory stays bounded by what the caller holds: nothing is buffered
    beyond the file object's own buffer.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode: expected 'w' or 'wb', got {mode!r}")
    writer: contextlib.AbstractContextManager[IO[str]] = _atomic_writer(  # type: ignore[assignment]
        Path(path), mode, encoding
    )
    return writer


@contextlib.contextmanager
def _atomic_writer(target: Path, mode: str, encoding: str) -> Iterator[IO[str] | IO[bytes]]:
    directory = target.parent if str(target.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        _set_mode(fd, target)
        if mode == "wb":
            out: IO[str] | IO[bytes] = os.fdopen(fd, "wb")
        else:
            out = os.fdopen(fd, "w", encoding=encoding, newline="\n")
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def check_writable(path: str | PathLike[str]) -> None:
    """Check, before a long run, that :func:`atomic_write_bytes` can write ``path``.

    Raises:
        OSError: (``IsADirectoryError``, ``FileNotFoundError``, ``NotADirectoryError``,
            ``PermissionError``, ...) naming ``path`` when it is a directory, its directory does
            not exist, or a file cannot be created there (read-only, no permission, disk full
            of inodes).
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "is a directory", str(target))
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.exists():
        raise FileNotFoundError(2, "its directory does not exist", str(target))
    if not directory.is_dir():
        raise NotADirectoryError(20, "its parent is not a directory", str(target))
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=directory)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def same_file(first: str | PathLike[str], second: str | PathLike[str]) -> bool:
    """Whether ``first`` and ``second`` name the same file: equal once resolved (symbolic links
    and ``..`` followed, relative to the working directory), or, where both exist, the same
    file on disk (:func:`os.path.samefile`: hard links too)."""
    a, b = Path(first), Path(second)
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):  # a symbolic-link loop: compare what can be compared
        if os.path.abspath(a) == os.path.abspath(b):
            return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one does not exist (yet), or cannot be examined
        return False


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows.

    On Linux it is read from ``/proc/self/status`` (``Umask:``); elsewhere ``os.umask`` is set
    and restored at once (which another thread creating a file in between could see).
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(target: str | PathLike[str]) -> int:
    """The permission bits an atomic write gives ``target``: those of the file it replaces,
    or, for a new file, ``0o666`` less the umask (what ``open(target, "w")`` would give)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def _set_mode(fd: int, target: Path) -> None:
    """Give the temporary file ``fd`` the mode :func:`new_file_mode` says (mkstemp's is 0600)."""
    with contextlib.suppress(OSError, NotImplementedError, AttributeError):  # no file modes
        os.fchmod(fd, new_file_mode(target))


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
