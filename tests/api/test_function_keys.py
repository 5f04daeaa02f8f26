"""Functions passed as static arguments: keyed by what compiling them reads, and checked.

A lambda written in the call (``g(x, lambda t: t * t)``) is a new object each time; it used to
compile again on every call and stay in the cache. And what a passed function read from its
globals or closure was never checked: rebinding ``k`` left ``lambda t: t * k`` at the old
``k``, silently. See :mod:`adcompiler.api.function_keys` and :mod:`adcompiler.api.state`."""

import functools

import numpy as np

import adcompiler as ad
from adcompiler.api.function_keys import FunctionKey

X = np.array([0.5, 1.0, 2.0])
k = 1.0


def loss(x, act):
    return np.sum(act(x))


def scale(t, factor):
    return t * factor


def times(c):
    return lambda t: t * c


def test_a_lambda_made_in_each_call_compiles_once():
    g = ad.grad(loss)
    for _ in range(5):
        assert np.array_equal(g(X, lambda t: t * t), 2 * X)
    for _ in range(3):
        assert np.array_equal(g(X, functools.partial(scale, factor=3.0)), [3.0] * 3)
    assert len(g._cache) == 2


def test_what_a_passed_function_closes_over_picks_the_code():
    g = ad.grad(loss)
    assert np.array_equal(g(X, times(2.0)), [2.0] * 3)
    assert np.array_equal(g(X, times(3.0)), [3.0] * 3)
    assert np.array_equal(g(X, times(2.0)), [2.0] * 3)
    zero = g(X, times(-0.0))  # -0.0 is not 0.0: the gradient's zeros carry its sign
    assert np.array_equal(np.signbit(zero), [True] * 3)
    assert not np.signbit(g(X, times(0.0))).any()
    assert np.array_equal(g(X, functools.partial(scale, factor=4.0)), [4.0] * 3)
    assert np.array_equal(g(X, functools.partial(scale, factor=5.0)), [5.0] * 3)
    assert np.array_equal(g(X, functools.partial(scale, 6.0)), [6.0] * 3)


def test_a_global_a_passed_lambda_reads_is_checked():
    global k
    g, f = ad.grad(loss), (lambda t: t * k)
    try:
        k = 1.0
        assert np.array_equal(g(X, f), [1.0] * 3)
        k = 2.0   # the old code kept k = 1.0 here
        assert np.array_equal(g(X, f), [2.0] * 3)
        assert np.array_equal(g(X, lambda t: t * k), [2.0] * 3)
    finally:
        k = 1.0


def test_a_closure_cell_rebound_between_calls_is_checked():
    g = ad.grad(loss)
    c = 1.0
    f = lambda t: t * c  # noqa: E731
    first = g(X, f)
    c = 3.0
    assert np.array_equal(first, [1.0] * 3) and np.array_equal(g(X, f), [3.0] * 3)
    results = [g(X, lambda t: t * step) for step in (1.0, 2.0, 1.0)]  # one shared cell
    assert [r[0] for r in results] == [1.0, 2.0, 1.0]


def test_function_keys_compare_what_compiling_reads():
    assert FunctionKey(times(2.0)) == FunctionKey(times(2.0))
    assert FunctionKey(times(2.0)) != FunctionKey(times(2))      # int and float differ
    assert FunctionKey(times(2.0)) != FunctionKey(lambda t: t * 2.0)   # other code
    marked = times(2.0)
    marked.note = "mine"    # a function with attributes of its own keys by identity
    assert FunctionKey(marked) != FunctionKey(times(2.0)) and FunctionKey(marked) == FunctionKey(marked)

    def recursive():
        def step(t, n):
            return t if n == 0 else step(t, n - 1)
        return step
    assert FunctionKey(recursive()) != FunctionKey(recursive())  # itself in its cell: no loop
