"""Gradients at a pole of Python-float code are NumPy's (inf, with NumPy's RuntimeWarning), as
PyTorch and JAX give: the generated code for Python floats divides Python floats, and at
``s = 0.0`` the gradient of ``np.log(s)`` (the function itself is -inf there) raised
``ZeroDivisionError`` from inside it. Where the user's own function raises, so does the call
(``adcompiler/api/poles.py``)."""

import math

import numpy as np
import pytest

import adcompiler as ad


def log_of(s):
    return np.log(s)


def root(s):
    return s ** 0.5


def weighted_log(s, x):
    return np.sum(np.log(s) * x) + math.sqrt(s + 1.0)


def reciprocal(s):
    return 1.0 / s   # Python raises at 0.0: so does the gradient


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_gradient_at_a_pole_is_numpys():
    g = ad.grad(log_of)
    assert g(2.0) == 0.5                          # compiled, and on the fast path after
    for _ in range(2):
        d = g(0.0)
        assert d == math.inf and type(d) is float
    assert ad.grad(root)(0.0) == math.inf and ad.grad(root)(4.0) == 0.25
    value, d = ad.value_and_grad(log_of)(0.0)
    assert value == -math.inf and d == math.inf
    x = np.array([1.0, -3.0])
    ds, dx = ad.grad(weighted_log, wrt=(0, 1))(0.0, x)
    assert ds == -math.inf and type(ds) is float
    assert np.array_equal(dx, [-math.inf, -math.inf])
    assert ad.grad(log_of)(np.float32(0.0)) == np.float32(np.inf)


def test_the_pole_warns_as_numpy_does():
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        assert ad.grad(log_of)(0.0) == math.inf


def test_where_the_function_raises_the_call_raises():
    g = ad.grad(reciprocal)
    assert g(2.0) == -0.25
    with pytest.raises(ZeroDivisionError):
        g(0.0)
    with pytest.raises(ZeroDivisionError):
        g(0.0)   # the fast path too


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_forward_mode_at_a_pole():
    value, tangent = ad.jvp(log_of)(0.0, tangents=1.0)
    assert value == -math.inf and tangent == math.inf
    assert type(tangent) is type(ad.jvp(log_of)(2.0, tangents=1.0)[1])   # as away from it
    with pytest.raises(ZeroDivisionError):
        ad.jvp(reciprocal)(0.0, tangents=1.0)


def arcsine(s):
    return np.arcsin(s)


def math_root(s):
    return math.sqrt(s) + s


def root_of_an_entry(x):
    s = float(x[0])
    return math.sqrt(s) * 2.0 + np.sum(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_math_functions_and_float_at_a_pole():
    assert ad.grad(arcsine)(1.0) == math.inf            # 1 / math.sqrt(1 - s * s)
    assert ad.grad(math_root)(0.0) == math.inf          # 0.5 / math.sqrt(s)
    assert ad.grad(math_root)(4.0) == 1.25
    np.testing.assert_array_equal(ad.grad(root_of_an_entry)(np.array([0.0, 2.0])),
                                  [math.inf, 1.0])
