"""Planned buffers meet control flow: a buffer lives while any name that may hold it is read.

The planner puts large elementwise results into reused ``out=`` buffers (at least
``planner.MIN_BYTES``: 4,096 float64). It used to release a buffer at the last read of the value
written into it, while a loop's slot (``dacc_1 = dacc_3``) or a while loop's residual list
(``hs.append(h)``) still held the same array, and to return a pool buffer as the gradient where
a while loop ran no iteration. Each case here is compared, at sizes on both sides of the
threshold, with the unoptimised compiled gradient and with central differences at one entry.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends import planner
from adcompiler.backends.check_modes import unoptimised


def accumulator(x):
    c = np.sin(x)
    acc = c * 0.5
    for i in range(4):
        c = np.tanh(c * 0.91 + 0.42)
        acc += c * c
    return np.mean(acc * acc)


def while_residuals(x, a):
    h = np.sin(x)
    k = 0
    while np.mean(h * h) < 2.0 and k < 6:
        h = h * a + np.tanh(h)
        k += 1
    return np.mean(h * h)


def branch_result(x):
    h = np.cos(x) * 2.0
    if np.sum(x) > 0.0:
        g = h
    else:
        g = h * 3.0
    u = np.sin(x) * 0.5
    return np.mean(g * g) + np.mean(u * h)


def nested_slots(x):
    acc = np.sin(x) * 0.25
    for i in range(3):
        for j in range(2):
            acc = acc + np.tanh(acc * 0.5)
    return np.mean(acc * acc)


def central_difference(f, args, index, eps=1e-6):
    x = args[0]
    bumped = [np.array(x, copy=True) for _ in range(2)]
    bumped[0][index] += eps
    bumped[1][index] -= eps
    return (f(bumped[0], *args[1:]) - f(bumped[1], *args[1:])) / (2 * eps)


def _unoptimised_grad(f, wrt, args):
    with unoptimised():
        return ad.grad(f, wrt=wrt)(*args)


SIZES = [(8, 8), (63, 63), (64, 64), (70, 70), (256, 256)]  # 64 x 64 = 4,096: the threshold


@pytest.mark.parametrize("shape", SIZES)
@pytest.mark.parametrize("f, wrt, extra", [
    (accumulator, 0, ()), (while_residuals, 0, (1.1,)), (while_residuals, 1, (1.1,)),
    (branch_result, 0, ()), (nested_slots, 0, ())])
def test_gradient_agrees_with_unoptimised_and_differences(f, wrt, extra, shape):
    x = np.random.default_rng(sum(shape)).standard_normal(shape)
    args = (x, *extra)
    got = ad.grad(f, wrt=wrt)(*args)
    want = _unoptimised_grad(f, wrt, args)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    if wrt == 0:
        index = (3, 5)
        assert got[index] == pytest.approx(central_difference(f, args, index), rel=1e-5,
                                           abs=1e-9)


@pytest.mark.parametrize("numexpr", ["1", "0"])
@pytest.mark.parametrize("f, wrt, extra", [
    (accumulator, 0, ()), (while_residuals, 1, (1.1,)), (nested_slots, 0, ())])
def test_above_the_numexpr_threshold(f, wrt, extra, numexpr, monkeypatch):
    """At 512 x 512 (2^18 elements) chains go to numexpr and large ufuncs to threads, where
    numexpr is on; the buffers meet the loops the same way."""
    monkeypatch.setenv("ADCOMPILER_NUMEXPR", numexpr)
    x = np.random.default_rng(5).standard_normal((512, 512))
    g = ad.grad(f, wrt=wrt)
    got = g(x, *extra)
    assert "out=_buf" in g.source
    on_the_numexpr_path = "ne.evaluate" in g.source or "_threaded(" in g.source
    assert on_the_numexpr_path == (numexpr == "1")
    np.testing.assert_allclose(got, _unoptimised_grad(f, wrt, (x, *extra)), rtol=1e-10,
                               atol=1e-13)


def test_the_reproducer_is_planned_at_4096_elements():
    """The sizes above do reach the planner: the accumulator's gradient writes into buffers
    from 64 x 64 on, and not at 63 x 63."""
    assert planner.MIN_BYTES == 64 * 64 * 8
    g = ad.grad(accumulator)
    g(np.ones((64, 64)))
    assert "out=_buf" in g.source
    g(np.ones((63, 63)))
    assert "out=_buf" not in g.source


def zero_trip_while(x, a):
    h = x * 1.0
    k = 0
    while np.mean(h * h) < a and k < 6:
        h = h * 1.1 + np.tanh(h)
        k += 1
    return np.mean(h * h)


@pytest.mark.parametrize("a", [0.0, 5.0])   # 0.0: the loop runs no iteration
def test_a_returned_gradient_is_never_a_pool_buffer(a):
    """Where the while loop runs no iteration its adjoint returns the initial cotangent; that
    value is not planned, so the gradient a caller holds is not overwritten by the next call."""
    g = ad.grad(zero_trip_while)
    x = np.random.default_rng(1).standard_normal((70, 70)) * 0.1
    first = g(x, a)
    kept = first.copy()
    second = g(2 * x, a)
    np.testing.assert_array_equal(first, kept)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, _unoptimised_grad(zero_trip_while, 0, (x, a)),
                               rtol=1e-12)
