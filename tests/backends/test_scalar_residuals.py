"""A loop's Python-float residuals (``k = float(np.mean(y))``, ``math.tanh(k)``) are kept in a
Python list and read back as they are (``saved.append(t1)``, ``t2 = saved[k]``), not stored
into a NumPy array and read with ``float(saved[k])`` (backends/emit.py, ``float_lists``; plain
code, which the frontend reads again for second order, keeps its arrays). Values against
the unoptimised gradient and central differences (entry by entry where small, along a random
direction past the planner's threshold of 4,096 elements; the tape refuses ``float()`` of a
tensor), for ``for`` and ``while`` loops and second order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from tests.helpers import assert_matches_numerical, directional_difference


def damped(x, w):
    y = x
    for t in range(12):
        k = float(np.mean(y))
        y = y * math.tanh(k) + 0.1 * y * w
    return np.sum(y * y)


def damped_while(x, w):
    y = x
    t = 0
    while t < 9:
        k = float(np.sum(y * w))
        y = y * math.cos(0.1 * k) + 0.05 * w
        t += 1
    return np.sum(y)


def long_damped(x, w):
    y = x
    for t in range(4100):    # a stack of 4,100 floats, 32.8 KB: pooled (planner.MIN_BYTES)
        k = float(np.mean(y))
        y = y * (1.0 - 1e-4 * math.tanh(k)) + 1e-5 * w
    return np.sum(y * y)


def _args(n, seed=0):
    rng = np.random.default_rng(seed)
    return 0.5 + 0.1 * rng.standard_normal(n), rng.uniform(0.5, 1.5, n) / n


def _close(got, want, rtol=1e-12):
    for a, b in zip(got, want):
        assert np.linalg.norm(a - b) <= rtol * np.linalg.norm(b), (a, b)


@pytest.mark.parametrize("f", [damped, damped_while])
@pytest.mark.parametrize("n", [6, 5000])
def test_values(f, n):
    args = _args(n)
    g = ad.grad(f, wrt=(0, 1))
    got = g(*args)
    with unoptimised():
        _close(got, ad.grad(f, wrt=(0, 1))(*args))
    if n < 10:
        assert_matches_numerical(f, args, (0, 1), got)
    else:
        rng = np.random.default_rng(2)
        v = [rng.standard_normal(n) for _ in args]
        along = sum(np.dot(gi, vi) for gi, vi in zip(got, v))
        assert along == pytest.approx(float(directional_difference(f, args, v)), rel=1e-6)
    assert "float(saved" not in g.source and "saved.append(" in g.source


def test_second_order():
    """The plain gradient's lists are read again (grad of grad): the Hessian-vector product
    against differences of the gradient."""
    x, w = _args(5)
    v = np.linspace(-1.0, 1.0, 5)
    hvp = ad.grad(lambda_free, wrt=(0,))
    got = hvp(x, w, v)[0]
    g = ad.grad(damped, wrt=(0,))
    eps = 1e-6
    want = (g(x + eps * v, w)[0] - g(x - eps * v, w)[0]) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def lambda_free(x, w, v):
    return np.sum(grad_damped(x, w)[0] * v)


grad_damped = ad.grad(damped, wrt=(0,))


def test_a_pooled_stack_stays_an_array():
    """4,100 iterations: the floats' stack is large enough for the pool, which holds arrays
    only: it stays one (``float(saved[k])``), with the same values as the plain code's."""
    args = _args(6)
    g = ad.grad(long_damped, wrt=(0, 1))
    got = g(*args)
    with unoptimised():
        _close(got, ad.grad(long_damped, wrt=(0, 1))(*args))
    assert "saved.append(" not in g.source and "float(saved[" in g.source
    assert_matches_numerical(long_damped, args, (0, 1), got, rtol=1e-5)
