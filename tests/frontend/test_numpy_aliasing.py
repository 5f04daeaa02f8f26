"""Code whose NumPy meaning rests on two names sharing memory, which the compiled program (made of
values) cannot follow: each is refused with a located error, and its plain rewrite compiles to
NumPy's own values. Before, each gave a different answer from NumPy, silently."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import assert_matches_numerical


def row_scaled_in_place(X):
    Y = X * 1.0
    for row in Y:
        row *= 2.0
    return np.sum(Y)


def zipped_rows_updated(X, W):
    Y = X * 1.0
    for row, w in zip(Y, W):
        row += w
    return np.sum(Y)


def looped_array_updated(x):
    y = x * 1.0
    s = 0.0
    for v in y:
        y[1] = 10.0 * y[0]
        s = s + v
    return s


def row_rebound_then_updated(X):
    s = 0.0
    for row in X:
        row = row * 2.0
        row *= 3.0
        s = s + np.sum(row * row)
    return s


def updated_by_index(X):
    Y = X * 1.0
    for i in range(len(Y)):
        Y[i] = Y[i] * 2.0
    return np.sum(Y * Y)


def appended_then_updated(a):
    h = a * np.ones(2)
    xs = []
    k = 0
    while k < 2:
        xs.append(h)
        h += 1.0
        k += 1
    return np.sum(xs[0])


def appended_then_rebound(a):
    h = a * np.ones(2)
    xs = []
    k = 0
    while k < 2:
        xs.append(h)
        h = h + 1.0
        k += 1
    return np.sum(xs[0] * xs[1])


def rows_swapped_by_views(X):
    Y = X * 1.0
    Y[0], Y[1] = Y[1], Y[0]
    return np.sum(Y * X)


def rows_swapped_by_index_arrays(X):
    Y = X * 1.0
    Y[[0, 1]] = Y[[1, 0]]
    return np.sum(Y * X)


def masked_store(x, v):
    y = x * 1.0
    y[x < 0] = v
    y[x > 1] *= 3.0
    return np.sum(y * y)


def row_view_by_counter_updated(X):
    Y = X * 1.0
    for i in range(Y.shape[0]):
        row = Y[i]
        row *= i + 1
    return np.sum(Y * Y)


def row_updated_by_counter(X):
    Y = X * 1.0
    for i in range(Y.shape[0]):
        Y[i] *= i + 1
    return np.sum(Y * Y)


X = np.arange(1.0, 7.0).reshape(3, 2)
V = np.array([0.5, -1.0, 2.0, -3.0])


@pytest.mark.parametrize("f, args, line, words", [
    (row_scaled_in_place, (X,), "row *= 2.0", "is a row of the array looped over"),
    (zipped_rows_updated, (X, X), "row += w", "is a row of the array looped over"),
    (looped_array_updated, (V,), "y[1] = 10.0 * y[0]", "is updated inside a loop over its rows"),
    (appended_then_updated, (0.5,), "h += 1.0", "appends it to `xs`"),
    (rows_swapped_by_views, (X,), "Y[0], Y[1] = Y[1], Y[0]", "may just have changed"),
    (masked_store, (V, np.array([10.0, 20.0])), "y[x < 0] = v", "a boolean mask takes a number"),
    (row_view_by_counter_updated, (X,), "row = Y[i]", "`Y` shares memory with `row`"),
])
def test_memory_shared_in_numpy_is_refused_where_it_is_written(f, args, line, words):
    with pytest.raises(ad.CompileError, match=words) as err:
        ad.grad(f)(*args)
    assert line in str(err.value) and err.value.filename == __file__


@pytest.mark.parametrize("f, args", [
    (row_rebound_then_updated, (X,)),
    (updated_by_index, (X,)),
    (appended_then_rebound, (0.5,)),
    (rows_swapped_by_index_arrays, (X,)),
    (masked_store, (V, 2.0)),
    (row_updated_by_counter, (X,)),
])
def test_the_rewrites_give_numpy_values_and_gradients(f, args):
    value, grad = ad.value_and_grad(f)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert_matches_numerical(f, args, (0,), (grad,))
