"""Streaming CSV input for the production-trace readers: one row at a time, with line numbers."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from os import PathLike
from pathlib import Path

from shockwave.errors import TraceError


def resolve_file(path: str | PathLike[str], file_name: str, source: str) -> Path:
    """The trace file: ``path`` itself, or ``path/file_name`` when ``path`` is a directory (as
    unpacked from the release).

    Raises:
        TraceError: naming ``path`` if it does not exist or the directory lacks ``file_name``.
    """
    given = Path(path)
    if given.is_dir():
        inside = given / file_name
        if not inside.is_file():
            raise TraceError(
                f"the directory holds no {file_name} (the {source} release's file)", path=given
            )
        return inside
    if not given.is_file():
        raise TraceError("no such file or directory", path=given)
    return given


def csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of every non-blank row of ``path``, streamed (``line``: 1-based, the
    row's last physical line).

    Raises:
        TraceError: naming the file (and line) if it cannot be read, is not UTF-8 or is not CSV.
    """
    try:
        handle = open(path, newline="", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise TraceError(f"cannot read ({exc.strerror})", path=path) from None
    with handle:
        reader = csv.reader(handle, strict=True)
        try:
            for row in reader:
                if row:
                    yield reader.line_num, row
        except UnicodeDecodeError:
            raise TraceError("not UTF-8 text", path=path, line=reader.line_num + 1) from None
        except csv.Error as exc:
            raise TraceError(f"malformed CSV ({exc})", path=path, line=reader.line_num) from None
        except OSError as exc:
            raise TraceError(f"cannot read ({exc.strerror})", path=path) from None


def header_columns(header: Sequence[str], required: Sequence[str], path: Path) -> dict[str, int]:
    """Column index of every name in ``required`` in a header row (line 1); other columns are
    allowed and ignored.

    Raises:
        TraceError: naming the missing or repeated column.
    """
    names = [name.strip().lstrip("\ufeff") for name in header]
    columns: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in columns:
            raise TraceError("column appears twice in the header", path=path, line=1, field=name)
        columns[name] = index
    for name in required:
        if name not in columns:
            raise TraceError(
                f"missing column (the header must name {', '.join(required)})",
                path=path, line=1, field=name,
            )  # fmt: skip
    return {name: columns[name] for name in required}


def header_table(
    path: Path, required: Sequence[str]
) -> tuple[list[int], Iterator[tuple[int, list[str]]]]:
    """A CSV file with a header row: the column index of every name in ``required`` (in that
    order), and ``(line, fields)`` of every body row, streamed, each as wide as the header.

    Raises:
        TraceError: naming the file if it is empty, and as :func:`header_columns`,
            :func:`csv_rows` and :func:`check_width` (while the rows are read).
    """
    rows = csv_rows(path)
    first = next(rows, None)
    if first is None:
        raise TraceError("empty file: no header row", path=path)
    width = len(first[1])
    columns = list(header_columns(first[1], required, path).values())

    def body() -> Iterator[tuple[int, list[str]]]:
        for line, row in rows:
            check_width(row, width, path, line)
            yield line, row

    return columns, body()


def check_width(row: Sequence[str], width: int, path: Path, line: int) -> None:
    """Refuse a row with another number of fields than the file's header (or schema)."""
    if len(row) != width:
        raise TraceError(f"has {len(row)} fields, expected {width}", path=path, line=line)
