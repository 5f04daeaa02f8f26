"""Every cotangent has its primal's dtype (as JAX enforces): a float32 program's adjoint runs in
float32. A seed or a broadcast number feeding a float32 value's adjoint is ``np.float32(c)`` (or
folded into its reader as a weak Python number), never a float64 array that would carry the
backward pass (its products included) into float64 and be cast back at the end."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical

RNG = np.random.default_rng(7)
X32 = RNG.standard_normal((6, 5)).astype(np.float32)
W32 = (RNG.standard_normal((5, 4)) * 0.5).astype(np.float32)
B32 = RNG.standard_normal(4).astype(np.float32)
V32 = RNG.standard_normal(5).astype(np.float32)


def mlp(W, x, b):
    h = np.tanh(x @ W + b)
    return np.mean(h ** 2)


def sum_and_row(x):
    return 2.0 * np.sum(x ** 2) + np.sum(x[0])


def first(x):
    return x[0]


def scaled(x, a):
    return a * np.sum(x * x)


def as_python_float(x, a):
    return float(np.sum(np.sin(x))) * a


def mixed(x, y):
    return np.sum(x * y)


def extremum(x):
    return np.max(x)


def looped(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x) * i)
    return s


def branch(x):
    if np.sum(x) > 0:
        return np.sum(x ** 2)
    return np.mean(x)


def row_means(x):
    return np.sum(np.mean(x, axis=0) ** 2)


def identity(x):
    return x


def _no_float64(source):
    assert "float64" not in source and ".astype(" not in source, source
    assert "broadcast_to(1.0" not in source and "broadcast_to(0." not in source, source


def _close32(f, args, wrt, grads):
    assert_matches_numerical(f, args, wrt, grads, rtol=2e-3, atol=2e-4)


def test_a_float32_mlp_runs_its_adjoint_in_float32():
    g = ad.grad(mlp, wrt=(0, 2))
    dW, db = g(W32, X32, B32)
    assert dW.dtype == db.dtype == np.float32
    _no_float64(g.source)
    _close32(mlp, (W32, X32, B32), (0, 2), (dW, db))
    w64, x64, b64 = (a.astype(np.float64) for a in (W32, X32, B32))
    dW64, db64 = ad.grad(mlp, wrt=(0, 2))(w64, x64, b64)
    np.testing.assert_allclose(dW, dW64, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(db, db64, rtol=1e-5, atol=1e-7)


def test_a_large_float32_mlp_keeps_its_work_arrays_float32():
    x = RNG.standard_normal((256, 64)).astype(np.float32)
    w = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
    b = np.zeros(64, np.float32)
    g = ad.grad(mlp, wrt=(0, 2))
    dW, db = g(w, x, b)
    assert dW.dtype == db.dtype == np.float32
    _no_float64(g.source)  # the planner's buffers too
    h = np.tanh(x @ w + b)
    dt = (2.0 / h.size) * h * (1 - h * h)
    np.testing.assert_allclose(dW, x.T @ dt, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(db, dt.sum(0), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("f, args, wrt", [
    (sum_and_row, (X32,), (0,)),
    (first, (V32,), (0,)),
    (scaled, (V32, 2.5), (0, 1)),
    (as_python_float, (V32, 1.5), (0, 1)),
    (extremum, (np.array([1.0, 3.0, 3.0, -2.0], np.float32),), (0,)),
    (looped, (V32,), (0,)),
    (branch, (V32,), (0,)),
    (branch, (-np.abs(V32),), (0,)),
    (row_means, (X32,), (0,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_float32_gradients_are_float32_all_the_way(f, args, wrt):
    g = ad.grad(f, wrt=wrt)
    grads = g(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    _close32(f, args, wrt, grads)
    assert "float64" not in g.source and "broadcast_to(1.0" not in g.source, g.source


def test_a_read_of_one_entry_scatters_a_float32_one():
    g = ad.grad(first)
    assert g(V32).dtype == np.float32
    assert "np.float32(1.0)" in g.source


def test_a_scalar_python_factor_is_cast_as_a_number():
    """``np.float32(1.0) * a`` is ``np.float32(a)``; a Python float has no ``.astype``."""
    g = ad.grad(as_python_float, wrt=(0, 1))
    dx, da = g(V32, 1.5)
    assert dx.dtype == np.float32 and type(da) is float
    np.testing.assert_allclose(dx, 1.5 * np.cos(V32), rtol=1e-6)
    assert "np.float32(a)" in g.source


def test_the_cotangent_of_a_float32_operand_of_a_float64_product_is_float32():
    y = V32.astype(np.float64) + 1.0
    g = ad.grad(mixed, wrt=(0, 1))
    dx, dy = g(V32, y)
    assert (dx.dtype, dy.dtype) == (np.float32, np.float64)
    np.testing.assert_allclose(dx, y, rtol=1e-6)
    np.testing.assert_allclose(dy, V32, rtol=1e-6)


def test_a_float16_mean_spreads_a_float16_number():
    x = np.linspace(-1, 1, 5).astype(np.float16)
    g = ad.grad(row_means)
    got = g(x.reshape(1, 5))
    assert got.dtype == np.float16 and "float64" not in g.source
    np.testing.assert_allclose(got, 2 * x.reshape(1, 5), rtol=1e-3)


def test_a_0d_float32_identity_has_a_float32_gradient():
    x = np.asarray(np.float32(2.0))
    g = ad.grad(identity)
    got = g(x)
    assert got.dtype == np.float32 and got.shape == () and got == 1.0
    assert "broadcast_to(1.0" not in g.source


# ---- custom_vjp: the user's backward receives a cotangent of the output's dtype -------------
SEEN = []


@ad.custom_vjp
def cumulative(x):
    return np.cumsum(x)


def cumulative_fwd(x):
    return np.cumsum(x), None


def cumulative_bwd(res, g):
    SEEN.append(g.dtype)
    return (np.cumsum(g[::-1])[::-1],)


cumulative.defvjp(cumulative_fwd, cumulative_bwd)


def through_custom(x):
    return np.sum(cumulative(x) ** 2)


def test_custom_vjp_backward_gets_a_float32_cotangent():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    SEEN.clear()
    got = ad.grad(through_custom)(x)
    assert got.dtype == np.float32
    assert SEEN and all(d == np.float32 for d in SEEN)
    np.testing.assert_array_equal(got, np.array([20.0, 18.0, 12.0], np.float32))


def test_float64_programs_keep_weak_literals():
    """Nothing changes for float64: the seed stays a Python number (no np.float64 casts)."""
    g = ad.grad(first)
    g(V32.astype(np.float64))
    assert "dx[0] = 1.0" in g.source and "float64(" not in g.source
