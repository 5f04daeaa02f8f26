"""``copy=False`` (and NumPy 2's ``copy=None``) of an array of the same dtype is the array
itself, in NumPy and in the compiled code: ``z = x.astype(np.float64, copy=False); z += 1.0``
changes ``x``. The compiler used to make a copy, and the gradients were silently those of
code that never wrote ``x``."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import CompileError

X = np.array([1.0, 2.0, 3.0])


def parameter_updated(x):
    z = x.astype(np.float64, copy=False)
    z += 1.0
    return np.sum(x * x)


def local_updated(x):
    y = x * 1.0
    z = y.astype(y.dtype, copy=False)
    z[0] = 5.0 * y[1]
    return np.sum(y * y)


def array_copy_none(x):
    y = x * 1.0
    z = np.array(y, copy=None)
    z[0] = 5.0 * y[1]
    return np.sum(y * y)


def asarray_copy_true(x):
    y = x * 1.0
    z = np.asarray(y, copy=True)
    z[0] = 5.0 * y[1]
    return np.sum(y * y) + np.sum(z)


def other_dtype_copies(x):
    z = x.astype(np.float32, copy=False)   # a new float32 array: x is unchanged
    z += 1.0
    return np.sum(x * x) + np.sum(z.astype(np.float64))


def copy_false_of_other_dtype(x):
    z = np.array(x, dtype=np.float32, copy=False)
    return np.sum(z)


@pytest.mark.parametrize("f", [parameter_updated, local_updated, array_copy_none,
                               asarray_copy_true, other_dtype_copies])
def test_no_copy_is_the_same_array(f):
    value, grad = ad.value_and_grad(f)(X.copy())
    assert value == pytest.approx(f(X.copy()), rel=1e-6)
    np.testing.assert_allclose(grad, _differences(f, X), rtol=1e-4)


def _differences(f, x, h=1e-2):
    """Central differences (exact for these quadratics but for float32 rounding), each call
    on a fresh copy (the functions write their argument)."""
    steps = np.eye(x.size) * h
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps])


def test_each_transform_sees_the_update():
    # parameter_updated reads x + 1: value 29, gradient 2 (x + 1) (the old code: 14, 2 x)
    assert ad.value_and_grad(parameter_updated)(X.copy())[0] == 29.0
    np.testing.assert_allclose(ad.grad(parameter_updated)(X.copy()), [4.0, 6.0, 8.0])
    # local_updated: y = (5 x1, x1, x2): value 26 x1^2 + x2^2
    np.testing.assert_allclose(ad.hessian(local_updated)(X.copy()), np.diag([0.0, 52.0, 2.0]))
    _, tangent = ad.jvp(local_updated)(X.copy(), tangents=np.ones(3))
    assert tangent == pytest.approx(52.0 * 2.0 + 2.0 * 3.0)


def test_copy_false_that_needs_a_copy_is_numpys_error():
    with pytest.raises(ValueError):
        copy_false_of_other_dtype(X.copy())
    with pytest.raises(CompileError, match="copy=False") as info:
        ad.grad(copy_false_of_other_dtype)(X.copy())
    assert "test_astype_copy.py" in str(info.value) and "copy=None" in str(info.value)
