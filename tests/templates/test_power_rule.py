"""``x ** y`` where ``y`` is 0: the derivative in ``x`` is 0 everywhere (``x ** 0`` is 1), not
0 * inf = nan at x = 0, in every engine that runs the rule; and no inf arises on the way."""

import numpy as np

import adcompiler as ad
from adcompiler import tape
from adcompiler.tape import forward_ad as fwAD


def zeroth_power(x):
    return np.sum(x ** 0 + x)


def polynomial(x, c):
    y = 0.0 * x
    for i in range(3):
        y = y + c[i] * x ** i
    return np.sum(y)


def traced_exponent(x, y):
    return np.sum(x ** y)


X = np.array([0.0, 0.5, -2.0])
C = np.array([1.0, 2.0, 3.0])


def test_the_compiled_gradient_is_finite_at_zero():
    with np.errstate(all="raise"):   # not even an intermediate inf or nan
        np.testing.assert_array_equal(ad.grad(zeroth_power)(X), np.ones(3))
        np.testing.assert_allclose(ad.grad(polynomial)(X, C), C[1] + 2 * C[2] * X)
        _, tangent = ad.jvp(polynomial)(X, C, tangents=np.ones(3))
        np.testing.assert_allclose(tangent, np.sum(C[1] + 2 * C[2] * X))
        np.testing.assert_allclose(ad.hessian(polynomial)(X, C), np.diag(2 * C[2] * np.ones(3)))


def test_a_traced_zero_exponent():
    x, y = np.array([0.0, 2.0, 0.0]), np.array([0.0, 3.0, 1.0])
    with np.errstate(all="raise"):
        dx = ad.grad(traced_exponent)(x, y)
    np.testing.assert_array_equal(dx, [0.0, 12.0, 1.0])


def test_the_tape_and_forward_mode_agree():
    x = tape.tensor(X, requires_grad=True)
    with np.errstate(all="raise"):
        (x ** 0 * 3.0 + x ** 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))
    with fwAD.dual_level():
        dual = fwAD.make_dual(tape.tensor(X), tape.tensor(np.ones(3)))
        tangent = fwAD.unpack_dual(dual ** 0).tangent
    np.testing.assert_array_equal(tangent.numpy(), np.zeros(3))
