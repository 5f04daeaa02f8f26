"""An adjoint's product of arrays, quotients and scales regrouped so that the small factors
meet first, on the small array (adcompiler.passes.small_factors): a softmax's ``(dp - t) / y *
p * c`` as ``(dp - t) * p * (c / y)``, a layer norm's ``(g - a * m) / y`` as ``(g - a * m) *
(1 / y)``. Checked against the unoptimised gradient (which keeps the quotients as written) and
finite differences, below fusion's 4096 elements and the planner's 32 KiB, above them, and
above numexpr's 2^18 elements, plain and poisoned, in float32, with a traced float scale, and
where the tree does not qualify (an inner value read elsewhere, small factors of two shapes)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import poisoned, unoptimised
from tests.helpers import numerical_grad

RNG = np.random.default_rng(36)


def scaled_softmax(s, w):
    t = s * 0.25
    p = np.exp(t - np.max(t, axis=-1, keepdims=True))
    return np.sum(np.tanh(p / np.sum(p, axis=-1, keepdims=True) * w))


def layer_norm(x, w):
    xc = x - np.mean(x, axis=1, keepdims=True)
    return np.sum(np.sin(xc / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + 1e-5) * w))


def traced_scale(x, w, c):
    return np.sum(np.tanh(x * c / np.sum(x * x, axis=1, keepdims=True)) * w)


def scaled_quotient(x, w):
    r = np.sum(x * x, axis=1, keepdims=True) + 1.0
    return 0.5 * np.sum(np.sin(x / r) * w)


def scaled_by_rows(x, w, r):
    return np.sum(np.sin(x / r) * w) * 0.5        # dx = w * cos(x / r) / r * 0.5


def inner_read_again(x, w):
    r = np.sum(x * x, axis=1, keepdims=True) + 1.0
    return np.sum(np.sin(x / r * w)) + np.sum(np.cos(x / r))


def two_small_shapes(x, w, rows, cols):
    return np.sum(np.sin(x / rows / cols) * w)   # dx = g / cols / rows: (1, d) and (n, 1)


SHAPES = {"below": (6, 8), "above": (128, 96), "numexpr": (512, 640)}
CASES = [scaled_softmax, layer_norm, scaled_quotient, inner_read_again]


def _check(f, args, wrt, rtol=1e-10):
    g = ad.grad(f, wrt=wrt)
    got = g(*args)
    again = g(*args)   # the second call reuses the pool's buffers
    with unoptimised():
        want = ad.grad(f, wrt=wrt)(*args)
    atol = 1e-12 if args[0].dtype == np.float64 else 1e-5
    for a, b, c in zip(got, again, want):
        assert np.asarray(a).dtype == np.asarray(c).dtype
        np.testing.assert_allclose(a, c, rtol=rtol, atol=atol)
        np.testing.assert_array_equal(a, b)
    with poisoned():
        for a, c in zip(ad.grad(f, wrt=wrt)(*args), want):
            np.testing.assert_allclose(a, c, rtol=rtol, atol=atol)
    return g.source


def _code(src):
    return "\n".join(ln for ln in src.splitlines() if not ln.strip().startswith("#"))


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("size", list(SHAPES))
def test_against_the_unoptimised_gradient(f, size):
    args = (RNG.standard_normal(SHAPES[size]), RNG.standard_normal(SHAPES[size]))
    _check(f, args, ("x" if f is not scaled_softmax else "s", "w"), rtol=1e-9)
    if size == "below":
        got = ad.grad(f, wrt=(0, 1))(*args)
        for k in range(2):
            np.testing.assert_allclose(got[k], numerical_grad(f, args, k), rtol=1e-6,
                                       atol=1e-8)


def test_the_forward_quotient_is_read_again():
    """``(g - t) / y * p * c``: ``p / y`` is the forward's softmax, read again; no division."""
    args = (RNG.standard_normal((4, 64, 64)), RNG.standard_normal((4, 64, 64)))
    code = _code(_check(scaled_softmax, args, ("s",)))
    adjoint = code.split("np.einsum(", 1)[1]
    assert "divide" not in adjoint and " / " not in adjoint
    assert code.count("np.divide(") == 1  # the forward's p / sum(p)


def test_the_scale_meets_the_small_factor_first():
    x, w = RNG.standard_normal((128, 96)), RNG.standard_normal((128, 96))
    args = (x, w, RNG.uniform(1, 2, (128, 1)))
    code = _code(_check(scaled_by_rows, args, ("x",)))
    assert re.search(r"= 0\.5 / r$", code, re.M), code   # c / y, on (128, 1)
    assert code.count("divide(") == 1                     # the forward's x / r


def test_a_lone_quotient_becomes_a_product_above_fusion_size():
    above = _code(_source(layer_norm, (128, 96)))
    assert "1.0 / t" in above
    below = _code(_source(layer_norm, (6, 8)))
    assert "1.0 / t" not in below         # 48 elements: the division stays


def _source(f, shape):
    g = ad.grad(f, wrt=("x",))
    g(RNG.standard_normal(shape), RNG.standard_normal(shape))
    return g.source


@pytest.mark.parametrize("size", list(SHAPES))
def test_small_factors_of_two_shapes_do_not_meet(size):
    n, d = SHAPES[size]
    args = (RNG.standard_normal((n, d)), RNG.standard_normal((n, d)),
            RNG.uniform(1, 2, (n, 1)), RNG.uniform(1, 2, (1, d)))
    code = _code(_check(two_small_shapes, args, ("x",)))
    assert "/ rows" in code                # no (n, d) product of the two made on the way
    assert not any("1.0 / " in ln and "rows" in ln and "cols" in ln for ln in code.splitlines())
    if size == "below":
        got = ad.grad(two_small_shapes, wrt=("x",))(*args)[0]
        np.testing.assert_allclose(got, numerical_grad(two_small_shapes, args, 0), rtol=1e-6,
                                   atol=1e-8)


def test_one_reciprocal_serves_every_tree():
    code = _code(_source(inner_read_again, (128, 96)))
    assert code.count("1.0 / r") == 1


@pytest.mark.parametrize("size", ["below", "above"])
def test_a_traced_float_scale(size):
    args = (RNG.standard_normal(SHAPES[size]), RNG.standard_normal(SHAPES[size]), 0.7)
    got = _check(traced_scale, args, ("x", "c"), rtol=1e-9)
    assert got
    g = ad.grad(traced_scale, wrt=("x", "c"))(*args)
    np.testing.assert_allclose(g[1], (traced_scale(*args[:2], 0.7 + 1e-6)
                                      - traced_scale(*args[:2], 0.7 - 1e-6)) / 2e-6, rtol=1e-6)


def test_float32_stays_float32():
    args = tuple(RNG.standard_normal((4, 64, 64)).astype(np.float32) for _ in range(2))
    _check(scaled_softmax, args, ("s", "w"), rtol=2e-4)
    args = tuple(RNG.standard_normal((128, 96)).astype(np.float32) for _ in range(2))
    _check(layer_norm, args, ("x", "w"), rtol=2e-4)


def int_scales(x, w):
    a, b = x[1:], x[:-1]
    return np.sum(((a) ** 2) ** 2 * b * w)   # da = b * w * t1 * a * 2 * 2: int literals


def test_several_literals_are_left_as_written():
    """No ``(2 * 2)`` node of int type (the numba backend takes only float64 nodes), no product
    of two literals folded into one float (``adcompiler compile`` fits each literal that is a
    size as a number, log(n) and sqrt(d), not their product)."""
    args = (RNG.standard_normal(3001), RNG.standard_normal(3000))
    code = _code(_check(int_scales, args, ("x",)))
    assert "(2 * 2)" not in code and "4.0" not in code
