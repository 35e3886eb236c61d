"""Checkpoints: round trip, atomic replacement, damaged files, and the digest's sensitivity."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from shockwave.job import checkpoint as checkpoint_module
from shockwave.job.checkpoint import META_KEY, digest, load_checkpoint, save_checkpoint


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "param.W": rng.normal(size=(4, 3)),
        "counts": np.arange(5, dtype=np.int32),
        "flag": np.array(True),
        "empty": np.zeros((0, 2)),
        # names that are also np.savez's own parameter names
        "file": np.ones(2),
        "allow_pickle": np.zeros(1, dtype=np.uint8),
    }


def test_round_trip_keeps_arrays_and_meta(tmp_path: Path) -> None:
    path = tmp_path / "job.ckpt"
    meta = {"epoch": 3, "rng": {"state": 2**100 + 7, "inc": 5}, "loss": 0.1 + 0.2, "ok": None}
    save_checkpoint(path, _arrays(), meta)
    loaded = load_checkpoint(path)
    assert loaded is not None
    assert loaded.meta == meta
    assert sorted(loaded.arrays) == sorted(_arrays())
    for name, array in _arrays().items():
        assert loaded.arrays[name].dtype == array.dtype
        assert loaded.arrays[name].shape == array.shape
        np.testing.assert_array_equal(loaded.arrays[name], array)
    assert digest(loaded.arrays) == digest(_arrays())
    # a real .npz archive that numpy reads
    with np.load(path) as archive:
        assert set(archive.files) == {*_arrays(), META_KEY}


def test_missing_file_is_none(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path / "absent.ckpt") is None


def test_failed_write_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "job.ckpt"
    save_checkpoint(path, {"x": np.arange(3.0)}, {"version": 1})
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:  # the disk fails after the data was written
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, {"x": np.arange(100.0)}, {"version": 2})
    monkeypatch.setattr(os, "fsync", real_fsync)
    loaded = load_checkpoint(path)
    assert loaded is not None and loaded.meta == {"version": 1}
    np.testing.assert_array_equal(loaded.arrays["x"], np.arange(3.0))
    assert [p.name for p in tmp_path.iterdir()] == ["job.ckpt"]  # no temporary file left


def test_failure_while_building_the_archive_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "job.ckpt"
    save_checkpoint(path, {"x": np.arange(3.0)}, {"version": 1})
    calls = {"n": 0}
    real_write = np.lib.format.write_array

    def write_then_fail(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("interrupted mid-write")
        real_write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint_module.np.lib.format, "write_array", write_then_fail)
    with pytest.raises(RuntimeError, match="interrupted"):
        save_checkpoint(path, {"x": np.arange(9.0), "y": np.ones(2)}, {"version": 2})
    loaded = load_checkpoint(path)
    assert loaded is not None and loaded.meta == {"version": 1}


@pytest.mark.parametrize("keep", [0, 10, 200, -20])
def test_truncated_or_corrupt_file_names_the_path(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "job.ckpt"
    save_checkpoint(path, _arrays(), {"epoch": 1})
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep] + b"\x00" * 7)
    with pytest.raises(ValueError, match=r"job\.ckpt"):
        load_checkpoint(path)


def test_archive_without_meta_or_with_bad_meta_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    np.savez(path, x=np.ones(2))
    with pytest.raises(ValueError, match="plain.npz.*meta"):
        load_checkpoint(path)
    path = tmp_path / "bad.npz"
    np.savez(path, x=np.ones(2), **{META_KEY: np.frombuffer(b"[1, 2]", dtype=np.uint8)})
    with pytest.raises(ValueError, match="bad.npz.*JSON object"):
        load_checkpoint(path)


def test_object_arrays_are_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "pickled.npz"
    np.savez(path, x=np.array([{"a": 1}], dtype=object), **{META_KEY: np.zeros(2, np.uint8)})
    with pytest.raises(ValueError, match="pickled.npz"):
        load_checkpoint(path)
    with zipfile.ZipFile(path) as archive:  # the file really holds a pickle
        assert "x.npy" in archive.namelist()


@pytest.mark.parametrize("name", ["__meta__", "__x", "", "a/b"])
def test_reserved_or_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="array name"):
        save_checkpoint(tmp_path / "c.ckpt", {name: np.ones(1)})
    assert not (tmp_path / "c.ckpt").exists()


def test_bad_arrays_and_meta_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="array 'o'"):
        save_checkpoint(tmp_path / "c.ckpt", {"o": np.array([object()])})
    with pytest.raises(ValueError, match="meta"):
        save_checkpoint(tmp_path / "c.ckpt", {"x": np.ones(1)}, {"x": float("nan")})
    with pytest.raises(ValueError, match="meta"):
        save_checkpoint(tmp_path / "c.ckpt", {"x": np.ones(1)}, {"x": {1, 2}})
    assert not (tmp_path / "c.ckpt").exists()


def test_digest_is_sensitive_to_names_dtypes_shapes_and_values() -> None:
    base = {"a": np.arange(6.0).reshape(2, 3), "b": np.zeros(2)}
    reference = digest(base)
    assert digest({"b": np.zeros(2), "a": np.arange(6.0).reshape(2, 3)}) == reference
    assert digest({**base, "a": np.asfortranarray(base["a"])}) == reference  # values, not layout
    variants = [
        {**base, "a": np.arange(6.0).reshape(3, 2)},  # shape
        {**base, "a": np.arange(6.0, dtype=np.float32).reshape(2, 3)},  # dtype
        {**base, "a": np.arange(6, dtype=np.int64).reshape(2, 3)},  # same bytes count, int
        {**base, "a": base["a"].astype(">f8")},  # byte order
        {**base, "a": np.where(base["a"] == 5.0, np.nextafter(5.0, 6.0), base["a"])},  # 1 ulp
        {"a2": base["a"], "b": base["b"]},  # a name
        {"a": base["a"]},  # an array fewer
        {"a": np.concatenate([base["a"].ravel(), base["b"]]).reshape(2, 4), "b": np.zeros(0)},
    ]
    digests = {digest(v) for v in variants}
    assert reference not in digests
    assert len(digests) == len(variants)
    assert digest({"x": np.array(-0.0)}) != digest({"x": np.array(0.0)})  # bit for bit
