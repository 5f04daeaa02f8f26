"""np.maximum/np.minimum's rule keeps the gradient's dtype (float32 stays float32 through a
ReLU's adjoint) and reads no recomputed result; ties split evenly, NaN gives 0."""

import numpy as np

import adcompiler as ad
from adcompiler import tape


def relu_sum(x, w):
    return np.sum(np.maximum(x, 0.0) * w)


def lower(x, y):
    return np.sum(np.minimum(x, y) * 3.0)


def test_relu_gradient_values_ties_and_dtype():
    x = np.array([-1.0, 0.0, 2.0, np.nan], dtype=np.float32)
    w = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        g = ad.grad(relu_sum)
        dx = g(x, w)
    np.testing.assert_array_equal(dx, [0.0, 1.0, 3.0, 0.0])
    assert dx.dtype == np.float32
    code = "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))
    assert "np.maximum(" not in code and "float64" not in code    # no result read again


def test_minimum_on_both_sides_matches_the_tape():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 1.0])
    dx, dy = ad.grad(lower, wrt=(0, 1))(x, y)
    np.testing.assert_array_equal(dx, [3.0, 1.5, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 1.5, 3.0])
    tx, ty = tape.tensor(x, requires_grad=True), tape.tensor(y, requires_grad=True)
    lower(tx, ty).backward()
    np.testing.assert_array_equal(tx.grad.numpy(), dx)
    np.testing.assert_array_equal(ty.grad.numpy(), dy)
