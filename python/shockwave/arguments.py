"""Coercion and validation of the arguments of the market solver and the adaptation model.

The one set of helpers the Python wrappers (:mod:`shockwave.market`, :mod:`shockwave.adaptation`,
the Shockwave policy's options) use before handing arrays to the Rust core: each returns the
value in the form the core takes (C-contiguous float64 or int64 arrays, Python scalars) or raises
:class:`~shockwave.errors.InputError` naming the argument. The core checks its inputs again
(finiteness, ranges, consistency); these helpers only catch what cannot cross the boundary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeGuard, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from shockwave.errors import InputError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "as_array",
    "choice",
    "float_array",
    "floats",
    "gang_sizes",
    "int_array",
    "integer",
    "is_integer",
    "is_number",
    "mapping",
    "matrix",
    "per_job",
    "real",
    "vector",
]

#: Range of the integers the Rust core takes (signed 64-bit).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

Option = TypeVar("Option", bound=str)


@overload
def is_integer(value: object, *, numpy: Literal[False]) -> TypeGuard[int]: ...
@overload
def is_integer(value: object, *, numpy: bool = True) -> TypeGuard[int | np.integer[Any]]: ...
def is_integer(value: object, *, numpy: bool = True) -> bool:
    """Whether ``value`` is an integer: a Python ``int`` (not a ``bool``) or, with ``numpy``, a
    numpy integer scalar."""
    kinds: tuple[type, ...] = (int, np.integer) if numpy else (int,)
    return isinstance(value, kinds) and not isinstance(value, bool)


@overload
def is_number(value: object, *, numpy: Literal[False]) -> TypeGuard[int | float]: ...
@overload
def is_number(
    value: object, *, numpy: bool = True
) -> TypeGuard[int | float | np.integer[Any] | np.floating[Any]]: ...
def is_number(value: object, *, numpy: bool = True) -> bool:
    """Whether ``value`` is a real number: an ``int`` or ``float`` (not a ``bool``) or, with
    ``numpy``, a numpy integer or floating scalar."""
    kinds: tuple[type, ...] = (int, float, np.integer, np.floating) if numpy else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool)


def integer(
    value: object, argument: str, *, minimum: int = INT64_MIN, maximum: int = INT64_MAX
) -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]`` (by default, what a signed 64-bit
    integer holds)."""
    if not is_integer(value):
        raise InputError(argument, f"must be an integer, got {value!r}")
    number = int(value)
    if not minimum <= number <= maximum:
        if maximum == INT64_MAX and minimum == INT64_MIN:
            raise InputError(argument, f"must fit in a signed 64-bit integer, got {number}")
        if maximum == INT64_MAX:
            raise InputError(argument, f"must be >= {minimum}, got {number}")
        raise InputError(argument, f"must be in [{minimum}, {maximum}], got {number}")
    return number


def real(value: object, argument: str) -> float:
    """``value`` as a ``float`` (finiteness is the core's to check)."""
    if not is_number(value):
        raise InputError(argument, f"must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise InputError(argument, f"{value!r} is beyond double precision") from None


def choice(value: object, argument: str, options: Sequence[Option]) -> Option:
    """``value`` if it is one of ``options`` (an option string such as an estimator's name)."""
    for option in options:
        if value == option and isinstance(value, str):
            return option
    raise InputError(argument, f"must be one of {tuple(options)}, got {value!r}")


def mapping(value: object, argument: str, what: str) -> dict[Any, Any]:
    """``dict(value)``: ``value`` must be a mapping (or pairs) of ``what``."""
    if isinstance(value, Mapping):
        return dict(value)
    try:
        pairs: dict[Any, Any] = dict(value)  # type: ignore[call-overload]
        return pairs
    except (TypeError, ValueError):
        raise InputError(argument, f"must be a mapping of {what}, got {value!r:.60}") from None


def as_array(value: object, argument: str) -> NDArray[Any]:
    """``np.asarray(value)``, naming ``argument`` when numpy cannot make an array of it (a
    ragged list)."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(argument, f"not an array ({exc})") from None


def floats(value: object, argument: str) -> NDArray[np.float64]:
    """``value`` as a float64 array (C-contiguous unless 0-d)."""
    if value is None:  # numpy would read it as NaN
        raise InputError(argument, "expected numbers, got None")
    try:
        array = np.asarray(value, dtype=np.float64)
        return array if array.ndim == 0 else np.ascontiguousarray(array)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(argument, f"expected numbers, got {value!r:.80} ({exc})") from None


def vector(value: object, argument: str, length: int) -> NDArray[np.float64]:
    """``value`` as a float64 vector of ``length`` entries."""
    array = floats(value, argument)
    if array.shape != (length,):
        raise InputError(argument, f"expected shape ({length},), got {array.shape}")
    return array


def per_job(value: object, argument: str, jobs: int) -> NDArray[np.float64]:
    """A scalar shared by ``jobs`` jobs, or one value per job."""
    array = floats(value, argument)
    if array.ndim == 0:
        return np.full(jobs, float(array))
    return vector(array, argument, jobs)


def matrix(value: object, argument: str) -> NDArray[np.float64]:
    """``value`` as a 2-D ``(jobs, rounds)`` float64 array."""
    array = floats(value, argument)
    if array.ndim != 2:
        raise InputError(argument, f"expected a 2-D (jobs, rounds) array, got {array.ndim}-D")
    return array


def _one_dimensional(value: object, argument: str) -> NDArray[Any]:
    array = as_array(value, argument)
    if array.ndim != 1:
        raise InputError(argument, f"must be a 1-D sequence, got shape {array.shape}")
    return array


def int_array(value: object, argument: str) -> NDArray[np.int64]:
    """``value`` as a 1-D int64 array: integral entries that fit in 64 bits (integral floats
    are accepted)."""
    array = _one_dimensional(value, argument)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind == "f":
        if not np.isfinite(array).all() or (array != np.round(array)).any():
            raise InputError(argument, "entries must be integers")
        if (np.abs(array) >= 2.0**63).any():
            raise InputError(argument, "entries must fit in a signed 64-bit integer")
    elif array.dtype.kind == "u":
        if (array > INT64_MAX).any():
            raise InputError(argument, "entries must fit in a signed 64-bit integer")
    elif array.dtype.kind != "i":
        raise InputError(argument, f"entries must be integers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)


def float_array(value: object, argument: str) -> NDArray[np.float64]:
    """``value`` as a 1-D float64 array of numeric entries."""
    array = _one_dimensional(value, argument)
    if array.size and array.dtype.kind not in "iuf":
        raise InputError(argument, f"entries must be numbers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float64)


def gang_sizes(value: object, jobs: int) -> NDArray[np.int64]:
    """``(jobs,)`` GPU counts as int64 (integral floats accepted; range checked by the core)."""
    raw = as_array(value, "gang_sizes")
    if raw.shape != (jobs,):
        raise InputError("gang_sizes", f"expected shape ({jobs},), got {raw.shape}")
    if raw.dtype == np.bool_ or not (
        np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
    ):
        raise InputError("gang_sizes", f"expected integer GPU counts, got dtype {raw.dtype}")
    if np.issubdtype(raw.dtype, np.floating) and not (
        np.all(np.isfinite(raw)) and np.all(raw == np.round(raw))
    ):
        raise InputError("gang_sizes", "expected integer GPU counts, got non-integral values")
    if raw.size and (
        (raw.dtype.kind == "f" and not np.all(np.abs(raw) < 2.0**63))
        or (raw.dtype.kind == "u" and int(raw.max()) >= 2**63)
    ):
        raise InputError("gang_sizes", "a gang size does not fit in a 64-bit integer")
    return np.ascontiguousarray(raw, dtype=np.int64)
