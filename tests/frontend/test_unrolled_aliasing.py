"""An unrolled loop's items are the arrays themselves, as in Python: an in-place update in the
body (``y *= 2``, ``t[1:] = ...``) shows in the items still to come that are that array, and an
item that is a view of an updated array is a located error (as any stale view). The items
used to be read as they were when the loop started: value 6 for 9, 25 for 30, 17.5 for 26.5."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler import tape

X = np.array([1.0, 2.0, 3.0])


def same_array_twice(x):
    y = x * 1.0
    s = 0.0
    for v in (y, y):
        s = s + np.sum(v)
        y *= 2.0
    return s


def swapped_pairs(x):
    a = x * 1.0
    b = x * 2.0
    for v, w in ((a, b), (b, a)):
        v += 0.5 * w
    return np.sum(a * b)


def smoothed_again(x):
    a = x * 1.0
    b = x * 0.5
    for t in (a, b, a):
        t[1:] = t[1:] + t[:-1]
    return np.sum(a * b)


def overlapping_views(x):
    y = x * 1.0
    s = 0.0
    for v in (y[0:2], y[1:3]):
        s = s + np.sum(v ** 2)
        v *= 3.0
    return s


@pytest.mark.parametrize("f, value", [(same_array_twice, 18.0), (swapped_pairs, 84.0),
                                      (smoothed_again, 26.5)])
def test_updates_reach_the_items_to_come(f, value):
    got, grad = ad.value_and_grad(f)(X)
    assert got == pytest.approx(f(X.copy())) and got == pytest.approx(value)
    np.testing.assert_allclose(grad, tape.dynamic_grad(f)(X), rtol=1e-12)


def test_a_view_of_an_updated_item_is_a_located_error():
    with pytest.raises(ad.CompileError, match="shares memory") as info:
        ad.grad(overlapping_views)(X)
    assert "test_unrolled_aliasing.py" in str(info.value)
