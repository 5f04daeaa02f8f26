"""Hessian-vector products through a gradient's own graph (forward over reverse), where the
gradient reads a branch's residual after the ``if`` and where the input is a 0-d array.

- A second ``if`` that rebinds a value (``v = np.tanh(v)``) yields nothing the gradient graph
  needs once dead code is gone: the adjoint reads ``v_3 = tanh(v_2)`` from inside the branch,
  under the same test. Activity did not look inside such an ``if``, so ``v_2`` got no tangent
  and H v dropped that term, silently (-0.59 for -1.03). Found by the large random programs.
- H v of a 0-d array input was an ``np.float64`` where its gradient is a 0-d array.
H v is compared with central differences of the compiled gradient along ``v``.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad


def two_ifs(x):
    if np.sum(x) > 5.0:
        v = x * 2.0
    else:
        v = np.tanh(x)
    if np.sum(x) > -5.0:
        v = np.tanh(v)
    return v.sum()


def rebound_in_a_branch_twice(x):
    h = np.sin(x)
    if np.sum(x) > 0.0:
        h = h * h
    if np.max(x) < 10.0:
        h = np.exp(-h)
    if np.min(x) > -10.0:
        h = np.tanh(h) * x
    return np.sum(h * h)


def _differences(f, x, v, eps=1e-6):
    g = ad.grad(f)
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


BASE = np.array([0.5, -1.0, 1.2])


@pytest.mark.parametrize("f, x", [
    (two_ifs, BASE), (two_ifs, 10 * BASE),   # 10: the first if takes its first branch
    (rebound_in_a_branch_twice, BASE), (rebound_in_a_branch_twice, -3 * BASE)])
def test_hvp_agrees_with_differences_of_the_gradient(f, x):
    v = np.array([1.0, 0.5, -2.0])
    g, hv = ad.hessian(f).hvp(x, tangents=v)
    np.testing.assert_allclose(g, ad.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(hv, _differences(f, x, v), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ad.hessian(f)(x) @ v, hv, rtol=1e-10, atol=1e-12)


def tanh_times(y):
    return np.sum(np.tanh(y) * y)


def test_hvp_of_a_0d_array_is_a_0d_array():
    y = np.array(0.5)
    g, hv = ad.hessian(tanh_times).hvp(y, tangents=np.array(1.0))
    assert type(g) is np.ndarray and g.shape == ()
    assert type(hv) is np.ndarray and hv.shape == ()
    assert float(hv) == pytest.approx(float(_differences(tanh_times, y, np.array(1.0))),
                                      rel=1e-6)
