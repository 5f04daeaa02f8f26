"""Edges of the API found trying real code: outside a function's domain the gradient of Python
floats is NumPy's NaN with NumPy's RuntimeWarning (the generated code calls ``math``, which
raises ``ValueError: math domain error`` or ``OverflowError`` there: ``adcompiler/api/poles.py``
reruns on NumPy scalars), where the user's own function raises the call still raises;
``grad(np.sum)`` is the documented TypeError; ``hessian`` of a zero-size array is an empty
block, as the gradient is an empty array."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import adcompiler as ad


def arccos_of(a):
    return np.arccos(a)


def arcsin_twice(a):
    return np.arcsin(a) * 2.0


def arccosh_of(a):
    return np.arccosh(a)


def sinh_of(a):
    return np.sinh(a)   # cosh in the derivative overflows math's range past ~710


def math_acos(a):
    return math.acos(a)   # Python raises outside [-1, 1]: so must the gradient


def squares(x):
    return np.sum(x ** 2)


def weighted(x, y):
    return np.sum(x ** 2) * y


def numpy_derivative(fn, a):
    """The derivative NumPy's own formula gives (NaN outside the domain)."""
    with np.errstate(all="ignore"):
        return {"arccos_of": lambda: -1.0 / np.sqrt(1.0 - np.float64(a) ** 2),
                "arcsin_twice": lambda: 2.0 / np.sqrt(1.0 - np.float64(a) ** 2),
                "arccosh_of": lambda: 1.0 / (np.sqrt(np.float64(a) - 1) * np.sqrt(a + 1.0)),
                "sinh_of": lambda: np.cosh(np.float64(a))}[fn.__name__]()


@pytest.mark.parametrize("fn, a", [(arccos_of, 2.0), (arccos_of, -3.0), (arcsin_twice, 1.5),
                                   (arccosh_of, 0.5), (arccosh_of, -2.0), (sinh_of, 800.0)])
def test_outside_the_domain_the_gradient_is_numpys(fn, a):
    g = ad.grad(fn)
    inside = 0.25 if fn is not arccosh_of else 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert g(inside) == pytest.approx(float(numpy_derivative(fn, inside)), rel=1e-12)
    for _ in range(2):                      # the slow path, then the fast path's guard chain
        with pytest.warns(RuntimeWarning):
            d = g(a)
        want = numpy_derivative(fn, a)
        assert type(d) is float
        assert (math.isnan(d) and np.isnan(want)) or d == want


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_value_and_grad_and_jvp_outside_the_domain():
    value, d = ad.value_and_grad(arccos_of)(2.0)
    assert math.isnan(value) and math.isnan(d)
    value, tangent = ad.jvp(arccos_of)(2.0, tangents=1.0)
    assert math.isnan(value) and math.isnan(tangent)
    assert ad.jvp(arccos_of)(0.6, tangents=1.0)[1] == pytest.approx(-1.0 / 0.8, rel=1e-12)


def test_where_the_users_function_raises_the_gradient_raises():
    g = ad.grad(math_acos)
    assert g(0.6) == pytest.approx(-1.0 / 0.8, rel=1e-12)
    for _ in range(2):
        with pytest.raises(ValueError, match="math domain error"):
            g(2.0)


@pytest.mark.parametrize("fn, name", [(np.sum, "sum"), (np.linalg.det, "det"),
                                      (np.arccos, "arccos")])
def test_a_numpy_function_is_the_documented_type_error(fn, name):
    with pytest.raises(TypeError, match=rf"grad\({name}\): .*{name} is a NumPy function, not a "
                                        r"def; write a def") as info:
        ad.grad(fn)
    assert "__code__" not in str(info.value)


def test_hessian_of_a_zero_size_array_is_an_empty_block():
    for shape in [(0,), (0, 3)]:
        x = np.zeros(shape)
        assert ad.grad(squares)(x).shape == shape
        h = ad.hessian(squares)(x)
        assert h.shape == shape + shape and h.dtype == np.float64
    (hxx, hxy), (hyx, hyy) = ad.hessian(weighted, wrt=("x", "y"))(np.zeros(0), 2.0)
    assert (hxx.shape, hxy.shape, hyx.shape, hyy.shape) == ((0, 0), (0,), (0,), ())
    assert float(hyy) == 0.0
    (hxx, hxy), _ = ad.hessian(weighted, wrt=("x", "y"))(np.ones(2), 2.0)  # against the formula
    np.testing.assert_allclose(hxx, 4.0 * np.eye(2))
    np.testing.assert_allclose(hxy, [2.0, 2.0])
