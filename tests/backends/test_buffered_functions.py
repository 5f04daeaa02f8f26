"""Large fused chains of the newer elementwise functions (log2, hypot, cbrt, arcsinh, floor...)
run as ufuncs writing into reused buffers (``out=``), as the older ones do, with right values."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.planner import UFUNCS
from adcompiler.ir.primitives import PRIMS
from tests.helpers import numerical_grad


def mixed(x, y):
    return np.sum(np.log2(1.0 + x * x) * np.hypot(x, y) + np.cbrt(y) * np.arcsinh(x)
                  - np.floor(x) * y + np.log10(y) * np.exp2(0.1 * x) * np.arctan2(x, y))


def inverse_hyperbolic(x):
    return np.sum(np.arccosh(1.5 + x * x) * np.arctanh(0.5 * np.tanh(x)) + np.trunc(x) * x
                  + np.ceil(x) * np.rint(x) * x)


def test_every_elementwise_numpy_function_can_write_into_a_buffer():
    ufuncs = {n for n, p in PRIMS.items() if p.family == "elementwise"
              and isinstance(getattr(np, n, None), np.ufunc)}
    assert ufuncs - UFUNCS == set()


@pytest.mark.parametrize("n", [7, 100_000])
def test_values_small_and_large(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n), rng.random(n) + 0.5
    dx, dy = ad.grad(mixed, wrt=(0, 1))(x, y)
    (hx,) = ad.grad(inverse_hyperbolic)(x),
    if n == 7:   # finite differences away from the jumps of floor/trunc/ceil/rint
        np.testing.assert_allclose(dx, numerical_grad(mixed, [x, y], 0), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(dy, numerical_grad(mixed, [x, y], 1), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hx, numerical_grad(inverse_hyperbolic, [x], 0),
                                   rtol=1e-6, atol=1e-7)
    else:        # the buffered code agrees with the small, unbuffered one entry by entry
        small = ad.grad(mixed, wrt=(0, 1))
        for k in (0, 3, n // 2, n - 1):
            sx, sy = small(x[k:k + 7], y[k:k + 7])
            np.testing.assert_allclose([dx[k], dy[k]], [sx[0], sy[0]], rtol=1e-12)


def test_large_chain_is_buffered():
    n = 100_000
    rng = np.random.default_rng(0)
    g = ad.grad(mixed, wrt=(0, 1))
    g(rng.standard_normal(n), rng.random(n) + 0.5)
    for name in ("log2", "hypot", "cbrt", "arcsinh", "floor", "log10", "exp2", "arctan2"):
        assert f"np.{name}(" in g.source
        lines = [ln for ln in g.source.splitlines() if f"np.{name}(" in ln and "#" not in ln]
        assert lines and all("out=_buf" in ln for ln in lines), (name, lines)
