"""A scaling ``x / sqrt(mean(x * x, axis, keepdims=True) + eps)`` (a layer norm's last step)
differentiated whole (adcompiler.templates.idioms.root_mean_square): the numerator's rule gives
``(g - a * mean(g * a)) / y``, the denominator's no share at all (its chain is not walked).
Checked against the tape (whose arrays keep divide's plain rules) and finite differences, at
sizes below and above the planner's 32 KiB and numexpr's 2^18 elements, with the scale read
elsewhere too, ``eps`` a differentiated input (plain rules), in float32, and twice
differentiated (the Hessian against differences of the gradient)."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad, tape_gradients

RNG = np.random.default_rng(34)


def layer_norm(x, w):
    xc = x - np.mean(x, axis=1, keepdims=True)
    a = xc / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + 1e-5)
    return np.sum(np.tanh(a * w))


def rms_norm_columns(x, w):
    return np.sum(x / np.sqrt(1e-3 + np.mean(x ** 2, axis=0, keepdims=True)) * w)


def no_eps_last_axis(x, w):
    return np.sum(np.sin(x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True)) * w))


def scale_read_again(x, w):
    y = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 0.5)
    return np.sum(x / y * w) + np.sum(np.log(y)) + np.sum(y * x * w)   # y read elsewhere


def not_the_same_numerator(x, w):
    y = np.sqrt(np.mean(w * w, axis=1, keepdims=True) + 0.5)
    return np.sum(np.tanh(x / y) * w)                                    # w's scale: plain


CASES = [layer_norm, rms_norm_columns, no_eps_last_axis, scale_read_again,
         not_the_same_numerator]
SHAPES = [(3, 5), (64, 128), (512, 640)]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("size", [0, 1, 2], ids=["small", "planned", "numexpr"])
def test_gradient_matches_the_tape(f, size):
    args = (RNG.standard_normal(SHAPES[size]), RNG.standard_normal(SHAPES[size]))
    got = ad.grad(f, wrt=("x", "w"))(*args)
    for a, b in zip(got, tape_gradients(f, args)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    if size == 0:
        for k in range(2):
            np.testing.assert_allclose(got[k], numerical_grad(f, args, k), rtol=1e-6,
                                       atol=1e-8)


def test_three_axes_against_differences():
    def f(x, w):
        return np.sum(np.tanh(x / np.sqrt(np.mean(x * x, axis=2, keepdims=True) + 1e-2) * w))
    args = (RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 4)))
    got = ad.grad(f, wrt=("x",))(*args)[0]
    np.testing.assert_allclose(got, numerical_grad(f, args, 0), rtol=1e-6, atol=1e-8)


def test_a_differentiated_eps_keeps_the_plain_rules():
    def f(x, eps):
        return np.sum(np.tanh(x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)))
    x = RNG.standard_normal((4, 6))
    got = ad.grad(f, wrt=("x", "eps"))(x, 0.3)
    want = tape_gradients(f, (x, np.asarray(0.3)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-12)
    step = 1e-6
    np.testing.assert_allclose(got[1], (f(x, 0.3 + step) - f(x, 0.3 - step)) / (2 * step),
                               rtol=1e-6)


def test_the_idiom_is_what_the_code_computes():
    """One row dot of ``g * a`` and none of the chain's terms (no ``* 0.5``, no ``-g``)."""
    args = (RNG.standard_normal((64, 128)), RNG.standard_normal((64, 128)))
    g = ad.grad(layer_norm, wrt=("x",))
    g(*args)
    code = "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))
    assert "np.negative(" not in code and "0.5" not in code
    assert code.count("np.einsum('ij,ij->i', ") == 2                    # the forward's mean
    assert code.count("np.einsum('ij,ij->i', xc, xc)") == 1             # and the adjoint's


def test_float32_stays_float32():
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    w = RNG.standard_normal((8, 16)).astype(np.float32)
    got = ad.grad(layer_norm, wrt=("x",))(x, w)[0]
    assert got.dtype == np.float32
    want = tape_gradients(layer_norm, (x.astype(np.float64), w.astype(np.float64)))[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_hessian_matches_differences_of_the_gradient():
    def f(x):
        return np.sum(np.sin(x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 0.1)))
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
