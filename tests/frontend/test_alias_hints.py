"""An array updated in place in a loop while a tuple entry holds it is refused (it was silently
stale), and an update through a view hints at writing through the array itself, a rewrite
that keeps NumPy's meaning and compiles."""

import numpy as np
import pytest

import adcompiler as ad


def tuple_holds_it(x):
    y = np.zeros(3)
    s = (y, 1.0)
    for i in range(3):
        y[i] = x[i] * 2.0
        s = (s[0], s[1] + 1.0)
    return np.sum(s[0] * x) + s[1]


def tuple_holds_a_copy(x):   # the hint's rewrite
    y = np.zeros(3)
    s = (y.copy(), 1.0)
    for i in range(3):
        y[i] = x[i] * 2.0
        s = (s[0], s[1] + 1.0)
    return np.sum(s[0] * x) + s[1] + np.sum(y * x)


def through_a_view(u):
    w = u.copy()
    inner = w[1:-1]
    inner *= 2.0
    return np.sum(w ** 2)


def through_the_array(u):    # the hint's rewrite
    w = u.copy()
    w[1:-1] *= 2.0
    return np.sum(w ** 2)


def test_an_array_a_tuple_holds_is_not_updated_in_a_loop_silently():
    with pytest.raises(ad.CompileError) as err:
        ad.grad(tuple_holds_it)(np.array([1.0, 2.0, 3.0]))
    e = err.value
    assert "`y` is updated in place inside a loop while `s[0]` names the same array" in e.message
    assert "put a copy in `s` (`y.copy()` where `s` is built)" in e.hint
    x = np.array([1.0, 2.0, 3.0])
    value, g = ad.value_and_grad(tuple_holds_a_copy)(x)
    assert value == tuple_holds_a_copy(x)
    np.testing.assert_allclose(g, 4.0 * x)


def test_a_write_through_a_view_hints_at_the_array_itself():
    u = np.arange(5.0)
    with pytest.raises(ad.CompileError) as err:
        ad.grad(through_a_view)(u)
    assert "write the update through the array itself, `w[1:-1] *= 2.0`" in err.value.hint
    assert ".copy()" not in err.value.hint   # a copy would change what the program computes
    np.testing.assert_allclose(ad.grad(through_the_array)(u), 2 * u * np.array([1, 4, 4, 4, 1]))
    assert through_the_array(u) == through_a_view(u)
