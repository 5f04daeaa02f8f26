"""Solves with a Cholesky factor become triangular solves (passes/triangular_solves.py): in the
forward code the user wrote (``np.linalg.solve(L, y)``, ``solve(L.T, .)``) and in the adjoint
solves of their rules; the gradient is the plain code's, the second order unchanged, and
without SciPy the solves stay NumPy's."""

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from adcompiler.passes import triangular_solves

pytest.importorskip("scipy")


def gp_nll(log_sn2, K0, y):
    K = K0 + np.exp(log_sn2) * np.eye(K0.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def stacked(A, B):
    L = np.linalg.cholesky(A @ np.swapaxes(A, -1, -2) + 3.0 * np.eye(A.shape[-1]))
    return np.sum(np.linalg.solve(L, B) ** 2)


def _code(source) -> str:
    """The generated lines, without their comments (which quote the user's line)."""
    return "\n".join(line.split("#")[0] for line in source.splitlines())


RNG = np.random.default_rng(5)
M = RNG.normal(size=(30, 30))
K0, Y = M @ M.T / 30 + np.eye(30), RNG.normal(size=30)


def test_the_gp_gradient_solves_triangular_systems_and_is_the_plain_codes():
    g = ad.value_and_grad(gp_nll, wrt=(0, 2))
    value, grads = g(-1.0, K0, Y)
    assert "np.linalg.solve(" not in _code(g.source)
    assert _code(g.source).count("scipy.linalg.solve_triangular(") >= 4
    with unoptimised():
        ref_value, ref = ad.value_and_grad(gp_nll, wrt=(0, 2))(-1.0, K0, Y)
    assert value == pytest.approx(ref_value, rel=1e-12)
    for got, want in zip(grads, ref):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_second_order_is_unchanged():
    h = ad.hessian(gp_nll)(-1.0, K0, Y)
    eps = 1e-5
    g = ad.grad(gp_nll)
    assert h == pytest.approx((g(-1.0 + eps, K0, Y) - g(-1.0 - eps, K0, Y)) / (2 * eps),
                              rel=1e-5)


def test_stacks_of_factors(monkeypatch):
    A, B = RNG.normal(size=(3, 4, 4)), RNG.normal(size=(3, 4, 2))
    g = ad.grad(stacked, wrt=(0, 1))
    grads = g(A, B)
    with unoptimised():
        ref = ad.grad(stacked, wrt=(0, 1))(A, B)
    for got, want in zip(grads, ref):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_without_scipy_the_solves_stay_numpys(monkeypatch):
    monkeypatch.setattr(triangular_solves, "has_scipy", lambda batched=False: False)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    g = ad.grad(gp_nll)
    g(-1.0, K0, Y)
    assert _code(g.source).count("np.linalg.solve(") == 4   # two forward, two adjoint
