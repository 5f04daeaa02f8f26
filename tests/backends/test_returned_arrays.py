"""Every returned gradient is a new, writable array of the caller's own: never the caller's
input, a compiled constant, another returned gradient, or a read-only broadcast. Each test
writes into what it got and checks that nothing else changed."""

import numpy as np
import pytest

import adcompiler as ad

X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.25, -3.0])


def with_constant(x):
    return np.sum(x * np.arange(3.0))


def tanh_of_sum(x, y):
    return np.sum(np.tanh(x + y))


def product(x, y):
    return np.sum(x * y)


def doubled(x):
    return np.sum(x * 2.0)


def head_times(x, y):
    return np.sum(x[:3] * y)


def scaled_n_times(x, w, n):
    for _ in range(n):
        x = x * 2.0
    return np.sum(x * w)


def identity_times_one(x):
    return x * 1.0


def square(x):
    return np.sum(x * x)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_constant_gradient_is_a_new_array_each_call(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    g = ad.grad(with_constant, backend=backend)
    first = g(X)
    first *= 100
    np.testing.assert_array_equal(g(X), [0.0, 1.0, 2.0])


def test_two_gradients_equal_by_construction_are_two_arrays():
    dx, dy = ad.grad(tanh_of_sum, wrt=(0, 1))(X, Y)
    want = 1 - np.tanh(X + Y) ** 2
    assert not np.shares_memory(dx, dy)
    dx[:] = 0
    np.testing.assert_allclose(dy, want, rtol=1e-15)


def test_a_gradient_equal_to_an_input_is_a_copy_of_it():
    x, y = X.copy(), Y.copy()
    g = ad.grad(product)(x, y)
    np.testing.assert_array_equal(g, Y)
    assert not np.shares_memory(g, y)
    g *= 0
    np.testing.assert_array_equal(y, Y)
    value, g = ad.value_and_grad(product, wrt="y")(x, y)
    g *= 0
    np.testing.assert_array_equal(x, X)
    big = np.arange(5.0)
    g = ad.grad(head_times, wrt="y")(big, Y)   # a view of the caller's array
    g[:] = -1
    np.testing.assert_array_equal(big, np.arange(5.0))


def test_a_broadcast_gradient_is_writable():
    g = ad.grad(doubled)(X)
    g -= 0.5
    np.testing.assert_array_equal(g, [1.5, 1.5, 1.5])


@pytest.mark.parametrize("n", [0, 2])
def test_a_loop_that_may_not_run_does_not_return_the_input(n):
    x = X.copy()
    g = ad.grad(scaled_n_times, wrt="w")(x, Y, n)
    np.testing.assert_array_equal(g, X * 2.0 ** n)
    g[:] = 7.0
    np.testing.assert_array_equal(x, X)


def test_a_vjp_does_not_hand_back_the_cotangent():
    ct = Y.copy()
    g = ad.vjp(identity_times_one)(X, cotangent=ct)
    np.testing.assert_array_equal(g, Y)
    g[:] = 0
    np.testing.assert_array_equal(ct, Y)


def test_new_arrays_are_returned_without_a_copy():
    g = ad.grad(square)
    np.testing.assert_array_equal(g(X), 2 * X)
    assert ".copy()" not in g.source
    assert ".copy()" in ad.grad(product).specialize(X, Y).source
