"""The bundled families: their data, their gradients and their augmentation."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from shockwave.job.checkpoint import digest
from shockwave.job.families import FAMILIES, Family, get_family, rnn_sines
from shockwave.job.families import digits as digits_module
from shockwave.job.step import gradient_halves

NAMES = sorted(FAMILIES)


def test_registry_holds_the_three_families() -> None:
    assert NAMES == ["mlp-digits", "rnn-sines", "softmax-digits"]
    with pytest.raises(ValueError, match=r"run\.family: unknown family 'resnet'"):
        get_family("resnet")


@pytest.mark.parametrize("name", NAMES)
def test_family_description_is_consistent(name: str) -> None:
    family = FAMILIES[name]
    assert family.name == name
    sizes = family.batch_sizes
    assert list(sizes) == sorted(set(sizes)) and all(b & (b - 1) == 0 for b in sizes)
    assert family.max_batch_size == sizes[-1]
    assert set(family.initial_batch_sizes) <= set(sizes)
    assert family.load().size == family.samples_per_epoch
    assert family.learning_rate > 0 and 0 <= family.momentum < 1 and family.gns_threshold > 0


def test_family_validates_itself() -> None:
    family = FAMILIES["softmax-digits"]
    fields = {f: getattr(family, f) for f in family.__dataclass_fields__}
    with pytest.raises(ValueError, match="powers of two"):
        Family(**{**fields, "batch_sizes": (16, 24)})
    with pytest.raises(ValueError, match="initial_batch_sizes"):
        Family(**{**fields, "initial_batch_sizes": (8,)})


def test_nudged_digits_are_the_original_and_its_eight_shifts() -> None:
    data = digits_module.nudged_digits()
    assert data.inputs.shape == (16_173, 64) and data.targets.shape == (16_173,)
    assert data.inputs.min() == 0.0 and data.inputs.max() == 1.0
    assert set(np.unique(data.targets).tolist()) == set(range(10))
    n = digits_module.DIGITS_IMAGES
    original = data.inputs[4 * n : 5 * n].reshape(-1, 8, 8)  # shift (0, 0) is the fifth copy
    raw = np.loadtxt(digits_module.digits_file(), delimiter=",")
    np.testing.assert_array_equal(original.reshape(n, 64), raw[:, :64] / 16.0)
    up_left = data.inputs[:n].reshape(-1, 8, 8)  # shift (-1, -1): content moves up and left
    np.testing.assert_array_equal(up_left[:, :7, :7], original[:, 1:, 1:])
    assert not up_left[:, 7, :].any() and not up_left[:, :, 7].any()
    np.testing.assert_array_equal(data.targets[:n], data.targets[4 * n : 5 * n])
    assert not data.inputs.flags.writeable


def test_digits_need_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="install scikit-learn"):
        digits_module.digits_file()


def test_sine_data_is_deterministic_and_shifted_by_one_step() -> None:
    data = rnn_sines.noisy_sines()
    assert data.inputs.shape == (rnn_sines.SEQUENCES, rnn_sines.LENGTH)
    np.testing.assert_array_equal(data.inputs[:, 1:], data.targets[:, :-1])
    again = rnn_sines.noisy_sines.__wrapped__()
    assert digest({"x": again.inputs, "y": again.targets}) == digest(
        {"x": data.inputs, "y": data.targets}
    )


@pytest.mark.parametrize("name", NAMES)
def test_gradients_match_finite_differences(name: str) -> None:
    family = FAMILIES[name]
    data = family.load()
    rng = np.random.default_rng(0)
    params = family.init_params(rng)
    inputs, targets = data.inputs[:6], data.targets[:6]
    _, gradients = family.loss_and_gradients(params, inputs, targets)
    assert sorted(gradients) == sorted(params)
    for key, value in params.items():
        assert gradients[key].shape == value.shape
        for _ in range(4):
            index = tuple(int(rng.integers(size)) for size in value.shape)
            saved = value[index]
            value[index] = saved + 1e-6
            plus, _ = family.loss_and_gradients(params, inputs, targets)
            value[index] = saved - 1e-6
            minus, _ = family.loss_and_gradients(params, inputs, targets)
            value[index] = saved
            numeric = (plus - minus) / 2e-6
            assert gradients[key][index] == pytest.approx(numeric, rel=1e-4, abs=1e-8)


@pytest.mark.parametrize("name", NAMES)
def test_half_batch_gradients_average_to_the_batch_gradient(name: str) -> None:
    family = FAMILIES[name]
    data = family.load()
    params = family.init_params(np.random.default_rng(1))
    for samples in (8, 7, 1):
        inputs, targets = data.inputs[:samples], data.targets[:samples]
        loss, gradient, halves = gradient_halves(family, params, inputs, targets)
        whole_loss, whole = family.loss_and_gradients(params, inputs, targets)
        assert loss == pytest.approx(whole_loss, rel=1e-12)
        for key in params:
            np.testing.assert_allclose(gradient[key], whole[key], rtol=1e-10, atol=1e-14)
        assert (halves is not None) == (samples == 8)


@pytest.mark.parametrize("name", NAMES)
def test_augmentation_is_driven_by_the_generator_only(name: str) -> None:
    family = FAMILIES[name]
    inputs = np.array(family.load().inputs[:5])
    before = inputs.copy()
    first = family.augment(inputs, np.random.default_rng(9))
    second = family.augment(inputs, np.random.default_rng(9))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(inputs, before)  # the input is left alone
    assert first.shape == inputs.shape and not np.array_equal(first, inputs)


def test_affine_augmentation_without_distortion_is_the_identity() -> None:
    class Fixed:
        def __init__(self, *values: object) -> None:
            self.values = list(values)

        def uniform(self, low: float, high: float, size: object) -> np.ndarray:
            return np.broadcast_to(np.asarray(self.values.pop(0), float), size).copy()  # type: ignore[arg-type]

    images = digits_module.nudged_digits().inputs[:4]
    same = digits_module.random_affine(images, Fixed(0.0, 1.0, 0.0))  # type: ignore[arg-type]
    np.testing.assert_array_equal(same, images)
    down = np.zeros((2, 4, 1))
    down[0] = 1.0  # sample one row further down: the image moves up by one pixel
    moved = digits_module.random_affine(images, Fixed(0.0, 1.0, down))  # type: ignore[arg-type]
    expected = digits_module.shift(images.reshape(-1, 8, 8), -1, 0).reshape(-1, 64)
    np.testing.assert_array_equal(moved, expected)


def test_affine_augmentation_in_blocks_equals_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    images = digits_module.nudged_digits().inputs[:300]
    blocked = digits_module.random_affine(images, np.random.default_rng(4))
    monkeypatch.setattr(digits_module, "AUGMENT_BLOCK", 10**6)
    whole = digits_module.random_affine(images, np.random.default_rng(4))
    np.testing.assert_array_equal(blocked, whole)
