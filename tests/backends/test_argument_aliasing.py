"""One array passed as two arguments of a function that writes into one of them (``f(a, a)``):
NumPy shows the other parameter the write, the compiled code (which updates a private copy)
would not, so the generated code refuses such a call with a ValueError naming the write.
Calls with separate arrays, and functions that write into no parameter, are unaffected. A
bare call of the user's own helper (``normalize_(y)``) is inlined for what it writes."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def write_then_read_other(x, y):
    x[0] = 5.0
    return np.sum(x * y)


def scale_in_place(x, y):
    x *= 2.0
    return np.sum(x * x * y)


def fill_in_loop(x, y):
    for i in range(2):
        x[i] = y[i + 1] * 2.0
    return np.sum(x * y)


def reads_only(x, y):
    return np.sum(x * y)


def normalize_(z):
    z /= np.sum(z)


def uses_normalize(x, w):
    y = x * 1.0
    normalize_(y)
    return np.sum(y * w)


def helper_writes_param(x, w):
    normalize_(x)
    return np.sum(x * w)


def bare_numpy_call(x):
    np.exp(x)
    return np.sum(x)


A = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("f", [write_then_read_other, scale_in_place, fill_in_loop])
def test_same_array_twice_is_refused_naming_the_write(f):
    g = ad.value_and_grad(f, wrt=(0, 1))
    a = A.copy()
    with pytest.raises(ValueError, match=rf"{f.__name__}\(\) writes into its argument x "
                       r"\(test_argument_aliasing.py, line \d+: `x"):
        g(a, a)
    np.testing.assert_array_equal(a, A)   # refused before anything ran


def test_separate_arrays_give_numpys_value_and_gradient():
    value, (dx, dy) = ad.value_and_grad(write_then_read_other, wrt=(0, 1))(A, A.copy())
    assert value == write_then_read_other(A.copy(), A.copy())
    np.testing.assert_array_equal(dx, [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(dy, [5.0, 2.0, 3.0])


def test_overlapping_views_are_refused_and_disjoint_ones_run():
    g = ad.grad(write_then_read_other, wrt=(0, 1))
    b = np.arange(6.0)
    with pytest.raises(ValueError, match="shares memory"):
        g(b[:3], b[2:5])
    dx, dy = g(b[::2], b[1::2])            # interleaved: no element in common
    np.testing.assert_array_equal(dx, [0.0, 3.0, 5.0])
    np.testing.assert_array_equal(dy, [5.0, 2.0, 4.0])


def test_forward_mode_and_hessian_refuse_too():
    with pytest.raises(ValueError, match="writes into its argument x"):
        ad.jvp(scale_in_place, wrt=(0, 1))(A, A, tangents=(A, A))
    with pytest.raises(ValueError, match="writes into its argument x"):
        ad.hessian(scale_in_place)(A, A)
    np.testing.assert_array_equal(ad.hessian(scale_in_place)(A, A.copy()), np.diag(8.0 * A))


def test_functions_that_only_read_take_one_array_twice():
    g = ad.grad(reads_only, wrt=(0, 1))
    dx, dy = g(A, A)
    np.testing.assert_array_equal(dx, A)
    np.testing.assert_array_equal(dy, A)
    assert "shares_memory" not in g.source


def test_a_tangent_may_be_the_written_array():
    value, tangent = ad.jvp(write_then_read_other, wrt=0)(A, A.copy(), tangents=A)
    assert value == 18.0
    assert tangent == np.sum(np.array([0.0, 2.0, 3.0]) * A)


def test_bare_call_of_a_helper_applies_its_writes():
    x, w = A.copy(), np.array([0.5, -1.0, 2.0])
    dx, dw = ad.grad(uses_normalize, wrt=(0, 1))(x, w)
    np.testing.assert_allclose(dw, A / A.sum())
    assert_matches_numerical(uses_normalize, (x, w), (0, 1), (dx, dw))
    np.testing.assert_array_equal(x, A)


def test_helper_writing_into_a_parameter_counts_as_a_write():
    g = ad.grad(helper_writes_param, wrt=(0, 1))
    with pytest.raises(ValueError, match=r"`z /= np.sum\(z\)`"):
        g(A, A)
    dx, dw = g(A, np.ones(3))
    np.testing.assert_allclose(dx, np.zeros(3), atol=1e-15)   # sum(x / sum(x)) is 1
    np.testing.assert_allclose(dw, A / A.sum())


def test_bare_call_of_a_numpy_function_is_still_refused():
    with pytest.raises(ad.CompileError, match="has no effect on the result"):
        ad.grad(bare_numpy_call)(A)


def test_numba_backend_refuses_too():
    pytest.importorskip("numba")
    g = ad.grad(scale_in_place, wrt=(0, 1), backend="numba")
    with pytest.raises(ValueError, match="writes into its argument x"):
        g(A, A)
    dx, dy = g(A, A.copy())
    np.testing.assert_array_equal(dx, 8.0 * A * A)
    np.testing.assert_array_equal(dy, 4.0 * A * A)
