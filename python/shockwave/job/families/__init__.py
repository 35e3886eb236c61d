"""The bundled real workloads: small models trained for real with numpy (float64).

:data:`FAMILIES` maps a family's name (a workload's ``"run": {"family": ...}``) to its
:class:`Family`:

``softmax-digits``
    multinomial logistic regression on scikit-learn's digits, nudged by one pixel (16,173
    samples per epoch);
``mlp-digits``
    a 64-256-256-10 ReLU perceptron on the same data;
``rnn-sines``
    an Elman RNN (tanh, hidden 48, 24 steps, backpropagation through time) predicting the next
    value of noisy sums of sinusoids (8,192 sequences per epoch).

Every family allows batch sizes 16 to 256 (powers of two) and starts a job at 16 or 32.
"""

from __future__ import annotations

from shockwave.job.families import mlp_digits, rnn_sines, softmax_digits
from shockwave.job.families.family import Dataset, Family, Params

#: Bundled families by name.
FAMILIES: dict[str, Family] = {
    family.name: family for family in (softmax_digits.FAMILY, mlp_digits.FAMILY, rnn_sines.FAMILY)
}


def get_family(name: str) -> Family:
    """The bundled family called ``name``.

    Raises:
        ValueError: naming ``run.family`` and the known families if there is none.
    """
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"run.family: unknown family {name!r} (bundled: {', '.join(sorted(FAMILIES))})"
        ) from None


__all__ = ["FAMILIES", "Dataset", "Family", "Params", "get_family"]
