"""Exceptions raised by shockwave for bad input."""

from __future__ import annotations

from os import PathLike


class TraceError(ValueError):
    """A trace, throughput or workload file is malformed.

    The message names the file, the line (1-based) or, in a file that is one JSON array, the
    element (0-based index), and the field where the problem was found, so that a user can fix the
    input without reading the parser.

    Attributes:
        path: the file, or ``None`` for in-memory input.
        line: 1-based line number, or ``None`` when the problem is not tied to one line.
        field: name of the offending field, or ``None``.
        reason: what is wrong, without the location.
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
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.reason = reason
        self.element = element
        where = self.path if self.path is not None else "<input>"
        if line is not None:
            where += f":{line}"
        if element is not None:
            where += f": JSON element {element}"
        what = f"field {field!r}: " if field is not None else ""
        super().__init__(f"{where}: {what}{reason}")


class JobFieldError(ValueError):
    """A job was constructed with an invalid field value.

    Attributes:
        field: the name of the offending field (as in the native workload format).
        reason: what is wrong with it.
    """

    def __init__(self, job_id: object, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"job {job_id!r}: field {field!r}: {reason}")


class InputError(ValueError):
    """An argument of the market solver or the adaptation model is invalid.

    Raised for every input the Rust core (or its Python wrappers) rejects, so that code can
    handle it by the argument it concerns. ``str(error)`` is ``"argument: reason"``.

    Attributes:
        argument: name of the offending argument or field, as in the Python API (for example
            ``"valuations"``, ``"epochs_done"``).
        reason: what is wrong with it (naming the job or entry where there is one).
    """

    def __init__(self, argument: str, reason: str) -> None:
        super().__init__(argument, reason)
        self.argument = argument
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.argument}: {self.reason}"
