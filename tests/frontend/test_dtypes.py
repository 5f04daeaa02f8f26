"""Dtypes through control flow follow NumPy 2's promotion: a Python float is weak, so a float32
computation that starts from ``0.0`` stays float32 in its value and its gradient."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def loop_accumulator(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + np.sum(x * x) * (i + 1)
    return acc


def branch_accumulator(x):
    acc = 0.0
    if np.sum(x) > 0:
        acc = np.sum(np.tanh(x))
    return acc * 2.0


def while_accumulator(x):
    acc = 0.0
    k = 0
    while k < 3:
        acc = acc + np.sum(np.sin(x)) * 0.5
        k = k + 1
    return acc


CASES = [(loop_accumulator, 3), (branch_accumulator,), (while_accumulator,)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_python_float_start_keeps_the_array_dtype(case, dtype):
    f, *static = case
    x = np.linspace(0.1, 0.9, 5).astype(dtype)
    value, dx = ad.value_and_grad(f)(x, *static)
    expected = f(x, *static)
    assert np.asarray(value).dtype == np.asarray(expected).dtype == dtype
    assert dx.dtype == dtype
    assert np.isclose(value, expected, rtol=1e-6)
    if dtype == np.float64:
        assert_matches_numerical(f, (x, *static), (0,), (dx,))
    else:  # the float32 gradient is the float64 one, rounded
        dx64 = ad.grad(f)(x.astype(np.float64), *static)
        np.testing.assert_allclose(dx, dx64, rtol=1e-5)


def test_two_array_dtypes_on_two_paths_promote(tmp_path):
    x32 = np.linspace(0.1, 0.9, 5).astype(np.float32)
    y64 = np.linspace(-1.0, 1.0, 5)
    value, (dx, dy) = ad.value_and_grad(mixed, wrt=(0, 1))(x32, y64)
    assert np.asarray(value).dtype == np.float64 == np.asarray(mixed(x32, y64)).dtype
    assert (dx.dtype, dy.dtype) == (np.float32, np.float64)
    assert np.isclose(value, mixed(x32, y64))


def mixed(x, y):
    acc = np.sum(x)
    if np.sum(y) < 1.0:
        acc = np.sum(y * y)
    return acc


def numpy_scalar_factor(x):
    return np.sum(np.float64(2.0) * x * x)


def float32_scalar_factor(x):
    return np.sum(np.float32(0.5) * x * x)


def cast_a_sum(x):
    s = np.float32(np.sum(x))
    return s * s


def cast_an_array(x):
    return np.sum(np.float32(x) ** 2)


@pytest.mark.parametrize("f", [numpy_scalar_factor, float32_scalar_factor, cast_a_sum,
                               cast_an_array], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_scalar_types_promote_as_numpy_does(f, dtype):
    x = np.linspace(0.5, 1.5, 3).astype(dtype)
    value, dx = ad.value_and_grad(f)(x)
    expected = f(x)
    assert np.asarray(value).dtype == np.asarray(expected).dtype
    assert np.isclose(value, expected, rtol=1e-6)
    assert dx.dtype == dtype
    dx64 = ad.grad(f)(x.astype(np.float64))  # float32 casts inside: compare loosely
    np.testing.assert_allclose(dx, dx64, rtol=1e-5)
    if f in (numpy_scalar_factor, float32_scalar_factor):
        np.testing.assert_allclose(dx64, (4.0 if f is numpy_scalar_factor else 1.0) * x,
                                   rtol=1e-6)


def optional_weight(x, w=None):
    if w is None:
        w = np.ones_like(x)
    if w is not None:
        x = x * 2.0
    return np.sum(x * w)


def test_an_array_is_never_none():
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(ad.grad(optional_weight)(x), 2.0 * np.ones(3))
    np.testing.assert_allclose(ad.grad(optional_weight)(x, x), 2.0 * x)  # w is another array
