"""``x.item()`` of a one-element array is a Python number whose gradient flows back into that
element; of a larger array it is refused where it is called."""

import numpy as np
import pytest

import adcompiler as ad
from tests.helpers import numerical_grad


def mixed(x):
    s = np.sum(x * x).item()
    m = x[1:2].item()
    return s * m + x[0].item()


def whole(x):
    return x.item()


def counted(x, k):
    return x[0] * k[0].item()


def test_gradient_flows_through_item():
    x = np.array([1.0, 2.0, 3.0])
    value, g = ad.value_and_grad(mixed)(x)
    assert value == mixed(x) and type(value) is float
    np.testing.assert_allclose(g, [5.0, 22.0, 12.0])
    np.testing.assert_allclose(g, numerical_grad(mixed, [x], 0), rtol=1e-7)


def test_item_of_ints_is_an_int():
    assert ad.grad(counted)(np.array([2.0, 5.0]), np.array([3, 4])).tolist() == [3.0, 0.0]


def test_item_of_many_elements_is_refused():
    with pytest.raises(ad.CompileError, match=r"of an array of shape \(3,\) needs exactly one"):
        ad.grad(whole)(np.ones(3))
    np.testing.assert_allclose(ad.grad(whole)(np.array([[2.0]])), [[1.0]])
