"""Parsing the fields of production traces, with errors that say where.

Every parser takes the text of one field and a :class:`Where` (file, line or JSON element), and
returns the value or raises :class:`~shockwave.errors.TraceError` naming the file, the line (or
element) and the field. Absent values are the empty text and the spellings the public traces use
for nothing (:data:`MISSING`).
"""

from __future__ import annotations

import math
import re
from datetime import date
from typing import NamedTuple

from shockwave.errors import TraceError
from shockwave.limits import INT64_MAX

#: Texts that stand for an absent value (empty CSV cells, Python's ``None`` and pandas' ``NaN``
#: as the traces' own exporters wrote them).
MISSING = frozenset(("", "None", "none", "null", "NULL", "nan", "NaN", "NA"))

#: Seconds from 0001-01-01 (ordinal 1) to 1970-01-01.
_UNIX_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
#: Seconds since 1970-01-01 of the dates, and of the minutes (``YYYY-MM-DD HH:MM``), seen so far.
_DAY_SECONDS: dict[str, int] = {}
_MINUTE_SECONDS: dict[str, int] = {}
_CACHE_LIMIT = 200_000
_DATETIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})")


class Where(NamedTuple):
    """A place in an input file: the file and a 1-based line or a 0-based JSON element index.

    (A named tuple: readers make one per row, and tuples are the cheapest to make.)
    """

    path: str
    line: int | None = None
    element: int | None = None

    def error(self, field: str | None, reason: str) -> TraceError:
        """A :class:`TraceError` at this place."""
        return TraceError(reason, path=self.path, line=self.line, field=field, element=self.element)


def is_missing(text: str) -> bool:
    """Whether ``text`` stands for an absent value."""
    return text.strip() in MISSING


def optional_text(text: str) -> str | None:
    """``text`` without surrounding blanks, or ``None`` if it stands for an absent value."""
    text = text.strip()
    return None if text in MISSING else text


def parse_datetime(text: str, where: Where, field: str) -> float:
    """Seconds since 1970-01-01 00:00:00 of ``YYYY-MM-DD HH:MM:SS`` (or with a ``T``).

    The traces write local wall-clock times without a time zone; they are read as they are
    written (no time zone, no daylight-saving shift), so differences between two times are the
    wall-clock differences.
    """
    # fast path: the minute was seen before (a month of submissions has 43,200 minutes)
    minute = _MINUTE_SECONDS.get(text[:16])
    if minute is not None and len(text) == 19 and text[16] == ":":
        seconds = text[17:19]
        if seconds.isdigit() and seconds.isascii() and seconds < "60":
            return float(minute + int(seconds))
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise where.error(field, f"must be a time 'YYYY-MM-DD HH:MM:SS', got {text!r}")
    day = _DAY_SECONDS.get(match[1])
    if day is None:
        day = _day_seconds(match[1], where, field)
    hours, minutes, seconds_value = int(match[2]), int(match[3]), int(match[4])
    if hours >= 24 or minutes >= 60 or seconds_value >= 60:
        raise where.error(field, f"no such time of day in {text!r}")
    minute = day + 3600 * hours + 60 * minutes
    if len(_MINUTE_SECONDS) >= _CACHE_LIMIT:
        _MINUTE_SECONDS.clear()
    _MINUTE_SECONDS[text[:16]] = minute
    return float(minute + seconds_value)


def _day_seconds(day_text: str, where: Where, field: str) -> int:
    try:
        day = date.fromisoformat(day_text)
    except ValueError:
        raise where.error(field, f"no such date {day_text!r}") from None
    seconds = (day.toordinal() - _UNIX_EPOCH_ORDINAL) * 86_400
    if len(_DAY_SECONDS) >= _CACHE_LIMIT:
        _DAY_SECONDS.clear()
    _DAY_SECONDS[day_text] = seconds
    return seconds


def format_datetime(seconds: float) -> str:
    """Inverse of :func:`parse_datetime` for whole seconds: ``YYYY-MM-DD HH:MM:SS``."""
    whole = int(seconds)
    day, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    stamp = date.fromordinal(day + _UNIX_EPOCH_ORDINAL).isoformat()
    return f"{stamp} {hours:02d}:{minutes:02d}:{secs:02d}"


def parse_number(text: str, where: Where, field: str) -> float:
    """A finite number (``float`` syntax)."""
    try:
        value = float(text)
    except ValueError:
        raise where.error(field, f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise where.error(field, f"must be a finite number, got {text!r}")
    return value


def parse_seconds(text: str, where: Where, field: str) -> float:
    """A duration in seconds: a finite number >= 0."""
    value = parse_number(text, where, field)
    if value < 0:
        raise where.error(field, f"must be >= 0 seconds, got {text!r}")
    return value


def parse_count(text: str, where: Where, field: str) -> int:
    """A whole number >= 0 (``8`` or ``8.0``) that fits in 64 bits."""
    try:
        value = int(text)
    except ValueError:
        number = parse_number(text, where, field)
        if not number.is_integer():
            raise where.error(field, f"must be a whole number, got {text!r}") from None
        value = int(number)
    if not 0 <= value <= INT64_MAX:
        raise where.error(field, f"must be a whole number >= 0 (64-bit), got {text!r}")
    return value
