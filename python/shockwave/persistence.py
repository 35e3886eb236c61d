"""State as data: the one encoding of every state shockwave saves, and its state files.

A simulation checkpoint (``shockwave simulate --checkpoint``) and a real run's journal
(:mod:`shockwave.runtime.journal`) hold the same kind of value: the round loop's snapshot
(:mod:`shockwave.rounds.snapshot`), a tree of plain values and numpy arrays. Nothing here can run
code when it is read:

* :func:`encode` / :func:`decode`: a *blob* is a JSON document (a version and a tree of tagged
  values) followed by the numpy arrays it refers to, each written with ``numpy.save(...,
  allow_pickle=False)`` (no object arrays). Reading creates only plain values (``None``, bools,
  integers, floats, strings, lists, tuples, dicts, sets), numpy arrays and numpy scalars; never
  an instance of any other class, never a pickle.
* :func:`save_state_file` / :func:`load_state_file`: a *state file* is a header line (JSON: the
  format name, the kind of state, the format version, the shockwave version that wrote it and
  the SHA-256 of the body) and a blob, replaced atomically (:mod:`shockwave.atomic`). A file
  that is not one, of another kind, format or shockwave version, truncated, altered (a flipped
  bit: the digest), or whose content does not fit its schema is refused with a
  :class:`StateFormatError` naming the file and what is wrong.
* :class:`StateReader`: reads a decoded tree against its schema (the type, range, dtype and
  shape of every field), naming the field that is wrong. Every component that restores itself
  from a snapshot reads its part through one.

Layout of a blob: ``b"SWS1"``, the JSON document's length (8 bytes, little-endian), the JSON
document (UTF-8), then the arrays. Tagged values in the document:

* JSON scalars and strings stand for themselves; ``{"f": "nan" | "inf" | "-inf"}`` are the
  non-finite floats (floats are written with Python's shortest round-trip representation, so
  every float comes back bit for bit);
* ``{"l": [...]}`` a list, ``{"t": [...]}`` a tuple, ``{"s": [...]}`` a set,
  ``{"d": [[key, value], ...]}`` a dict (keys: strings or integers; order kept);
* ``{"a": i}`` the ``i``-th array; ``{"n": dtype, "v": value}`` a numpy scalar.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave import __version__
from shockwave.atomic import atomic_write_bytes
from shockwave.errors import DataError

MAGIC = b"SWS1"
#: Version of the blob's document.
BLOB_VERSION = 1
#: Nesting deeper than this is refused (snapshots are a few levels deep).
MAX_DEPTH = 32
#: The format name of state files (their header's ``format``).
FILE_FORMAT = "shockwave-state"
#: Version of the state-file layout. Version 1 held pickles (refused); version 2: data only.
FILE_VERSION = 2
#: Longest header line read (a header is about 200 bytes).
_MAX_HEADER = 4096


class StateFormatError(DataError, ValueError):
    """State that is not what shockwave wrote: corrupt, truncated, tampered with, of another
    version, or not fitting its schema. The message names where (the file, the field)."""


# ------------------------------------------------------------------------------------ blobs
def encode(value: Any) -> bytes:
    """The blob of ``value`` (see the module notes).

    Raises:
        TypeError: for a value of a type the encoding does not hold (named).
    """
    arrays: list[np.ndarray[Any, Any]] = []
    tree = _encode(value, arrays, 0)
    document = json.dumps({"v": BLOB_VERSION, "tree": tree}, separators=(",", ":")).encode()
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
    if not (
        isinstance(document, dict) and document.get("v") == BLOB_VERSION and "tree" in document
    ):
        raise StateFormatError("unknown state version")
    stream = io.BytesIO(blob[12 + length :])
    arrays: list[np.ndarray[Any, Any]] = []
    while stream.tell() < len(blob) - 12 - length:
        try:
            arrays.append(_read_array(stream))
        except Exception as exc:  # numpy parses a corrupt header with ast: any error at all
            raise StateFormatError(f"array {len(arrays)} is corrupt ({exc})") from None
    return _decode(document["tree"], arrays, 0)


def _read_array(stream: io.BytesIO) -> np.ndarray[Any, Any]:
    """The next array of ``stream``, its size checked against the bytes left before numpy
    allocates it (a header may claim any shape)."""
    start = stream.tell()
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise StateFormatError(f"array format version {version}")
    if dtype.hasobject:
        raise StateFormatError("object arrays are not allowed")
    count = 1
    for size in shape:
        count *= size
    left = len(stream.getbuffer()) - stream.tell()
    if count * dtype.itemsize > left:
        raise StateFormatError(f"its header claims {count * dtype.itemsize} bytes, {left} are left")
    stream.seek(start)
    array: np.ndarray[Any, Any] = np.load(stream, allow_pickle=False)
    return array


def _encode(value: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("state nested too deeply")
    if isinstance(value, np.generic):
        if value.dtype.hasobject:
            raise TypeError("object scalars cannot be saved as data")
        return {"n": value.dtype.str, "v": _encode(value.item(), arrays, depth + 1)}
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("object arrays cannot be saved as data")
        arrays.append(value)
        return {"a": len(arrays) - 1}
    if isinstance(value, list):
        return {"l": [_encode(v, arrays, depth + 1) for v in value]}
    if isinstance(value, tuple):
        return {"t": [_encode(v, arrays, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"s": [_encode(v, arrays, depth + 1) for v in sorted(value, key=_set_order)]}
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"dict key {key!r} cannot be saved as data")
            items.append([key, _encode(item, arrays, depth + 1)])
        return {"d": items}
    raise TypeError(f"a {type(value).__name__} cannot be saved as data")


def _set_order(item: Any) -> tuple[str, Any]:
    """Sets are written sorted (by type name, then value): the same set, the same bytes."""
    return (type(item).__name__, item)


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
        "s": lambda: _set(tree["s"], arrays, depth),
        "d": lambda: _dict(tree["d"], arrays, depth),
        "a": lambda: _array(tree["a"], arrays),
        "n": lambda: _scalar(tree, arrays, depth),
    }
    tag = next(iter(tree))
    if tag not in handlers or (len(tree) == 2 and set(tree) != {"n", "v"}):
        raise StateFormatError(f"unknown tag {tag!r}")
    return handlers[tag]()


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise StateFormatError("a list is not a list")
    return value


def _set(items: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> set[Any]:
    values = [_decode(v, arrays, depth + 1) for v in _list(items)]
    try:
        return set(values)
    except TypeError:
        raise StateFormatError("a set holds an unhashable value") from None


def _special_float(text: Any) -> float:
    if text not in ("nan", "inf", "-inf"):
        raise StateFormatError(f"bad float {text!r}")
    return float(text)


def _dict(items: Any, arrays: list[np.ndarray[Any, Any]], depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in _list(items):
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], (str, int))
            and not isinstance(pair[0], bool)
        ):
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


# ------------------------------------------------------------------------------ state files
def dump_state(kind: str, value: Any) -> bytes:
    """The bytes of a state file of ``kind`` holding ``value`` (see the module notes)."""
    body = encode(value)
    header = {
        "format": FILE_FORMAT,
        "kind": kind,
        "version": FILE_VERSION,
        "shockwave": __version__,
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + body


def load_state(data: bytes, kind: str, *, source: str = "<state>") -> Any:
    """The value of :func:`dump_state`'s ``data``, checked to be a state of ``kind``.

    Raises:
        StateFormatError: naming ``source``, for data that is not a shockwave state file, of
            another kind, format version or shockwave version, altered or corrupt.
    """
    line, newline, body = data[:_MAX_HEADER].partition(b"\n")
    try:
        header = json.loads(line.decode()) if newline else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FILE_FORMAT:
        if line.startswith(b"shockwave-state "):  # version 1: a header line and a pickle
            raise StateFormatError(
                f"{source}: a state file of an older shockwave (format version 1, a pickle): "
                "it is not read (loading a pickle can run code); start the run again"
            )
        raise StateFormatError(f"{source}: not a shockwave state file")
    body = data[len(line) + 1 :]
    version = header.get("version")
    if version != FILE_VERSION:
        hint = " (version 1 files held pickles: they cannot be read)" if version == 1 else ""
        raise StateFormatError(
            f"{source}: state format version {version!r}; this shockwave reads {FILE_VERSION}{hint}"
        )
    if header.get("kind") != kind:
        raise StateFormatError(f"{source}: holds a {header.get('kind')!r}, expected a {kind!r}")
    writer = header.get("shockwave")
    if writer != __version__:
        raise StateFormatError(
            f"{source}: written by shockwave {writer}, this is {__version__}: state resumes "
            "identically only under the version that wrote it"
        )
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise StateFormatError(f"{source}: corrupted state (its digest does not match)")
    try:
        return decode(body)
    except StateFormatError as exc:
        raise StateFormatError(f"{source}: corrupted state ({exc})") from None


def save_state_file(path: str | PathLike[str], kind: str, value: Any) -> None:
    """Write a state file of ``kind`` holding ``value`` to ``path``, atomically."""
    atomic_write_bytes(path, dump_state(kind, value))


def load_state_file(path: str | PathLike[str], kind: str) -> Any:
    """:func:`load_state` of the file ``path``.

    Raises:
        OSError: when the file cannot be read.
        StateFormatError: as :func:`load_state`, naming the file.
    """
    return load_state(Path(path).read_bytes(), kind, source=str(path))


def state_file_kind(path: str | PathLike[str]) -> str | None:
    """The kind of state the file ``path`` says it holds (its header's), or ``None`` for a file
    that is not a state file of this format; nothing else is checked (:func:`load_state_file`
    checks it all).

    Raises:
        OSError: when the file cannot be read.
    """
    with open(path, "rb") as stream:
        line = stream.read(_MAX_HEADER).partition(b"\n")[0]
    try:
        header = json.loads(line.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(header, dict) or header.get("format") != FILE_FORMAT:
        return None
    kind = header.get("kind")
    return kind if isinstance(kind, str) else None


# ---------------------------------------------------------------------------------- schema
class StateReader:
    """A decoded table read against its schema: each accessor checks one field's type (and
    range, dtype, shape) and raises :class:`StateFormatError` naming ``where.field``.

    Args:
        tree: the decoded value (must be a dict with string keys).
        where: what it is (``"the checkpoint's ledger"``), for messages.
    """

    def __init__(self, tree: Any, where: str) -> None:
        if not isinstance(tree, dict) or not all(isinstance(k, str) for k in tree):
            raise StateFormatError(f"{where}: expected a table of fields")
        self.tree: dict[str, Any] = tree
        self.where = where
        self._read: set[str] = set()

    def error(self, name: str, reason: str) -> StateFormatError:
        """An error naming the field ``name``."""
        return StateFormatError(f"{self.where}.{name}: {reason}")

    def raw(self, name: str) -> Any:
        """The field's value, unchecked (check it yourself)."""
        if name not in self.tree:
            raise self.error(name, "missing")
        self._read.add(name)
        return self.tree[name]

    def table(self, name: str) -> StateReader:
        """A nested table."""
        return StateReader(self.raw(name), f"{self.where}.{name}")

    def integer(self, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {_shown(value)}")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self.error(name, f"{value} is out of range [{minimum}, {maximum}]")
        return value

    def number(self, name: str, *, finite: bool = False, minimum: float | None = None) -> float:
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(name, f"expected a number, got {_shown(value)}")
        value = float(value)
        if finite and not math.isfinite(value):
            raise self.error(name, f"expected a finite number, got {value}")
        if minimum is not None and not value >= minimum:
            raise self.error(name, f"expected a number >= {minimum}, got {value}")
        return value

    def boolean(self, name: str) -> bool:
        value = self.raw(name)
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {_shown(value)}")
        return value

    def text(self, name: str, choices: tuple[str, ...] | None = None) -> str:
        value = self.raw(name)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {_shown(value)}")
        if choices is not None and value not in choices:
            raise self.error(name, f"expected one of {list(choices)}, got {value!r}")
        return value

    def array(
        self,
        name: str,
        dtype: npt.DTypeLike,
        shape: tuple[int | None, ...] | None = None,
    ) -> np.ndarray[Any, Any]:
        """An array of exactly ``dtype`` and, where given, ``shape`` (``None``: any length)."""
        value = self.raw(name)
        return _check_array(value, dtype, shape, lambda reason: self.error(name, reason))

    def optional_array(
        self, name: str, dtype: npt.DTypeLike, shape: tuple[int | None, ...] | None = None
    ) -> np.ndarray[Any, Any] | None:
        """:meth:`array`, or ``None``."""
        if self.raw(name) is None:
            return None
        return self.array(name, dtype, shape)

    def done(self) -> None:
        """Refuse fields that no accessor read (a table of another schema)."""
        extra = sorted(set(self.tree) - self._read)
        if extra:
            raise StateFormatError(f"{self.where}: unexpected fields {extra}")


def _check_array(
    value: Any,
    dtype: npt.DTypeLike,
    shape: tuple[int | None, ...] | None,
    error: Callable[[str], StateFormatError],
) -> np.ndarray[Any, Any]:
    """``value`` if it is an array of ``dtype`` and ``shape`` (``None`` entries: any)."""
    expected = np.dtype(dtype)
    if not isinstance(value, np.ndarray):
        raise error(f"expected an array, got {_shown(value)}")
    if value.dtype != expected:
        raise error(f"expected dtype {expected}, got {value.dtype}")
    if shape is not None and (
        value.ndim != len(shape)
        or any(
            want is not None and got != want for got, want in zip(value.shape, shape, strict=True)
        )
    ):
        wanted = tuple("*" if s is None else s for s in shape)
        raise error(f"expected shape {wanted}, got {value.shape}")
    return value


def _shown(value: Any) -> str:
    text = type(value).__name__
    if isinstance(value, (int, float, str, bool)) or value is None:
        text += f" {value!r:.40}"
    return text
