"""The Cholesky rule's two n x n triangular solves as one ``cho_inverse`` (LAPACK's potri),
where the cotangent is a multiple of the identity plus a symmetric sum of outer products
(passes/cholesky_inverses.py): the GP likelihood's gradient and random Cholesky-using programs
at n = 8, 80, 300 (below and above the buffer planner's threshold) equal the plain code's to
1e-9 and finite differences; without SciPy the solves stay NumPy's (no cho_inverse) and the
primitive's NumPy fallback gives K^-1's lower triangle; a cotangent whose outer products are not symmetric keeps the
solves."""

import builtins

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from adcompiler.ir.primitives import evaluate
from adcompiler.passes import triangular_solves
from adcompiler.templates import factorizations as factorization_rules
from tests.helpers import numerical_grad
from tests.passes.test_low_rank_products import _gp_inputs, gp_nll


def weighted_logdet(theta, X, y):
    """A scaled log-determinant, two weighted quadratic forms and a scalar-scaled one."""
    n = X.shape[0]
    K = np.exp(theta[0]) * (X @ X.T) / X.shape[1] + np.exp(theta[1]) * np.eye(n)
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L.T, np.linalg.solve(L, y))
    b = np.linalg.solve(L.T, np.linalg.solve(L, np.cos(y)))
    return (1.5 * (y @ a) + np.exp(theta[2]) * (np.cos(y) @ b)
            + 2.0 * np.sum(np.log(np.diag(L))))


def quadratic_forms(theta, X, y):
    """``z^T K^-1 y`` with ``z != y``: the rule's cotangent is still symmetric (as a function
    of the symmetric K)."""
    n = X.shape[0]
    K = np.exp(theta[0]) * (X @ X.T) / X.shape[1] + np.exp(theta[1]) * np.eye(n)
    L = np.linalg.cholesky(K)
    return np.cos(y) @ np.linalg.solve(L.T, np.linalg.solve(L, y)) + np.sum(np.log(np.diag(L)))


def asymmetric(theta, X, y):
    """``z^T L y``: one outer product ``L^T z y^T``, not paired: the solves stay."""
    n = X.shape[0]
    K = np.exp(theta[0]) * (X @ X.T) / X.shape[1] + np.exp(theta[1]) * np.eye(n)
    L = np.linalg.cholesky(K)
    return np.cos(y) @ (L @ y) + np.sum(np.log(np.diag(L)))


def _inputs(n, seed, d=4):
    rng = np.random.default_rng(seed)
    return (0.2 * rng.standard_normal(3), rng.standard_normal((n, d)),
            rng.standard_normal(n))


def _code(g):
    return "\n".join(line.split("#")[0] for line in g.source.splitlines())


def _check(fn, args, uses_inverse=True):
    g = ad.grad(fn, wrt=(0,))
    (got,) = g(*args)
    with unoptimised():
        (want,) = ad.grad(fn, wrt=(0,))(*args)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    fd = numerical_grad(fn, list(args), 0)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
    assert ("dpotri(L.T, lower=0)[0].T" in _code(g)) == uses_inverse
    return g


@pytest.mark.parametrize("n,seed", [(8, 0), (80, 1), (300, 2)])
def test_the_gp_gradient_inverts_the_factor_once(monkeypatch, n, seed):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    code = _code(_check(gp_nll, _gp_inputs(n, seed)))
    assert code.count("dpotri(") == 1
    # the forward solve, one adjoint vector solve, two L^-T vector solves: none of n x n
    assert code.count("solve_triangular(") == 4 and ".T, lower=True, trans=1" not in code


@pytest.mark.parametrize("n,seed", [(8, 3), (80, 4), (300, 5)])
def test_random_cholesky_programs(monkeypatch, n, seed):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    _check(weighted_logdet, _inputs(n, seed))
    _check(quadratic_forms, _inputs(n, seed + 20))
    _check(asymmetric, _inputs(n, seed + 10), uses_inverse=False)


@pytest.mark.parametrize("n,seed", [(8, 0), (80, 1)])
def test_without_scipy_the_solves_stay(monkeypatch, n, seed):
    monkeypatch.setattr(triangular_solves, "has_scipy", lambda batched=False: False)
    monkeypatch.setattr(factorization_rules, "has_scipy", lambda batched=False: False)
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    g = _check(gp_nll, _gp_inputs(n, seed), uses_inverse=False)
    assert "scipy" not in g.source


@pytest.mark.parametrize("n", [8, 80, 300])
def test_the_primitive_with_and_without_scipy(monkeypatch, n):
    """``cho_inverse_lower``'s meaning (what the emitted ``dpotri`` call computes) is K^-1's
    lower triangle, upper triangle zero; without SciPy the same from NumPy's inverse."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    K = A @ A.T + n * np.eye(n)
    L = np.linalg.cholesky(K)
    want = np.tril(np.linalg.inv(K))
    with_lapack = evaluate("cho_inverse_lower", [L], {})
    np.testing.assert_allclose(with_lapack, want, rtol=1e-10, atol=1e-14)
    assert with_lapack.flags.c_contiguous and not np.triu(with_lapack, 1).any()
    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    without = evaluate("cho_inverse_lower", [L], {})
    monkeypatch.undo()
    np.testing.assert_allclose(without, want, rtol=1e-10, atol=1e-14)
    assert not np.triu(without, 1).any()


def _random_program(seed):
    """A log-determinant and three quadratic forms ``u^T K^-1 v`` (some ``u`` is ``v``, some
    not), with weights and vectors (of ``y``: itself, ``cos``, ``sin``, ``tanh``) drawn from
    ``seed``."""
    rng = np.random.default_rng(seed)
    (i1, j1), (i2, j2), (i3, j3) = (tuple(int(k) for k in p) for p in rng.integers(0, 4, (3, 2)))
    w0, w1, w2, w3 = (float(w) for w in rng.uniform(-2.0, 2.0, 4))

    def program(theta, X, y):
        n = X.shape[0]
        K = np.exp(theta[0]) * (X @ X.T) / X.shape[1] + np.exp(theta[1]) * np.eye(n)
        L = np.linalg.cholesky(K)
        v = (y, np.cos(y), np.sin(y), np.tanh(y))
        return (w0 * np.sum(np.log(np.diag(L)))
                + w1 * (v[i1] @ np.linalg.solve(L.T, np.linalg.solve(L, v[j1])))
                + w2 * (v[i2] @ np.linalg.solve(L.T, np.linalg.solve(L, v[j2])))
                + w3 * (v[i3] @ np.linalg.solve(L.T, np.linalg.solve(L, v[j3])))
                + np.exp(theta[2]) * np.sum(y))
    return program


@pytest.mark.parametrize("n,seed", [(8, 30), (8, 31), (80, 32), (80, 33), (300, 34)])
def test_random_quadratic_forms(monkeypatch, n, seed):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")
    _check(_random_program(seed), _inputs(n, seed))
