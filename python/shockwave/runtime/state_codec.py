"""A data-only encoding of the scheduler's state for the journal: JSON plus numpy arrays.

Nothing here can run code when it is read: a blob holds a JSON document (``json``, a version and
a tree of tagged values) and the numpy arrays it refers to, saved with ``numpy.save(...,
allow_pickle=False)`` (so no object arrays), and reading it creates only plain values, numpy
arrays and scalars, and instances of the few classes in :data:`CLASSES` (the scheduler's own
records, rebuilt field by field from checked data: no constructor, ``__setstate__`` or other
hook of theirs runs). A blob that is truncated, of another version, or holds anything else is
refused with a :class:`StateFormatError` saying what is wrong.

Layout of a blob: ``b"SWS1"``, the JSON document's length (8 bytes, little-endian), the JSON
document (UTF-8), then the arrays, each ``numpy.save``'d one after the other. Tagged values:

* JSON scalars and strings stand for themselves; ``{"f": "nan" | "inf" | "-inf"}`` are the
  non-finite floats;
* ``{"l": [...]}`` a list, ``{"t": [...]}`` a tuple, ``{"d": [[key, value], ...]}`` a dict
  (keys: strings or integers);
* ``{"a": i}`` the ``i``-th array; ``{"n": dtype, "v": value}`` a numpy scalar;
* ``{"o": class name, "v": {field: value, ...}}`` an instance of a class of :data:`CLASSES`
  with exactly its fields.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from shockwave.errors import DataError

MAGIC = b"SWS1"
#: Nesting deeper than this is refused (the scheduler's state is a few levels deep).
MAX_DEPTH = 32


class StateFormatError(DataError, ValueError):
    """A state blob that is not one this module wrote (corrupt, truncated, tampered with)."""


#: name -> (class, fields) of the objects a blob may hold; filled by :func:`register`.
CLASSES: dict[str, tuple[type, tuple[str, ...]]] = {}


def register(cls: type, fields: tuple[str, ...] | None = None) -> None:
    """Allow instances of ``cls`` in blobs, with the attributes ``fields`` (a dataclass's own
    fields by default)."""
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(cls))
    CLASSES[cls.__name__] = (cls, fields)


def encode(value: Any) -> bytes:
    """The blob of ``value`` (see the module notes).

    Raises:
        TypeError: for a value of a type the encoding does not hold.
    """
    arrays: list[np.ndarray[Any, Any]] = []
    tree = _encode(value, arrays, 0)
    document = json.dumps({"v": 1, "tree": tree}, separators=(",", ":")).encode()
    out = io.BytesIO()
    out.write(MAGIC)
    out.write(struct.pack("<Q", len(document)))
    out.write(document)
    for array in arrays:
        np.save(out, array, allow_pickle=False)
    return out.getvalue()


def decode(blob: bytes) -> Any:
    """The value of a blob of :func:`encode`.

    Raises:
        StateFormatError: naming what is wrong.
    """
    if not isinstance(blob, bytes) or blob[:4] != MAGIC or len(blob) < 12:
        raise StateFormatError("not a shockwave state blob (bad magic or too short)")
    (length,) = struct.unpack("<Q", blob[4:12])
    if length > len(blob) - 12:
        raise StateFormatError("truncated: the document is cut short")
    try:
        document = json.loads(blob[12 : 12 + length].decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise StateFormatError(f"the document is not valid JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("v") != 1 or "tree" not in document:
        raise StateFormatError("unknown state version")
    stream = io.BytesIO(blob[12 + length :])
    arrays: list[np.ndarray[Any, Any]] = []
    while stream.tell() < len(blob) - 12 - length:
        try:
            arrays.append(np.load(stream, allow_pickle=False))
        except Exception as exc:  # numpy parses a corrupt header with ast: any error at all
            raise StateFormatError(f"array {len(arrays)} is corrupt ({exc})") from None
    return _decode(document["tree"], arrays, 0)


def _encode(value: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("state nested too deeply")
    if isinstance(value, np.generic):
        if value.dtype.hasobject:
            raise TypeError("object scalars cannot be journaled")
        return {"n": value.dtype.str, "v": _encode(value.item(), arrays, depth + 1)}
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("object arrays cannot be journaled")
        arrays.append(value)
        return {"a": len(arrays) - 1}
    if isinstance(value, list):
        return {"l": [_encode(v, arrays, depth + 1) for v in value]}
    if isinstance(value, tuple):
        return {"t": [_encode(v, arrays, depth + 1) for v in value]}
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"dict key {key!r} cannot be journaled")
            items.append([key, _encode(item, arrays, depth + 1)])
        return {"d": items}
    name = type(value).__name__
    if name in CLASSES and CLASSES[name][0] is type(value):
        fields = CLASSES[name][1]
        return {
            "o": name,
            "v": {field: _encode(getattr(value, field), arrays, depth + 1) for field in fields},
        }
    raise TypeError(f"a {type(value).__name__} cannot be journaled")


def _decode(tree: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise StateFormatError("nested too deeply")
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if not isinstance(tree, dict) or len(tree) not in (1, 2):
        raise StateFormatError(f"unexpected value {str(tree)[:60]!r}")
    handlers: dict[str, Callable[[], Any]] = {
        "f": lambda: _special_float(tree["f"]),
        "l": lambda: [_decode(v, arrays, depth + 1) for v in _list(tree["l"])],
        "t": lambda: tuple(_decode(v, arrays, depth + 1) for v in _list(tree["t"])),
        "d": lambda: _dict(tree["d"], arrays, depth),
        "a": lambda: _array(tree["a"], arrays),
        "n": lambda: _scalar(tree, arrays, depth),
        "o": lambda: _object(tree, arrays, depth),
    }
    tag = next(iter(tree))
    if tag not in handlers or (len(tree) == 2 and set(tree) not in ({"n", "v"}, {"o", "v"})):
        raise StateFormatError(f"unknown tag {tag!r}")
    return handlers[tag]()


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise StateFormatError("a list is not a list")
    return value


def _special_float(text: Any) -> float:
    if text not in ("nan", "inf", "-inf"):
        raise StateFormatError(f"bad float {text!r}")
    return float(text)


def _dict(items: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in _list(items):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (str, int))):
            raise StateFormatError("a dict entry is not [key, value]")
        out[pair[0]] = _decode(pair[1], arrays, depth + 1)
    return out


def _array(index: Any, arrays: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(arrays):
        raise StateFormatError(f"array {index!r} is missing")
    return arrays[index]


def _scalar(tree: dict[str, Any], arrays: list[np.ndarray[Any, Any]], depth: int) -> Any:
    try:
        dtype = np.dtype(tree["n"])
    except (TypeError, ValueError):
        raise StateFormatError(f"bad dtype {tree['n']!r}") from None
    if dtype.hasobject:
        raise StateFormatError("object scalars are not allowed")
    value = _decode(tree.get("v"), arrays, depth + 1)
    try:
        return dtype.type(value)
    except (TypeError, ValueError, OverflowError):
        raise StateFormatError(f"bad {dtype} value {value!r}") from None


def _object(tree: dict[str, Any], arrays: list[np.ndarray[Any, Any]], depth: int) -> Any:
    name = tree["o"]
    if not isinstance(name, str) or name not in CLASSES:
        raise StateFormatError(f"class {name!r} is not allowed")
    cls, fields = CLASSES[name]
    values = tree.get("v")
    if not isinstance(values, dict) or set(values) != set(fields):
        raise StateFormatError(f"{name}: fields {sorted(values or {})} are not {sorted(fields)}")
    instance: Any = object.__new__(cls)
    for field in fields:
        object.__setattr__(instance, field, _decode(values[field], arrays, depth + 1))
    return instance
