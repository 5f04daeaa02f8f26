"""Boolean and integer results made of comparisons (issue 29, part 4's refusals that needed no
derivative): ``np.isclose``, ``np.allclose``, ``np.array_equal``, ``np.isposinf``,
``np.isneginf``, ``np.count_nonzero`` compile as NumPy's formulas. Their values against NumPy's
(infinities, NaN, ``equal_nan``, tolerances), the gradient through what they select against
finite differences, forward mode, and the tape (which runs them on values) against the
compiler."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import (assert_jvp_matches_differences, assert_tape_matches_compiled,
                           check_grads)

A = np.array([0.5, np.inf, -np.inf, 1e-9, 0.0, np.nan, 2.0, -3.0])
B = np.array([0.5 + 1e-7, np.inf, np.inf, 0.0, 1.0, np.nan, 2.2, -3.0])
X = np.array([0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 0.9, 1.6])


def close(a, b):
    return np.where(np.isclose(a, b), 1.0, 0.0)


def close_nan_loose(a, b):
    return np.where(np.isclose(a, b, rtol=0.2, atol=0.0, equal_nan=True), 1.0, 0.0)


def infinities(a, b):
    return np.where(np.isposinf(a), 1.0, 0.0) + np.where(np.isneginf(a), 2.0, 0.0)


def counts(a, b):
    return np.count_nonzero(a.reshape(2, 4) == b.reshape(2, 4), axis=1) * 1.0


def memberships(a, b):
    return (np.where(np.isin(a.reshape(2, 4), b[:3]), 1.0, 0.0)
            + np.where(np.isin(a, [2.0, -3.0], invert=True), 2.0, 0.0).reshape(2, 4))


@pytest.mark.parametrize("f", [close, close_nan_loose, infinities, counts, memberships])
def test_values_are_numpys(f):
    with np.errstate(all="raise"):   # no warning NumPy's own does not give
        got, _ = ad.jvp(f)(A, B, tangents=np.zeros(8))
    want = f(A, B)
    np.testing.assert_array_equal(got, want)


def selects(x):
    near = np.isclose(x, np.round(x), atol=0.15)
    n = np.count_nonzero(x > 0.5)
    if np.allclose(x[:2], np.array([0.3, -1.2])):
        return np.sum(np.where(near, x ** 2, np.sin(x))) * n
    return np.sum(x) * np.array_equal(x[:2], x[1:3])


@pytest.mark.parametrize("x", [X, X + 0.05])   # both sides of the allclose
def test_gradients_through_what_they_select(x):
    check_grads(selects, x)
    assert_jvp_matches_differences(selects, (x,), np.linspace(-1.0, 1.0, 8))
    assert_tape_matches_compiled(selects, (x,))


def whole_count(x):
    return np.count_nonzero(x > 0.0)


def test_a_whole_array_count_is_an_int_and_different_shapes_are_not_equal():
    value, _ = ad.jvp(lambda_free_count)(X, tangents=np.zeros(8))
    assert value == np.count_nonzero(X > 0.0) * 2.0


def lambda_free_count(x):
    return x[0] * 0.0 + whole_count(x) * 2.0 + np.array_equal(x, x[:3]) * 100.0
