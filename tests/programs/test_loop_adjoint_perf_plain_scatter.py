"""Gradients of functions reading two slices of one array (Rosenbrock, total variation) can be
differentiated again: the plain source (read back by the frontend for ``jvp(grad(f))`` and
``jacobian(grad(f))``) fills the merged scatter with ``np.zeros`` and slice updates, which the
frontend reads; the code that runs keeps ``np.empty`` and zeros only the entries the slice
leaves unwritten."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.pipeline import compile_gradient
from adcompiler.api.signature import classify


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def total_variation(x):
    return np.sum(np.sqrt((x[1:] - x[:-1]) ** 2 + 1e-3))


def rosen_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] -= 400.0 * x[i]
        h[i + 1, i] -= 400.0 * x[i]
    return h


@pytest.mark.parametrize("n", [10, 4096, 6000])
def test_jvp_of_the_gradient_of_rosenbrock(n):
    x = np.linspace(-1.0, 1.0, n)
    v = np.cos(np.arange(n))
    _, hv = ad.jvp(ad.grad(rosen))(x, tangents=v)
    if n == 10:
        np.testing.assert_allclose(hv, rosen_hessian(x) @ v, rtol=1e-12, atol=1e-9)
    else:  # the Hessian is tridiagonal: its product computed directly
        d = np.zeros(n)
        d[:-1] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
        d[1:] += 200.0
        off = -400.0 * x[:-1]
        want = d * v
        want[:-1] += off * v[1:]
        want[1:] += off * v[:-1]
        np.testing.assert_allclose(hv, want, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("f", [rosen, total_variation])
def test_jacobian_of_the_gradient_is_the_hessian(f):
    x = np.linspace(-1.0, 1.0, 9) ** 3
    np.testing.assert_allclose(ad.jacobian(ad.grad(f))(x), ad.hessian(f)(x), rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("f", [rosen, total_variation])
def test_plain_source_has_no_empty_but_the_running_code_does(f):
    x = np.linspace(-1.0, 1.0, 9)
    avals = {"x": classify(x, "x", True)}
    plain = compile_gradient(f, avals, ("x",), "grad", plain=True).source
    assert "np.empty(" not in plain and "dx = np.zeros((9,), dtype=np.float64)" in plain
    g = ad.grad(f)
    got = g(x)
    assert "np.empty(" in g.source and "dx[8:] = 0.0" in g.source
    np.testing.assert_allclose(got, ad.jacobian(f)(x), rtol=1e-12, atol=1e-12)
