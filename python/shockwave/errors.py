"""The errors shockwave raises on purpose: one base class, a subclass per kind.

Every error the package raises for bad input, a refused output or a failed run is a
:class:`ShockwaveError`: it says **where** (the file, line, field, key, option or argument
concerned, as far as they are known) and **what** is wrong, and ``str(error)`` is
``"where: what"``. Its kind is a subclass, and the kind decides the command line's exit status
(``exit_status``, see :mod:`shockwave.cli.exit_codes`):

=======================  ======  ===========================================================
kind                     status  what it covers
=======================  ======  ===========================================================
:class:`UsageError`      2       a bad argument, option or setting (a Python argument or a
                                 command-line option)
:class:`DataError`       3       input data that cannot be read or is malformed: a workload,
                                 throughput table, config file, sweep spec, checkpoint,
                                 journal, or a job's fields
:class:`OutputError`     4       an output path that cannot be written, or an output (a run
                                 directory) that is refused
:class:`RunFailedError`  5       the run failed: the round limit, a policy's unexecutable
                                 answer
:class:`InternalError`   1       a bug in shockwave (a Rust panic caught at the binding)
=======================  ======  ===========================================================

Concrete errors keep the built-in class they always derived from (``ValueError`` for most,
``RuntimeError`` for a stalled simulation, ...), so code that catches those keeps working;
``except ShockwaveError`` catches them all. Where an error has two kinds among its bases (a
run directory that is busy is an :class:`OutputError` and a journal error), the first decides
its status.
"""

from __future__ import annotations

from os import PathLike
from typing import Any, ClassVar

#: Exit statuses of the kinds (the command line's; :mod:`shockwave.cli.exit_codes` holds the
#: whole table). Written here so that the library does not import the command line.
_INTERNAL, _USAGE, _INPUT, _OUTPUT, _RUN_FAILED = 1, 2, 3, 4, 5


class ShockwaveError(Exception):
    """The base of every error shockwave raises on purpose.

    Args:
        what: what is wrong, without the place.
        where: the place as the message shows it (``"workload.jsonl:3: field 'gang_size'"``,
            ``"--gpus"``, ``"valuations"``); by default made of ``path``, ``line`` and ``field``.
        path: the file concerned.
        line: the 1-based line of ``path``.
        field: the field, key, option or argument concerned.

    Attributes:
        what: as given.
        where: the place (``None`` when the error is not tied to one).
        path: the file, or ``None``.
        line: the 1-based line, or ``None``.
        field: the field, key (a dotted path such as ``simulation.round_seconds``), option or
            argument, or ``None``.
        exit_status: the command line's exit status for this kind of error (a class attribute).
    """

    exit_status: ClassVar[int] = _INTERNAL

    def __init__(
        self,
        what: str,
        *,
        where: str | None = None,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.what = what
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        if where is None and (self.path is not None or field is not None):
            where = self.path or ""
            if line is not None:
                where += f":{line}"
            if field is not None:
                where = f"{where}: {field}" if where else field
        self.where = where
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The whole message, ``"where: what"`` (or ``what`` alone when there is no place)."""
        return f"{self.where}: {self.what}" if self.where else self.what

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its attributes: subclasses' constructors differ, and pickling (process
        # pools, Ray) must keep every attribute.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[ShockwaveError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class UsageError(ShockwaveError):
    """A bad argument, option or setting: the caller's to fix (exit status 2)."""

    exit_status = _USAGE


class DataError(ShockwaveError):
    """Input data that cannot be read or is malformed: a file (workload, throughputs, config,
    sweep spec), a checkpoint or journal, a job's fields (exit status 3)."""

    exit_status = _INPUT


class OutputError(ShockwaveError):
    """An output path that cannot be written (a directory, no such directory, no permission,
    the same file as an input), or an output that is refused (exit status 4)."""

    exit_status = _OUTPUT


class RunFailedError(ShockwaveError):
    """A run that started and failed: the round limit reached, a policy's answer that cannot be
    executed (exit status 5)."""

    exit_status = _RUN_FAILED


class InternalError(ShockwaveError, RuntimeError):
    """A bug in shockwave (a panic of the Rust core caught at the binding): please report it
    (exit status 1). Also ``shockwave._core.InternalError``."""

    exit_status = _INTERNAL


class TraceError(DataError, ValueError):
    """A trace, throughput or workload file is malformed.

    The message names the file, the line (1-based) or, in a file that is one JSON array, the
    element (0-based index), and the field where the problem was found, so that a user can fix the
    input without reading the parser.

    Attributes:
        path: the file, or ``None`` for in-memory input.
        line: 1-based line number, or ``None`` when the problem is not tied to one line.
        field: name of the offending field, or ``None``.
        reason: what is wrong, without the location (the same as ``what``).
        element: 0-based index of the offending element of a JSON array file, or ``None``.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
        element: int | None = None,
    ) -> None:
        self.element = element
        where = "<input>" if path is None else str(path)
        if line is not None:
            where += f":{line}"
        if element is not None:
            where += f": JSON element {element}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(reason, where=where, path=path, line=line, field=field)

    @property
    def reason(self) -> str:
        """What is wrong, without the location."""
        return self.what


class JobFieldError(DataError, ValueError):
    """A job was constructed with an invalid field value.

    Attributes:
        field: the name of the offending field (as in the native workload format).
        reason: what is wrong with it (the same as ``what``).
        job_id: the job.
    """

    field: str

    def __init__(self, job_id: object, field: str, reason: str) -> None:
        self.job_id = job_id
        super().__init__(reason, where=f"job {job_id!r}: field {field!r}", field=field)

    @property
    def reason(self) -> str:
        """What is wrong with the field."""
        return self.what


class InputError(UsageError, ValueError):
    """An argument of the market solver or the adaptation model is invalid.

    Raised for every input the Rust core (or its Python wrappers) rejects, so that code can
    handle it by the argument it concerns. ``str(error)`` is ``"argument: reason"``.

    Attributes:
        argument: name of the offending argument or field, as in the Python API (for example
            ``"valuations"``, ``"epochs_done"``); also ``where`` and ``field``.
        reason: what is wrong with it (naming the job or entry where there is one); also
            ``what``.
    """

    def __init__(self, argument: str, reason: str) -> None:
        self.argument = argument
        self.reason = reason
        super().__init__(reason, where=argument, field=argument)
        self.args = (argument, reason)

    @property
    def message(self) -> str:
        """``"argument: reason"``."""
        return f"{self.argument}: {self.reason}"
