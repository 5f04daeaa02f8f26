"""The adjoint of a read that only adds axes (``w[:, :, None]``, ``x[None, :]``,
``x[..., None]``) is a reshape of the cotangent: no array of zeros filled and copied into."""

import re

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def weighted(m, r2, d):
    w = m[None, :] * r2
    return np.sum(d * w[:, :, None] * d)


def trailing(x):
    return np.sum(np.tanh(x[..., None] * x[..., None, :]))


def in_loop(x, v):
    for _ in range(3):
        v = v + np.sum(x[:, None, :] * v[None, :, :], axis=1)
    return np.sum(v * v)


def partial_slice(x):   # a slice that is not the whole axis keeps the scatter
    return np.sum(x[1:, None] * x[:-1, None])


def _args(name, rng):
    return {
        "weighted": (rng.random(4) + 0.5, rng.random((3, 4)) + 0.5, rng.standard_normal((3, 4, 2))),
        "trailing": (rng.standard_normal((2, 3)),),
        "in_loop": (0.3 * rng.standard_normal((3, 3)), rng.standard_normal((3, 3))),
        "partial_slice": (rng.standard_normal(5),),
    }[name]


@pytest.mark.parametrize("f, wrt", [(weighted, (0, 1, 2)), (trailing, (0,)),
                                    (in_loop, (0, 1)), (partial_slice, (0,))])
def test_gradient_matches_numerical(f, wrt):
    args = _args(f.__name__, np.random.default_rng(1))
    g = ad.grad(f, wrt=wrt)
    assert_matches_numerical(f, list(args), wrt, g(*args))


@pytest.mark.parametrize("f, wrt", [(weighted, (0, 1, 2)), (trailing, (0,)), (in_loop, (0, 1))])
def test_no_zeros_filled_for_an_expanding_read(f, wrt):
    args = _args(f.__name__, np.random.default_rng(2))
    g = ad.grad(f, wrt=wrt)
    g(*args)
    stores = re.findall(r"\w+\[[^\]]*None[^\]]*\] \+?= ", g.source)   # d[:, :, None] = ...
    assert not stores and "np.zeros((" not in g.source and "np.add.at" not in g.source, g.source
    assert re.search(r"np\.reshape\(|\.reshape\(\(", g.source)   # the method, on a computed array


def test_a_partial_slice_still_scatters():
    x = np.arange(5.0)
    g = ad.grad(partial_slice)
    np.testing.assert_allclose(g(x), [1.0, 2.0, 4.0, 6.0, 3.0])   # x[i-1] + x[i+1]
    assert "np.zeros(" in g.source


def test_hessian_through_an_expanding_read():
    x = np.random.default_rng(3).standard_normal((2, 3))
    h = ad.hessian(trailing)(x)
    eps, n = 1e-5, x.size
    numeric = np.empty((n, n))
    for k in range(n):
        up, down = x.copy().ravel(), x.copy().ravel()
        up[k] += eps
        down[k] -= eps
        numeric[:, k] = ((ad.grad(trailing)(up.reshape(x.shape))
                          - ad.grad(trailing)(down.reshape(x.shape))) / (2 * eps)).ravel()
    np.testing.assert_allclose(np.reshape(h, (n, n)), numeric, rtol=1e-5, atol=1e-7)
