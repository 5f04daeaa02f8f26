"""Products, wheres and viewed values in planned buffers (issue 33, the transformer block).

Three plans the transformer block's gradient lacked, each a fresh array and its page faults per
call: a batch of matrix products (``np.matmul(dt9, v.transpose(0, 2, 1), out=_buf1)``), a
product inlined into a planned ufunc (``np.matmul(a2, W1, out=_buf4)`` then ``np.add(_buf4,
b1, out=_buf4)``), maximum's adjoint ``where(x == y, g * 0.5, g * (x > y))`` (its ``where``
into ``b``'s buffer: ``np.positive(a, out=_buf, where=c)``), and a value read through a view
(``t5.T @ dt2``). Each is checked against the unoptimised gradient on random inputs, below the
planner's 32 KiB threshold, above it, and above numexpr's 2^18 elements, plain and poisoned
(a read of a released buffer shows as NaN).
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import poisoned, unoptimised

RNG = np.random.default_rng(33)


def attention(q, k, v):
    s = (q @ np.swapaxes(k, 1, 2)) * 0.25
    p = np.exp(s - np.max(s, axis=2, keepdims=True))
    p = p / np.sum(p, axis=2, keepdims=True)
    return np.sum(np.tanh(p @ v))


def relu_layer(x, W, b, W2):
    h = np.maximum(x @ W + b, 0.0)
    return np.sum((h @ W2) ** 2)


def relu_returned(x, w):
    return np.sum(np.maximum(x, 0.0) * w)   # dx = where(x == 0, w * 0.5, w * (x > 0)): returned


def relu_twice(x, w):
    h = np.maximum(x, 0.0) * w
    return np.sum(np.maximum(h, x) ** 2)     # two maximum adjoints, arrays on both sides


def viewed_in_a_loop(x, W):
    h = np.maximum(x @ W, 0.0)
    acc = h.T
    for i in range(3):
        acc = acc * 0.5 + np.tanh(acc)
    return np.sum(acc * h.T)


def updated_view(x, W):
    h = np.tanh(x @ W)
    t = h.T
    t[0] = 1.0          # a view of the value updated in place: never planned
    return np.sum(t * t)


def _attention_args(heads, seq, d):
    return tuple(RNG.standard_normal((heads, seq, d)) for _ in range(3))


def _relu_args(n, d, m):
    x = RNG.standard_normal((n, d))
    W = RNG.standard_normal((d, m))
    b = RNG.standard_normal(m)
    b[: m // 4] = 0.0
    x[: n // 3] = 0.0                 # rows where x @ W + b is b: ReLU ties at b == 0
    return x, W, b, RNG.standard_normal((m, 3))


SIZES = {"below": (2, 8, 4), "above": (4, 128, 32), "numexpr": (2, 400, 400)}
RELU = {"below": (8, 4, 16), "above": (128, 64, 512), "numexpr": (512, 64, 640)}


def _unoptimised_grad(f, args, wrt):
    with unoptimised():
        return ad.grad(f, wrt=wrt)(*args)


def _check(f, args, wrt, rtol=1e-10):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    again = g(*args)   # the second call reuses the pool's buffers
    want = _unoptimised_grad(f, args, wrt)
    for a, b, c in zip(got, again, want):
        np.testing.assert_allclose(a, c, rtol=rtol, atol=1e-12)
        np.testing.assert_array_equal(a, b)
    with poisoned():
        gp = ad.grad(f, wrt=wrt)
        for a, c in zip(gp(*args), want):
            np.testing.assert_allclose(a, c, rtol=rtol, atol=1e-12)
    return g.source


@pytest.mark.parametrize("size", list(SIZES))
def test_attention_products_in_buffers(size):
    src = _check(attention, _attention_args(*SIZES[size]), ("q", "k", "v"))
    if size != "below":   # the (H, S, S) scores' adjoint: a batch of products into a buffer
        assert "np.matmul(" in src and ", out=_buf" in src.split("np.matmul(", 1)[1]


@pytest.mark.parametrize("size", list(RELU))
def test_relu_layer_products_and_where_in_buffers(size):
    args = _relu_args(*RELU[size])
    src = _check(relu_layer, args, ("W", "b", "W2"))
    if size == "below":
        assert "out=" not in src
        return
    lines = [ln.strip() for ln in src.splitlines()]
    assert not any(ln.startswith("dt") and "np.where(" in ln for ln in lines)
    assert "where=_buf" in src                      # the where into b's buffer
    assert "np.multiply(dh, 0.5, out=_buf" in src   # g * 0.5 only where the tie mask holds
    assert "np.matmul(x, W, out=_buf" in src        # the product into the add's buffer
    relu = next(ln for ln in lines if ln.startswith("h = "))
    assert "out=_buf" in relu                       # read by h.T @ dt2, planned all the same


def test_relu_ties_take_half_the_gradient():
    """At a tie (x @ W + b == 0) maximum's rule gives half of g: the planned where keeps it."""
    x = np.zeros((128, 64))
    W = RNG.standard_normal((64, 512))
    b = np.zeros(512)
    b[::2] = 1.0
    W2 = RNG.standard_normal((512, 3))
    g = ad.grad(relu_layer, wrt=("b",))
    got = g(x, W, b, W2)
    assert "where=_buf" in g.source
    h = np.maximum(b, 0.0)
    dh = 2.0 * (h @ W2) @ W2.T              # every row alike: x is zero
    slope = np.where(b > 0, 1.0, 0.5)
    np.testing.assert_allclose(got[0], 128 * dh * slope, rtol=1e-12)


@pytest.mark.parametrize("n", [8, 200, 600])
def test_viewed_value_read_in_a_loop(n):
    args = (RNG.standard_normal((n, 16)), RNG.standard_normal((16, 64)))
    _check(viewed_in_a_loop, args, ("x", "W"))


@pytest.mark.parametrize("n", [8, 200])
def test_value_whose_view_is_updated_is_not_planned(n):
    args = (RNG.standard_normal((n, 64)), RNG.standard_normal((64, 64)))
    _check(updated_view, args, ("x", "W"))


@pytest.mark.parametrize("f", [relu_returned, relu_twice])
@pytest.mark.parametrize("n", [16, 96, 600])
def test_maximum_adjoints_with_ties(f, n):
    x = RNG.standard_normal((n, n))
    x[::3] = 0.0                             # ties with the literal 0
    w = RNG.standard_normal((n, n))
    w[1::4] = 0.0                            # (x * w) ties with x where x is zero
    _check(f, (x, w), ("x", "w"))


def projected_heads(a, Wq, Wk):
    S, D = a.shape
    q = (a @ Wq).reshape(S, 2, D // 2).transpose((1, 0, 2))   # square products, viewed
    k = (a @ Wk).reshape(S, 2, D // 2).transpose((1, 0, 2))
    return np.sum(np.tanh(q @ np.swapaxes(k, 1, 2)))


@pytest.mark.parametrize("n", [8, 128, 512])
def test_square_products_read_through_views(n):
    args = (RNG.standard_normal((n, n)), RNG.standard_normal((n, n)) / n ** 0.5,
            RNG.standard_normal((n, n)) / n ** 0.5)
    src = _check(projected_heads, args, ("a", "Wq", "Wk"))
    assert "_threaded(np.matmul" not in src          # a product is never cut like a ufunc
    if n >= 128:                                     # 128 KiB and 2 MiB: planned, as statements
        assert "np.matmul(a, Wq, out=_buf" in src and "np.matmul(a, Wk, out=_buf" in src
