"""Second derivatives of softplus / np.logaddexp at a tie (z = 0, x == y), where the function
is smooth: the sigmoid's slope 1/4, not 0 (a Newton step from zero weights needs it)."""

import numpy as np
import pytest

import adcompiler as ad


def logaddexp_zero(z):
    return np.sum(np.logaddexp(z, 0.0))


def softplus(z):
    return np.sum(np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))))


def logaddexp_pair(x, y):
    return np.sum(np.logaddexp(x, y))


def logistic_nll(w, X, y):
    return np.mean(np.logaddexp(0.0, -(2.0 * y - 1.0) * (X @ w)))


def sigmoid_slope(z):
    return np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))) ** 2


@pytest.mark.parametrize("f", [logaddexp_zero, softplus])
def test_softplus_hessian_at_and_off_the_tie(f):
    z = np.array([0.0, 1.0, -2.5, 40.0])
    np.testing.assert_allclose(ad.hessian(f)(z), np.diag(sigmoid_slope(z)), rtol=1e-12,
                               atol=1e-30)


def test_two_arrays_at_a_tie():
    H = ad.hessian(logaddexp_pair, wrt=(0, 1))(np.array([0.0]), np.array([0.0]))
    np.testing.assert_allclose(np.ravel(H), [0.25, -0.25, -0.25, 0.25], rtol=1e-12)


def test_newton_step_from_zero_weights():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 3)), (rng.random(50) > 0.5).astype(float)
    w = np.zeros(3)
    H = ad.hessian(logistic_nll)(w, X, y)
    np.testing.assert_allclose(H, X.T @ X / (4 * len(y)), rtol=1e-12)
    step = np.linalg.solve(H, ad.grad(logistic_nll)(w, X, y))
    assert np.all(np.isfinite(step))


def test_gradients_at_infinite_ties_stay_half_without_warnings():
    with np.errstate(all="raise"):
        gx, gy = ad.grad(logaddexp_pair, wrt=(0, 1))(np.array([np.inf, -np.inf, 1.0]),
                                                      np.array([np.inf, -np.inf, 1.0]))
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 0.5])
