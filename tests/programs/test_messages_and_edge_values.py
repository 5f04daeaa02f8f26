"""Messages and values a trial found off: a stale list item gets the shared-memory message (not
an internal class name), a comprehension's range bound that moves with a loop counter says so,
``max``/``min`` of one item is that item, ``np.median`` is NumPy's scalar and sign of zero,
and a write inside an ``if`` to an array a nested function holds as a default says why it is
refused."""

import re

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape
from adcompiler.errors import CompileError

X = np.array([0.3, -1.2, 0.7])


# ---- 1. list items that view an array written afterwards ------------------------------------
def stacked_stale_rows(x):
    y = np.stack([x, x * 2])
    rows = [r for r in y]
    y[0, 0] = 100.0
    return np.stack(rows).sum()


def stale_row_method(x):
    y = np.stack([x, x * 2])
    rows = [y[i] for i in range(2)]
    y[0, 0] = 100.0
    return rows[0].sum()


def stale_row_operand(x):
    y = np.stack([x, x * 2])
    rows = [y[i] for i in range(2)]
    y[0, 0] = 100.0
    return (rows[1] * 2.0).sum()


def copied_rows(x):   # the hint's rewrite
    y = np.stack([x, x * 2])
    rows = [r.copy() for r in y]
    y[0, 0] = 100.0
    return np.stack(rows).sum() + y.sum()


def _shared(name, line):
    return (f"`{name}` shares memory with `y`, which `y[0, 0] = 100.0` (line {line}) changed "
            "in place")


@pytest.mark.parametrize("f, name", [(stacked_stale_rows, "rows[0]"),
                                     (stale_row_method, "rows[0]"),
                                     (stale_row_operand, "rows[1]")])
def test_a_stale_list_item_gets_the_shared_memory_message(f, name):
    line = f.__code__.co_firstlineno + 3
    with pytest.raises(CompileError, match=re.escape(_shared(name, line))) as info:
        ad.grad(f)(X)
    assert "Stale" not in str(info.value) and "NumPy raises this too" not in str(info.value)
    assert ("put copies in `rows` where it is built (as in `[row.copy() for row in a]`)"
            in str(info.value))
    v, g = ad.value_and_grad(copied_rows)(X)
    assert v == copied_rows(X)
    np.testing.assert_allclose(g, [5.0, 6.0, 6.0])


# ---- 2. a comprehension's range bound that moves with a loop counter ------------------------
def prefix_sums_comprehension(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = sum(x[j] for j in range(i + 1))
    return (y * y).sum()


def prefix_sums_loop(x):   # the hint's first rewrite
    y = np.zeros(3)
    for i in range(3):
        acc = 0.0
        for j in range(i + 1):
            acc = acc + x[j]
        y[i] = acc
    return (y * y).sum()


def prefix_sums_masked(x):   # the hint's second rewrite
    y = np.zeros(3)
    for i in range(3):
        y[i] = sum(np.where(j <= i, x[j], 0.0) for j in range(3))
    return (y * y).sum()


def test_a_range_bound_from_a_loop_counter_is_named_as_one():
    message = ("this range bound changes with a loop counter, which is known only while the "
               "loop runs: a comprehension's length must be known while compiling")
    hint = ("hint: write a `for` loop over this range (its bound may change with the counter), "
            "or iterate over the full range and mask the items past the bound with np.where")
    with pytest.raises(CompileError, match=re.escape(message)) as info:
        ad.grad(prefix_sums_comprehension)(X)
    assert hint in str(info.value) and "computed from the inputs" not in str(info.value)
    want = ad.grad(prefix_sums_loop)(X)
    np.testing.assert_allclose(ad.grad(prefix_sums_masked)(X), want)
    np.testing.assert_allclose(want, [-1.6, -2.2, -0.4])
    assert ad.value_and_grad(prefix_sums_loop)(X)[0] == prefix_sums_loop(X)


# ---- 3. max()/min() of one item -------------------------------------------------------------
def max_of_one_row(m):
    return np.sum(max(m[i] for i in range(1)))


def min_of_one_row(m):
    return np.sum(min([m[1]]) * m[0])


def test_max_and_min_of_one_array_item_are_that_item():
    m = np.array([[0.3, -1.2], [1.0, 2.0]])
    v, g = ad.value_and_grad(max_of_one_row)(m)
    assert v == max_of_one_row(m)
    np.testing.assert_array_equal(g, [[1.0, 1.0], [0.0, 0.0]])
    v, g = ad.value_and_grad(min_of_one_row)(m)
    assert v == min_of_one_row(m)
    np.testing.assert_array_equal(g, [m[1], m[0]])


# ---- 4. np.median's value: NumPy's scalar and sign of zero ----------------------------------
def median_all(x):
    return np.median(x)


def median_rows(x):
    return np.median(x, axis=1)


def quantile_all(x):
    return np.quantile(x, 0.3)


@pytest.mark.parametrize("x", [np.array([3.0, 1.0, 2.0]), np.array([0.0, -0.0, 0.0]),
                               np.array([-0.0, -0.0]), np.array([-0.0, 1.0, -0.0]),
                               np.array([1.0, np.nan, 0.5, np.nan]),
                               np.array([4.0, 1.0, 3.0, 2.0], dtype=np.float32)])
def test_median_of_everything_is_numpys_scalar_with_its_sign_of_zero(x):
    for f in (median_all, quantile_all):
        want = f(x)
        for got in (ad.value_and_grad(f)(x)[0], ad.jvp(f)(x, tangents=np.ones_like(x))[0]):
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)
            assert np.signbit(got) == np.signbit(want)


def test_median_along_an_axis_keeps_numpys_zeros_and_nans():
    x = np.array([[0.0, -0.0, 0.0], [-0.0, -0.0, 5.0], [1.0, np.nan, 2.0]])
    got = ad.jvp(median_rows)(x, tangents=np.ones_like(x))[0]
    np.testing.assert_array_equal(got, median_rows(x))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(median_rows(x)))
    np.testing.assert_array_equal(ad.grad(median_all)(np.array([4.0, 1.0, 3.0, 2.0])),
                                  tape.dynamic_grad(median_all)(np.array([4.0, 1.0, 3.0, 2.0])))


# ---- 5. an in-place write inside an `if` to a nested function's default ---------------------
def default_written_in_if(x):
    y = np.zeros(3)

    def h(v, a=y):
        return a.sum() * v
    if x[0] > 0:
        y[0] = x[0]
    return h(x[1])


def default_passed_instead(x):   # the hint's rewrite
    y = np.zeros(3)

    def h(v, a):
        return a.sum() * v
    if x[0] > 0:
        y[0] = x[0]
    return h(x[1], a=y)


def test_a_write_in_an_if_to_a_default_says_what_the_default_is():
    line = default_written_in_if.__code__.co_firstlineno + 3
    message = (f"`y[0] = x[0]` inside an `if` would also change `a`, the default of the nested "
               f"def `h` of line {line}, which is the same array as `y` (Python evaluates a "
               "default once, to the array itself); adcompiler cannot carry that change of a "
               "default out of the block")
    hint = ("hint: pass the array to the function where you call it (`a=y`) instead of as a "
            "default, or give the default its own array (`a=y.copy()`) if it should keep its "
            "values")
    with pytest.raises(CompileError, match=re.escape(message)) as info:
        ad.grad(default_written_in_if)(X)
    assert hint in str(info.value) and "`for` or `while`" not in str(info.value)
    v, g = ad.value_and_grad(default_passed_instead)(X)
    assert v == default_passed_instead(X)
    np.testing.assert_allclose(g, [X[1], X[0], 0.0])
