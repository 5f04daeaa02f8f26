"""The sign of a zero the user's code computes is NumPy's: ``x + 0.0`` is not ``x`` where
``x`` is ``-0.0`` (``arctan2`` and ``1 / x`` tell them apart), so the simplifier keeps it in
the user's computation; ``x + (-0.0)`` and ``x - 0.0`` are ``x`` for every ``x`` and go."""

import numpy as np

import adcompiler as ad


def plus_zero(x):
    z = x * 0.0 + 0.0
    return np.sum(np.arctan2(z, -1.0)) + np.sum(x * x)


def minus_negative_zero(x):
    z = x * 0.0 - (-0.0)
    return np.sum(np.arctan2(z, -1.0)) + np.sum(x * x)


def zero_plus(x):
    z = 0.0 + x * 0.0
    return np.sum(1.0 / (z - 1.0) + np.arctan2(z, -1.0))


def exact_identities(x):
    a = x + (-0.0)
    b = a - 0.0
    return np.sum(b * x)


X = np.array([-1.0, 2.0, 3.0])  # x * 0.0 is -0.0 at the first entry


def test_adding_positive_zero_keeps_numpys_sign():
    for f in (plus_zero, minus_negative_zero, zero_plus):
        value, grad = ad.value_and_grad(f)(X)
        assert value == f(X)  # arctan2(-0.0, -1) is -pi, arctan2(+0.0, -1) is +pi
    assert ad.value_and_grad(plus_zero)(X)[0] == 3 * np.pi + 14.0  # the old code: pi + 14
    assert np.array_equal(ad.grad(plus_zero)(X), 2.0 * X)


def test_exact_zero_identities_still_vanish():
    g = ad.value_and_grad(exact_identities)
    value, grad = g(np.array([-0.0, 2.0]))
    assert value == 4.0 and np.array_equal(grad, [-0.0, 4.0])
    code = [ln for ln in g.source.splitlines() if not ln.strip().startswith("#")]
    assert not any("0.0" in ln for ln in code) and "(x * x).sum()" in g.source
