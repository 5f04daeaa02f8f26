"""Small integer powers are spelled as NumPy computes them fast: ``x ** 2`` in a buffered chain
as ``np.square(x, out=b)`` (``np.power(x, 2, out=b)`` skips NumPy's fast path and calls libm's
pow), ``x ** 3`` as products (as JAX's integer powers), at every size."""

import numpy as np

import adcompiler as ad


def gelu_sum(x):
    return np.sum(0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))))


def _expected(x):
    k = 0.7978845608028654
    th = np.tanh(k * (x + 0.044715 * x ** 3))
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3 * 0.044715 * x * x)


def test_cubes_and_squares_avoid_libm_pow_and_keep_their_values():
    for n in (7, 65536):   # an expression, then buffered chains
        x = np.random.default_rng(n).standard_normal(n)
        g = ad.value_and_grad(gelu_sum)
        value, dx = g(x)
        np.testing.assert_allclose(value, gelu_sum(x), rtol=1e-13)
        np.testing.assert_allclose(dx, _expected(x), rtol=1e-12, atol=1e-14)
        code = [line for line in g.source.splitlines() if not line.strip().startswith("#")]
        assert not any("np.power(" in line or "** 3" in line for line in code)
