"""The handwritten digits of scikit-learn, nudged by one pixel: 16,173 samples of 8x8 images.

The data is scikit-learn's bundled copy of the UCI optical digits test set (1,797 images of
8x8 pixels with values 0..16, ten classes). It is read straight from the package's data file
(``sklearn/datasets/data/digits.csv.gz``), without importing scikit-learn, whose import costs
about a second of every job process's start-up.

The training set is the original plus its eight copies shifted by one pixel in every direction
of the 3x3 neighbourhood (vacated pixels are 0), in the order of the shifts
``(dy, dx) = (-1, -1), (-1, 0), ..., (1, 1)``: 9 x 1,797 = 16,173 samples, deterministic.
Pixels are scaled to ``[0, 1]`` (value / 16), an image is a row of 64 features.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shockwave.job.families.family import Dataset

#: Images in scikit-learn's digits data.
DIGITS_IMAGES = 1797
#: Samples of the nudged training set: the original and eight one-pixel shifts.
NUDGED_SAMPLES = 9 * DIGITS_IMAGES
#: Augmentation: largest rotation (radians, 12 degrees), relative scale change, and shift
#: (pixels) of the random affine map applied to every training image.
MAX_ROTATION = np.pi / 15
MAX_SCALE_CHANGE = 0.1
MAX_SHIFT = 0.5

# The output pixel grid relative to the image centre, and the side of the zero-padded image.
_CENTRE = 3.5
_ROWS = np.repeat(np.arange(8.0), 8) - _CENTRE
_COLUMNS = np.tile(np.arange(8.0), 8) - _CENTRE
_PADDED = 10
#: Images interpolated at a time: larger temporaries (over 128 KiB) are fresh memory maps for
#: glibc's allocator, and their page faults doubled the per-image cost above 128 images.
AUGMENT_BLOCK = 128


def digits_file() -> Path:
    """Path of scikit-learn's ``digits.csv.gz``.

    Raises:
        ModuleNotFoundError: if scikit-learn is not installed.
        FileNotFoundError: if its data file is missing.
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "the digits families read scikit-learn's bundled digits data: "
            "install scikit-learn (pip install scikit-learn)"
        )
    path = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz"
    if not path.is_file():
        raise FileNotFoundError(f"scikit-learn's digits data is missing: {path}")
    return path


@cache
def nudged_digits() -> Dataset:
    """The nudged digits training set (see the module notes); cached per process."""
    raw = np.loadtxt(digits_file(), delimiter=",")
    if raw.shape != (DIGITS_IMAGES, 65):
        raise ValueError(f"{digits_file()}: expected {DIGITS_IMAGES} rows of 65, got {raw.shape}")
    images = raw[:, :64].reshape(-1, 8, 8) / 16.0
    labels = raw[:, 64].astype(np.int64)
    shifted = [shift(images, dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    inputs = np.ascontiguousarray(np.concatenate(shifted).reshape(-1, 64))
    return Dataset(inputs=inputs, targets=np.tile(labels, 9))


def shift(images: npt.NDArray[np.float64], dy: int, dx: int) -> npt.NDArray[np.float64]:
    """``images`` (n, h, w) moved ``dy`` rows down and ``dx`` columns right, zero-filled."""
    _, height, width = images.shape
    out = np.zeros_like(images)
    out[:, max(dy, 0) : height + min(dy, 0), max(dx, 0) : width + min(dx, 0)] = images[
        :, max(-dy, 0) : height + min(-dy, 0), max(-dx, 0) : width + min(-dx, 0)
    ]
    return out


def random_affine(
    inputs: npt.NDArray[np.float64], rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Every image of ``inputs`` (rows of 64 pixels) under its own random affine map (new array).

    Each image is rotated about its centre by an angle uniform in +-:data:`MAX_ROTATION`
    radians, scaled by a factor uniform in ``1 +-`` :data:`MAX_SCALE_CHANGE` and moved by up to
    +-:data:`MAX_SHIFT` pixels along each axis, with bilinear interpolation (pixels from outside
    the image are 0). The draws are, in order: the angles, the scales, then the shifts (rows,
    columns), one per image.
    """
    n = inputs.shape[0]
    angle = rng.uniform(-MAX_ROTATION, MAX_ROTATION, size=n)
    inverse_scale = 1.0 / rng.uniform(1.0 - MAX_SCALE_CHANGE, 1.0 + MAX_SCALE_CHANGE, size=n)
    shift_rows, shift_columns = rng.uniform(-MAX_SHIFT, MAX_SHIFT, size=(2, n, 1))
    cos = (np.cos(angle) * inverse_scale)[:, None]
    sin = (np.sin(angle) * inverse_scale)[:, None]
    out = np.empty_like(inputs, dtype=np.float64)
    # in blocks, so that the temporaries stay small (elementwise: the same values as in one go)
    for first in range(0, n, AUGMENT_BLOCK):
        block = slice(first, min(n, first + AUGMENT_BLOCK))
        out[block] = _interpolate(
            inputs[block], cos[block], sin[block], shift_rows[block], shift_columns[block]
        )
    return out


def _interpolate(
    inputs: npt.NDArray[np.float64],
    cos: npt.NDArray[np.float64],
    sin: npt.NDArray[np.float64],
    shift_rows: npt.NDArray[np.float64],
    shift_columns: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Bilinear samples of ``inputs`` at the mapped grid (columns of per-image coefficients)."""
    n = inputs.shape[0]
    # the source point of every output pixel, in the coordinates of the zero-padded 10x10 image
    source_rows = cos * _ROWS - sin * _COLUMNS + (_CENTRE + 1.0) + shift_rows
    source_columns = sin * _ROWS + cos * _COLUMNS + (_CENTRE + 1.0) + shift_columns
    top = np.floor(source_rows)
    left = np.floor(source_columns)
    down = source_rows - top
    right = source_columns - left
    top_index = np.clip(top, 0, _PADDED - 1).astype(np.intp)
    bottom_index = np.clip(top + 1, 0, _PADDED - 1).astype(np.intp)
    left_index = np.clip(left, 0, _PADDED - 1).astype(np.intp)
    right_index = np.clip(left + 1, 0, _PADDED - 1).astype(np.intp)
    padded = np.zeros((n, _PADDED, _PADDED))
    padded[:, 1:-1, 1:-1] = inputs.reshape(n, 8, 8)
    flat = padded.reshape(n, _PADDED * _PADDED)
    rows = np.arange(n)[:, None]
    top_row = _PADDED * top_index
    bottom_row = _PADDED * bottom_index
    upper = (1.0 - right) * flat[rows, top_row + left_index] + right * flat[
        rows, top_row + right_index
    ]
    lower = (1.0 - right) * flat[rows, bottom_row + left_index] + right * flat[
        rows, bottom_row + right_index
    ]
    out: npt.NDArray[np.float64] = (1.0 - down) * upper + down * lower
    return out


def one_hot(labels: npt.NDArray[np.int64], classes: int) -> npt.NDArray[np.float64]:
    """Rows of the identity matrix picked by ``labels``, shape ``(len(labels), classes)``."""
    out = np.zeros((labels.shape[0], classes))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def softmax_cross_entropy(
    logits: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]
) -> tuple[float, npt.NDArray[np.float64]]:
    """Mean cross-entropy of ``logits`` (n, classes) and its gradient with respect to them."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    picked = shifted[np.arange(n), labels]
    loss = float(np.mean(np.log(total[:, 0]) - picked))
    grad = exp / total
    grad[np.arange(n), labels] -= 1.0
    grad /= n
    return loss, grad
