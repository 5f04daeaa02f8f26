"""A normalisation ``x / sum(x, axis, keepdims=True)`` (a softmax's last step) differentiated
whole (adcompiler.templates.idioms.normalisation): the numerator's rule gives ``(g - sum(g *
q)) / y``, the denominator's zero. Checked against the tape (whose arrays keep divide's plain
rules) and finite differences, at sizes below and above the planner's 32 KiB and numexpr's
2^18 elements, with the quotient's parts read elsewhere too, in float32, and twice
differentiated (the Hessian against differences of the gradient)."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad, tape_gradients

RNG = np.random.default_rng(33)


def attention_softmax(s, w):
    e = np.exp(s - np.max(s, axis=2, keepdims=True))
    p = e / np.sum(e, axis=2, keepdims=True)
    return np.sum(np.tanh(p * w))


def columns(x, w):
    e = np.exp(x)
    return np.sum(e / np.sum(e, axis=0, keepdims=True) * w)


def whole(x, w):
    e = np.exp(x)
    return np.sum(e / np.sum(e, axis=None, keepdims=True) * w)


def parts_read_again(x, w):
    e = np.exp(x)
    t = np.sum(e, axis=1, keepdims=True)
    q = e / t
    return np.sum(q * w) + np.sum(np.log(t)) + np.sum(e * w)   # t and e read elsewhere


def positive_weights(x, w):
    a = x * x + 1.0                                          # not an exp: any positive x
    return np.sum(a / np.sum(a, axis=-1, keepdims=True) * w)


def not_the_same_numerator(x, w):
    e = np.exp(x)
    return np.sum(e * 2.0 / np.sum(e, axis=1, keepdims=True) * w)   # e * 2 / sum(e): plain


CASES = [attention_softmax, columns, whole, parts_read_again, positive_weights,
         not_the_same_numerator]
SHAPES = {attention_softmax: [(2, 3, 5), (4, 64, 64), (4, 256, 256)]}
OTHER = [(3, 5), (64, 128), (512, 512)]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("size", [0, 1, 2], ids=["small", "planned", "numexpr"])
def test_gradient_matches_the_tape(f, size):
    shape = SHAPES.get(f, OTHER)[size]
    args = (RNG.standard_normal(shape), RNG.standard_normal(shape))
    got = ad.grad(f, wrt=("x" if f is not attention_softmax else "s", "w"))(*args)
    for a, b in zip(got, tape_gradients(f, args)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    if size == 0:
        for k in range(2):
            np.testing.assert_allclose(got[k], numerical_grad(f, args, k), rtol=1e-6,
                                       atol=1e-8)


def test_the_idiom_is_what_the_code_computes():
    """One sum of ``g * q`` and no ``-g * q / y`` term: (dp - t) / y, not dp / y + t."""
    args = (RNG.standard_normal((4, 64, 64)), RNG.standard_normal((4, 64, 64)))
    g = ad.grad(attention_softmax, wrt=("s",))
    g(*args)
    code = "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))
    assert "np.negative(" not in code and "np.subtract(dp, " in code
    assert code.count("np.einsum('ijk,ijk->ij', dp, p)[..., None]") == 1   # sum(g * q, axis=2)
    assert code.count(".sum(axis=2") == 1                                  # the forward's sum


def test_float32_stays_float32():
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    w = RNG.standard_normal((8, 16)).astype(np.float32)
    got = ad.grad(columns, wrt=("x",))(x, w)[0]
    assert got.dtype == np.float32
    want = tape_gradients(columns, (x.astype(np.float64), w.astype(np.float64)))[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_hessian_matches_differences_of_the_gradient():
    def f(x):
        e = np.exp(x)
        return np.sum(np.sin(e / np.sum(e, axis=1, keepdims=True)))
    x = RNG.standard_normal((2, 3))
    h = ad.hessian(f)(x)
    grad = ad.grad(f)
    eps = 1e-6
    for i in range(2):
        for j in range(3):
            d = np.zeros_like(x)
            d[i, j] = eps
            col = (grad(x + d) - grad(x - d)) / (2 * eps)
            np.testing.assert_allclose(h[..., i, j] if h.ndim == 4 else h[:, :, i, j], col,
                                       rtol=1e-5, atol=1e-7)
