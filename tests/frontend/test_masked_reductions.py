"""Boolean-mask reads whose result only feeds a reduction (issue 29, part 5c): ``np.sum(x[x > 0])``,
``np.mean(r[m] ** 2)``, ``x[m].max()`` compile as masked reductions
(:mod:`adcompiler.frontend.expressions.masked`). Values against NumPy, gradients against finite
differences (0 at every unselected entry), forward mode, the tape (which reads masks as NumPy
does) against the compiler; an empty selection is NumPy's (0 for sum, NaN for mean, NumPy's
ValueError for max); anything else is the located refusal with the np.where rewrite."""

from __future__ import annotations

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import (assert_jvp_matches_differences, assert_located,
                           assert_tape_matches_compiled, check_grads)

RNG = np.random.default_rng(51)
X = RNG.permutation(np.linspace(-1.9, 2.1, 8)) + 0.01
R = RNG.standard_normal((3, 4))


def positive_sum(x):
    return np.sum(x[x > 0])


def mean_square(x):
    return np.mean(x[x < 1.0] ** 2)


def chain(x):
    return np.sum(np.exp(x[x > -0.5]) * 2.0 + np.sin(x[x > -0.5]) / 3.0)


def logs_of_positives(x):   # log is never taken of the unselected (negative) entries
    return np.sum(np.log(x[x > 0]))


def method_max(x):
    return x[np.abs(x) < 1.5].max()


def method_min_and_prod(x):
    return x[x > 0].min() + np.prod(x[x > 0.3] * 0.5)


def matrix_mask(r):
    return np.mean(r[r > -0.2] * 3.0)


def row_mask(r):   # a mask of the first axis: whole rows
    return np.sum(r[np.sum(r, axis=1) > -1.0] ** 2)


def nested(x):
    return np.sum(x[x > 0]) * np.mean(np.abs(x[x < 0]))


def bound_to_a_name(x):   # y = x[m]: read as x[m] wherever y is read
    y = x[x > 0]
    x = x * 2.0
    return np.max(y) + np.mean(y ** 2) + np.sum(x)


def weighted(x):
    w = np.linspace(0.5, 1.5, 8)
    m = w * x > 0.2
    return np.sum(x[m] * w[m])


CASES = [(positive_sum, X), (mean_square, X), (chain, X), (logs_of_positives, X),
         (method_max, X), (method_min_and_prod, X), (matrix_mask, R), (row_mask, R),
         (nested, X), (weighted, X), (bound_to_a_name, X)]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_values_gradients_forward_mode_and_the_tape(f, x):
    with np.errstate(all="raise"):   # no warning from entries NumPy never computes on
        value, g = ad.value_and_grad(f)(x)
    assert value == pytest.approx(float(f(x)), rel=1e-13)
    check_grads(f, x)
    assert_jvp_matches_differences(f, (x,), RNG.standard_normal(x.shape))
    assert_tape_matches_compiled(f, (x,))


def test_unselected_entries_get_exactly_zero():
    g = ad.grad(logs_of_positives)(X)
    np.testing.assert_array_equal(g[X <= 0], 0.0)
    np.testing.assert_allclose(g[X > 0], 1.0 / X[X > 0], rtol=1e-15)


def test_float32_and_integers_keep_numpys_dtypes():
    x32 = X.astype(np.float32)
    value, g = ad.value_and_grad(mean_square)(x32)
    assert value.dtype == np.float32 == g.dtype
    assert value == pytest.approx(float(mean_square(x32)), rel=1e-6)


def empty_sum(x):
    return np.sum(x[x > 100.0]) + np.mean(x[x > 100.0] * 0.0 + 1.0)


def empty_max(x):
    return np.max(x[x > 100.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_an_empty_selection_is_numpys():
    value, g = ad.value_and_grad(empty_sum)(X)   # sum 0, mean of nothing NaN (as NumPy's)
    assert np.isnan(value) and np.isnan(empty_sum(X))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        ad.grad(empty_max)(X)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        empty_max(X)


def two_masks(x):
    return np.sum(x[x > 0] * x[x < 1])


def along_an_axis(r):
    return np.sum(np.sum(r[r > 0], axis=0))


def through_a_cumsum(x):
    return np.sum(np.cumsum(x[x > 0]))


def returned(x):
    y = x[x > 0]
    return y


def against_an_array(x):
    return np.sum(x[x > 0] * np.ones(8))


def test_what_is_not_a_masked_reduction_is_the_located_refusal():
    for f, construct, x in ((two_masks, "x[x < 1]", X), (along_an_axis, "r[r > 0]", R),
                            (through_a_cumsum, "x[x > 0]", X),
                            (against_an_array, "x[x > 0]", X)):
        with pytest.raises(ad.CompileError, match="reading with a boolean mask is not "
                                                  "supported") as info:
            ad.grad(f)(x)
        assert_located(info.value, f, 1, construct, "np.where(mask, x, 0)")
    with pytest.raises(ad.CompileError, match="`y` holds a read with a boolean mask \\(line") \
            as info:
        ad.grad(returned)(X)
    assert_located(info.value, returned, 2, "y", "np.sum(y)")


def cubes_of_positives(x):
    return np.sum(x[x > 0] ** 3)


def test_second_order_through_a_masked_reduction():
    np.testing.assert_allclose(ad.hessian(cubes_of_positives)(X), np.diag(6.0 * X * (X > 0)),
                               rtol=1e-13, atol=1e-14)
