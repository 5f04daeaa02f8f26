"""np.add.at with a boolean mask the function makes (known while compiling) adds at its
positions, as ``y[m] += v`` does; a module's mask stays refused (it could change in place)."""

import numpy as np
import pytest

import adcompiler as ad

M = np.array([True, False, True, False])


def add_at_made_mask(x, v):
    y = np.zeros(4)
    m = np.array([True, False, True, False])
    np.add.at(y, m, v)
    return np.sum(y * x)


def add_at_module_mask(x, v):
    y = np.zeros(4)
    np.add.at(y, M, v)
    return np.sum(y * x)


def test_made_mask_adds_at_its_positions():
    x, v = np.arange(4.0) + 1.0, np.array([1.0, 2.0])
    value, (dx, dv) = ad.value_and_grad(add_at_made_mask, wrt=(0, 1))(x, v)
    assert value == add_at_made_mask(x, v) == 1.0 + 6.0
    np.testing.assert_array_equal(dx, [1.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(dv, [1.0, 3.0])


def test_module_mask_is_refused_with_the_fix():
    with pytest.raises(ad.CompileError, match="np.flatnonzero"):
        ad.grad(add_at_module_mask)(np.ones(4), np.ones(2))
