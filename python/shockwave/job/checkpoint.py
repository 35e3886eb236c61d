"""Checkpoints: named numpy arrays plus a JSON object, in one file written atomically.

A checkpoint is a numpy ``.npz`` archive (a zip of ``.npy`` files, readable by ``np.load``)
built in memory and written with :func:`shockwave.atomic.atomic_write_bytes`, so a reader sees
the previous checkpoint or the new one, never a torn file. The JSON object (``meta``) is stored
as a ``uint8`` array under the reserved name :data:`META_KEY`; names starting with ``__`` are
reserved. Loading never unpickles (``allow_pickle=False``), so object arrays cannot be saved.

:func:`digest` is the fingerprint of a set of arrays (a job's ``final_digest``): equal digests
mean equal names, dtypes, shapes and bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shockwave.atomic import atomic_write_bytes

#: Name of the array holding the UTF-8 JSON text of a checkpoint's ``meta``.
META_KEY = "__meta__"
#: Prefix of names reserved for shockwave's own entries.
RESERVED_PREFIX = "__"


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint file holds.

    Attributes:
        arrays: the saved arrays by name (freshly loaded, writable copies).
        meta: the saved JSON object.
    """

    arrays: dict[str, npt.NDArray[Any]]
    meta: dict[str, Any]


def save_checkpoint(
    path: str | PathLike[str],
    arrays: Mapping[str, npt.ArrayLike],
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Write ``arrays`` and ``meta`` to ``path`` atomically (replacing any previous file).

    Args:
        path: the checkpoint file; its directory must exist.
        arrays: arrays by name; names must be non-empty and not start with ``__``, arrays must
            not be object arrays.
        meta: a JSON object (finite numbers only).

    Raises:
        ValueError: naming the offending array name or ``meta``.
        OSError: if the file cannot be written (the previous file is then unchanged).
    """
    entries = _checked_arrays(arrays)
    entries[META_KEY] = np.frombuffer(_meta_bytes(meta), dtype=np.uint8)
    buffer = io.BytesIO()
    # An .npz archive written entry by entry (np.savez would take the names as keyword arguments,
    # where "file" or "allow_pickle" would collide with its own parameters).
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in entries.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    atomic_write_bytes(path, buffer.getvalue())


def load_checkpoint(path: str | PathLike[str]) -> Checkpoint | None:
    """Read the checkpoint at ``path``; ``None`` if there is no such file.

    Raises:
        ValueError: naming ``path`` if the file is not a complete checkpoint (truncated,
            corrupt, or without its meta).
    """
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            loaded = {name: np.array(archive[name]) for name in archive.files}
    except Exception as exc:  # numpy and zipfile raise many kinds for a damaged archive
        raise ValueError(f"checkpoint {str(path)!r} is corrupt or truncated ({exc})") from None
    meta_array = loaded.pop(META_KEY, None)
    if meta_array is None or meta_array.dtype != np.uint8 or meta_array.ndim != 1:
        raise ValueError(f"checkpoint {str(path)!r} has no meta entry {META_KEY!r}")
    try:
        meta = json.loads(meta_array.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"checkpoint {str(path)!r}: meta is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"checkpoint {str(path)!r}: meta must be a JSON object")
    return Checkpoint(arrays=loaded, meta=meta)


def digest(arrays: Mapping[str, npt.ArrayLike]) -> str:
    """Hex SHA-256 of ``arrays``: their sorted names, dtypes, shapes and C-order bytes.

    Two sets of arrays have the same digest exactly when they have the same names and every
    array has the same dtype (byte order included), shape and values bit for bit.
    """
    hasher = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        header = json.dumps([name, array.dtype.str, list(array.shape)], separators=(",", ":"))
        data = array.tobytes()
        for part in (header.encode("utf-8"), data):
            hasher.update(len(part).to_bytes(8, "little"))
            hasher.update(part)
    return hasher.hexdigest()


def _checked_arrays(arrays: Mapping[str, npt.ArrayLike]) -> dict[str, npt.NDArray[Any]]:
    if not isinstance(arrays, Mapping):
        raise ValueError(f"arrays must be a mapping of names to arrays, got {type(arrays)!r}")
    out: dict[str, npt.NDArray[Any]] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name or name.startswith(RESERVED_PREFIX):
            raise ValueError(
                f"array name {name!r}: must be a non-empty string not starting with "
                f"{RESERVED_PREFIX!r}"
            )
        if "/" in name or "\\" in name:
            raise ValueError(f"array name {name!r}: must not contain a path separator")
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise ValueError(f"array {name!r}: object arrays cannot be checkpointed")
        out[name] = array
    return out


def _meta_bytes(meta: Mapping[str, Any] | None) -> bytes:
    if meta is None:
        return b"{}"
    if not isinstance(meta, Mapping):
        raise ValueError(f"meta must be a JSON object (a mapping), got {type(meta)!r}")
    try:
        text = json.dumps(dict(meta), allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"meta is not JSON-serialisable with finite numbers ({exc})") from None
    return text.encode("utf-8")
