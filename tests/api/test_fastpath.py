"""The fast call path (adcompiler/api/fastpath.py): after a signature is compiled, a generated guard
chain sends calls of that signature straight to the generated code. A miss must never be wrong:
each case below compares with the gradient written by hand."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.api import fastpath


def f(x, y, n):
    return np.sum(np.sin(x) * y) * n


def square(x):
    return np.sum(x * x)


def cube(x):
    return x * x * x


def triple(x):
    return 3.0 * x


def grads(x, y, n):
    return np.cos(x) * y * n, np.sin(x) * n


@pytest.fixture
def g():
    return ad.grad(f, wrt=("x", "y"))


def check(result, expected, rtol=1e-13):
    for r, e in zip(result, expected):
        np.testing.assert_allclose(r, e, rtol=rtol)


def test_repeated_calls_use_the_chain_and_stay_right(g):
    x, y = np.linspace(0, 1, 3), np.linspace(1, 2, 3)
    check(g(x, y, 2), grads(x, y, 2))
    assert "_adc_dtype0_0" in type(g).__call__.__code__.co_names  # the chain holds a guard
    for scale in (1.0, -3.0):                                 # new values, same signature
        check(g(x * scale, y, 2), grads(x * scale, y, 2))


def test_static_argument_value_shape_dtype_and_keywords_miss_safely(g):
    x, y = np.linspace(0, 1, 3), np.linspace(1, 2, 3)
    check(g(x, y, 2), grads(x, y, 2))
    check(g(x, y, 3), grads(x, y, 3))                         # another static value
    x4, y4 = np.linspace(0, 1, 4), np.linspace(1, 2, 4)
    check(g(x4, y4, 2), grads(x4, y4, 2))                     # another shape
    x32 = x.astype(np.float32)
    r = g(x32, y, 2)
    assert r[0].dtype == np.float32
    check(r, grads(x32.astype(np.float64), y, 2), rtol=1e-6)
    check(g(x, y=y, n=2), grads(x, y, 2))                     # keywords take the full path
    swapped = np.asfortranarray(np.ones((2, 2)))[0]           # a view: still an ndarray
    check(g(swapped, swapped, 1), grads(swapped, swapped, 1))


def test_wrong_arity_reports_like_python(g):
    x = np.ones(3)
    g(x, x, 1)
    with pytest.raises(TypeError, match="n"):
        g(x, x)


def test_the_chain_stops_growing_past_max_guards():
    h = ad.grad(square)
    for n in range(1, fastpath.MAX_GUARDS + 4):
        x = np.arange(float(n))
        np.testing.assert_array_equal(h(x), 2 * x)
    guarded = [name for name in type(h).__call__.__code__.co_names  # one dtype per guard
               if name.startswith("_adc_dtype")]
    assert len(guarded) == fastpath.MAX_GUARDS
    x = np.arange(float(fastpath.MAX_GUARDS + 2))             # served by the slow path's dict
    np.testing.assert_array_equal(h(x), 2 * x)


def test_gradient_objects_do_not_share_their_chains():
    a, b = ad.grad(cube), ad.grad(triple)
    assert a(2.0) == 12.0 and b(2.0) == 3.0 and a(5.0) == 75.0
    assert type(a) is not type(b) and isinstance(a, ad.GradientFunction)
    assert repr(a).startswith("<adcompiler.grad of")
